//! `morphrt run` through a real cpal stream on ALSA, with no sound card: the
//! project-local `tests/alsa/capture.conf` defines a `capture` device (the
//! ALSA `file` plugin over `null`) that writes every played sample to
//! `$CAPTURE`. What was played must be bit-identical to `morphrt render`.

use crate::support as common;

use common::{root, stderr, temp_dir};
use std::process::Output;

fn run_captured(args: &[&str], capture: &std::path::Path) -> Output {
    common::bin()
        .args(args)
        .current_dir(root())
        .env("ALSA_CONFIG_PATH", root().join("tests/alsa/capture.conf"))
        .env("CAPTURE", capture)
        .output()
        .expect("run morphrt")
}

fn read_f32(path: &std::path::Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

fn render_f32(
    scene: &str,
    profile: &str,
    block: usize,
    seconds: &str,
    out: &std::path::Path,
) -> (usize, Vec<f32>) {
    let o = common::morphrt(&[
        "render",
        scene,
        "-o",
        out.to_str().unwrap(),
        "-d",
        seconds,
        "--profile",
        profile,
        "--block-size",
        &block.to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut r = hound::WavReader::open(out).unwrap();
    let ch = r.spec().channels as usize;
    (ch, r.samples::<f32>().map(|s| s.unwrap()).collect())
}

/// Plays `scene` for `seconds` on the capture device and compares with render.
fn check_parity(scene: &str, profile: &str, block: usize, period: Option<usize>) {
    let dir = temp_dir(&format!("play-{profile}-{block}-{}", period.unwrap_or(0)));
    let cap = dir.join("played.raw");
    let mut args = vec![
        "run",
        "--no-journal",
        scene,
        "--device",
        "alsa:capture",
        "--duration",
        "1s",
        "--profile",
        profile,
    ];
    let bs = block.to_string();
    args.extend(["--block-size", &bs]);
    let ps = period.map(|p| p.to_string());
    if let Some(p) = &ps {
        args.extend(["--period", p]);
    }
    let o = run_captured(&args, &cap);
    assert!(o.status.success(), "run failed: {}", stderr(&o));
    let played = read_f32(&cap);
    let (ch, rendered) = render_f32(scene, profile, block, "1s", &dir.join("r.wav"));
    let frames = rendered.len() / ch;
    // The device is stereo: a mono bus is duplicated.
    let dev_ch = if ch == 1 { 2 } else { ch };
    assert!(
        played.len() >= frames * dev_ch,
        "{profile}: captured {} samples, want ≥ {}",
        played.len(),
        frames * dev_ch
    );
    for f in 0..frames {
        for d in 0..dev_ch {
            let want = rendered[f * ch + if ch == 1 { 0 } else { d }].clamp(-1.0, 1.0);
            let got = played[f * dev_ch + d];
            assert_eq!(got.to_bits(), want.to_bits(), "{scene} {profile} block {block} period {period:?}: frame {f} ch {d}: played {got} vs rendered {want}");
        }
    }
    // After the requested duration the stream drains silence only.
    assert!(
        played[frames * dev_ch..].iter().all(|x| *x == 0.0),
        "{profile}: sound after the end"
    );
}

#[test]
fn played_samples_equal_rendered_samples_in_every_profile() {
    for profile in ["strict", "repro", "live"] {
        check_parity("scenes/pluck-delay.json", profile, 64, None);
    }
}

#[test]
fn parity_holds_when_the_device_period_differs_from_the_block_size() {
    check_parity("scenes/noise-wash.json", "repro", 128, Some(100));
    check_parity("scenes/pan-sweep.json", "live", 64, Some(37));
    check_parity("scenes/strict-module.json", "strict", 64, Some(1000));
}

#[test]
fn without_a_sound_card_run_explains_and_exits_1() {
    // Tests never make sound on a developer's machine unless asked.
    let has_default = morphrt::host::live::device::Backend::ALL.iter().any(|b| {
        b.host()
            .outputs()
            .is_ok_and(|l| l.iter().any(|d| d.is_default))
    });
    if has_default && std::env::var_os("MORPHRT_TEST_AUDIO").is_none() {
        eprintln!("skipped: this machine has a default output (MORPHRT_TEST_AUDIO=1 plays on it)");
        return;
    }
    let o = common::bin()
        .args([
            "run",
            "--no-journal",
            "scenes/drone.json",
            "--duration",
            "1s",
        ])
        .current_dir(root())
        .env_remove("ALSA_CONFIG_PATH")
        .output()
        .unwrap();
    let err = stderr(&o);
    // Only meaningful on a machine without a default output (like CI).
    if o.status.success() {
        return;
    }
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("alsa:null") && err.contains("morphrt render"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn run_on_the_null_device_plays_shows_status_and_exits_0() {
    let o = common::morphrt(&[
        "run",
        "--no-journal",
        "scenes/drone.json",
        "--device",
        "alsa:null",
        "--duration",
        "2s",
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("0:02.00"),
        "status line with the elapsed time: {err}"
    );
    assert!(err.contains("played 96000 frames"), "{err}");
    assert!(
        err.contains("xruns") && err.contains("dBFS") && err.contains("load"),
        "{err}"
    );
}

#[test]
fn unknown_device_is_a_clear_error() {
    let o = common::morphrt(&[
        "run",
        "--no-journal",
        "scenes/drone.json",
        "--device",
        "alsa:nope",
        "--duration",
        "1s",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("alsa:null"), "lists what exists: {err}");
}

/// The frame count from the closing "played N frames" line.
fn played_frames(err: &str) -> u64 {
    let rest = err
        .split("played ")
        .nth(1)
        .unwrap_or_else(|| panic!("no `played` line: {err}"));
    rest.split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn piped_commands_and_the_end_of_stdin_do_not_stop_playback() {
    let o = common::run_with_stdin(
        &[
            "run",
            "--no-journal",
            "scenes/drone.json",
            "--device",
            "alsa:null",
            "--duration",
            "20s",
        ],
        b"s\nbogus\n\nt\n",
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // No fade cut it short: exactly the requested duration was played.
    assert_eq!(played_frames(&err), 20 * 48_000, "{err}");
}

#[test]
fn q_on_piped_stdin_stops_playback() {
    let o = common::run_with_stdin(
        &[
            "run",
            "--no-journal",
            "scenes/drone.json",
            "--device",
            "alsa:null",
            "--duration",
            "3600s",
        ],
        b"q\n",
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    // Without the stop this plays the whole hour (the null device is not
    // paced, so that would take seconds, not an hour).
    assert!(played_frames(&err) < 3600 * 48_000, "{err}");
}
