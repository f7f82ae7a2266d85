//! Tests of `crush`: the quantiser against the nearest level found by
//! search, the hold against the latch times counted in exact arithmetic,
//! fractional rates and bits, and repro against strict.

use super::*;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;

const SR: f64 = 48000.0;

fn runner(bits: f64, rate: f64, profile: Profile, precision: Option<Precision>) -> NodeRunner {
    NodeRunner::new(
        &CRUSH,
        values_with(
            &CRUSH,
            &[("bits", Value::Number(bits)), ("rate", Value::Number(rate))],
        ),
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

/// The level nearest `x` among k·q (k an integer), ties to the higher,
/// found by searching the neighbours of a truncated guess.
fn nearest_level(x: f64, q: f64) -> f64 {
    let k0 = (x / q) as i64;
    let mut best = f64::NAN;
    let mut best_d = f64::INFINITY;
    for k in k0 - 2..=k0 + 2 {
        let l = k as f64 * q;
        let d = (x - l).abs();
        if d < best_d || (d == best_d && l > best) {
            best = l;
            best_d = d;
        }
    }
    best
}

#[test]
fn every_sample_is_the_nearest_of_2_pow_bits_levels() {
    let x = test_signal(4, 2000);
    for bits in [1.0, 3.0, 8.0, 5.5, 16.0] {
        let q = libm::pow(2.0, 1.0 - bits);
        let y = render(&mut runner(bits, SR, Profile::Strict, None), &x);
        for n in 0..x.len() {
            // The oracle's step (pow) and the node's (exp2) may differ in
            // the last place; the level must not.
            let want = nearest_level(x[n], q);
            assert!((y[n] - want).abs() <= 1e-15, "bits {bits}, frame {n}");
        }
    }
    // A ramp across −1 … 1 takes 2^bits + 1 values at 3 bits: the levels
    // k/4 from −1 to 1.
    let ramp: Vec<f64> = (0..=4000).map(|i| -1.0 + i as f64 / 2000.0).collect();
    let y = render(&mut runner(3.0, SR, Profile::Strict, None), &ramp);
    let mut levels: Vec<f64> = y.clone();
    levels.dedup();
    let want: Vec<f64> = (-4..=4).map(|k| k as f64 / 4.0).collect();
    assert_eq!(levels, want);
}

/// The index of the input sample held at each output sample when the hold
/// ratio is `num/den`, counted in integers: a sample is taken at m when
/// ⌊m·num/den⌋ passes a whole number (and at 0).
fn held_index(n: usize, num: u64, den: u64) -> Vec<usize> {
    let mut out = Vec::with_capacity(n);
    let mut last = 0;
    for m in 0..n as u64 {
        if m == 0 || (m * num) / den > ((m - 1) * num) / den {
            last = m as usize;
        }
        out.push(last);
    }
    out
}

#[test]
fn the_hold_takes_a_sample_when_the_phase_passes_a_whole_number() {
    let x = test_signal(6, 3000);
    // 18 kHz at 48 kHz: a ratio of 3/8, exact in binary.
    let y = render(&mut runner(32.0, 18000.0, Profile::Strict, None), &x);
    let q = libm::pow(2.0, -31.0);
    for (n, m) in held_index(x.len(), 3, 8).into_iter().enumerate() {
        assert_eq!(y[n], nearest_level(x[m], q), "frame {n}");
    }
}

#[test]
fn a_fractional_rate_averages_exactly() {
    // 11025 Hz at 48 kHz: 147/640, not a whole divisor: over 48000 samples
    // the hold takes 11025 values (± 1 for where the count starts).
    let x: Vec<f64> = (0..48000).map(|i| i as f64 / 48000.0).collect();
    let y = render(&mut runner(32.0, 11025.0, Profile::Strict, None), &x);
    let mut changes = 1;
    for w in y.windows(2) {
        if w[1] != w[0] {
            changes += 1;
        }
    }
    assert!((changes as i64 - 11025).abs() <= 1, "{changes} values");
    // Each held run is ⌊640/147⌋ = 4 or 5 samples long.
    let mut run = 1;
    let mut runs = Vec::new();
    for w in y.windows(2) {
        if w[1] == w[0] {
            run += 1;
        } else {
            runs.push(run);
            run = 1;
        }
    }
    assert!(runs.iter().all(|r| *r == 4 || *r == 5), "{runs:?}");
}

#[test]
fn repro_and_live_are_strict_rounded_to_f32() {
    let x = test_signal(8, 3000);
    let want = render(&mut runner(6.3, 9000.0, Profile::Strict, None), &x);
    for profile in [Profile::Repro, Profile::Live] {
        let got = render(&mut runner(6.3, 9000.0, profile, Some(Precision::F32)), &x);
        // The input rounded to f32 may cross a level boundary only where
        // the f64 input is within an f32 rounding of it: a step apart at most.
        let q = libm::exp2(1.0 - 6.3);
        for (n, (a, b)) in got.iter().zip(&want).enumerate() {
            assert!((a - b).abs() <= q * (1.0 + 1e-6), "{profile} frame {n}");
        }
        let same = got
            .iter()
            .zip(&want)
            .filter(|(a, b)| (*a - *b).abs() < 1e-6)
            .count();
        assert!(
            same >= x.len() - 5,
            "{profile}: {same} of {} agree",
            x.len()
        );
    }
}

#[test]
fn a_non_finite_input_holds_zero() {
    let x = vec![0.5, f64::NAN, f64::INFINITY, 0.25, f64::NEG_INFINITY];
    let y = render(&mut runner(8.0, SR, Profile::Strict, None), &x);
    assert_eq!(y, [0.5, 0.0, 0.0, 0.25, 0.0]);
}
