//! `pitch_shift`'s tests: the shifter written out against a plain history
//! (constant and modulated shifts, the strict golden vectors), the pitch
//! of shifted sines from their zero crossings (within 1 cent), their level
//! over 20 ms windows (steady within 1 dB, the taps' splices in antiphase
//! included), the latency and the dry path, repro and live beside strict.
use super::*;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;
use core::f64::consts::PI;

const SR: f64 = 48000.0;

fn runner(params: &[(&str, f64)], profile: Profile, precision: Option<Precision>) -> NodeRunner {
    let set: Vec<(&str, Value)> = params
        .iter()
        .map(|(n, v)| (*n, Value::Number(*v)))
        .collect();
    NodeRunner::new(
        &PITCH_SHIFT,
        values_with(&PITCH_SHIFT, &set),
        profile,
        precision,
        SR,
        4096,
        1,
    )
    .unwrap()
}

/// `x` through a strict node with these params, in blocks of 512.
fn shifted(x: &[f64], params: &[(&str, f64)]) -> Vec<f64> {
    let mut r = runner(params, Profile::Strict, Some(Precision::F64));
    r.run(&[x.to_vec()], &[], x.len(), &[512]).remove(0)
}

/// The shifter as the module docs write it, against a plain history that
/// is silent before 0: `semitones[n]` at each sample, the other params
/// constant.
fn oracle(x: &[f64], semitones: &[f64], window: f64, crossfade: f64, mix: f64) -> Vec<f64> {
    let l = 2.0 * (window * SR / 2.0).round().max(2.0);
    let at = |n: usize, k: f64| {
        let i = n as f64 - k;
        if i >= 0.0 {
            x[i as usize]
        } else {
            0.0
        }
    };
    // Catmull–Rom through the samples `k − 1 … k + 2` back, by its weights.
    let read = |n: usize, d: f64| {
        let k = d.floor();
        let f = d - k;
        let (f2, f3) = (f * f, f * f * f);
        let w = [
            (-f3 + 2.0 * f2 - f) / 2.0,
            (3.0 * f3 - 5.0 * f2 + 2.0) / 2.0,
            (-3.0 * f3 + 4.0 * f2 + f) / 2.0,
            (f3 - f2) / 2.0,
        ];
        w[0] * at(n, k - 1.0) + w[1] * at(n, k) + w[2] * at(n, k + 1.0) + w[3] * at(n, k + 2.0)
    };
    let smoothstep = |u: f64| {
        let u = u.clamp(0.0, 1.0);
        3.0 * u * u - 2.0 * u * u * u
    };
    let mut p = 0.0f64;
    let mut y = Vec::with_capacity(x.len());
    for (n, st) in semitones.iter().enumerate() {
        let s = 1.0 - libm::pow(2.0, st / 12.0);
        p += s / l;
        if p >= 1.0 {
            p -= 1.0;
        } else if p < 0.0 {
            p += 1.0;
            if p >= 1.0 {
                p = 0.0;
            }
        }
        let q = if p < 0.5 { p + 0.5 } else { p - 0.5 };
        let c = (crossfade * SR * s.abs() / l).min(0.5);
        let e = 0.25 - (p - 0.5).abs();
        let wp = if c > 0.0 {
            smoothstep(0.5 + e / c)
        } else if e > 0.0 {
            1.0
        } else {
            0.0
        };
        let wq = 1.0 - wp;
        let mut wet = 0.0;
        if wp != 0.0 {
            wet += wp * read(n, 2.0 + p * l);
        }
        if wq != 0.0 {
            wet += wq * read(n, 2.0 + q * l);
        }
        let dry = at(n, 2.0 + l / 2.0);
        y.push(mix * wet + (1.0 - mix) * dry);
    }
    y
}

fn worst(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
}

#[test]
fn the_shifter_follows_its_documented_equations() {
    let frames = 6000;
    let x = test_signal(3, frames);
    for (st, window, crossfade, mix) in [
        (7.0, 0.01, 0.002, 1.0),
        (-12.0, 0.004, 0.0005, 0.7),
        (3.5, 0.02, 0.0, 1.0),
        (24.0, 0.003, 0.01, 0.25),
        (-24.0, 0.006, 0.001, 1.0),
    ] {
        let y = shifted(
            &x,
            &[
                ("semitones", st),
                ("window", window),
                ("crossfade", crossfade),
                ("mix", mix),
            ],
        );
        let want = oracle(&x, &vec![st; frames], window, crossfade, mix);
        let w = worst(&y, &want);
        assert!(w <= 1e-12, "{st} st, window {window}: {w:e}");
        assert!(y.iter().any(|v| v.abs() > 0.1), "{st} st: silent");
    }
}

