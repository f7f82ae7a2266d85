//! `shaper`, `crush`, `gate` and the sampler's loops in scenes: a sampler
//! in a voice module playing notes at their interval from its root, the
//! soft clip against sox's `overdrive`, and no allocation in the block
//! loop under any profile.

use crate::support as common;
use crate::support::counting::{counts, realtime};

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;
use std::path::Path;

fn engine_from_file(path: &Path, profile: Profile, block: usize) -> Engine {
    let scene = morphrt::scene::load_file(path).unwrap_or_else(|e| panic!("{}", e[0]));
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(block),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{}", e[0]));
    Engine::new(plan)
}

/// A scene directory with `resources/ramp.wav`: frame k is 0.25 + k/8192
/// (exact in f32), so a frame read at any speed names its position.
fn with_ramp(name: &str, scene: &str) -> (std::path::PathBuf, Vec<f64>) {
    let dir = common::temp_dir(name);
    let res = dir.join("resources");
    std::fs::create_dir_all(&res).unwrap();
    let ramp: Vec<f32> = (0..4000).map(|k| 0.25 + k as f32 / 8192.0).collect();
    common::write_mono_f32(&res.join("ramp.wav"), &ramp);
    let path = dir.join("scene.json");
    std::fs::write(&path, scene).unwrap();
    (path, ramp.iter().map(|v| *v as f64).collect())
}

/// In a voice module the sampler plays each note at rate · 2^((note − root)/12):
/// an octave over `root` reads every second frame, a fifth 2^(7/12) frames
/// per sample.
#[test]
fn a_voice_module_sampler_plays_each_note_at_its_interval_from_the_root() {
    for (note, speed) in [
        (72.0, 2.0),
        (67.0, libm::pow(2.0, 7.0 / 12.0)),
        (55.0, libm::pow(2.0, -5.0 / 12.0)),
    ] {
        let scene = format!(
            r#"{{ "version": "1.0", "sample_rate": 48000,
  "modules": [ {{ "id": "keys", "voices": 2, "note": {{ "pitch": "smp.pitch" }},
    "nodes": [ {{ "id": "smp", "op": "sampler", "params": {{ "file": "@resource:ramp.wav", "root": "60midi" }} }} ] }} ],
  "nodes": [],
  "edges": [],
  "outputs": {{ "main": ["keys"] }},
  "events": [ {{ "time": "1000samples", "module": "keys", "note": {note} }} ] }}"#
        );
        let (path, ramp) = with_ramp("voice-pitch", &scene);
        let mut e = engine_from_file(&path, Profile::Strict, 64);
        let out = common::play(&mut e, 2000, 0);
        let first = out.iter().position(|v| *v != 0.0).expect("the note sounds");
        assert_eq!(first, 1000, "the note starts at its sample");
        for k in 0..900 {
            let p = speed * k as f64;
            let i = p.floor() as usize;
            let want = ramp[i] + (p - i as f64) * (ramp[i + 1] - ramp[i]);
            let got = out[first + k];
            assert!(
                (got - want).abs() < 1e-9,
                "note {note}, frame {k}: {got} vs {want}"
            );
        }
    }
}

/// The DC blocker and dry/wet mix sox's `overdrive GAIN 0` puts around
/// its curve `d − d³/3` (clipped to ±2/3), which is 2/3 of `soft_clip`:
/// `out = 0.5·x + 0.75·hp(d)`, `hp(d)[n] = d[n] − d[n−1] + 0.995·hp[n−1]`.
fn overdrive_around(x: &[f64], shaped: &[f64]) -> Vec<f64> {
    let (mut last_in, mut last_out) = (0.0, 0.0);
    x.iter()
        .zip(shaped)
        .map(|(x, s)| {
            let d = s * 2.0 / 3.0;
            last_out = d - last_in + 0.995 * last_out;
            last_in = d;
            0.5 * x + 0.75 * last_out
        })
        .collect()
}

/// The shaper's `soft_clip` is sox's `overdrive` curve: sox run on the
/// shaper's input matches the shaper's output put through the same DC
/// blocker and mix (sox's own code, in [`overdrive_around`]) within f32
/// rounding.
#[test]
fn soft_clip_is_the_curve_of_sox_overdrive() {
    if std::process::Command::new("sox")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("sox is not installed: skipped");
        return;
    }
    let scene = r#"{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ { "id": "a", "op": "sine", "params": { "freq": "220Hz", "amp": 0.6 } },
             { "id": "b", "op": "sine", "params": { "freq": "1330Hz", "amp": 0.2 } },
             { "id": "src", "op": "mix" },
             { "id": "od", "op": "shaper", "params": { "curve": "soft_clip", "drive": "12dB", "oversampling": "1" } } ],
  "edges": [ { "from": "a", "to": "src:in0" }, { "from": "b", "to": "src:in1" }, { "from": "src", "to": "od" } ],
  "outputs": { "main": ["src", "od"] } }"#;
    let n = 9600u64;
    let mut e = common::engine(scene, Some(Profile::Strict), 64);
    let mut dry = Vec::new();
    let mut wet = Vec::new();
    while e.clock() < n {
        e.process_block(64);
        let bus = e.bus();
        for i in 0..bus.frames() {
            dry.push(bus.get(0, i));
            wet.push(bus.get(1, i));
        }
    }
    // The shaper reports its latency; line its output up with its input.
    let lag = (0..64)
        .find(|&l| {
            (0..2000).all(|k| {
                let u = libm::pow(10.0, 12.0 / 20.0) * dry[k];
                let c = u.clamp(-1.0, 1.0);
                (wet[k + l] - 1.5 * c + 0.5 * c * c * c).abs() < 1e-12
            })
        })
        .expect("the shaper is soft_clip(drive · in), delayed");
    let dir = common::temp_dir("overdrive");
    let input = dir.join("in.wav");
    let output = dir.join("out.wav");
    let dry32: Vec<f32> = dry.iter().map(|v| *v as f32).collect();
    common::write_mono_f32(&input, &dry32);
    let status = std::process::Command::new("sox")
        .arg(&input)
        .args(["-e", "floating-point", "-b", "32"])
        .arg(&output)
        .args(["overdrive", "12", "0"])
        .status()
        .unwrap();
    assert!(status.success());
    let sox: Vec<f64> = common::read_f32(&output)
        .iter()
        .map(|v| *v as f64)
        .collect();
    let m = dry.len() - lag;
    let want = overdrive_around(&dry[..m], &wet[lag..]);
    let (num, den) = sox[..m]
        .iter()
        .zip(&want)
        .fold((0.0, 0.0), |(n, d), (a, b)| {
            (n + (a - b) * (a - b), d + b * b)
        });
    let err = libm::sqrt(num / den);
    eprintln!("shaper soft_clip vs sox overdrive 12 0: relative RMS difference {err:.2e}");
    assert!(err < 1e-6, "{err}");
}

