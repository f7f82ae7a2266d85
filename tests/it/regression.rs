//! Regression tests: each checks a behaviour that a defect once broke.

use crate::support as common;

use common::engine;
use morphrt::engine::render_to_vec;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use morphrt::scene::load_str;

/// Engine::reset must return to the post-build state: params changed by
/// events (numeric and discrete) must go back to their scene values.
#[test]
fn reset_restores_params_changed_by_events() {
    let text = r#"{ "version": "1.0",
      "nodes": [ { "id": "v", "op": "dc", "params": { "value": 0.25 } } ],
      "outputs": { "main": ["v"] },
      "events": [ { "time": "100samples", "node": "v", "param": "value", "value": 0.75 } ] }"#;
    let mut e = engine(text, Some(Profile::Strict), 64);
    let first = render_to_vec(&mut e, 200);
    e.reset();
    let again = render_to_vec(&mut e, 200);
    assert_eq!(first[0][0], 0.25);
    assert_eq!(
        again[0][0], first[0][0],
        "after reset the first frames must use the scene's value again"
    );
}

/// Discrete params (enum `mode`) changed by an event must survive
/// snapshot → restore into a freshly built engine.
#[test]
fn snapshot_restore_keeps_an_event_changed_filter_mode() {
    let text = r#"{ "version": "1.0",
      "nodes": [ { "id": "src", "op": "saw", "params": { "freq": "220Hz" } },
                 { "id": "f", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "500Hz" } } ],
      "edges": [ { "from": "src", "to": "f" } ],
      "outputs": { "main": ["f"] },
      "events": [ { "time": "64samples", "node": "f", "param": "mode", "value": "highpass" } ] }"#;
    let mut a = engine(text, Some(Profile::Strict), 64);
    render_to_vec(&mut a, 1000);
    let st = a.snapshot();
    let want = render_to_vec(&mut a, 1000);
    let mut b = engine(text, Some(Profile::Strict), 64);
    b.restore(&st).unwrap();
    let got = render_to_vec(&mut b, 1000);
    let diff = got[0].iter().zip(&want[0]).position(|(a, b)| a != b);
    assert_eq!(
        diff, None,
        "restored engine must still run the highpass chosen by the event (first difference at frame {diff:?})"
    );
}

/// An event on a param the node only reads at build (noise `seed`, delay
/// `max_time`, cast `to`) is a located error, not silently ignored.
#[test]
fn an_event_on_a_build_time_param_is_a_located_error() {
    let base = |events: &str| {
        format!(
            r#"{{ "version": "1.0", "seed": 1,
          "nodes": [ {{ "id": "n", "op": "noise", "params": {{ "seed": 1 }} }} ],
          "outputs": {{ "main": ["n"] }}, "events": [ {events} ] }}"#
        )
    };
    let with = base(r#"{ "time": "0s", "node": "n", "param": "seed", "value": 99 }"#);
    let scene = load_str(&with, "test.json", None).unwrap();
    let opts = CompileOptions {
        profile: Some(Profile::Strict),
        block_size: Some(64),
        ..morphrt::host::files::resources::compile_options()
    };
    let err = compile(&scene, &opts)
        .err()
        .expect("an event on a build-time param is rejected");
    let msg = err[0].to_string();
    assert!(
        msg.contains("fixed when the node is built") && msg.contains("test.json:3:"),
        "{msg}"
    );
    // The same scene without the event still compiles.
    engine(&base(""), Some(Profile::Strict), 64);
}

/// `freq` accepts −1e6…1e6 Hz, but a negative frequency wraps the u64
/// increment so PolyBLEP sees dt ≈ 0.98: the saw comes out as 0…0.96 with a
/// large DC offset instead of a falling ±1 ramp.
#[test]
fn a_saw_at_negative_frequency_is_a_falling_saw_without_dc() {
    let text = r#"{ "version": "1.0",
      "nodes": [ { "id": "o", "op": "saw", "params": { "freq": -1000 } } ],
      "outputs": { "main": ["o"] } }"#;
    let out = render_to_vec(&mut engine(text, Some(Profile::Strict), 64), 48000);
    let mean = out[0].iter().sum::<f64>() / out[0].len() as f64;
    let min = out[0].iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(mean.abs() < 0.01 && min < -0.9, "mean {mean}, min {min}");
}

