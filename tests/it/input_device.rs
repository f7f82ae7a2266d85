//! `morphrt run` recording from a real cpal input stream on ALSA, with no
//! sound card: the project-local `tests/alsa/input.conf` defines a device
//! `recorded` (the ALSA `file` plugin over `null`) whose input stream
//! returns the raw samples of `$INFILE`. It is unpaced (it records far
//! faster than real time), so the ring overflows and the reader skips to
//! catch up all the time: the tests assert what survives that — the known
//! samples come out, in order — and that the counters say so. Also: the
//! input devices `devices` lists, a bad `--input-device`, a scene without
//! input nodes, and how a configuration is chosen.

use crate::support as common;

use common::{root, stderr, stdout, temp_dir};
use cpal::{SampleFormat, SupportedBufferSize, SupportedStreamConfigRange};
use morphrt::host::live::device::cpal::input::{choose, Choice, InputSample};
use morphrt::host::live::device::Need;
use std::path::Path;
use std::process::Output;

/// A scene that plays input channel 0 as it is.
const THROUGH: &str = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "mic", "op": "input", "params": { "channel": 0 } } ],
  "outputs": { "main": ["mic"] } }"#;

/// Runs `morphrt` with the input ALSA configuration, recording `infile`;
/// what the file plugin writes beside it goes to a null device made in
/// `dir` (never /dev itself).
fn run_recording(dir: &Path, infile: &Path, args: &[&str]) -> Output {
    let tee = if common::is_root() {
        common::memory_devices(dir);
        dir.join("null")
    } else {
        dir.join("tee.raw")
    };
    let o = common::bin()
        .args(args)
        .current_dir(root())
        .env("ALSA_CONFIG_PATH", root().join("tests/alsa/input.conf"))
        .env("INFILE", infile)
        .env("RECORDED", &tee)
        .output()
        .expect("run morphrt");
    if common::is_root() {
        common::assert_still_devices(dir);
    }
    o
}

