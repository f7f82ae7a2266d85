//! `allpass`'s tests: its difference equation written out, a flat
//! magnitude, an impulse response of unit energy.
use super::*;
use crate::dsp::Precision;
use crate::ops::comb::tests::{allpass_oracle, linear_oracle};
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;

const SR: f64 = 48000.0;

fn runner(d: f64, g: f64, allpass: bool) -> NodeRunner {
    NodeRunner::new(
        &ALLPASS,
        values_with(
            &ALLPASS,
            &[
                ("time", Value::Number(d / SR)),
                ("gain", Value::Number(g)),
                ("interp", Value::Enum(allpass as usize)),
                ("max_time", Value::Number(0.01)),
            ],
        ),
        Profile::Strict,
        Some(Precision::F64),
        SR,
        512,
        1,
    )
    .unwrap()
}

#[test]
fn follows_the_schroeder_difference_equation() {
    let frames = 3000;
    let x = test_signal(9, frames);
    for allpass in [false, true] {
        for (d, g) in [(23.0, 0.7), (41.6, -0.5), (2.0, 0.9)] {
            let mut r = runner(d, g, allpass);
            let out = r.run(std::slice::from_ref(&x), &[], frames, &[64, 5]);
            let d = d / SR * SR;
            let (mut v, mut prev) = (Vec::new(), 0.0);
            for n in 0..frames {
                let w = if allpass {
                    allpass_oracle(&v, n, d, &mut prev)
                } else {
                    linear_oracle(&v, n, d)
                };
                let vn = x[n] + g * w;
                v.push(vn);
                let want = w - g * vn;
                assert!(
                    (out[0][n] - want).abs() <= 1e-12,
                    "ap {allpass} d {d} n {n}"
                );
            }
        }
    }
}

/// `|H| = 1`: sines at several frequencies keep their level, and an
/// impulse's response carries exactly its energy.
#[test]
fn the_magnitude_is_flat_and_energy_is_kept() {
    let frames = 48000;
    for hz in [50.0, 1000.0, 7000.0, 15000.0] {
        let x: Vec<f64> = (0..frames)
            .map(|n| libm::sin(2.0 * core::f64::consts::PI * hz * n as f64 / SR))
            .collect();
        let mut r = runner(113.0, 0.7, false);
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[256]);
        let rms = |v: &[f64]| (v.iter().map(|a| a * a).sum::<f64>() / v.len() as f64).sqrt();
        let tail = frames - 9600..frames;
        let ratio = rms(&out[0][tail.clone()]) / rms(&x[tail]);
        assert!((ratio - 1.0).abs() < 1e-3, "{hz} Hz: {ratio}");
    }
    for allpass in [false, true] {
        let mut x = vec![0.0; 40000];
        x[0] = 1.0;
        let mut r = runner(if allpass { 50.5 } else { 50.0 }, 0.8, allpass);
        let out = r.run(std::slice::from_ref(&x), &[], 40000, &[512]);
        let energy: f64 = out[0].iter().map(|v| v * v).sum();
        assert!(
            (energy - 1.0).abs() < 1e-9,
            "allpass reading {allpass}: {energy}"
        );
    }
}