/// A direct-form biquad driven unstable by wild cutoff modulation does not
/// keep NaN state forever: it recovers once the modulation calms down.
/// (It fails more than once within a second, so the engine mutes it for a
/// second and then runs it again from a clean state.)
#[test]
fn a_biquad_recovers_after_instability() {
    // A ±100 kHz square modulates the cutoff for the first 2000 samples only.
    let text = r#"{ "version": "1.0",
      "nodes": [ { "id": "src", "op": "saw", "params": { "freq": "220Hz" } },
                 { "id": "wild", "op": "square", "params": { "freq": "3kHz", "amp": 100000 } },
                 { "id": "f", "op": "biquad", "params": { "cutoff": "1kHz", "q": 20 } } ],
      "edges": [ { "from": "src", "to": "f" }, { "from": "wild", "to": "f:cutoff" } ],
      "outputs": { "main": ["f"] },
      "events": [ { "time": "2000samples", "node": "wild", "param": "amp", "value": 0 } ] }"#;
    let mut e = engine(text, Some(Profile::Repro), 64);
    let out = render_to_vec(&mut e, 96_000);
    let (node, sample) = e.stats().first_nan.expect("the instability was reported");
    assert_eq!(e.node_id(node), "f", "the filter is the node reported");
    assert!(
        sample < 2_000,
        "reported while the modulation ran, at {sample}"
    );
    let tail = &out[0][60_000..];
    assert!(
        tail.iter().any(|x| x.abs() > 0.01),
        "the filter never recovered"
    );
}

