//! Inputs and resources at another rate than the session's: a scene that
//! sets no `sample_rate` renders at its input's rate; one that sets a rate
//! converts the input as it streams (strict: the polyphase converter,
//! repro and live: rubato) with the filter's delay taken out, and converts
//! `@resource:` files once when it compiles; `check` and the render
//! summary say what was converted. Delays are measured by numpy (the phase
//! slope of each impulse's response), reverberation times by Schroeder
//! backward integration.

use crate::support::{morphrt, render, root, stderr, stdout, temp_dir};
use morphrt::dsp::resample::{Polyphase, RateConverter};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A scene whose main bus is its input's channel 0, at `rate` (none: the
/// scene sets no `sample_rate`), under `profile`.
fn identity(rate: Option<u32>, profile: &str) -> String {
    let rate = rate.map_or(String::new(), |r| format!(r#""sample_rate": {r},"#));
    format!(
        r#"{{ "version": "1.0", {rate} "profile": "{profile}",
  "nodes": [ {{ "id": "mic", "op": "input", "params": {{ "channel": 0 }} }} ],
  "outputs": {{ "main": ["mic"] }} }}"#
    )
}

fn write_scene(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn write_wav_f32(path: &Path, rate: u32, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for s in samples {
        w.write_sample(*s).unwrap();
    }
    w.finalize().unwrap();
}

/// The rate and the channel-0 samples of a float WAV.
fn read_wav_f32(path: &Path) -> (u32, Vec<f64>) {
    let mut r = hound::WavReader::open(path).unwrap();
    let spec = r.spec();
    let ch = spec.channels as usize;
    let all: Vec<f32> = r.samples::<f32>().map(|s| s.unwrap()).collect();
    (
        spec.sample_rate,
        all.iter().step_by(ch).map(|&x| x as f64).collect(),
    )
}

/// A reproducible noise in [−0.5, 0.5).
fn noise(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64 - 0.5) as f32
        })
        .collect()
}

