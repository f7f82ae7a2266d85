//! Tests of `gate`: against a simulation written here from the formulas,
//! opening, hold and release timing, hysteresis, the sidechain key, and
//! the floor of `range`.

use super::*;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};

const SR: f64 = 48000.0;
const TAU: f64 = 2.0 * core::f64::consts::PI;

fn runner(params: &[(&str, Value)], inputs: usize, profile: Profile) -> NodeRunner {
    let precision = match profile {
        Profile::Strict => Precision::F64,
        _ => Precision::F32,
    };
    NodeRunner::new(
        &GATE,
        values_with(&GATE, params),
        profile,
        Some(precision),
        SR,
        512,
        inputs,
    )
    .unwrap()
}

fn num(v: f64) -> Value {
    Value::Number(v)
}

/// The gate simulated from the module's formulas: a peak detector with
/// instant attack and 5 ms release (the node's peak mode), the open/hold/close rule, and the
/// gain's one-pole glide; returns (out, gain).
#[allow(clippy::too_many_arguments)]
fn simulate(
    x: &[f64],
    key: &[f64],
    threshold: f64,
    range: f64,
    hysteresis: f64,
    attack: f64,
    hold: f64,
    release: f64,
) -> (Vec<f64>, Vec<f64>) {
    let lin = |db: f64| libm::pow(10.0, db / 20.0);
    let coef = |t: f64| libm::exp(-1.0 / (t * SR));
    let detect_release = coef(0.005);
    let (open_at, close_at, floor) = (lin(threshold), lin(threshold - hysteresis), lin(-range));
    let hold_n = libm::round(hold * SR) as i64;
    let (mut e, mut open, mut left, mut g) = (0.0f64, false, 0i64, floor);
    let mut out = Vec::new();
    let mut gains = Vec::new();
    for (xi, ki) in x.iter().zip(key) {
        let r = ki.abs();
        e = if r > e {
            r
        } else {
            r + detect_release * (e - r)
        };
        if e < 1e-30 {
            e = 0.0;
        }
        if e > open_at {
            open = true;
            left = hold_n;
        } else if open {
            if e >= close_at {
                left = hold_n;
            } else if left > 0 {
                left -= 1;
            } else {
                open = false;
            }
        }
        let target = if open { 1.0 } else { floor };
        let c = if target > g {
            coef(attack)
        } else {
            coef(release)
        };
        g = target + c * (g - target);
        out.push(xi * g);
        gains.push(g);
    }
    (out, gains)
}

/// A tone at `amp` in bursts: on for `on` samples out of each `period`.
fn bursts(n: usize, amp: f64, on: usize, period: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            if i % period < on {
                amp * libm::sin(TAU * 440.0 * i as f64 / SR)
            } else {
                0.0
            }
        })
        .collect()
}

#[test]
fn the_gate_matches_its_formulas_simulated_in_the_test() {
    let quiet: Vec<f64> = test_signal(3, 6000).iter().map(|v| 0.003 * v).collect();
    let loud = bursts(6000, 0.5, 1500, 3000);
    let x: Vec<f64> = quiet.iter().zip(&loud).map(|(a, b)| a + b).collect();
    let params = [
        ("threshold", num(-30.0)),
        ("range", num(60.0)),
        ("hysteresis", num(8.0)),
        ("attack", num(0.0005)),
        ("hold", num(0.01)),
        ("release", num(0.02)),
    ];
    let (want, want_g) = simulate(&x, &x, -30.0, 60.0, 8.0, 0.0005, 0.01, 0.02);
    for blocks in [vec![1], vec![64], vec![4096]] {
        let mut r = runner(&params, 1, Profile::Strict);
        let out = r.run(std::slice::from_ref(&x), &[], x.len(), &blocks);
        for n in 0..x.len() {
            assert!((out[0][n] - want[n]).abs() <= 1e-12, "frame {n}");
            assert!((out[1][n] - want_g[n]).abs() <= 1e-12, "gain, frame {n}");
        }
    }
    // Repro and live (f32 signal, f64 level and gain) stay within 1e-6.
    for profile in [Profile::Repro, Profile::Live] {
        let mut r = runner(&params, 1, profile);
        let out = r.run(std::slice::from_ref(&x), &[], x.len(), &[64]);
        for n in 0..x.len() {
            assert!((out[1][n] - want_g[n]).abs() <= 1e-6, "{profile} frame {n}");
        }
    }
}