/// A float WAV holding NaN is rejected at compile, naming the file and node.
#[test]
fn a_resource_with_non_finite_samples_is_rejected() {
    let dir = std::env::temp_dir().join(format!("morphrt-nan-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(dir.join("resources/bad.wav"), spec).unwrap();
    for x in [0.0f32, 0.5, f32::NAN, 0.1] {
        w.write_sample(x).unwrap();
    }
    w.finalize().unwrap();
    let text = r#"{ "version": "1.0", "nodes": [ { "id": "p", "op": "sampler", "params": { "file": "@resource:bad.wav" } } ],
      "outputs": { "main": ["p"] } }"#;
    let scene = load_str(text, "t.json", Some(dir.clone())).unwrap();
    let err = compile(&scene, &morphrt::host::files::resources::compile_options())
        .err()
        .expect("rejected");
    let msg = err[0].to_string();
    assert!(
        msg.contains("bad.wav") && msg.contains("non-finite") && msg.contains("node `p`"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A link inside resources/ must not lead outside it.
#[cfg(unix)]
#[test]
fn resource_links_cannot_escape_the_resources_dir() {
    let dir = std::env::temp_dir().join(format!("morphrt-link-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    std::fs::write(dir.join("secret.wav"), b"RIFF").unwrap();
    let _ = std::os::unix::fs::symlink(dir.join("secret.wav"), dir.join("resources/link.wav"));
    let err = morphrt::host::files::resources::resolve("@resource:link.wav", Some(&dir), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("outside"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes a mono f32 WAV of `n` distinct samples into `dir/resources/NAME`
/// and returns the samples as hound reads them back (the oracle).
fn write_test_wav(dir: &std::path::Path, name: &str, n: usize) -> Vec<f64> {
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let path = dir.join("resources").join(name);
    let mut w = hound::WavWriter::create(&path, spec).unwrap();
    for i in 0..n {
        // Distinct, non-zero values, so a wrong start frame cannot match.
        w.write_sample(0.001 * (i as f32 + 1.0) * if i % 2 == 0 { 1.0 } else { -1.0 })
            .unwrap();
    }
    w.finalize().unwrap();
    hound::WavReader::open(&path)
        .unwrap()
        .samples::<f32>()
        .map(|x| x.unwrap() as f64)
        .collect()
}

/// The sampler retriggers: an event raising `trigger` restarts the file
/// at exactly the event's sample, under strict and repro,
/// at any block size.
#[test]
fn the_sampler_retriggers_at_the_event_sample() {
    let dir = std::env::temp_dir().join(format!("morphrt-retrig-{}", std::process::id()));
    let wav = write_test_wav(&dir, "t.wav", 700);
    let text = r#"{ "version": "1.0",
      "nodes": [ { "id": "p", "op": "sampler", "params": { "file": "@resource:t.wav" } } ],
      "outputs": { "main": ["p"] },
      "events": [ { "time": "1000samples", "node": "p", "param": "trigger", "value": 1 },
                  { "time": "1300samples", "node": "p", "param": "trigger", "value": 0 },
                  { "time": "1501samples", "node": "p", "param": "trigger", "value": 1 } ] }"#;
    let scene = load_str(text, "t.json", Some(dir.clone())).unwrap();
    let frames: usize = 2500;
    let want = |n: usize| -> f64 {
        let start = [1501, 1000, 0].into_iter().find(|s| n >= *s).unwrap();
        wav.get(n - start).copied().unwrap_or(0.0)
    };
    for profile in [Profile::Strict, Profile::Repro] {
        for block in [1, 64, 100, 4096] {
            let plan = compile(
                &scene,
                &CompileOptions {
                    profile: Some(profile),
                    block_size: Some(block),
                    ..morphrt::host::files::resources::compile_options()
                },
            )
            .unwrap_or_else(|e| panic!("{}", e[0]));
            let out = render_to_vec(&mut morphrt::engine::Engine::new(plan), frames as u64);
            assert_eq!(out[0].len(), frames);
            for (n, y) in out[0].iter().enumerate() {
                assert_eq!(*y, want(n), "{profile:?}, block {block}: frame {n}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The unknown-param error of an event lists only params events can change
/// (not `file`, which an event may not set).
#[test]
fn unknown_event_param_lists_only_settable_params() {
    let dir = std::env::temp_dir().join(format!("morphrt-evlist-{}", std::process::id()));
    write_test_wav(&dir, "t.wav", 10);
    let text = r#"{ "version": "1.0",
      "nodes": [ { "id": "p", "op": "sampler", "params": { "file": "@resource:t.wav" } } ],
      "outputs": { "main": ["p"] },
      "events": [ { "time": "0s", "node": "p", "param": "speed", "value": 1 } ] }"#;
    let scene = load_str(text, "t.json", Some(dir.clone())).unwrap();
    let err = compile(&scene, &morphrt::host::files::resources::compile_options())
        .err()
        .expect("unknown param is rejected");
    let msg = err[0].to_string();
    let valid = msg
        .split("valid: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no list of valid params: {msg}"));
    let spec = morphrt::ops::lookup("sampler").unwrap();
    for p in spec.params {
        assert_eq!(
            valid.contains(&format!("`{}`", p.name))
                || valid.split([',', ' ', ')']).any(|w| w == p.name),
            p.settable_by_events,
            "`{}` listed iff settable by events: {msg}",
            p.name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// resources/kick.wav started at 0.204 (every loop wrap clicked) and held
/// +1.7e-3 DC; it must start and end at zero with no DC, and be exactly
/// what its generator (resources/make/kick.json) renders.
#[test]
fn the_kick_resource_loops_cleanly_and_matches_its_generator() {
    let path = common::root().join("resources/kick.wav");
    let kick: Vec<f64> = hound::WavReader::open(&path)
        .unwrap()
        .samples::<i16>()
        .map(|x| x.unwrap() as f64 / 32767.0)
        .collect();
    assert!(kick.len() > 1000);
    assert_eq!(kick[0], 0.0, "first sample");
    assert_eq!(*kick.last().unwrap(), 0.0, "last sample");
    let peak = kick.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(peak > 0.5, "still a kick: peak {peak}");
    let dc = kick.iter().sum::<f64>() / kick.len() as f64;
    assert!(dc.abs() < 1e-5, "DC offset {dc}");
    let dir = common::temp_dir("kick");
    let fresh = dir.join("kick.wav");
    let o = common::morphrt(&[
        "render",
        "resources/make/kick.json",
        "-o",
        fresh.to_str().unwrap(),
        "--profile",
        "strict",
        "--format",
        "i16",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(
        std::fs::read(&fresh).unwrap() == std::fs::read(&path).unwrap(),
        "resources/kick.wav differs from a fresh render of resources/make/kick.json"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
