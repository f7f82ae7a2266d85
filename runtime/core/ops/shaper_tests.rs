//! Tests of `shaper`: each curve at 1× against its formula evaluated
//! independently here, the oversampled paths' aliasing, repro and live
//! against strict, a curve edit in place, and the latency in every factor.

use super::*;
use crate::dsp::oversample::MAX_LATENCY;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};

const SR: f64 = 48000.0;
const TAU: f64 = 2.0 * core::f64::consts::PI;

fn curve(name: &str) -> Value {
    Value::Enum(CURVES.iter().position(|c| *c == name).unwrap())
}

/// The `oversampling` enum value pinning `factor`.
fn os(factor: u32) -> Value {
    Value::Enum(match factor {
        1 => 1,
        2 => 2,
        _ => 3,
    })
}

fn runner(params: &[(&str, Value)], profile: Profile, precision: Option<Precision>) -> NodeRunner {
    NodeRunner::new(
        &SHAPER,
        values_with(&SHAPER, params),
        profile,
        precision,
        SR,
        512,
        1,
    )
    .unwrap()
}

fn render(r: &mut NodeRunner, x: &[f64]) -> Vec<f64> {
    r.run(&[x.to_vec()], &[], x.len(), &[64]).remove(0)
}

/// The curves written out independently of the node: Chebyshev as
/// cos(n·acos x), the fold as repeated reflection at ±1.
fn oracle(name: &str, u: f64, order: i32) -> f64 {
    match name {
        "tanh" => libm::tanh(u),
        "hard_clip" => u.clamp(-1.0, 1.0),
        "soft_clip" => {
            let c = u.clamp(-1.0, 1.0);
            c * (3.0 - c * c) / 2.0
        }
        "chebyshev" => libm::cos(order as f64 * libm::acos(u.clamp(-1.0, 1.0))),
        "fold" => {
            let mut y = u;
            while !(-1.0..=1.0).contains(&y) {
                y = if y > 1.0 { 2.0 - y } else { -2.0 - y };
            }
            y
        }
        _ => unreachable!(),
    }
}

#[test]
fn every_curve_at_1x_is_its_formula_delayed_by_the_latency() {
    let x = test_signal(7, 1200);
    for (name, drive, order, tol) in [
        ("tanh", 3.0, 3, 0.0),
        ("hard_clip", 2.5, 3, 0.0),
        ("soft_clip", 1.7, 3, 1e-15),
        ("chebyshev", 1.3, 2, 1e-12),
        ("chebyshev", 0.9, 5, 1e-12),
        ("chebyshev", 1.0, 0, 0.0),
        ("fold", 5.5, 3, 1e-14),
    ] {
        let mut r = runner(
            &[
                ("curve", curve(name)),
                ("drive", Value::Number(drive)),
                ("order", Value::Integer(order as i64)),
                ("level", Value::Number(0.75)),
                ("oversampling", os(1)),
            ],
            Profile::Strict,
            None,
        );
        let y = render(&mut r, &x);
        for n in 0..x.len() {
            let want = if n >= MAX_LATENCY {
                0.75 * oracle(name, drive * x[n - MAX_LATENCY], order)
            } else {
                0.0
            };
            assert!(
                (y[n] - want).abs() <= tol,
                "{name} order {order}, frame {n}: {} vs {want}",
                y[n]
            );
        }
    }
}

#[test]
fn chebyshev_turns_a_full_scale_sine_into_its_harmonic() {
    // T₃(cos θ) = cos 3θ: a 1 kHz cosine becomes a 3 kHz cosine.
    let x: Vec<f64> = (0..600)
        .map(|i| libm::cos(TAU * 1000.0 * i as f64 / SR))
        .collect();
    let mut r = runner(
        &[("curve", curve("chebyshev")), ("oversampling", os(1))],
        Profile::Strict,
        None,
    );
    let y = render(&mut r, &x);
    for (k, y) in y[MAX_LATENCY..].iter().enumerate() {
        let want = libm::cos(TAU * 3000.0 * k as f64 / SR);
        assert!((y - want).abs() < 1e-12, "frame {}", k + MAX_LATENCY);
    }
}

/// Power at `hz` of `x` (1 Hz bins for 48000 samples), by a direct DFT.
fn power_at(x: &[f64], hz: f64) -> f64 {
    let (mut re, mut im) = (0.0, 0.0);
    for (i, v) in x.iter().enumerate() {
        let w = TAU * hz * i as f64 / SR;
        re += v * libm::cos(w);
        im -= v * libm::sin(w);
    }
    re * re + im * im
}