/// Every new operator, and a voice module's sampler looping ping-pong and
/// crossfaded as notes start, steal and release: no allocation or free in
/// `process_block` under any profile, at odd block lengths.
#[test]
fn shaper_crush_gate_and_sampler_loops_never_allocate() {
    let scene = r#"{ "version": "1.0", "sample_rate": 48000, "seed": 3,
  "modules": [ { "id": "keys", "voices": 2, "note": { "pitch": "smp.pitch" },
    "nodes": [
      { "id": "smp", "op": "sampler", "params": { "file": "@resource:ramp.wav", "loop": true, "loop_mode": "ping_pong",
          "start": "1ms", "loop_start": "5ms", "loop_end": "40ms" } },
      { "id": "fade", "op": "sampler", "params": { "file": "@resource:ramp.wav", "loop": true, "rate": 1.7,
          "loop_start": "10ms", "loop_end": "60ms", "crossfade": "5ms" } },
      { "id": "sum", "op": "mix" } ] } ],
  "nodes": [
    { "id": "src", "op": "noise", "params": { "amp": 0.5 } },
    { "id": "lfo", "op": "sine", "params": { "freq": "3Hz", "amp": 2 } },
    { "id": "tanh", "op": "shaper", "params": { "drive": "12dB" } },
    { "id": "fold", "op": "shaper", "params": { "curve": "fold", "drive": 4, "oversampling": "4" } },
    { "id": "cheb", "op": "shaper", "params": { "curve": "chebyshev", "order": 7, "oversampling": "2" } },
    { "id": "bits", "op": "crush", "params": { "bits": 5.5, "rate": "7kHz" } },
    { "id": "gt", "op": "gate", "params": { "threshold": "-20dB", "hold": "5ms", "release": "20ms" } },
    { "id": "all", "op": "mix" }
  ],
  "edges": [
    { "from": "smp", "to": "sum:in0" }, { "from": "fade", "to": "sum:in1" },
    { "from": "src", "to": "tanh" }, { "from": "tanh", "to": "fold" }, { "from": "lfo", "to": "fold:drive" },
    { "from": "fold", "to": "cheb" }, { "from": "cheb", "to": "bits" }, { "from": "lfo", "to": "bits:bits" },
    { "from": "bits", "to": "gt" }, { "from": "keys", "to": "gt:sidechain" },
    { "from": "gt", "to": "all:in0" }, { "from": "keys", "to": "all:in1" }
  ],
  "outputs": { "main": ["all"] },
  "events": [
    { "time": "100samples", "module": "keys", "note": 60, "duration": "3000samples" },
    { "time": "900samples", "module": "keys", "note": 64 },
    { "time": "1500samples", "module": "keys", "note": 67 },
    { "time": "2000samples", "node": "gt", "param": "threshold", "value": -40, "ramp": "500samples" }
  ] }"#;
    let (path, _) = with_ramp("no-alloc", scene);
    for p in Profile::ALL {
        let mut e = engine_from_file(&path, p, 64);
        let (a0, f0) = counts();
        realtime(|| {
            for k in 0..200 {
                e.process_block(if k % 5 == 2 { 1 + k % 63 } else { 64 });
                std::hint::black_box(e.bus().get(0, 0));
            }
        });
        let (a1, f1) = counts();
        assert_eq!((a1 - a0, f1 - f0), (0, 0), "under {p}");
        assert!(e.clock() > 4000, "the notes and the ramp ran");
    }
}

/// The example scene of `scenes/README.md`'s shaper section loads, compiles
/// and plays under every profile: folded, crushed and gated, finite and
/// audible, within the shaper's `level`.
#[test]
fn the_shaper_example_of_the_scene_reference_plays_under_every_profile() {
    let text = std::fs::read_to_string(common::root().join("scenes/README.md")).unwrap();
    let section = text
        .split("## Shapers and crushers: `shaper`, `crush`")
        .nth(1)
        .expect("the shaper section");
    let json = section
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a json block");
    for p in Profile::ALL {
        let mut e = common::engine(json, Some(p), 64);
        let y = common::play(&mut e, 48_000, 0);
        let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(y.iter().all(|v| v.is_finite()), "{p}");
        // A curve within ±1 at −6 dB of level: the oversampling filters'
        // ripple and a crush step leave it well under 1.
        assert!(peak > 0.05 && peak < 1.0, "{p}: peak {peak}");
    }
}
