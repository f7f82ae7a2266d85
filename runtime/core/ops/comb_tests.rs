//! `comb`'s tests: its difference equations written out against a plain
//! history, the feedback comb's peak gain, the allpass reader's delay.
use super::*;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};

const SR: f64 = 48000.0;

fn runner(params: &[(&str, Value)], profile: Profile, precision: Precision) -> NodeRunner {
    NodeRunner::new(
        &COMB,
        values_with(&COMB, params),
        profile,
        Some(precision),
        SR,
        512,
        1,
    )
    .unwrap()
}

/// `h[n − d]` of a history that is silent before 0, read linearly.
pub(crate) fn linear_oracle(h: &[f64], n: usize, d: f64) -> f64 {
    let at = |k: f64| {
        let i = n as f64 - k;
        if i >= 0.0 {
            h[i as usize]
        } else {
            0.0
        }
    };
    let k = d.floor();
    let f = d - k;
    at(k) + f * (at(k + 1.0) - at(k))
}

/// `h[n − d]` read by the first-order allpass whose last output is `*prev`:
/// `k = ⌊d − ½⌋`, `η = (1 − f)/(1 + f)`.
pub(crate) fn allpass_oracle(h: &[f64], n: usize, d: f64, prev: &mut f64) -> f64 {
    let at = |k: f64| {
        let i = n as f64 - k;
        if i >= 0.0 {
            h[i as usize]
        } else {
            0.0
        }
    };
    let k = (d - 0.5).floor();
    let f = d - k;
    let eta = (1.0 - f) / (1.0 + f);
    let y = eta * at(k) + at(k + 1.0) - eta * *prev;
    *prev = y;
    y
}

/// The comb written out: `y = x + g·line(d)`, the line fed `y` or `x`.
fn oracle(x: &[f64], d: f64, g: f64, feedback: bool, allpass: bool) -> Vec<f64> {
    let mut line = Vec::with_capacity(x.len());
    let mut y = Vec::with_capacity(x.len());
    let mut prev = 0.0;
    for (n, &xn) in x.iter().enumerate() {
        let r = if allpass {
            allpass_oracle(&line, n, d, &mut prev)
        } else {
            linear_oracle(&line, n, d)
        };
        let yn = xn + g * r;
        line.push(if feedback { yn } else { xn });
        y.push(yn);
    }
    y
}

fn mode(name: &str) -> Value {
    Value::Enum(if name == "feedback" { 0 } else { 1 })
}

#[test]
fn both_modes_and_readers_follow_their_difference_equations() {
    let frames = 3000;
    let x = test_signal(7, frames);
    for feedback in [true, false] {
        for allpass in [false, true] {
            for (d, g) in [(37.0, 0.9), (52.375, -0.7), (1.0, 0.5), (200.6, 0.95)] {
                let d: f64 = if allpass { d.max(1.5) } else { d };
                let mut r = runner(
                    &[
                        ("time", Value::Number(d / SR)),
                        ("gain", Value::Number(g)),
                        ("mode", mode(if feedback { "feedback" } else { "ff" })),
                        ("interp", Value::Enum(allpass as usize)),
                        ("max_time", Value::Number(0.01)),
                    ],
                    Profile::Strict,
                    Precision::F64,
                );
                let out = r.run(std::slice::from_ref(&x), &[], frames, &[64, 7]);
                // `d / SR · SR` is what the node reads: the same rounding.
                let want = oracle(&x, d / SR * SR, g, feedback, allpass);
                for n in 0..frames {
                    assert!(
                        (out[0][n] - want[n]).abs() <= 1e-12,
                        "fb {feedback} ap {allpass} d {d} n {n}: {} vs {}",
                        out[0][n],
                        want[n]
                    );
                }
            }
        }
    }
}

/// A sine at the comb's first peak `sr/d` comes out `1/(1 − g)` times
/// louder (feedback), and at its first notch `sr/(2d)` with `1 − g`
/// (feedforward, `g` > 0).
#[test]
fn feedback_peaks_and_feedforward_notches_have_their_gains() {
    let d = 48.0;
    let g = 0.9;
    let frames = 48000;
    for (feedback, hz, gain) in [
        (true, SR / d, 1.0 / (1.0 - g)),
        (false, SR / (2.0 * d), 1.0 - g),
    ] {
        let x: Vec<f64> = (0..frames)
            .map(|n| libm::sin(2.0 * core::f64::consts::PI * hz * n as f64 / SR))
            .collect();
        let mut r = runner(
            &[
                ("time", Value::Number(d / SR)),
                ("gain", Value::Number(g)),
                ("mode", mode(if feedback { "feedback" } else { "ff" })),
            ],
            Profile::Strict,
            Precision::F64,
        );
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[256]);
        // The steady state's peak over the last 1000 samples.
        let peak = out[0][frames - 1000..]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(
            (peak - gain).abs() < 1e-3 * gain,
            "fb {feedback}: {peak} vs {gain}"
        );
    }
}

/// The allpass reader delays a low sine by the fractional delay asked
/// (its phase delay at low frequencies), with unit gain.
#[test]
fn the_allpass_reader_delays_by_the_fraction_asked() {
    let hz = 200.0;
    let w = 2.0 * core::f64::consts::PI * hz / SR;
    for d in [1.5, 2.25, 10.3, 100.9] {
        let mut line = crate::ops::fracline::Line::<f64>::new(200);
        let mut prev = 0.0;
        let mut worst = 0.0f64;
        for n in 0..4000 {
            let y = line.allpass(d, &mut prev);
            line.push(libm::sin(w * n as f64));
            if n > 2000 {
                let want = libm::sin(w * (n as f64 - d));
                worst = worst.max((y - want).abs());
            }
        }
        // A first-order allpass's phase delay departs from `f` as
        // (ω·f)²-ish: tiny at 200 Hz.
        assert!(worst < 1e-4, "d {d}: {worst}");
    }
}

#[test]
fn a_time_past_max_time_is_held_there_and_warned_of() {
    let mut v = values_with(&COMB, &[("time", Value::Number(0.5))]);
    v[MAX_TIME] = Value::Number(0.1);
    let lints = (COMB.lints)(&v, SR);
    assert_eq!(lints.len(), 1);
    assert_eq!(lints[0].held.as_ref().unwrap().plays, 0.1);
    // And it plays 0.1 s: an impulse comes back 4800 samples later.
    let mut x = vec![0.0; 6000];
    x[0] = 1.0;
    let mut r = runner(
        &[
            ("time", Value::Number(0.5)),
            ("max_time", Value::Number(0.1)),
            ("gain", Value::Number(0.5)),
        ],
        Profile::Strict,
        Precision::F64,
    );
    let out = r.run(std::slice::from_ref(&x), &[], 6000, &[64]);
    assert_eq!(out[0][4800], 0.5);
    assert_eq!(out[0][1..4800].iter().filter(|v| **v != 0.0).count(), 0);
}
