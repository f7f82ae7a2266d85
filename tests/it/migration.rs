//! Profile switches through nonlinear nodes whose oversampling factor
//! differs between the two profiles: a nonlinear node's latency is the
//! same at every factor, so a profile switch never shifts time, and its
//! state keeps flowing (`scenes/README.md`, Profiles and Editing while it
//! plays).
//!
//! With the default `oversampling`, `saturator` and `diode_clipper` run 1×
//! under strict and 2× under repro. A snapshot taken under one profile and
//! restored under the other must continue without a shift in time, a gap or
//! a jump: the output right after the switch is compared with an
//! uninterrupted run under the new profile. The remaining difference is the
//! old path's last few already-computed outputs (1× vs 2× of the same
//! signal), which is far below the bound; a switch that dropped the old
//! path's state would jump 39 samples and go silent for ~40 (worst |diff| ≈
//! 0.54 here).

use crate::support as common;

use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::profile::Profile;

fn scene(op: &str, params: &str) -> String {
    format!(
        r#"{{ "version": "1.0", "seed": 1, "sample_rate": 48000,
  "nodes": [ {{"id":"s","op":"sine","params":{{"freq":"1kHz","amp":0.5}}}},
             {{"id":"n","op":"{op}","params":{params}}} ],
  "edges": [ {{"from":"s","to":"n"}} ],
  "outputs": {{"main":["n"]}} }}"#
    )
}

fn engine(src: &str, p: Profile) -> Engine {
    let scene = morphrt::scene::load_str(src, "nl.json", None).unwrap();
    let plan = compile(
        &scene,
        &CompileOptions {
            profile: Some(p),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    Engine::new(plan)
}

fn run(e: &mut Engine, to: u64) -> Vec<f64> {
    common::play(e, to, 0)
}

/// Switches strict ↔ repro at sample `at` and returns, per direction, the
/// worst |diff| against an uninterrupted run under the new profile over the
/// next `len` samples, with its offset and the two values.
fn switch(src: &str, at: u64, len: u64) -> Vec<(Profile, Profile, f64, usize, f64, f64)> {
    let mut res = Vec::new();
    for (from, to) in [
        (Profile::Strict, Profile::Repro),
        (Profile::Repro, Profile::Strict),
    ] {
        let mut a = engine(src, from);
        run(&mut a, at);
        let st = a.snapshot();
        let mut b = engine(src, to);
        b.restore(&st).unwrap();
        let got = run(&mut b, at + len);
        let want = run(&mut engine(src, to), at + len)[at as usize..].to_vec();
        let (worst, i) = got
            .iter()
            .zip(&want)
            .enumerate()
            .map(|(i, (g, w))| ((g - w).abs(), i))
            .fold((0.0, 0), |m, x| if x.0 > m.0 { x } else { m });
        eprintln!("{src:.0}{from} -> {to}: worst |diff| {worst:.3e} at switch+{i}");
        res.push((from, to, worst, i, got[i], want[i]));
    }
    res
}

/// The bounds on the switch transient (worst |diff| vs an uninterrupted run
/// at the new factor, 0.5-amplitude 1 kHz sine) sit about 2× over what is
/// measured: saturator ≈ 7.5e-7, diode clipper ≈ 2.7e-4 (the old path's last
/// outputs against the new path's); a switch that drops the old path's
/// state gives ≈ 0.54 (saturator) and ≈ 0.47 (diode clipper).
fn check(src: &str, bound: f64) {
    for (from, to, worst, i, got, want) in switch(src, 12_000, 400) {
        assert!(
            worst < bound,
            "{from} -> {to}: output {got:+.4} vs {want:+.4} at switch+{i} (|diff| {worst:.3e}): \
             the switch dropped or shifted audio",
        );
    }
}

#[test]
fn a_profile_switch_keeps_a_saturator_continuous() {
    check(&scene("saturator", r#"{"drive":"0dB"}"#), 1.5e-6);
}

#[test]
fn a_profile_switch_keeps_a_diode_clipper_continuous() {
    check(&scene("diode_clipper", r#"{"drive":"0dB"}"#), 5e-4);
}

#[test]
fn a_profile_switch_keeps_a_ladder_continuous() {
    // Its four stages carry across the switch (rescaled to the new step).
    // Measured ≈ 2.4e-3 on an output of ≈ 0.14, two samples after the
    // switch: the old path's last outputs (1×) against the new path's (2×)
    // of a resonant filter.
    check(
        &scene(
            "ladder",
            r#"{"cutoff":"1.5kHz","resonance":0.8,"drive":"6dB"}"#,
        ),
        5e-3,
    );
}

/// Renders every channel up to sample `to`.
fn run_all(e: &mut Engine, to: u64) -> Vec<Vec<f64>> {
    let mut out = vec![Vec::new(); e.channels()];
    while e.clock() < to {
        let n = ((to - e.clock()) as usize).min(e.block_size());
        e.process_block(n);
        let b = e.bus();
        for (c, o) in out.iter_mut().enumerate() {
            o.extend((0..b.frames()).map(|i| b.get(c, i)));
        }
    }
    out
}

/// The delay lines that align a dry path with a latent one (an edge's, and
/// the main bus's) hold the same signal under every profile, so a profile
/// switch carries them. Carried only when the node's profile is unchanged,
/// the dry path would go silent for the latency after a switch — as a
/// strict snapshot resumed under repro shows (no crossfade hides it).
#[test]
fn a_profile_switch_carries_latency_compensation_delay_lines() {
    // `m` hears the gate muted and the dry sine through its edge's delay
    // line; main's second channel is the sine through the bus's delay line.
    let src = r#"{ "version": "1.0", "seed": 1, "sample_rate": 48000,
      "nodes": [ {"id":"s","op":"sine","params":{"freq":"1kHz","amp":0.5}},
                 {"id":"g","op":"spectral_gate","params":{"threshold":"-120dB"}},
                 {"id":"m","op":"mix","params":{"gains":[0.0, 1.0]}} ],
      "edges": [ {"from":"s","to":"g"}, {"from":"g","to":"m:in0"}, {"from":"s","to":"m:in1"} ],
      "outputs": {"main":["m", "s"]} }"#;
    let at = 12_000;
    for (from, to) in [
        (Profile::Strict, Profile::Repro),
        (Profile::Repro, Profile::Strict),
    ] {
        let mut a = engine(src, from);
        run_all(&mut a, at);
        let mut b = engine(src, to);
        b.restore(&a.snapshot()).unwrap();
        let got = run_all(&mut b, at + 400);
        let want = run_all(&mut engine(src, to), at + 400);
        for c in 0..2 {
            let worst = got[c]
                .iter()
                .zip(&want[c][at as usize..])
                .map(|(g, w)| (g - w).abs())
                .fold(0.0, f64::max);
            assert!(
                worst < 1e-3,
                "{from} -> {to}, channel {c}: |diff| {worst:.3e} after the switch: the dry path's delay line was dropped"
            );
        }
    }
}

/// A reverb's lines (≈ 48 k samples at size 2) migrate f64 ↔ f32 across a
/// profile switch: the tail continues as an uninterrupted run under the new
/// profile does, within f32 rounding (measured ≈ 4.5e-8 on a 0.5-amplitude
/// sine; a tail dropped or reset would differ by ≈ 0.1).
#[test]
fn a_profile_switch_carries_a_reverb_tail() {
    check(
        &scene("reverb", r#"{"mix":0.5,"size":2,"predelay":"5ms"}"#),
        1e-5,
    );
}