/// Plays `scene` for `duration` on the clock device, recording from the
/// `recorded` device fed with `samples` (mono f32), captured to a WAV:
/// the samples played, and the run's stderr.
fn play_recording(name: &str, samples: &[f32], duration: &str) -> (Vec<f32>, String) {
    let dir = temp_dir(name);
    let scene = dir.join("through.json");
    std::fs::write(&scene, THROUGH).unwrap();
    let infile = dir.join("in.raw");
    let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    std::fs::write(&infile, bytes).unwrap();
    let take = dir.join("take.wav");
    let o = run_recording(
        &dir,
        &infile,
        &[
            "run",
            scene.to_str().unwrap(),
            "--no-journal",
            "--no-watch",
            "--input-device",
            "alsa:recorded",
            "--device",
            "clock",
            "--duration",
            duration,
            "--capture",
            take.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let mut r = hound::WavReader::open(&take).unwrap();
    assert_eq!(r.spec().channels, 2, "a mono bus plays on two channels");
    let played: Vec<f32> = r.samples::<f32>().map(|s| s.unwrap()).step_by(2).collect();
    (played, err)
}

/// The counter `name` in the summary's input line (`overruns 12 frames`).
fn counter(log: &str, name: &str) -> u64 {
    let line = log
        .lines()
        .find(|l| l.starts_with("input alsa:recorded"))
        .unwrap_or_else(|| panic!("no input summary: {log}"));
    let at = line
        .find(name)
        .unwrap_or_else(|| panic!("no `{name}`: {line}"));
    line[at + name.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.trim_end_matches(',').parse().ok())
        .unwrap_or_else(|| panic!("no number after `{name}`: {line}"))
}

#[test]
fn a_constant_recorded_by_an_input_stream_is_what_plays() {
    let (played, log) = play_recording("in-const", &vec![0.25f32; 2_000_000], "1s");
    assert_eq!(played.len(), 48_000, "{log}");
    // Silence only where the ring was priming or ran short; else the input.
    assert!(
        played.iter().all(|&x| x == 0.25 || x == 0.0),
        "only the recorded value or silence: {log}"
    );
    let heard = played.iter().filter(|&&x| x == 0.25).count();
    assert!(
        heard >= 24_000,
        "heard the input in {heard} of 48000 frames: {log}"
    );
    assert!(
        log.contains("input: alsa:recorded (1 ch, 32-bit float, 48000 Hz"),
        "{log}"
    );
    let underruns = counter(&log, "underruns ");
    assert!(
        underruns as usize <= 48_000 - heard,
        "every underrun frame is a silent one: {log}"
    );
    // Unpaced, the device records far faster than the clock plays: the
    // ring overflows and the reader catches up by skipping.
    assert!(
        counter(&log, "overruns ") > 0 || log.contains("skipped to catch up"),
        "{log}"
    );
}

#[test]
fn a_recorded_sequence_comes_out_in_order() {
    // Sample k is k / 2^22: exact in f32, and each value says where it was.
    let unit = 1.0 / (1u32 << 22) as f32;
    let samples: Vec<f32> = (1..=2_000_000u32).map(|k| k as f32 * unit).collect();
    let (played, log) = play_recording("in-seq", &samples, "0.5s");
    let heard: Vec<u32> = played
        .iter()
        .filter(|&&x| x != 0.0)
        .map(|&x| {
            let k = x / unit;
            assert_eq!(k.fract(), 0.0, "{x} is not a sample of the file: {log}");
            k as u32
        })
        .collect();
    // Until the file ends, every sample played comes after the one before
    // it in the file (frames are skipped, dropped or repeated, never
    // reordered); most follow it directly.
    let ordered = heard
        .windows(2)
        .take_while(|w| w[1] >= w[0] && w[1] <= 2_000_000)
        .count();
    assert!(ordered >= 1_000, "only {ordered} samples in order: {log}");
    let next = heard[..ordered]
        .windows(2)
        .filter(|w| w[1] == w[0] + 1)
        .count();
    assert!(
        next * 10 >= ordered * 9,
        "{next} of {ordered} samples follow the one before: {log}"
    );
}

#[test]
fn devices_lists_the_input_devices() {
    let o = common::bin()
        .arg("devices")
        .env("ALSA_CONFIG_PATH", root().join("tests/alsa/input.conf"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let inputs = out
        .split("inputs (run --input-device ID):")
        .nth(1)
        .unwrap_or_else(|| panic!("no inputs section: {out}"));
    assert!(inputs.contains("alsa:recorded"), "{out}");
    assert!(inputs.contains("supports: 1…64 channels"), "{out}");
}

#[test]
fn an_input_device_that_does_not_exist_is_bad_input_listing_the_inputs() {
    let dir = temp_dir("in-bad-id");
    let scene = dir.join("through.json");
    std::fs::write(&scene, THROUGH).unwrap();
    let o = run_recording(
        &dir,
        &dir.join("missing.raw"),
        &[
            "run",
            scene.to_str().unwrap(),
            "--no-journal",
            "--input-device",
            "alsa:nope",
            "--device",
            "clock",
            "--duration",
            "0.2s",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no input device `alsa:nope`"), "{err}");
    assert!(
        err.contains("alsa:recorded"),
        "lists the input devices: {err}"
    );
}

#[test]
fn a_scene_without_input_nodes_records_nothing_and_says_so() {
    let dir = temp_dir("in-none");
    let o = run_recording(
        &dir,
        &dir.join("missing.raw"),
        &[
            "run",
            "scenes/drone.json",
            "--no-journal",
            "--input-device",
            "alsa:recorded",
            "--device",
            "clock",
            "--duration",
            "0.2s",
        ],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning: --input-device alsa:recorded is not used"),
        "{err}"
    );
    assert!(!err.contains("input alsa:"), "no input summary: {err}");
}

fn range(channels: u16, rates: (u32, u32), format: SampleFormat) -> SupportedStreamConfigRange {
    let buffer = SupportedBufferSize::Range { min: 32, max: 4096 };
    SupportedStreamConfigRange::new(channels, rates.0, rates.1, buffer, format)
}

const NEED: Need = Need {
    sample_rate: 48_000,
    min_channels: 2,
    block: 64,
};

#[test]
fn the_configuration_keeps_the_devices_format_and_the_fewest_channels_that_hold_the_input() {
    let ranges = [
        range(1, (44_100, 48_000), SampleFormat::I16),
        range(4, (44_100, 48_000), SampleFormat::I16),
        range(2, (44_100, 48_000), SampleFormat::I16),
        range(2, (44_100, 48_000), SampleFormat::F32),
        range(2, (44_100, 48_000), SampleFormat::F64),
    ];
    let want = |channels, format| Choice {
        sample_rate: 48_000,
        channels,
        format,
        fixed: Some(64),
    };
    assert_eq!(
        choose(&ranges, Some(SampleFormat::I16), &NEED),
        Ok(want(2, SampleFormat::I16))
    );
    // Without a default morphrt reads, f32 first.
    assert_eq!(
        choose(&ranges, Some(SampleFormat::F64), &NEED),
        Ok(want(2, SampleFormat::F32))
    );
}

#[test]
fn a_device_that_cannot_record_for_the_session_says_what_it_lacks() {
    let mono = [range(1, (8_000, 96_000), SampleFormat::I16)];
    let e = choose(&mono, None, &NEED).unwrap_err().to_string();
    assert!(
        e.contains("1 input channel(s)") && e.contains("the scene reads 2"),
        "{e}"
    );
    // 44 101 Hz to 48 000 Hz needs 48 000 filter phases: no conversion.
    let odd_rate = [range(2, (44_101, 44_101), SampleFormat::I16)];
    let e = choose(&odd_rate, None, &NEED).unwrap_err().to_string();
    assert!(
        e.contains("cannot record at 48000 Hz") && e.contains("44101 Hz"),
        "{e}"
    );
    let odd = [range(2, (48_000, 48_000), SampleFormat::F64)];
    let e = choose(&odd, None, &NEED).unwrap_err().to_string();
    assert!(e.contains("no sample format morphrt reads"), "{e}");
}

/// A device that cannot record at the session's rate records at the
/// nearest rate it can (the higher of two as near), which the input then
/// converts; the session's rate wins wherever a device has it.
#[test]
fn a_device_without_the_sessions_rate_records_at_the_nearest_it_has() {
    let at = |ranges: &[SupportedStreamConfigRange]| {
        choose(ranges, None, &NEED).map(|c| (c.sample_rate, c.channels))
    };
    let slow = [range(2, (44_100, 44_100), SampleFormat::I16)];
    assert_eq!(at(&slow), Ok((44_100, 2)));
    let both = [
        range(2, (44_100, 44_100), SampleFormat::I16),
        range(2, (96_000, 96_000), SampleFormat::I16),
        range(2, (50_000, 50_000), SampleFormat::I16),
    ];
    assert_eq!(at(&both), Ok((50_000, 2)));
    let tie = [
        range(2, (47_000, 47_000), SampleFormat::I16),
        range(2, (49_000, 49_000), SampleFormat::I16),
    ];
    assert_eq!(at(&tie), Ok((49_000, 2)));
    let wide = [
        range(2, (44_100, 44_100), SampleFormat::I16),
        range(2, (8_000, 192_000), SampleFormat::I16),
    ];
    assert_eq!(at(&wide), Ok((48_000, 2)));
}

#[test]
fn integer_input_samples_scale_as_integer_wav_input_does() {
    assert_eq!(i16::MAX.to_f64(), 1.0);
    assert_eq!((-i16::MAX).to_f64(), -1.0);
    assert_eq!(16_384i16.to_f64(), 16_384.0 / 32_767.0);
    assert_eq!(cpal::I24::new(-(1 << 23) + 1).unwrap().to_f64(), -1.0);
    assert_eq!(i32::MAX.to_f64(), 1.0);
    assert_eq!(128u8.to_f64(), 0.0);
    assert_eq!(255u8.to_f64(), 1.0);
    assert_eq!(32_768u16.to_f64(), 0.0);
    assert_eq!(0.375f32.to_f64(), 0.375);
}

/// What an input device recorded is kept like a file input's: an edit
/// and a profile switch while it plays apply (their new engines catch up
/// through the input history), the journal records the input beside it,
/// and the replay is the capture bit for bit.
#[test]
fn edits_and_switches_while_an_input_device_plays_apply_and_replay() {
    let dir = temp_dir("capture-edits");
    let scene_text = |gain: &str| {
        format!(
            r#"{{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ {{ "id": "mic", "op": "input", "params": {{ "channel": 0 }} }},
             {{ "id": "g", "op": "gain", "params": {{ "gain": "{gain}" }} }} ],
  "edges": [ {{ "from": "mic", "to": "g" }} ],
  "outputs": {{ "main": ["g"] }} }}"#
        )
    };
    let scene = dir.join("scene.json");
    std::fs::write(&scene, scene_text("-6dB")).unwrap();
    let infile = dir.join("in.raw");
    let bytes: Vec<u8> = (0..480_000)
        .flat_map(|i| (0.5 * libm::sinf(i as f32 * 0.05)).to_le_bytes())
        .collect();
    std::fs::write(&infile, bytes).unwrap();
    if common::is_root() {
        common::memory_devices(&dir);
    }
    let capture = dir.join("take.wav");
    let journal = dir.join("j").join("take.jsonl");
    let mut child = common::bin()
        .arg("run")
        .arg(&scene)
        .args(["--device", "clock", "--input-device", "alsa:recorded"])
        .arg("--capture")
        .arg(&capture)
        .arg("--journal")
        .arg(&journal)
        .current_dir(root())
        .env("ALSA_CONFIG_PATH", root().join("tests/alsa/input.conf"))
        .env("INFILE", &infile)
        .env(
            "RECORDED",
            dir.join(if common::is_root() { "null" } else { "tee.raw" }),
        )
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map(common::KillOnDrop)
        .expect("run morphrt");
    let lines = common::stderr_lines(&mut child);
    let mut log = Vec::new();
    common::wait_line(&lines, "playing ", &mut log);
    let pause = std::time::Duration::from_millis(300);
    common::save_as_editor(&scene, &scene_text("-12dB"), pause);
    common::wait_line(&lines, "edit applied", &mut log);
    std::thread::sleep(pause);
    let log = common::press_then_quit(&mut child, &lines, log, &[("l", "switched repro → live")]);
    if common::is_root() {
        common::assert_still_devices(&dir);
    }
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.contains(r#""type":"input""#), "{text}");
    assert_eq!(text.matches(r#""type":"handover""#).count(), 2, "{text}");
    common::assert_replays(&journal, &capture, &log);
}