#[test]
fn it_opens_on_a_burst_holds_then_releases_to_the_floor() {
    // 2000 samples of a −6 dBFS tone, then silence.
    let x = bursts(20000, 0.5, 2000, 1 << 20);
    let hold = 0.05;
    let release = 0.01;
    let mut r = runner(
        &[
            ("range", num(40.0)),
            ("hold", num(hold)),
            ("release", num(release)),
            ("attack", num(1e-5)),
        ],
        1,
        Profile::Strict,
    );
    let out = r.run(std::slice::from_ref(&x), &[], x.len(), &[128]);
    let g = &out[1];
    assert!((g[0] - 0.01).abs() < 1e-12, "starts closed at −40 dB");
    assert!(g[200] > 0.999_999, "open within the burst");
    // Fully open through the burst and for `hold` after it at least.
    let hold_n = (hold * SR) as usize;
    assert!(g[..2000 + hold_n].iter().skip(200).all(|v| *v == 1.0));
    // The detector (5 ms release from at most 0.5) is below the close
    // threshold (−46 dB) by `below`; the gate closes `hold` after that.
    let below =
        2000 + libm::ceil(0.005 * SR * libm::log(0.5 / libm::pow(10.0, -46.0 / 20.0))) as usize;
    let closed = (2000..x.len()).find(|&n| g[n] < 1.0).expect("closes");
    assert!(
        closed <= below + hold_n + 2,
        "closes at {closed}, by {}",
        below + hold_n + 2
    );
    // One release time later: 1 − 1/e of the way down to 0.01.
    let k = closed - 1 + (release * SR) as usize;
    let want = 0.01 + 0.99 * libm::exp(-1.0);
    assert!((g[k] - want).abs() < 1e-9, "{} vs {want}", g[k]);
    assert!((g[x.len() - 1] - 0.01).abs() < 1e-6, "at the floor");
}

#[test]
fn a_level_inside_the_hysteresis_band_changes_nothing() {
    // Threshold −20 dB, hysteresis 10 dB: a −25 dB tone neither opens a
    // closed gate nor closes an open one.
    let lvl = libm::pow(10.0, -25.0 / 20.0);
    let params = [
        ("threshold", num(-20.0)),
        ("hysteresis", num(10.0)),
        ("hold", num(0.0)),
        ("attack", num(1e-5)),
        ("release", num(1e-3)),
    ];
    let tone = |amp: f64, n: usize| -> Vec<f64> {
        (0..n)
            .map(|i| amp * libm::sin(TAU * 1000.0 * i as f64 / SR))
            .collect()
    };
    let mut r = runner(&params, 1, Profile::Strict);
    let out = r.run(&[tone(lvl, 9600)], &[], 9600, &[64]);
    assert!(out[1].iter().all(|g| *g < 1e-3), "never opens");
    // Open it with a −10 dB tone, then drop to −25 dB: stays open.
    let mut x = tone(libm::pow(10.0, -10.0 / 20.0), 2400);
    x.extend(tone(lvl, 9600).into_iter().skip(2400));
    let mut r = runner(&params, 1, Profile::Strict);
    let out = r.run(&[x], &[], 9600, &[64]);
    assert!(out[1][2400..].iter().all(|g| *g == 1.0), "stays open");
    // And −35 dB closes it.
    let mut x = tone(libm::pow(10.0, -10.0 / 20.0), 2400);
    x.extend(
        tone(libm::pow(10.0, -35.0 / 20.0), 9600)
            .into_iter()
            .skip(2400),
    );
    let mut r = runner(&params, 1, Profile::Strict);
    let out = r.run(&[x], &[], 9600, &[64]);
    assert!(out[1][9599] < 1e-3, "closed: {}", out[1][9599]);
}

#[test]
fn the_sidechain_keys_the_gate() {
    // A quiet pad under the threshold, opened by a loud key in bursts.
    let pad: Vec<f64> = (0..9600)
        .map(|i| 0.005 * libm::sin(TAU * 220.0 * i as f64 / SR))
        .collect();
    let key = bursts(9600, 0.8, 1200, 4800);
    let params = [("hold", num(0.0)), ("release", num(0.002))];
    let (want, _) = simulate(&pad, &key, -40.0, 80.0, 6.0, 0.001, 0.0, 0.002);
    let mut r = runner(&params, 2, Profile::Strict);
    let out = r.run(&[pad.clone(), key], &[], 9600, &[64]);
    for n in 0..9600 {
        assert!((out[0][n] - want[n]).abs() <= 1e-12, "frame {n}");
    }
    // Open while the key sounds (the pad passes), closed long after.
    assert!((out[0][600] - pad[600]).abs() < 1e-4);
    assert!(out[1][4000] < 1e-3);
    // Without the key wired, the pad alone never opens it.
    let mut r = runner(&params, 1, Profile::Strict);
    let out = r.run(&[pad], &[], 9600, &[64]);
    assert!(out[1].iter().all(|g| *g < 1e-3));
}

#[test]
fn a_detector_edit_applies_in_place() {
    // An RMS detector reads a sine 3 dB under its peak: a sine peaking at
    // −19 dB opens a −20 dB gate in peak mode, not in RMS mode (its 5 ms
    // ballistics ripple by less than 2 dB at 1 kHz).
    let x: Vec<f64> = (0..4800)
        .map(|i| libm::pow(10.0, -19.0 / 20.0) * libm::sin(TAU * 1000.0 * i as f64 / SR))
        .collect();
    let params = [("threshold", num(-20.0)), ("hold", num(0.0))];
    let mut r = runner(&params, 1, Profile::Strict);
    r.node().set_discrete(DETECTOR, &Value::Enum(1));
    let out = r.run(std::slice::from_ref(&x), &[], 4800, &[64]);
    assert!(out[1].iter().all(|g| *g < 1e-3), "rms stays closed");
    let mut r = runner(&params, 1, Profile::Strict);
    let out = r.run(&[x], &[], 4800, &[64]);
    assert!(out[1][4799] > 0.999_999, "peak opens");
}
