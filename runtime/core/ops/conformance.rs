//! The conformance suite every operator passes (STYLE.md): bit-identical
//! output at every block size, identical output after `reset`, no leak from
//! dirty output buffers, and `restore(snapshot())` continuing bit-exactly —
//! at f64 under strict and f32 under repro.

use super::harness::{conformance_block_sizes, first_difference, values_with, NodeRunner};
use super::{registry, AudioData, Value};
use crate::dsp::Precision;
use crate::profile::Profile;
use std::sync::Arc;

const SR: f64 = 48000.0;
const FRAMES: usize = 5000;

/// A deterministic, broadband test input in [-1, 1].
pub(crate) fn test_signal(seed: u64, frames: usize) -> Vec<f64> {
    let mut x = seed;
    (0..frames)
        .map(|i| {
            x = crate::dsp::rng::mix64(x.wrapping_add(0x9e3779b97f4a7c15));
            let noise = (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
            let t = i as f64 / SR;
            0.4 * libm::sin(2.0 * core::f64::consts::PI * 220.0 * t) + 0.3 * noise
        })
        .collect()
}

/// A slow control signal (for modulation ports), `depth` around 0.
fn control_signal(frames: usize, depth: f64) -> Vec<f64> {
    (0..frames)
        .map(|i| depth * libm::sin(2.0 * core::f64::consts::PI * 3.0 * i as f64 / SR))
        .collect()
}

/// A gate: 1 for the first 40% of every 1200 frames, else 0.
fn gate_signal(frames: usize) -> Vec<f64> {
    (0..frames)
        .map(|i| if i % 1200 < 480 { 1.0 } else { 0.0 })
        .collect()
}

pub(crate) struct Case {
    pub(crate) op: &'static str,
    pub(crate) params: Vec<(&'static str, Value)>,
    pub(crate) n_inputs: usize,
    pub(crate) mods: Vec<(&'static str, Vec<f64>)>,
}

fn case(op: &'static str, params: Vec<(&'static str, Value)>) -> Case {
    Case {
        op,
        params,
        n_inputs: 0,
        mods: Vec::new(),
    }
}

fn num(v: f64) -> Value {
    Value::Number(v)
}

pub(crate) fn test_audio() -> Arc<AudioData> {
    Arc::new(AudioData {
        path: "test.wav".into(),
        sample_rate: 48000,
        channels: vec![test_signal(11, 3000), test_signal(12, 3000)],
    })
}

/// Every operator with params that exercise its paths, including modulation.
pub(crate) fn cases() -> Vec<Case> {
    let enum_ix = |op: &str, param: &str, choice: &str| -> Value {
        let spec = super::lookup(op).unwrap();
        let p = &spec.params[spec.param_index(param).unwrap()];
        match p.kind {
            super::ParamKind::Enum { choices, .. } => {
                Value::Enum(choices.iter().position(|c| *c == choice).unwrap())
            }
            _ => panic!("{op}.{param} is not an enum"),
        }
    };
    let mut v = vec![
        case("sine", vec![("freq", num(440.0)), ("amp", num(0.8))]),
        Case {
            mods: vec![
                ("freq", control_signal(FRAMES, 200.0)),
                ("phase", control_signal(FRAMES, 1.0)),
            ],
            ..case("sine", vec![("freq", num(440.0))])
        },
        case("saw", vec![("freq", num(1000.0))]),
        Case {
            mods: vec![("freq", control_signal(FRAMES, 500.0))],
            ..case("saw", vec![("freq", num(700.0))])
        },
        case("square", vec![("freq", num(1000.0)), ("duty", num(0.3))]),
        Case {
            mods: vec![("duty", control_signal(FRAMES, 0.2))],
            ..case("square", vec![("freq", num(300.0))])
        },
        case("triangle", vec![("freq", num(1234.5))]),
        case("impulse", vec![("freq", num(1000.0))]),
        case("impulse", vec![("freq", num(0.0))]),
        case("noise", vec![("amp", num(0.5))]),
        case("dc", vec![("value", num(0.25))]),
        Case {
            n_inputs: 1,
            ..case("input", vec![("channel", Value::Integer(1))])
        },
        case(
            "sampler",
            vec![
                ("file", Value::Resource(test_audio())),
                ("rate", num(0.75)),
                ("loop", Value::Bool(true)),
            ],
        ),
        case(
            "sampler",
            vec![("file", Value::Resource(test_audio())), ("rate", num(1.0))],
        ),
        // Loop points: ping-pong from a start offset with the pitch
        // modulated, and a crossfaded forward loop against a root note.
        Case {
            mods: vec![("pitch", control_signal(FRAMES, 60.0))],
            ..case(
                "sampler",
                vec![
                    ("file", Value::Resource(test_audio())),
                    ("rate", num(1.3)),
                    ("loop", Value::Bool(true)),
                    ("loop_mode", enum_ix("sampler", "loop_mode", "ping_pong")),
                    ("start", num(50.0 / SR)),
                    ("loop_start", num(10.0 / SR)),
                    ("loop_end", num(90.0 / SR)),
                ],
            )
        },
        Case {
            mods: vec![("root", control_signal(FRAMES, 40.0))],
            ..case(
                "sampler",
                vec![
                    ("file", Value::Resource(test_audio())),
                    ("rate", num(1.5)),
                    ("loop", Value::Bool(true)),
                    ("loop_start", num(40.0 / SR)),
                    ("loop_end", num(140.0 / SR)),
                    ("crossfade", num(30.0 / SR)),
                    ("pitch", num(330.0)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            ..case("convolution", vec![("ir", Value::Resource(test_audio()))])
        },
        Case {
            n_inputs: 1,
            mods: vec![
                ("mix", control_signal(FRAMES, 0.3)),
                ("gain", control_signal(FRAMES, 0.2)),
            ],
            ..case(
                "convolution",
                vec![
                    ("ir", Value::Resource(test_audio())),
                    ("mix", num(0.5)),
                    ("gain", num(0.7)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            mods: vec![("threshold", control_signal(FRAMES, 0.04))],
            ..case(
                "spectral_gate",
                vec![
                    ("threshold", num(0.05)),
                    ("smoothing", num(0.004)),
                    ("fft_size", Value::Integer(256)),
                    ("hop", Value::Integer(64)),
                ],
            )
        },
        Case {
            mods: vec![("pos", control_signal(FRAMES, 0.9))],
            n_inputs: 1,
            ..case("pan", vec![])
        },
        Case {
            n_inputs: 1,
            mods: vec![("gain", control_signal(FRAMES, 0.5))],
            ..case("gain", vec![("gain", num(0.5))])
        },
        Case {
            n_inputs: 3,
            ..case("mix", vec![("gains", Value::Gains(vec![1.0, 0.5, 0.25]))])
        },
        Case {
            n_inputs: 2,
            ..case("multiply", vec![])
        },
        Case {
            n_inputs: 1,
            ..case("cast", vec![])
        },
        Case {
            n_inputs: 1,
            mods: vec![("time", control_signal(FRAMES, 0.002))],
            ..case(
                "delay",
                vec![
                    ("time", num(0.01)),
                    ("feedback", num(0.6)),
                    ("mix", num(0.5)),
                    ("max_time", num(0.1)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            mods: vec![("cutoff", control_signal(FRAMES, 300.0))],
            ..case("onepole", vec![("cutoff", num(800.0))])
        },
        Case {
            n_inputs: 1,
            ..case(
                "onepole",
                vec![
                    ("mode", enum_ix("onepole", "mode", "highpass")),
                    ("cutoff", num(300.0)),
                ],
            )
        },
        Case {
            mods: vec![("gate", gate_signal(FRAMES))],
            ..case(
                "adsr",
                vec![
                    ("attack", num(0.002)),
                    ("decay", num(0.005)),
                    ("sustain", num(0.5)),
                    ("release", num(0.004)),
                ],
            )
        },
    ];
    // The smallest room, so the golden's 256 frames hear the network; the
    // largest (97 k samples of lines), saved in parts, with every
    // modulatable param modulated.
    v.push(Case {
        n_inputs: 1,
        ..case(
            "reverb",
            vec![
                ("size", num(0.25)),
                ("predelay", num(0.0005)),
                ("mix", num(0.5)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![
            ("rt60_low", control_signal(FRAMES, 1.0)),
            ("rt60_high", control_signal(FRAMES, 0.3)),
            ("crossover", control_signal(FRAMES, 800.0)),
            ("predelay", control_signal(FRAMES, 0.002)),
            ("mix", control_signal(FRAMES, 0.2)),
        ],
        ..case(
            "reverb",
            vec![
                ("size", num(4.0)),
                ("rt60_low", num(3.0)),
                ("rt60_high", num(0.8)),
                ("crossover", num(2000.0)),
                ("predelay", num(0.004)),
                ("mix", num(0.5)),
            ],
        )
    });
    // Every lfo shape, with its params and ports exercised.
    let lfo = |shape: &str| ("shape", enum_ix("lfo", "shape", shape));
    v.extend([
        Case {
            mods: vec![
                ("rate", control_signal(FRAMES, 50.0)),
                ("phase", control_signal(FRAMES, 1.0)),
            ],
            ..case(
                "lfo",
                vec![
                    lfo("sine"),
                    ("rate", num(200.0)),
                    ("amount", num(300.0)),
                    ("offset", num(1000.0)),
                ],
            )
        },
        case(
            "lfo",
            vec![
                lfo("triangle"),
                ("rate", num(500.0)),
                ("bipolar", Value::Bool(false)),
            ],
        ),
        case(
            "lfo",
            vec![lfo("saw"), ("rate", num(300.0)), ("phase", num(1.0))],
        ),
        Case {
            mods: vec![("amount", control_signal(FRAMES, 0.5))],
            ..case("lfo", vec![lfo("square"), ("rate", num(400.0))])
        },
        Case {
            mods: vec![("rate", control_signal(FRAMES, 900.0))],
            ..case("lfo", vec![lfo("sample_hold"), ("rate", num(1000.0))])
        },
        case(
            "lfo",
            vec![
                lfo("sample_hold"),
                ("rate", num(-750.0)),
                ("bipolar", Value::Bool(false)),
                ("seed", Value::Integer(3)),
            ],
        ),
        Case {
            mods: vec![
                ("phase", control_signal(FRAMES, 2.0)),
                ("offset", control_signal(FRAMES, 0.1)),
            ],
            ..case(
                "lfo",
                vec![
                    lfo("smooth_random"),
                    ("rate", num(700.0)),
                    ("amount", num(2.0)),
                    ("offset", num(-0.5)),
                ],
            )
        },
    ]);
    // The modulation effects, their LFOs running and their sweeps modulated.
    v.push(Case {
        n_inputs: 1,
        mods: vec![("depth", control_signal(FRAMES, 0.001))],
        ..case(
            "chorus",
            vec![
                ("rate", num(7.0)),
                ("depth", num(0.003)),
                ("delay", num(0.008)),
                ("voices", Value::Integer(3)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![
            ("rate", control_signal(FRAMES, 3.0)),
            ("feedback", control_signal(FRAMES, 0.3)),
        ],
        ..case(
            "flanger",
            vec![
                ("rate", num(5.0)),
                ("depth", num(0.001)),
                ("delay", num(0.002)),
                ("feedback", num(0.6)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![("center", control_signal(FRAMES, 300.0))],
        ..case(
            "phaser",
            vec![
                ("rate", num(6.0)),
                ("stages", Value::Integer(6)),
                ("feedback", num(0.5)),
            ],
        )
    });
    // Every biquad mode, in the order the op declares them.
    let biquad = super::lookup("biquad").unwrap();
    let super::ParamKind::Enum {
        choices: biquad_modes,
        ..
    } = biquad.params[biquad.param_index("mode").unwrap()].kind
    else {
        unreachable!("biquad.mode is an enum")
    };
    for mode in biquad_modes {
        v.push(Case {
            n_inputs: 1,
            mods: vec![("cutoff", control_signal(FRAMES, 400.0))],
            ..case(
                "biquad",
                vec![
                    ("mode", enum_ix("biquad", "mode", mode)),
                    ("cutoff", num(1200.0)),
                    ("q", num(2.0)),
                    ("gain", num(2.0)),
                ],
            )
        });
    }
    for (op, factor) in [
        ("saturator", "default"),
        ("saturator", "2"),
        ("saturator", "4"),
    ] {
        v.push(Case {
            n_inputs: 1,
            mods: vec![("drive", control_signal(FRAMES, 2.0))],
            ..case(
                op,
                vec![
                    ("drive", num(4.0)),
                    ("oversampling", enum_ix(op, "oversampling", factor)),
                ],
            )
        });
    }
    v.push(Case {
        n_inputs: 1,
        ..case("diode_clipper", vec![("drive", num(8.0))])
    });
    // The shaper: each curve, one at each factor, its drive and level
    // modulated.
    for (curve, factor) in [
        ("tanh", "default"),
        ("hard_clip", "2"),
        ("soft_clip", "4"),
        ("chebyshev", "1"),
        ("fold", "2"),
    ] {
        v.push(Case {
            n_inputs: 1,
            mods: vec![
                ("drive", control_signal(FRAMES, 1.5)),
                ("level", control_signal(FRAMES, 0.3)),
            ],
            ..case(
                "shaper",
                vec![
                    ("curve", enum_ix("shaper", "curve", curve)),
                    ("drive", num(3.0)),
                    ("order", Value::Integer(5)),
                    ("level", num(0.8)),
                    ("oversampling", enum_ix("shaper", "oversampling", factor)),
                ],
            )
        });
    }
    // The crusher: a fractional rate and depth, then both modulated.
    v.push(Case {
        n_inputs: 1,
        ..case("crush", vec![("bits", num(4.5)), ("rate", num(7000.0))])
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![
            ("bits", control_signal(FRAMES, 3.0)),
            ("rate", control_signal(FRAMES, 5000.0)),
        ],
        ..case("crush", vec![("bits", num(6.0)), ("rate", num(12000.0))])
    });
    // The gate: opening and closing on the test signal, self-keyed and
    // keyed by a second input, its threshold modulated.
    v.push(Case {
        n_inputs: 1,
        mods: vec![("threshold", control_signal(FRAMES, 10.0))],
        ..case(
            "gate",
            vec![
                ("threshold", num(-6.0)),
                ("range", num(30.0)),
                ("hold", num(0.002)),
                ("release", num(0.01)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 2,
        ..case(
            "gate",
            vec![
                ("detector", enum_ix("gate", "detector", "rms")),
                ("threshold", num(-12.0)),
                ("hysteresis", num(3.0)),
                ("hold", num(0.001)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![
            ("cutoff", control_signal(FRAMES, 800.0)),
            ("drive", control_signal(FRAMES, 3.0)),
        ],
        ..case(
            "diode_clipper",
            vec![
                ("drive", num(6.0)),
                (
                    "oversampling",
                    enum_ix("diode_clipper", "oversampling", "2"),
                ),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        ..case(
            "diode_clipper",
            vec![
                ("drive", num(10.0)),
                ("cutoff", num(5000.0)),
                (
                    "oversampling",
                    enum_ix("diode_clipper", "oversampling", "4"),
                ),
                ("critical", Value::Bool(true)),
                ("max_iterations", Value::Integer(12)),
            ],
        )
    });
    // The ladder: driven near self-oscillation, and its cutoff and
    // resonance modulated (the resonance across 1) at 2×.
    v.push(Case {
        n_inputs: 1,
        ..case(
            "ladder",
            vec![
                ("cutoff", num(1500.0)),
                ("resonance", num(0.9)),
                ("drive", num(4.0)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![
            ("cutoff", control_signal(FRAMES, 700.0)),
            ("resonance", control_signal(FRAMES, 0.2)),
            ("drive", control_signal(FRAMES, 1.0)),
        ],
        ..case(
            "ladder",
            vec![
                ("cutoff", num(1200.0)),
                ("resonance", num(1.0)),
                ("drive", num(2.0)),
                ("oversampling", enum_ix("ladder", "oversampling", "2")),
                ("max_iterations", Value::Integer(12)),
            ],
        )
    });
    // The dynamics operators: each detector, modulated times and curve,
    // a keyed and a self-keyed compressor with lookahead, a limiter that
    // limits (the test signal peaks near 0.7).
    v.push(Case {
        n_inputs: 1,
        mods: vec![("attack", control_signal(FRAMES, 0.001))],
        ..case(
            "follower",
            vec![("attack", num(0.002)), ("release", num(0.02))],
        )
    });
    v.push(Case {
        n_inputs: 1,
        ..case(
            "follower",
            vec![
                ("detector", enum_ix("follower", "detector", "rms")),
                ("attack", num(0.005)),
                ("release", num(0.005)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![
            ("threshold", control_signal(FRAMES, 6.0)),
            ("release", control_signal(FRAMES, 0.01)),
        ],
        ..case(
            "compressor",
            vec![
                ("threshold", num(-20.0)),
                ("ratio", num(4.0)),
                ("knee", num(6.0)),
                ("attack", num(0.001)),
                ("release", num(0.03)),
                ("makeup", num(3.0)),
                ("lookahead", num(0.002)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 2,
        ..case(
            "compressor",
            vec![
                ("detector", enum_ix("compressor", "detector", "rms")),
                ("threshold", num(-24.0)),
                ("ratio", num(8.0)),
                ("knee", num(0.0)),
                ("attack", num(0.0005)),
                ("release", num(0.01)),
            ],
        )
    });
    v.push(Case {
        n_inputs: 1,
        mods: vec![("release", control_signal(FRAMES, 0.005))],
        ..case(
            "limiter",
            vec![
                ("ceiling", num(-6.0)),
                ("release", num(0.01)),
                ("lookahead", num(0.001)),
            ],
        )
    });
    // Limiting the 4× oversampled true peak.
    v.push(Case {
        n_inputs: 1,
        ..case(
            "limiter",
            vec![
                ("ceiling", num(-3.0)),
                ("release", num(0.01)),
                ("lookahead", num(0.001)),
                ("true_peak", Value::Bool(true)),
            ],
        )
    });
    let span = |num: i128, den: i128| Value::Span(crate::scene::Rational::new(num, den).unwrap());
    // 480 samples a step (exact), rests, default gate.
    v.push(case(
        "sequencer",
        vec![
            (
                "steps",
                Value::Gains(vec![60.0, f64::NAN, 63.0, 67.0, f64::NAN, 0.25]),
            ),
            ("rate", span(1, 100)),
        ],
    ));
    // 48000/97 samples a step (not whole), swing, a modulated gate, Hz out,
    // stopping after the last step.
    v.push(Case {
        mods: vec![("gate", control_signal(FRAMES, 0.3))],
        ..case(
            "sequencer",
            vec![
                (
                    "steps",
                    Value::Gains(vec![57.0, 64.0, f64::NAN, 69.0, 72.0, 60.0, 62.0]),
                ),
                ("rate", span(1, 97)),
                ("gate", num(0.6)),
                ("swing", num(0.3)),
                ("loop", Value::Bool(false)),
                ("output", enum_ix("sequencer", "output", "hz")),
            ],
        )
    });
    v.extend(envelope_and_utility_cases());
    for mode in ["lowpass", "highpass", "bandpass", "notch"] {
        v.push(Case {
            n_inputs: 1,
            mods: vec![("cutoff", control_signal(FRAMES, 400.0))],
            ..case(
                "svf",
                vec![
                    ("mode", enum_ix("svf", "mode", mode)),
                    ("cutoff", num(1500.0)),
                    ("q", num(1.5)),
                ],
            )
        });
    }
    // The sources and resonators of the second wave: coloured noise, dust
    // (dense enough for 256 frames to hold impulses), a string plucked
    // by a gate and one driven by its input, combs and allpasses read
    // both ways with their delays modulated.
    v.extend([
        case(
            "noise",
            vec![
                ("amp", num(0.5)),
                ("color", enum_ix("noise", "color", "pink")),
            ],
        ),
        case(
            "noise",
            vec![
                ("amp", num(0.5)),
                ("color", enum_ix("noise", "color", "brown")),
            ],
        ),
        Case {
            mods: vec![("density", control_signal(FRAMES, 1500.0))],
            ..case("dust", vec![("density", num(2000.0))])
        },
        case(
            "dust",
            vec![
                ("density", num(4000.0)),
                ("bipolar", Value::Bool(true)),
                ("seed", Value::Integer(5)),
            ],
        ),
        Case {
            mods: vec![
                ("trigger", gate_signal(FRAMES)),
                ("freq", control_signal(FRAMES, 30.0)),
            ],
            ..case(
                "pluck",
                vec![
                    ("freq", num(330.0)),
                    ("decay", num(0.3)),
                    ("brightness", num(0.3)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            ..case(
                "pluck",
                vec![
                    ("freq", num(1234.5)),
                    ("decay", num(0.05)),
                    ("trigger", num(1.0)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            mods: vec![("time", control_signal(FRAMES, 0.001))],
            ..case(
                "comb",
                vec![
                    ("time", num(0.0021)),
                    ("gain", num(0.8)),
                    ("max_time", num(0.01)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            mods: vec![("gain", control_signal(FRAMES, 0.3))],
            ..case(
                "comb",
                vec![
                    ("time", num(0.00123)),
                    ("gain", num(-0.6)),
                    ("mode", enum_ix("comb", "mode", "feedforward")),
                    ("interp", enum_ix("comb", "interp", "allpass")),
                    ("max_time", num(0.01)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            mods: vec![("time", control_signal(FRAMES, 0.0005))],
            ..case(
                "allpass",
                vec![
                    ("time", num(0.0017)),
                    ("gain", num(0.6)),
                    ("interp", enum_ix("allpass", "interp", "allpass")),
                    ("max_time", num(0.01)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            ..case("allpass", vec![("time", num(0.0005)), ("gain", num(-0.7))])
        },
    ]);
    // The pitch shifter: a window short enough for the golden's 256
    // frames to hear both taps, its shift modulated across octaves.
    v.push(Case {
        n_inputs: 1,
        mods: vec![("semitones", control_signal(FRAMES, 10.0))],
        ..case(
            "pitch_shift",
            vec![
                ("semitones", num(7.0)),
                ("window", num(0.003)),
                ("crossfade", num(0.0004)),
            ],
        )
    });
    // Three tables of harmonics, the position swept across them.
    v.push(Case {
        mods: vec![
            ("position", control_signal(FRAMES, 0.5)),
            ("freq", control_signal(FRAMES, 300.0)),
        ],
        ..case(
            "wavetable",
            vec![
                ("freq", num(2500.0)),
                ("position", num(0.5)),
                (
                    "harmonics",
                    Value::Gains(vec![
                        1.0, 0.5, 0.33, 0.25, 1.0, 0.0, 0.33, 0.0, 0.0, 1.0, 0.0, 0.5,
                    ]),
                ),
                ("tables", Value::Integer(3)),
            ],
        )
    });
    // Grains of the test file, pitch and position modulated, panned and
    // jittered, a pool small enough to fill; and grains of the input,
    // their size and density modulated.
    v.extend([
        Case {
            mods: vec![
                ("pitch", control_signal(FRAMES, 12.0)),
                ("position", control_signal(FRAMES, 0.3)),
            ],
            ..case(
                "grains",
                vec![
                    ("file", Value::Resource(test_audio())),
                    ("position", num(0.4)),
                    ("size", num(0.003)),
                    ("density", num(4000.0)),
                    ("spread", num(0.2)),
                    ("pan_spread", num(0.7)),
                    ("max_grains", Value::Integer(8)),
                ],
            )
        },
        Case {
            n_inputs: 1,
            mods: vec![
                ("size", control_signal(FRAMES, 0.002)),
                ("density", control_signal(FRAMES, 1000.0)),
            ],
            ..case(
                "grains",
                vec![
                    ("size", num(0.004)),
                    ("density", num(3000.0)),
                    ("pitch", num(-5.0)),
                    ("spread", num(0.5)),
                    ("window", enum_ix("grains", "window", "triangle")),
                    ("buffer", num(0.02)),
                    ("max_grains", Value::Integer(8)),
                ],
            )
        },
    ]);
    v
}

/// `env`, `adsr`'s curve, and the signal utilities, their ports modulated.
fn envelope_and_utility_cases() -> Vec<Case> {
    let gains = |v: &[f64]| Value::Gains(v.to_vec());
    let with = |n_inputs: usize, mods: Vec<(&'static str, Vec<f64>)>, c: Case| Case {
        n_inputs,
        mods,
        ..c
    };
    vec![
        with(
            0,
            vec![("gate", gate_signal(FRAMES))],
            case(
                "adsr",
                vec![
                    ("attack", num(0.002)),
                    ("decay", num(0.005)),
                    ("sustain", num(0.5)),
                    ("release", num(0.004)),
                    ("curve", num(-4.0)),
                ],
            ),
        ),
        // Curved segments, a sustain node and a loop.
        with(
            0,
            vec![("gate", gate_signal(FRAMES))],
            case(
                "env",
                vec![
                    ("levels", gains(&[0.0, 1.0, 0.2, 0.6, 0.0])),
                    ("times", gains(&[0.0015, 0.001, 0.0007, 0.003])),
                    ("curves", gains(&[-3.0, 2.0, 0.0, -5.0])),
                    ("sustain", Value::Integer(3)),
                    ("loop", Value::Integer(1)),
                ],
            ),
        ),
        // Exponential segments, no sustain: one pass per rising gate.
        with(
            0,
            vec![("gate", gate_signal(FRAMES))],
            case(
                "env",
                vec![
                    ("levels", gains(&[0.001, 1.0, 0.05])),
                    ("times", gains(&[0.002, 0.004])),
                    ("exponential", Value::Bool(true)),
                ],
            ),
        ),
        with(
            1,
            vec![("down", control_signal(FRAMES, 0.001))],
            case("lag", vec![("up", num(0.0005)), ("down", num(0.003))]),
        ),
        with(
            1,
            vec![("up", control_signal(FRAMES, 100.0))],
            case("slew", vec![("up", num(200.0)), ("down", num(50.0))]),
        ),
        with(1, vec![], case("abs", vec![])),
        with(
            1,
            vec![("hi", control_signal(FRAMES, 0.2))],
            case("clip", vec![("lo", num(-0.3)), ("hi", num(0.25))]),
        ),
        with(2, vec![], case("min", vec![])),
        with(2, vec![], case("max", vec![])),
        with(
            1,
            vec![("out_hi", control_signal(FRAMES, 500.0))],
            case(
                "scale",
                vec![
                    ("in_lo", num(-0.5)),
                    ("in_hi", num(0.5)),
                    ("out_lo", num(100.0)),
                    ("out_hi", num(2000.0)),
                    ("curve", Value::Enum(1)),
                ],
            ),
        ),
        with(
            1,
            vec![("in_lo", control_signal(FRAMES, 0.3))],
            case("scale", vec![("out_lo", num(-2.0)), ("out_hi", num(3.0))]),
        ),
        with(
            1,
            vec![("step", control_signal(FRAMES, 0.05))],
            case("quantise", vec![("step", num(0.125))]),
        ),
        with(
            1,
            vec![],
            case(
                "quantise",
                // A quarter tone above 0, so the test signal (within
                // ±0.7 semitones of 0) lands on two notes.
                vec![("scale", gains(&[0.0, 0.5, 3.0, 7.0, 10.0]))],
            ),
        ),
        with(
            1,
            vec![("trig", gate_signal(FRAMES))],
            case("sample_hold", vec![]),
        ),
        with(
            2,
            vec![("mix", control_signal(FRAMES, 0.4))],
            case("crossfade", vec![("mix", num(0.5))]),
        ),
        with(
            2,
            vec![("pos", control_signal(FRAMES, 0.8))],
            case("balance", vec![("pos", num(0.2))]),
        ),
        with(
            2,
            vec![("width", control_signal(FRAMES, 0.5))],
            case("width", vec![("width", num(1.4))]),
        ),
    ]
}

/// Cases the conformance suite runs that have no golden vector (the goldens
/// are locked; these cover params added since).
fn extra_cases() -> Vec<Case> {
    vec![
        // A lookahead longer than a save part (2400 samples): the
        // limiter's rings are saved over several blocks. (Longer than
        // a golden vector's 256 frames, so no golden.)
        Case {
            n_inputs: 1,
            ..case(
                "limiter",
                vec![
                    ("ceiling", num(-9.0)),
                    ("release", num(0.05)),
                    ("lookahead", num(0.05)),
                ],
            )
        },
        // A wavetable from a WAV of two 64-frame tables.
        case(
            "wavetable",
            vec![
                ("freq", num(700.0)),
                ("position", num(0.3)),
                (
                    "file",
                    Value::Resource(Arc::new(AudioData {
                        path: "tables.wav".into(),
                        sample_rate: 48000,
                        channels: vec![test_signal(13, 128)],
                    })),
                ),
                ("table_size", Value::Integer(64)),
            ],
        ),
        // Hard sync: a saw and a square restarted by a square wave.
        Case {
            n_inputs: 1,
            ..case("saw", vec![("freq", num(1700.0))])
        },
        Case {
            n_inputs: 1,
            mods: vec![("freq", control_signal(FRAMES, 400.0))],
            ..case("square", vec![("freq", num(900.0)), ("duty", num(0.4))])
        },
        // The band-limited triangle.
        Case {
            mods: vec![("freq", control_signal(FRAMES, 500.0))],
            ..case(
                "triangle",
                vec![("freq", num(3000.5)), ("band_limited", Value::Bool(true))],
            )
        },
        // The pitch shifter at its default window (latency 2402 samples),
        // its crossfade and mix modulated.
        Case {
            n_inputs: 1,
            mods: vec![
                ("crossfade", control_signal(FRAMES, 0.003)),
                ("mix", control_signal(FRAMES, 0.3)),
            ],
            ..case(
                "pitch_shift",
                vec![
                    ("semitones", num(-5.5)),
                    ("crossfade", num(0.004)),
                    ("mix", num(0.6)),
                ],
            )
        },
        // Retriggered by a gate: restarts at every rising edge.
        Case {
            mods: vec![("trigger", gate_signal(FRAMES))],
            ..case(
                "sampler",
                vec![("file", Value::Resource(test_audio())), ("rate", num(1.25))],
            )
        },
    ]
}

/// Everything the conformance suite checks.
fn all_cases() -> Vec<Case> {
    let mut v = cases();
    v.extend(extra_cases());
    v
}

fn runner(c: &Case, profile: Profile, precision: Precision) -> NodeRunner {
    let spec = super::lookup(c.op).unwrap();
    NodeRunner::new(
        spec,
        values_with(spec, &c.params),
        profile,
        Some(precision),
        SR,
        4096,
        c.n_inputs,
    )
    .unwrap_or_else(|e| panic!("{}: build failed: {e}", c.op))
}

fn inputs(c: &Case) -> Vec<Vec<f64>> {
    (0..c.n_inputs)
        .map(|k| test_signal(100 + k as u64, FRAMES))
        .collect()
}

fn mods(c: &Case) -> Vec<(usize, Vec<f64>)> {
    let spec = super::lookup(c.op).unwrap();
    c.mods
        .iter()
        .map(|(name, sig)| (spec.param_index(name).unwrap(), sig.clone()))
        .collect()
}

fn check_case(c: &Case, profile: Profile, precision: Precision) {
    let label = format!(
        "{} {:?} {:?}",
        c.op,
        c.params.iter().map(|p| p.0).collect::<Vec<_>>(),
        precision
    );
    let ins = inputs(c);
    let ms = mods(c);
    let mut reference_runner = runner(c, profile, precision);
    let reference = reference_runner.run(&ins, &ms, FRAMES, &[1]);
    assert!(
        reference.iter().flatten().any(|x| *x != 0.0),
        "{label}: output is all zeros"
    );
    assert!(
        reference.iter().flatten().all(|x| x.is_finite()),
        "{label}: non-finite output"
    );
    // Block-size invariance.
    for blocks in conformance_block_sizes() {
        let mut r = runner(c, profile, precision);
        let out = r.run(&ins, &ms, FRAMES, &blocks);
        if let Some(d) = first_difference(&reference, &out) {
            panic!(
                "{label}: block sizes {:?}…: {d}",
                &blocks[..blocks.len().min(4)]
            );
        }
    }
    // Reset reproduces.
    reference_runner.reset();
    let again = reference_runner.run(&ins, &ms, FRAMES, &[64]);
    if let Some(d) = first_difference(&reference, &again) {
        panic!("{label}: after reset: {d}");
    }
    // A reset in parts (as the engine spreads one over blocks) reproduces.
    let mut parted = runner(c, profile, precision);
    parted.run(&ins, &ms, FRAMES, &[64]);
    let mut done = 0;
    while let super::Progress::Copied(n) = parted.node().reset_part(done, 1000) {
        assert!(n > done, "{label}: a reset part made no progress");
        done = n;
    }
    parted.set_clock(0);
    let again = parted.run(&ins, &ms, FRAMES, &[64]);
    if let Some(d) = first_difference(&reference, &again) {
        panic!("{label}: after a reset in parts: {d}");
    }
    // Dirty output buffers do not leak.
    let mut dirty = runner(c, profile, precision);
    dirty.dirty_fill = f64::NAN;
    let out = dirty.run(&ins, &ms, FRAMES, &[37]);
    if let Some(d) = first_difference(&reference, &out) {
        panic!("{label}: dirty output buffers: {d}");
    }
    // restore(snapshot()) continues bit-exactly in a fresh node.
    let split = 2000;
    let head_in: Vec<Vec<f64>> = ins.iter().map(|v| v[..split].to_vec()).collect();
    let tail_in: Vec<Vec<f64>> = ins.iter().map(|v| v[split..].to_vec()).collect();
    let head_mods: Vec<(usize, Vec<f64>)> =
        ms.iter().map(|(p, v)| (*p, v[..split].to_vec())).collect();
    let tail_mods: Vec<(usize, Vec<f64>)> =
        ms.iter().map(|(p, v)| (*p, v[split..].to_vec())).collect();
    let mut first = runner(c, profile, precision);
    first.run(&head_in, &head_mods, split, &[100]);
    let st = first.snapshot();
    let mut second = runner(c, profile, precision);
    second
        .node()
        .restore(&st)
        .unwrap_or_else(|e| panic!("{label}: restore: {e}"));
    second.set_clock(split as u64);
    let tail = second.run(&tail_in, &tail_mods, FRAMES - split, &[100]);
    let want: Vec<Vec<f64>> = reference.iter().map(|v| v[split..].to_vec()).collect();
    if let Some(d) = first_difference(&want, &tail) {
        panic!("{label}: after restore(snapshot()): {d}");
    }
    // A save in parts while the node keeps running (as the audio
    // thread spreads one over blocks) is the state at its first part:
    // parts of 2000 samples, 100 frames run between them (the input wraps
    // around if the state is long).
    let mut running = runner(c, profile, precision);
    running.run(&head_in, &head_mods, split, &[100]);
    let mut parts = st.clone();
    let mut p = running.node().save_part(&mut parts, 0, 2000);
    let mut at = split;
    while let super::Progress::Copied(done) = p {
        let at_k = at % (FRAMES - 100);
        let ins_k: Vec<Vec<f64>> = ins.iter().map(|v| v[at_k..at_k + 100].to_vec()).collect();
        let ms_k: Vec<(usize, Vec<f64>)> = ms
            .iter()
            .map(|(i, v)| (*i, v[at_k..at_k + 100].to_vec()))
            .collect();
        running.run(&ins_k, &ms_k, 100, &[100]);
        at += 100;
        p = running.node().save_part(&mut parts, done, 2000);
    }
    if parts != st {
        panic!("{label}: a save in parts differs from the snapshot at its start");
    }
}

#[test]
fn every_operator_has_a_conformance_case() {
    let cs = cases();
    for spec in registry() {
        assert!(
            cs.iter().any(|c| c.op == spec.name),
            "no conformance case for `{}`",
            spec.name
        );
    }
}

#[test]
fn conformance_strict_f64() {
    for c in all_cases() {
        check_case(&c, Profile::Strict, Precision::F64);
    }
}

#[test]
fn conformance_repro_f32() {
    for c in all_cases() {
        check_case(&c, Profile::Repro, Precision::F32);
    }
}

#[test]
fn conformance_live_f32() {
    for c in all_cases() {
        check_case(&c, Profile::Live, Precision::F32);
    }
}

/// What [`check_ports_held`] drives each
/// port with.
const EXTREMES: [f64; 5] = [1e30, -1e30, f64::INFINITY, f64::NEG_INFINITY, f64::NAN];

/// The largest |output| an operator's case may give, for inputs within ±1
/// (the test signal peaks below 0.7) and every param within its declared
/// range — which is all a node sees, whatever drives its ports. What bounds
/// each:
/// - a level param declared within ±1e6 (`amp`, `value`, `gain`) times a
///   waveform, noise word, sample or input within ±1 (the fast sine of
///   live within 1 + 1e-5); an `lfo` adds
///   `offset` to `amount` times its shape, each within ±1e6;
/// - `convolution`: `gain` ≤ 1e6 times the impulse response's L1 norm
///   (the triangle inequality), or the dry input;
/// - `biquad`: its peak gain (`gain` ≤ 1e6) or its resonance (about `q` ≤
///   1000), taken together as their product;
/// - `svf`: its resonance, about `q` ≤ 1000, times 4 for a broadband
///   input's transients;
/// - `compressor`: `makeup` ≤ 48 dB (its gain reduction never gains);
/// - `delay` and `comb`: a comb's peak gain 1 / (1 − |feedback|) with
///   |feedback| ≤ 0.999; `flanger` and `phaser` the same with 0.99;
/// - `noise`: pink's and brown's filters sum |h[n]| to at most 20 (brown's
///   leaky integrator, 19.3 at 48 kHz; pink's 10) times `amp`;
/// - `pluck`: a burst of `amp` at each of the gate's two rising edges in
///   2000 frames, its loop's gain at most 1 per pass at every frequency
///   (8 leaves room for the bursts overlapping the ringing);
/// - `grains`: `max_grains` (8 in its cases) windows at most 1, at gains
///   at most √2, times `amp` and samples within ±1;
/// - `sequencer`: its largest step (the case's steps as Hz);
/// - `scale`, `clip`, `quantise`: a level param's ±1e6 (an output range,
///   a bound, a step); `lag` and `slew`: their `value`, ±1e9, plus `in`;
/// - everything else (envelopes, followers, the limiter, pan, saturation,
///   the chorus, the reverb, the spectral gate) is at most unity gain: 4
///   leaves room for an oversampling filter's or a network's overshoot.
fn port_drive_bound(op: &str) -> f64 {
    let level = 1e6;
    match op {
        "sine" | "saw" | "square" | "triangle" | "impulse" | "dc" | "sampler" | "gain" | "dust" => {
            level * (1.0 + 1e-5)
        }
        "noise" => level * 20.0,
        "pluck" => level * 8.0,
        // Its tables' largest sum of |harmonics| (or of |samples|) times
        // Hermite's worst sum of |weights|, 1.25.
        "wavetable" => level * 2.6 * 1.25,
        // At most `max_grains` (8 in its cases) windows of at most 1 at
        // equal-power gains of at most √2, over samples within ±1.
        "grains" => level * 8.0 * core::f64::consts::SQRT_2,
        "lfo" => 2.0 * level * (1.0 + 1e-5),
        "convolution" => {
            let ir = test_audio();
            let l1 = ir
                .channels
                .iter()
                .map(|c| c.iter().map(|x| x.abs()).sum::<f64>());
            level * l1.fold(1.0, f64::max)
        }
        "biquad" => level * 1000.0,
        "svf" => 4.0 * 1000.0,
        "compressor" => libm::pow(10.0, 48.0 / 20.0),
        "delay" | "comb" => 1.0 / (1.0 - 0.999),
        "flanger" | "phaser" => 1.0 / (1.0 - 0.99),
        "sequencer" => 440.0 * libm::exp2((127.0 - 69.0) / 12.0),
        // Their ranges' ends are levels (a `scale`'s output range, a
        // `clip`'s bounds, a `quantise` step up to 1e6).
        "scale" | "clip" | "quantise" => level,
        // `value` is added to the input, within ±1e9.
        "lag" | "slew" => 1e9 + 1.0,
        _ => 4.0,
    }
}

/// Every number param reached through a port is held to its declared
/// range, for every operator alike (the engine's [`Params`](super::Params)
/// does it, not each operator): each port of each case, driven with ±1e30,
/// ±∞ and NaN (the other ports as the case drives them), gives finite
/// output within [`port_drive_bound`]; and under strict the node plays, bit
/// for bit, what it plays with the param's static value at the range's end
/// (the lower for −, the upper for +; the static value itself for NaN) and
/// its port driven with 0.
fn check_ports_held(profile: Profile, precision: Precision) {
    let frames = 2000;
    for c in all_cases() {
        let spec = super::lookup(c.op).unwrap();
        let ins: Vec<Vec<f64>> = inputs(&c).iter().map(|v| v[..frames].to_vec()).collect();
        let values = values_with(spec, &c.params);
        let bound = port_drive_bound(c.op);
        let ports = spec.params.iter().enumerate().filter(|(_, p)| p.is_port());
        for (k, p) in ports {
            let super::ParamKind::Number { min, max, .. } = p.kind else {
                unreachable!("a port is a number param")
            };
            let base = values[k].as_number().unwrap();
            // The node with the param's static value `at`, its port driven with `x`.
            let driven_from = |at: f64, x: f64| -> Vec<Vec<f64>> {
                let mut ms: Vec<(usize, Vec<f64>)> = mods(&c)
                    .into_iter()
                    .filter(|(i, _)| *i != k)
                    .map(|(i, v)| (i, v[..frames].to_vec()))
                    .collect();
                ms.push((k, vec![x; frames]));
                let mut r = runner(&c, profile, precision);
                *r.param_state(k) = super::ParamState::constant(at);
                r.run(&ins, &ms, frames, &[64])
            };
            for x in EXTREMES {
                let label = format!("{} {} driven with {x:e} ({precision:?})", c.op, p.name);
                let out = driven_from(base, x);
                let peak = out.iter().flatten().fold(0.0f64, |m, y| m.max(y.abs()));
                assert!(
                    out.iter().flatten().all(|y| y.is_finite()),
                    "{label}: non-finite output"
                );
                assert!(peak <= bound, "{label}: peak {peak:e} over {bound:e}");
                if precision != Precision::F64 {
                    continue;
                }
                // The param's static value set to where `x` is held, and
                // its port driven with 0: the same modulated path.
                let target = if x.is_nan() {
                    base
                } else if x > 0.0 {
                    max
                } else {
                    min
                };
                if let Some(diff) = first_difference(&driven_from(target, 0.0), &out) {
                    panic!("{label}: not as at {target:e}: {diff}");
                }
            }
        }
    }
}

#[test]
fn every_port_holds_its_param_to_the_declared_range_strict() {
    check_ports_held(Profile::Strict, Precision::F64);
}

#[test]
fn every_port_holds_its_param_to_the_declared_range_repro() {
    check_ports_held(Profile::Repro, Precision::F32);
}

#[test]
fn every_port_holds_its_param_to_the_declared_range_live() {
    check_ports_held(Profile::Live, Precision::F32);
}
