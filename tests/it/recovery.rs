//! Every operator with an input recovers from an overflow reaching it: two
//! sources burst to ±3e38 (f32) or ±1e308 (f64) for one block and their sum
//! — infinite — feeds the node; a second later its output is back
//! where an undisturbed run is. The modulation effects with a running LFO
//! are the exception, and are checked for what recovery promises them
//! instead (`swept_effects_sound_again_after_an_overflow_at_their_input`).
//! Before the engine reset nodes that produced NaN/Inf, `onepole`, `svf`,
//! `delay` and `convolution` stayed poisoned (silent) for the rest of the
//! session.

use crate::support as common;

use morphrt::dsp::Sample;
use morphrt::engine::render_to_vec;
use morphrt::engine::Engine;
use morphrt::graph::{compile, CompileOptions};
use morphrt::ops::{AnyNode, Io, NodeProcessor, NodeState, StateError};
use morphrt::profile::Profile;
use std::path::Path;

/// A 220 Hz sine at 0.3 with a burst over samples 9600..9664: `sign` times
/// values near its precision's largest (3e38 in f32, 1e308
/// in f64), or no burst when `sign` is 0.
struct Burst {
    sign: f64,
}

impl<S: Sample> NodeProcessor<S> for Burst {
    fn process(&mut self, io: &mut Io<'_, S>) {
        for i in 0..io.frames {
            let n = io.start + i as u64;
            let phase = (n % 48_000) as f64 * 220.0 / 48_000.0;
            let x = 0.3 * libm::sin(2.0 * std::f64::consts::PI * phase);
            let big = match S::PRECISION {
                morphrt::dsp::Precision::F32 => 3.0e38,
                morphrt::dsp::Precision::F64 => 1.0e308,
            };
            let v = if self.sign != 0.0 && (9_600..9_664).contains(&n) {
                self.sign * big
            } else {
                x
            };
            io.outputs[0][i] = S::from_f64(v);
        }
    }
    fn reset(&mut self) {}
    fn snapshot(&self, _st: &mut NodeState) {}
    fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
        Ok(())
    }
}

fn write_ir(path: &Path) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    let mut env = 0.5f32;
    for i in 0..1_500 {
        w.write_sample(if i % 7 == 0 { env } else { -env * 0.3 })
            .unwrap();
        env *= 0.995;
    }
    w.finalize().unwrap();
}

fn run(op: &str, params: &str, profile: Profile, sign: f64, dir: &Path) -> (Vec<f64>, u64) {
    // Two sources into the node's input: their sum overflows f32.
    let text = format!(
        r#"{{ "version": "1.0", "seed": 1, "sample_rate": 48000,
  "nodes": [ {{ "id": "a", "op": "dc" }}, {{ "id": "b", "op": "dc" }},
             {{ "id": "x", "op": "{op}", "params": {params} }} ],
  "edges": [ {{ "from": "a", "to": "x{port}" }}, {{ "from": "b", "to": "x{port}" }} ],
  "outputs": {{ "main": ["x{out}"] }} }}"#,
        port = match op {
            "mix" => ":in0",
            "multiply" => ":a",
            _ => "",
        },
        out = if op == "pan" { ":left" } else { "" },
    );
    let s = morphrt::scene::load_str(&text, "t.json", Some(dir.to_path_buf())).unwrap();
    let mut plan = compile(
        &s,
        &CompileOptions {
            profile: Some(profile),
            block_size: Some(64),
            seed: Some(1),
            ..morphrt::host::files::resources::compile_options()
        },
    )
    .unwrap_or_else(|e| panic!("{op} {profile}: {}", e[0]));
    for id in ["a", "b"] {
        let i = plan.nodes.iter().position(|n| n.id == id).unwrap();
        plan.nodes[i].node = Some(match plan.nodes[i].profile.precision {
            morphrt::dsp::Precision::F32 => AnyNode::F32(Box::new(Burst { sign })),
            morphrt::dsp::Precision::F64 => AnyNode::F64(Box::new(Burst { sign })),
        });
    }
    let mut e = Engine::new(plan);
    let out = render_to_vec(&mut e, 96_000);
    let nans = e.stats().nan_events;
    (out.into_iter().next().unwrap(), nans)
}