/// `semitones` moved by a signal on its port, sample by sample, as the
/// oracle moves it.
#[test]
fn a_modulated_shift_follows_the_equations_sample_by_sample() {
    let frames = 5000;
    let x = test_signal(4, frames);
    let sweep: Vec<f64> = (0..frames)
        .map(|n| 9.0 * libm::sin(2.0 * PI * 7.0 * n as f64 / SR))
        .collect();
    let mut r = runner(
        &[("semitones", 2.0), ("window", 0.008)],
        Profile::Strict,
        Some(Precision::F64),
    );
    let y = r
        .run(
            std::slice::from_ref(&x),
            &[(SEMITONES, sweep.clone())],
            frames,
            &[64, 7],
        )
        .remove(0);
    let st: Vec<f64> = sweep.iter().map(|v| 2.0 + v).collect();
    let w = worst(&y, &oracle(&x, &st, 0.008, 0.005, 1.0));
    assert!(w <= 1e-12, "{w:e}");
}

/// The golden vectors (the strict output the golden test locks) are what
/// the oracle computes from their inputs and modulation.
#[test]
fn the_golden_vectors_are_the_oracles_output() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../golden/ops/pitch_shift.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the golden")).unwrap();
    let hex = |v: &serde_json::Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| crate::dsp::bits::from_hex(s.as_str().unwrap()).unwrap())
            .collect()
    };
    let cases = doc["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for (k, c) in cases.iter().enumerate() {
        let param = |name: &str, default: f64| {
            c["params"][name]
                .as_str()
                .map_or(default, |h| crate::dsp::bits::from_hex(h).unwrap())
        };
        let x = hex(&c["inputs"][0]);
        let base = param("semitones", 0.0);
        let mut st = vec![base; x.len()];
        for m in c["modulation"].as_array().unwrap() {
            assert_eq!(
                m["param"], "semitones",
                "the oracle modulates semitones only"
            );
            for (s, v) in st.iter_mut().zip(hex(&m["signal"])) {
                *s = (base + v).clamp(-MAX_SEMITONES, MAX_SEMITONES);
            }
        }
        let want = oracle(
            &x,
            &st,
            param("window", 0.1),
            param("crossfade", 0.005),
            param("mix", 1.0),
        );
        let got = hex(&c["outputs"]["out"]);
        let w = worst(&got, &want);
        assert!(w <= 1e-12, "case {k}: {w:e}");
        assert!(
            got.iter().any(|v| v.abs() > 0.05),
            "case {k} hears the taps"
        );
    }
}

/// A sine of `hz` at amplitude 0.5 for `frames`.
fn sine(hz: f64, frames: usize) -> Vec<f64> {
    (0..frames)
        .map(|n| 0.5 * libm::sin(2.0 * PI * hz * n as f64 / SR))
        .collect()
}

/// The frequency of `y` from the median interval between its upward zero
/// crossings (each placed by linear interpolation): what repeats between
/// the splices, where a splice disturbs only the few periods it spans.
fn zero_crossing_hz(y: &[f64]) -> f64 {
    let ups: Vec<f64> = y
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w[0] < 0.0 && w[1] >= 0.0)
        .map(|(i, w)| i as f64 + w[0] / (w[0] - w[1]))
        .collect();
    let mut periods: Vec<f64> = ups.windows(2).map(|w| w[1] - w[0]).collect();
    periods.sort_by(f64::total_cmp);
    SR / periods[periods.len() / 2]
}

/// The RMS in dB of each 20 ms window of `y`, windows 1 ms apart.
fn levels_db(y: &[f64]) -> Vec<f64> {
    let win = (0.02 * SR) as usize;
    (0..(y.len() - win) / 48)
        .map(|k| {
            let w = &y[48 * k..48 * k + win];
            10.0 * libm::log10(w.iter().map(|v| v * v).sum::<f64>() / win as f64)
        })
        .collect()
}