/// The hard clip of a 7 kHz sine at +12 dB: its 5th and 7th harmonics
/// (35 and 49 kHz) alias to 13 and 1 kHz at 1×; relative to the
/// fundamental, in dB.
fn alias_db(factor: u32) -> f64 {
    let n = 9600;
    let warm = 1000;
    let x: Vec<f64> = (0..n + warm)
        .map(|i| libm::sin(TAU * 7000.0 * i as f64 / SR))
        .collect();
    let mut r = runner(
        &[
            ("curve", curve("hard_clip")),
            ("drive", Value::Number(4.0)),
            ("oversampling", os(factor)),
        ],
        Profile::Strict,
        None,
    );
    let y = render(&mut r, &x);
    let y = &y[warm..];
    let alias = power_at(y, 13000.0) + power_at(y, 1000.0);
    10.0 * libm::log10(alias / power_at(y, 7000.0))
}

#[test]
fn oversampling_reduces_the_hard_clips_aliases() {
    let a: Vec<f64> = [1, 2, 4].iter().map(|f| alias_db(*f)).collect();
    eprintln!(
        "shaper hard_clip aliases at 13 and 1 kHz (7 kHz, +12 dB): 1× {:.1} dB, 2× {:.1} dB, 4× {:.1} dB",
        a[0], a[1], a[2]
    );
    assert!(a[1] <= a[0] - 6.0, "2× {} dB vs 1× {} dB", a[1], a[0]);
    assert!(a[2] <= a[0] - 20.0, "4× {} dB vs 1× {} dB", a[2], a[0]);
}

#[test]
fn repro_and_live_stay_near_strict_at_the_same_factor() {
    let x = test_signal(9, 3000);
    for name in CURVES {
        let params = [
            ("curve", curve(name)),
            ("drive", Value::Number(3.0)),
            ("order", Value::Integer(4)),
            ("oversampling", os(2)),
        ];
        let want = render(&mut runner(&params, Profile::Strict, None), &x);
        for (profile, tol) in [(Profile::Repro, 1e-5), (Profile::Live, 2e-3)] {
            let got = render(&mut runner(&params, profile, None), &x);
            let worst = got
                .iter()
                .zip(&want)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst <= tol, "{name} under {profile}: {worst:e}");
        }
    }
}

#[test]
fn latency_is_the_4x_paths_in_every_profile_and_factor() {
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        for f in [1, 2, 4] {
            let mut r = runner(&[("oversampling", os(f))], profile, None);
            assert_eq!(r.node().latency(), MAX_LATENCY, "{profile} {f}×");
        }
    }
}

#[test]
fn a_curve_edit_applies_in_place_from_the_next_input() {
    let x = test_signal(5, 400);
    let params = [("drive", Value::Number(4.0)), ("oversampling", os(1))];
    let mut r = runner(&params, Profile::Strict, None);
    let head = r.run(&[x[..200].to_vec()], &[], 200, &[64]).remove(0);
    r.node().set_discrete(CURVE, &curve("fold"));
    r.node().set_discrete(ORDER, &Value::Integer(7));
    let tail = r.run(&[x[200..].to_vec()], &[], 200, &[64]).remove(0);
    for n in MAX_LATENCY..200 {
        assert_eq!(head[n], libm::tanh(4.0 * x[n - MAX_LATENCY]));
    }
    // Inputs before the edit went through tanh, the ones after through the
    // fold: the curve changes at the next input, heard one latency later.
    for (k, y) in tail.iter().enumerate() {
        let n = 200 + k;
        let u = 4.0 * x[n - MAX_LATENCY];
        if n - MAX_LATENCY < 200 {
            assert_eq!(*y, libm::tanh(u), "frame {n}");
        } else {
            assert!((y - oracle("fold", u, 0)).abs() <= 1e-14, "frame {n}");
        }
    }
}

#[test]
fn non_finite_and_huge_inputs_give_bounded_output() {
    let mut x = test_signal(2, 600);
    for (i, v) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -1e300]
        .iter()
        .enumerate()
    {
        x[100 + 50 * i] = *v;
    }
    let l1 = |t: Vec<f64>| t.iter().map(|v| v.abs()).sum::<f64>();
    let (a, b) = (
        l1(crate::dsp::oversample::stage1_taps()),
        l1(crate::dsp::oversample::stage2_taps()),
    );
    for name in CURVES {
        for f in [1, 4] {
            for precision in [Precision::F64, Precision::F32] {
                let mut r = runner(
                    &[
                        ("curve", curve(name)),
                        ("drive", Value::Number(MAX_DRIVE)),
                        ("level", Value::Number(1.0)),
                        ("oversampling", os(f)),
                    ],
                    Profile::Strict,
                    Some(precision),
                );
                let y = render(&mut r, &x);
                assert!(
                    y.iter().all(|v| v.is_finite() && v.abs() <= a * b),
                    "{name} {f}× {precision:?}: {:?}",
                    y.iter().fold(0.0f64, |m, v| m.max(v.abs()))
                );
            }
        }
    }
}