#[test]
fn a_scene_without_a_rate_renders_at_its_inputs_rate_unconverted() {
    let dir = temp_dir("rates-own");
    let scene = write_scene(&dir, "id.json", &identity(None, "repro"));
    let take = dir.join("take44.wav");
    let x = noise(44_100, 3);
    write_wav_f32(&take, 44_100, &x);
    let out = dir.join("out.wav");
    let o = render(&scene, &out, &["--input", take.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (rate, y) = read_wav_f32(&out);
    assert_eq!(rate, 44_100, "the output takes the input's rate");
    assert_eq!(y.len(), x.len());
    assert!(
        y.iter()
            .zip(&x)
            .all(|(a, b)| (*a as f32).to_bits() == b.to_bits()),
        "nothing is converted: the samples come back bit for bit"
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["sample_rate"], 44_100);
    assert_eq!(v["conversions"], serde_json::json!([]));
    assert!(!stderr(&o).contains("converted"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The delay in output frames of the impulse response around each of
/// `centres` in `y`, from the slope of its phase (numpy's FFT over a
/// window of 4096 frames from 1024 before the centre, bins up to 0.8 ×
/// `low_nyquist_hz`).
fn impulse_times(y: &[f64], rate: u32, low_nyquist_hz: f64, centres: &[usize]) -> Vec<f64> {
    const SCRIPT: &str = r#"
import sys
import numpy as np
y = np.fromfile(sys.argv[1], dtype="<f8")
rate, nyq = float(sys.argv[2]), float(sys.argv[3])
n = 4096
for c in sys.argv[4:]:
    a = int(c) - 1024
    seg = y[a:a + n]
    spec = np.fft.rfft(seg)
    top = int(0.8 * nyq / (rate / n))
    k = np.arange(1, top)
    phase = np.unwrap(np.angle(spec[1:top]))
    print(a - np.polyfit(k, phase, 1)[0] * n / (2 * np.pi))
"#;
    let dir = temp_dir("rates-delay");
    let path = dir.join("y.f64");
    let bytes: Vec<u8> = y.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg(&path)
        .arg(rate.to_string())
        .arg(low_nyquist_hz.to_string());
    for c in centres {
        cmd.arg(c.to_string());
    }
    let o = cmd.output().expect("python3 with numpy runs the analysis");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Impulses at `at` (input frames) in `frames` frames of silence.
fn impulses(frames: usize, at: &[usize]) -> Vec<f32> {
    let mut x = vec![0.0f32; frames];
    for &k in at {
        x[k] = 0.5;
    }
    x
}

#[test]
fn an_input_at_another_rate_keeps_its_time_and_stays_aligned_with_one_at_the_scenes() {
    // Impulses at 0.25 s, at 5001 frames (a time between output frames)
    // and at 9 s of a 10 s take; the same times at 48 kHz are unconverted.
    let dir = temp_dir("rates-align");
    let at44 = [11_025usize, 5001, 396_900];
    let take44 = dir.join("take44.wav");
    write_wav_f32(&take44, 44_100, &impulses(441_000, &at44));
    let take48 = dir.join("take48.wav");
    let at48 = [12_000usize, 432_000];
    write_wav_f32(&take48, 48_000, &impulses(480_000, &at48));
    for (profile, method) in [("strict", "polyphase"), ("repro", "rubato")] {
        let scene = write_scene(&dir, "id.json", &identity(Some(48_000), profile));
        let out = dir.join("out.wav");
        let o = render(&scene, &out, &["--input", take44.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!(
                "converted: input `{}`: 44100 Hz → 48000 Hz ({method})",
                take44.display()
            )),
            "{}",
            stderr(&o)
        );
        let (rate, y) = read_wav_f32(&out);
        assert_eq!((rate, y.len()), (48_000, 480_000));
        let want: Vec<f64> = at44.iter().map(|&k| k as f64 * 48.0 / 44.1).collect();
        let centres: Vec<usize> = want.iter().map(|t| t.round() as usize).collect();
        let got = impulse_times(&y, 48_000, 22_050.0, &centres);
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 0.5,
                "{profile}: an impulse at input time {:.6} s comes out at {:.6} s (frame {g:.3}, not {w:.3})",
                w / 48_000.0,
                g / 48_000.0
            );
        }
        // The same times in a take at the scene's rate, measured alike.
        let out48 = dir.join("out48.wav");
        let o = render(&scene, &out48, &["--input", take48.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("converted"), "{}", stderr(&o));
        let (_, y48) = read_wav_f32(&out48);
        let plain = impulse_times(&y48, 48_000, 22_050.0, &at48);
        for (converted, unconverted) in [(got[0], plain[0]), (got[2], plain[1])] {
            assert!(
                (converted - unconverted).abs() <= 0.5,
                "{profile}: converted at {converted:.3}, unconverted at {unconverted:.3}"
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The SHA-256 `--hash` prints: interleaved little-endian f64 samples.
fn hash_f64(x: &[f64]) -> String {
    let mut sha = Sha256::new();
    for v in x {
        sha.update(v.to_le_bytes());
    }
    sha.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn strict_converted_renders_are_the_same_bits_at_every_block_size() {
    let dir = temp_dir("rates-blocks");
    let scene = write_scene(&dir, "id.json", &identity(Some(48_000), "strict"));
    let take = dir.join("take44.wav");
    let x = noise(22_050, 9);
    write_wav_f32(&take, 44_100, &x);
    // The whole take converted at once, as the render's hash must see it.
    let input: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut conv = Polyphase::new(44_100, 48_000, 1, input.len()).unwrap();
    assert_eq!(conv.push(&input), input.len());
    conv.finish();
    let mut want = vec![0.0; conv.output_frames(input.len() as u64) as usize];
    let mut done = 0;
    while done < want.len() {
        done += conv.pull(&mut want[done..]);
    }
    let want = hash_f64(&want);
    for block in ["1", "64", "4096"] {
        let out = dir.join(format!("out{block}.wav"));
        let o = render(
            &scene,
            &out,
            &[
                "--input",
                take.to_str().unwrap(),
                "--block-size",
                block,
                "--hash",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(stdout(&o).trim(), want, "block size {block}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn check_and_render_say_which_resources_were_converted() {
    let dir = temp_dir("rates-resources");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/resources/rate44k.wav"),
        dir.join("resources/one.wav"),
    )
    .unwrap();
    let scene = write_scene(
        &dir,
        "s.json",
        r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "player", "op": "sampler", "params": { "file": "@resource:one.wav" } } ],
  "outputs": { "main": ["player"] } }"#,
    );
    let line = "converted: resource `@resource:one.wav`: 44100 Hz → 48000 Hz (polyphase)";
    let o = morphrt(&["check", scene.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(line), "{}", stdout(&o));
    let o = morphrt(&["check", scene.to_str().unwrap(), "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let want = serde_json::json!([{ "what": "resource `@resource:one.wav`",
        "from_hz": 44100, "to_hz": 48000, "method": "polyphase" }]);
    assert_eq!(v["conversions"], want);
    let out = dir.join("out.wav");
    let o = render(&scene, &out, &["-d", "0.1s", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains(line), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["conversions"], want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// RT60 of `h` at `rate`: Schroeder's backward integral of h², in dB,
/// fitted by least squares between −5 and −35 dB and extended to −60 dB.
fn rt60(h: &[f64], rate: u32) -> f64 {
    let mut edc = vec![0.0; h.len()];
    let mut sum = 0.0;
    for i in (0..h.len()).rev() {
        sum += h[i] * h[i];
        edc[i] = sum;
    }
    let (mut n, mut st, mut sd, mut stt, mut std_) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (i, e) in edc.iter().enumerate() {
        let db = 10.0 * libm::log10(e / edc[0]);
        if (-35.0..=-5.0).contains(&db) {
            let t = i as f64 / rate as f64;
            n += 1.0;
            st += t;
            sd += db;
            stt += t * t;
            std_ += t * db;
        }
    }
    let slope = (n * std_ - st * sd) / (n * stt - st * st);
    -60.0 / slope
}

#[test]
fn a_hall_impulse_response_at_44_1_khz_gives_the_same_reverberation_time() {
    // The hall of `scenes/hall-reverb.json`, wet only, struck by one
    // impulse; then the same scene with the IR converted to 44.1 kHz by
    // sox, which the scene converts back to its 48 kHz when it compiles.
    let dir = temp_dir("rates-rt60");
    let scene_text = r#"{ "version": "1.0", "sample_rate": 48000, "profile": "repro",
  "nodes": [ { "id": "hit", "op": "impulse" },
             { "id": "verb", "op": "convolution", "params": { "ir": "@resource:hall.wav", "mix": 1.0 } } ],
  "edges": [ { "from": "hit", "to": "verb" } ],
  "outputs": { "main": ["verb:out", "verb:out_r"] } }"#;
    let mut scenes = Vec::new();
    for rate in ["48k", "44k"] {
        std::fs::create_dir_all(dir.join(rate).join("resources")).unwrap();
        scenes.push(write_scene(&dir.join(rate), "hall.json", scene_text));
    }
    let hall = root().join("resources/hall.wav");
    std::fs::copy(&hall, dir.join("48k/resources/hall.wav")).unwrap();
    let sox = Command::new("sox")
        .arg(&hall)
        .args(["-r", "44100"])
        .arg(dir.join("44k/resources/hall.wav"))
        .status()
        .expect("sox converts the IR");
    assert!(sox.success());
    let at48 = dir.join("at48.wav");
    let o = render(&scenes[0], &at48, &["-d", "2.2s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("converted"), "{}", stderr(&o));
    let at44 = dir.join("at44.wav");
    let o = render(&scenes[1], &at44, &["-d", "2.2s"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("44100 Hz → 48000 Hz (polyphase)"),
        "{}",
        stderr(&o)
    );
    let (_, h48) = read_wav_f32(&at48);
    let (_, h44) = read_wav_f32(&at44);
    let (a, b) = (rt60(&h48, 48_000), rt60(&h44, 48_000));
    assert!(a > 1.0 && a < 3.0, "the hall's RT60 is {a:.3} s");
    assert!(
        (b - a).abs() <= 0.01 * a,
        "RT60 {b:.4} s through the 44.1 kHz IR, {a:.4} s through the 48 kHz one"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