/// Input sines whose two taps meet in phase (1000 Hz: the taps are
/// 2400 samples, 50 periods apart), in antiphase (1010 Hz: 50½ periods)
/// and a quarter period apart (1005 Hz), each shifted: the zero crossings
/// repeat at the shifted pitch within 1 cent, and the level over every
/// 20 ms window of the steady state stays within 1 dB.
#[test]
fn a_shifted_sine_has_the_shifted_pitch_and_a_steady_level() {
    let frames = 48_000;
    let steady = 9_600;
    let mut worst_cents = 0.0f64;
    let mut worst_db = 0.0f64;
    for hz in [1000.0, 1005.0, 1010.0] {
        let x = sine(hz, frames);
        for st in [-12.0, -5.0, 3.5, 7.0, 12.0] {
            let y = shifted(&x, &[("semitones", st)]);
            let y = &y[steady..];
            let want = hz * libm::pow(2.0, st / 12.0);
            let cents = 1200.0 * libm::log2(zero_crossing_hz(y) / want);
            assert!(cents.abs() < 1.0, "{hz} Hz {st} st: {cents} cents");
            let l = levels_db(y);
            let hi = l.iter().fold(f64::MIN, |m, v| m.max(*v));
            let lo = l.iter().fold(f64::MAX, |m, v| m.min(*v));
            // 0.5 amplitude is −9.03 dB RMS.
            assert!((hi - (-9.03)).abs() < 0.2, "{hz} Hz {st} st: top {hi} dB");
            assert!(hi - lo <= 1.0, "{hz} Hz {st} st: {lo}…{hi} dB");
            worst_cents = worst_cents.max(cents.abs());
            worst_db = worst_db.max(hi - lo);
        }
    }
    eprintln!(
        "pitch_shift: worst pitch error {worst_cents:.4} cents, worst level range {worst_db:.3} dB"
    );
}

#[test]
fn the_latency_is_half_the_window_plus_two_samples_and_no_shift_is_that_delay() {
    let x = test_signal(8, 3000);
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        for (window, latency) in [(0.1, 2402), (0.01, 242), (0.002, 50)] {
            let mut r = runner(&[("window", window)], profile, None);
            assert_eq!(r.node().latency(), latency, "{profile} window {window}");
            let y = r
                .run(std::slice::from_ref(&x), &[], x.len(), &[64])
                .remove(0);
            for (n, v) in y.iter().enumerate() {
                let want = if n >= latency { x[n - latency] } else { 0.0 };
                // The input rounded to the node's precision, exactly.
                let want = if profile == Profile::Strict {
                    want
                } else {
                    want as f32 as f64
                };
                assert_eq!(*v, want, "{profile} window {window} frame {n}");
            }
        }
    }
}

/// `mix` 0 is the input delayed by the latency whatever the shift.
#[test]
fn mix_zero_is_the_input_delayed_by_the_latency() {
    let x = test_signal(9, 3000);
    let y = shifted(&x, &[("semitones", 5.0), ("window", 0.01), ("mix", 0.0)]);
    for n in 242..3000 {
        assert_eq!(y[n], x[n - 242], "frame {n}");
    }
}

/// Repro and live (f32 samples, the phase in f64) stay within 2e-6 of
/// strict on a signal that peaks near 0.7, and the shifted sine's pitch is the same
/// within 0.01 cent.
#[test]
fn repro_and_live_stay_near_strict() {
    let x = test_signal(6, 24_000);
    let params = [("semitones", 7.0), ("window", 0.03), ("crossfade", 0.004)];
    let want = shifted(&x, &params);
    let s = sine(523.0, 48_000);
    let pitch_strict = zero_crossing_hz(&shifted(&s, &[("semitones", -5.0)])[9600..]);
    for profile in [Profile::Repro, Profile::Live] {
        let mut r = runner(&params, profile, None);
        let got = r
            .run(std::slice::from_ref(&x), &[], x.len(), &[256])
            .remove(0);
        let w = worst(&got, &want);
        eprintln!("pitch_shift {profile}: worst difference from strict {w:e}");
        assert!(w <= 2e-6, "{profile}: {w:e}");
        let mut r = runner(&[("semitones", -5.0)], profile, None);
        let y = r
            .run(std::slice::from_ref(&s), &[], s.len(), &[256])
            .remove(0);
        let cents = 1200.0 * libm::log2(zero_crossing_hz(&y[9600..]) / pitch_strict);
        assert!(cents.abs() < 0.01, "{profile}: {cents} cents");
    }
}

/// A snapshot restores only into a node with the same window.
#[test]
fn a_snapshot_of_another_window_is_refused() {
    let x = test_signal(1, 500);
    let mut a = runner(&[("window", 0.01)], Profile::Strict, None);
    a.run(std::slice::from_ref(&x), &[], 500, &[64]);
    let st = a.snapshot();
    let mut b = runner(&[("window", 0.02)], Profile::Strict, None);
    assert!(b.node().restore(&st).is_err());
    let mut c = runner(&[("window", 0.01)], Profile::Strict, None);
    assert!(c.node().restore(&st).is_ok());
}

/// A phase outside [0, 1) is not a state this node can be in: refused.
#[test]
fn a_snapshot_with_a_phase_out_of_its_cycle_is_refused() {
    let a = runner(&[("window", 0.01)], Profile::Strict, None);
    let mut st = a.snapshot();
    let mut b = runner(&[("window", 0.01)], Profile::Strict, None);
    assert!(b.node().restore(&st).is_ok());
    st.put_sample("phase", 1.5f64);
    assert!(b.node().restore(&st).is_err());
}
