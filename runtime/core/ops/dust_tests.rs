//! `dust`'s tests: every draw recomputed from Philox directly, the count
//! over a long window against its expectation, the density's ends.
use super::*;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;

const SR: f64 = 48000.0;

/// Word `n` of stream `s` of the harness's key, from rand_philox.
fn word(s: u32, n: u64) -> u32 {
    let h = crate::dsp::rng::hash64(1, "node", 0);
    let key = [h as u32, (h >> 32) as u32];
    let b = n / 4;
    rand_philox::philox4x32_10([b as u32, (b >> 32) as u32, s, 0], key)[(n % 4) as usize]
}

/// Sample `n` of the documented formula at f64.
fn oracle(n: u64, density: f64, amp: f64, bipolar: bool) -> f64 {
    if (word(0, n) as f64) < density / SR * 4294967296.0 {
        let v = word(1, n);
        let a = if bipolar {
            v as f64 * (1.0 / 2147483648.0) - 1.0
        } else {
            (v as f64 + 1.0) / 4294967296.0
        };
        amp * a
    } else {
        0.0
    }
}

fn runner(params: &[(&str, Value)], precision: Precision) -> NodeRunner {
    let profile = match precision {
        Precision::F64 => Profile::Strict,
        Precision::F32 => Profile::Repro,
    };
    NodeRunner::new(
        &DUST,
        values_with(&DUST, params),
        profile,
        Some(precision),
        SR,
        4096,
        0,
    )
    .unwrap()
}

#[test]
fn every_impulse_is_the_documented_draw() {
    for bipolar in [false, true] {
        let mut r = runner(
            &[
                ("density", Value::Number(3000.0)),
                ("amp", Value::Number(0.7)),
                ("bipolar", Value::Bool(bipolar)),
            ],
            Precision::F64,
        );
        r.set_clock(1000);
        let out = r.run(&[], &[], 20000, &[64, 3, 1000]);
        let mut hits = 0;
        for (i, y) in out[0].iter().enumerate() {
            let want = oracle(1000 + i as u64, 3000.0, 0.7, bipolar);
            assert_eq!(y.to_bits(), want.to_bits(), "sample {i}");
            hits += (want != 0.0) as usize;
        }
        assert!(hits > 1000, "{hits}");
        // f32: the same places, the amplitude from the word's top 24 bits.
        let mut r = runner(
            &[
                ("density", Value::Number(3000.0)),
                ("bipolar", Value::Bool(bipolar)),
            ],
            Precision::F32,
        );
        let out = r.run(&[], &[], 5000, &[64]);
        for (n, y) in out[0].iter().enumerate() {
            let v = word(1, n as u64);
            let want = if oracle(n as u64, 3000.0, 1.0, false) == 0.0 {
                0.0
            } else if bipolar {
                ((v >> 8) as f32 * (1.0 / 8388608.0) - 1.0) as f64
            } else {
                (((v >> 8) + 1) as f32 / 16777216.0) as f64
            };
            assert_eq!(*y, want, "f32 sample {n}");
        }
    }
}

/// Over ten seconds at 100 impulses a second the count is within five
/// standard deviations of the expected 1000 (binomial: σ ≈ 31.6), and
/// unipolar amplitudes lie in (0, amp].
#[test]
fn the_count_over_a_long_window_is_the_density() {
    let frames = 480_000;
    let mut r = runner(&[("density", Value::Number(100.0))], Precision::F64);
    let out = r.run(&[], &[], frames, &[4096]);
    let count = out[0].iter().filter(|y| **y != 0.0).count() as f64;
    let p = 100.0 / SR;
    let (mean, sd) = (frames as f64 * p, (frames as f64 * p * (1.0 - p)).sqrt());
    assert!(
        (count - mean).abs() < 5.0 * sd,
        "{count} impulses, expected {mean}"
    );
    assert!(out[0].iter().all(|y| (0.0..=1.0).contains(y)));
}

#[test]
fn density_zero_is_silent_and_the_sample_rate_fills_every_sample() {
    let mut r = runner(&[("density", Value::Number(0.0))], Precision::F64);
    assert!(r.run(&[], &[], 10000, &[64])[0].iter().all(|y| *y == 0.0));
    for d in [SR, 1e6] {
        let mut r = runner(&[("density", Value::Number(d))], Precision::F64);
        assert!(r.run(&[], &[], 10000, &[64])[0].iter().all(|y| *y > 0.0));
    }
}

/// A modulated density decides each sample with that sample's value.
#[test]
fn a_modulated_density_is_read_per_sample() {
    let frames = 4000;
    let sig: Vec<f64> = (0..frames)
        .map(|n| if n % 400 < 200 { 8000.0 } else { -8000.0 })
        .collect();
    let mut r = runner(&[("density", Value::Number(10000.0))], Precision::F64);
    let out = r.run(&[], &[(DENSITY, sig.clone())], frames, &[64, 1]);
    for n in 0..frames {
        let want = oracle(n as u64, 10000.0 + sig[n], 1.0, false);
        assert_eq!(out[0][n], want, "sample {n}");
    }
}