#[test]
fn every_operator_recovers_from_an_overflow_at_its_input() {
    let dir = common::temp_dir("recovery");
    std::fs::create_dir_all(dir.join("resources")).unwrap();
    write_ir(&dir.join("resources").join("ir.wav"));
    let ops: &[(&str, &str)] = &[
        ("biquad", r#"{ "cutoff": "1kHz", "q": 0.9 }"#),
        ("onepole", r#"{ "cutoff": "800Hz" }"#),
        ("svf", r#"{ "cutoff": "1kHz", "q": 2 }"#),
        (
            "delay",
            r#"{ "time": "100ms", "feedback": 0.3, "mix": 0.5 }"#,
        ),
        ("convolution", r#"{ "ir": "@resource:ir.wav", "mix": 0.5 }"#),
        ("spectral_gate", r#"{ "threshold": "-60dB" }"#),
        ("saturator", r#"{ "drive": "6dB" }"#),
        ("diode_clipper", r#"{ "drive": "6dB" }"#),
        (
            "reverb",
            r#"{ "rt60_low": "200ms", "rt60_high": "100ms", "mix": 0.5 }"#,
        ),
        // With the LFO held (rate 0) a reset restarts nothing audible:
        // the delay lines and allpass states are all that overflowed.
        ("chorus", r#"{ "rate": 0, "mix": 0.5 }"#),
        ("flanger", r#"{ "rate": 0, "feedback": 0.7 }"#),
        ("phaser", r#"{ "rate": 0, "feedback": 0.5, "stages": 8 }"#),
        ("gain", r#"{ "gain": 0.5 }"#),
        ("pan", r#"{ "pos": 0.3 }"#),
        ("mix", r#"{}"#),
        ("multiply", r#"{}"#),
    ];
    for (op, params) in ops {
        for p in Profile::ALL {
            let (clean, _) = run(op, params, p, 0.0, &dir);
            for sign in [1.0, -1.0] {
                let (hit, nans) = run(op, params, p, sign, &dir);
                // One second after the burst.
                let tail = 48_000 + 9_664..96_000;
                let (mut num, mut den) = (0.0, 0.0);
                for i in tail {
                    num += (hit[i] - clean[i]) * (hit[i] - clean[i]);
                    den += clean[i] * clean[i];
                }
                let err = (num / den.max(1e-300)).sqrt();
                assert!(
                    hit.iter().all(|x| x.is_finite()),
                    "{op} {p}: non-finite output"
                );
                assert!(
                    err < 1e-3,
                    "{op} under {p}, burst {sign:+}: output one second later is {err:.3e} (rel RMS) from an undisturbed run ({nans} NaN events): it did not recover"
                );
            }
        }
    }
}

/// The modulation effects with a running LFO. Recovery resets the node, and
/// `reset` returns it to its state right after build (the `NodeProcessor`
/// contract, as for the oscillators, whose phase also restarts at 0): the
/// LFO starts again at phase 0 at the block after the burst. A second
/// later the effect is therefore out of phase with an undisturbed run, and
/// a sample-by-sample comparison says nothing. What recovery promises is
/// that it sounds again as itself: finite, at the undisturbed run's level
/// (the tail's RMS within a factor of `LEVEL` of it) and no louder than the
/// undisturbed run ever gets (the tail's peak within `PEAK` of its peak
/// over two seconds, more than a cycle of each LFO here). The same effects
/// with the LFO held are in the list above, compared sample by sample.
#[test]
fn swept_effects_sound_again_after_an_overflow_at_their_input() {
    const LEVEL: f64 = 2.0;
    const PEAK: f64 = 1.05;
    let dir = common::temp_dir("recovery-swept");
    let ops: &[(&str, &str)] = &[
        ("chorus", r#"{ "rate": "1Hz", "mix": 0.5 }"#),
        ("flanger", r#"{ "rate": "0.5Hz", "feedback": 0.7 }"#),
        (
            "phaser",
            r#"{ "rate": "0.5Hz", "feedback": 0.5, "stages": 8 }"#,
        ),
    ];
    let rms = |x: &[f64]| (x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64).sqrt();
    let peak = |x: &[f64]| x.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (op, params) in ops {
        for p in Profile::ALL {
            let (clean, _) = run(op, params, p, 0.0, &dir);
            for sign in [1.0, -1.0] {
                let (hit, nans) = run(op, params, p, sign, &dir);
                assert!(nans > 0, "{op} {p}: the burst reached it");
                assert!(
                    hit.iter().all(|x| x.is_finite()),
                    "{op} {p}: non-finite output"
                );
                let tail = 48_000 + 9_664..96_000;
                let (level, want) = (rms(&hit[tail.clone()]), rms(&clean[tail.clone()]));
                let (top, limit) = (peak(&hit[tail]), peak(&clean));
                assert!(
                    level <= want * LEVEL && level >= want / LEVEL,
                    "{op} under {p}, burst {sign:+}: RMS one second later is {level:.4}, an \
                     undisturbed run's {want:.4}: it did not sound again as itself"
                );
                assert!(
                    top <= limit * PEAK,
                    "{op} under {p}, burst {sign:+}: peak one second later is {top:.4}, above \
                     the undisturbed run's {limit:.4}"
                );
            }
        }
    }
}

/// One rule for NaN/Inf in every profile: a node whose output no f32 can
/// hold is silenced and named, the same node under strict (f64, where the
/// value is still finite) as under repro and live (f32, where it is an
/// infinity). A `dc` of 1e6 through seven `gain`s of 1e6 reaches 1e42 at
/// the sixth, which the f32 WAV of a strict render would hold as +Inf.
#[test]
fn a_node_beyond_f32s_range_is_silenced_and_named_in_every_profile() {
    let mut nodes = vec![r#"{ "id": "d", "op": "dc", "params": { "value": 1e6 } }"#.to_string()];
    let mut edges = Vec::new();
    let mut prev = "d".to_string();
    for k in 1..=7 {
        nodes.push(format!(
            r#"{{ "id": "g{k}", "op": "gain", "params": {{ "gain": 1e6 }} }}"#
        ));
        edges.push(format!(r#"{{ "from": "{prev}", "to": "g{k}" }}"#));
        prev = format!("g{k}");
    }
    let text = format!(
        r#"{{ "version": "1.0", "seed": 1, "nodes": [{}], "edges": [{}], "outputs": {{ "main": ["g7"] }} }}"#,
        nodes.join(","),
        edges.join(",")
    );
    for p in Profile::ALL {
        let mut e = common::engine(&text, Some(p), 64);
        let out = common::play(&mut e, 4800, 0);
        assert!(
            out.iter().all(|x| (*x as f32).is_finite()),
            "{p}: a sample no f32 holds reached the output"
        );
        let (node, sample) = e.stats().first_nan.expect("the overflow is reported");
        assert_eq!((e.node_id(node), sample), ("g6", 0), "{p}");
    }
}
