//! `run --input` with a file at another rate than the scene's: the file is
//! converted as `render --input` converts it, so a session on the clock
//! device plays what the render writes, bit for bit; its journal records
//! the converted input exactly (64-bit float), and `replay` gives the
//! session back bit for bit.

use crate::support as common;

use common::{morphrt, stderr, temp_dir};
use std::path::Path;

/// A 48 kHz scene whose output depends on both input channels and their
/// past: channel 0 through a lowpass, channel 1 through a delay, their
/// sum kept below full scale (the device's output clips there).
const SCENE_48K: &str = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [
    { "id": "left", "op": "input", "params": { "channel": 0 } },
    { "id": "right", "op": "input", "params": { "channel": 1 } },
    { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "3kHz" } },
    { "id": "echo", "op": "delay", "params": { "time": "20ms", "max_time": "50ms", "feedback": 0.3 } },
    { "id": "sum", "op": "mix" },
    { "id": "out", "op": "gain", "params": { "gain": "-9dB" } } ],
  "edges": [ { "from": "left", "to": "lp" }, { "from": "right", "to": "echo" },
             { "from": "lp", "to": "sum:in0" }, { "from": "echo", "to": "sum:in1" },
             { "from": "sum", "to": "out" } ],
  "outputs": { "main": ["out"] } }"#;

/// Plays `input` into `scene` under `profile` on the clock device for
/// `duration`, journaled and captured, then renders the same input
/// offline: the session must equal the render bit for bit and replay bit
/// for bit. Returns the session's log.
fn session_equals_render_and_replays(
    dir: &Path,
    scene: &Path,
    input: &Path,
    profile: &str,
    duration: &str,
) -> String {
    let capture = dir.join(format!("{profile}.played.wav"));
    let journal = dir.join(format!("{profile}/take.jsonl"));
    let (mut child, lines) = common::run_clock(
        scene,
        &[
            "--profile",
            profile,
            "--input",
            input.to_str().unwrap(),
            "--capture",
            capture.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
            "--duration",
            duration,
            "--no-watch",
        ],
    );
    let status = child.wait().unwrap();
    let log = lines.iter().collect::<Vec<String>>().join("\n");
    assert!(status.success(), "{log}");
    let out = dir.join(format!("{profile}.render.wav"));
    let o = morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "--profile",
        profile,
        "--input",
        input.to_str().unwrap(),
        "-d",
        duration,
        "--format",
        "f32",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The main bus is mono: the device plays it on both channels.
    let mono = common::read_f32(&out);
    let want: Vec<u32> = mono.iter().flat_map(|&x| [x.to_bits(); 2]).collect();
    let played: Vec<u32> = common::read_f32(&capture)
        .iter()
        .map(|x| x.to_bits())
        .collect();
    assert!(
        played == want,
        "{profile}: the session ({} samples) differs from the offline render ({}); log:\n{log}",
        played.len(),
        want.len()
    );
    common::assert_replays(&journal, &capture, &log);
    let recorded = journal.with_file_name("take.input.wav");
    let rec = morphrt::host::files::wav_in::WavInput::open(&recorded).unwrap();
    assert_eq!(
        (rec.sample_rate(), rec.channels(), rec.format()),
        (48_000, 2, morphrt::host::files::wav_in::InputFormat::F64),
        "the converted input is recorded at the session's rate, exactly"
    );
    log
}

/// A 44.1 kHz FLAC plays into a 48 kHz scene converted (strict: the
/// polyphase converter; repro: rubato) and is what `render --input` of
/// the same file writes; the input ends after the converted length.
#[test]
fn a_44k_flac_input_into_a_48k_session_plays_what_the_render_writes_and_replays() {
    let dir = temp_dir("run-rates-flac");
    let flac = crate::formats::write(&dir, "take44k.flac", "FLAC", "PCM_16", 44_100);
    let scene = dir.join("scene.json");
    std::fs::write(&scene, SCENE_48K).unwrap();
    for (profile, method) in [("strict", "polyphase"), ("repro", "rubato")] {
        let log = session_equals_render_and_replays(&dir, &scene, &flac, profile, "1.25s");
        assert!(
            log.contains(&format!("take44k.flac`: 44100 Hz → 48000 Hz ({method})")),
            "{profile}: the conversion is said: {log}"
        );
        // 44 100 frames at 44.1 kHz are 48 000 at 48 kHz.
        assert!(
            log.contains("ended after 1.000 s (48000 frames)"),
            "{profile}: {log}"
        );
        assert!(!log.contains("recorded as 32-bit float"), "{log}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An MP3 at 44.1 kHz into a 48 kHz scene under strict: the session,
/// journaled, replays bit for bit from its recorded (converted) input, and
/// equals the offline render.
#[test]
fn a_session_on_a_44k_mp3_into_a_48k_scene_replays_bit_for_bit() {
    let dir = temp_dir("run-rates-mp3");
    let mp3 = crate::formats::write(&dir, "take.mp3", "MP3", "MPEG_LAYER_III", 33_075);
    let scene = dir.join("scene.json");
    std::fs::write(&scene, SCENE_48K).unwrap();
    let log = session_equals_render_and_replays(&dir, &scene, &mp3, "strict", "1s");
    assert!(
        log.contains("converted: input `")
            && log.contains("take.mp3`: 44100 Hz → 48000 Hz (polyphase)"),
        "{log}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
