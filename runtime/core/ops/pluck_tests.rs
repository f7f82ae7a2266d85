//! `pluck`'s tests: the string written out against a plain history, its
//! pitch measured from the phase slope of the fundamental (within 0.1 cent
//! from 40 Hz to 4 kHz), the decay of its fundamental and of an upper
//! partial measured against the loop's gains.
use super::*;
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;
use core::f64::consts::PI;

const SR: f64 = 48000.0;

fn runner(params: &[(&str, f64)]) -> NodeRunner {
    let set: Vec<(&str, Value)> = params
        .iter()
        .map(|(n, v)| (*n, Value::Number(*v)))
        .collect();
    NodeRunner::new(
        &PLUCK,
        values_with(&PLUCK, &set),
        Profile::Strict,
        Some(Precision::F64),
        SR,
        4096,
        1,
    )
    .unwrap()
}

/// Word `n` of the harness key's stream 0 as f64, from rand_philox.
fn white(n: u64) -> f64 {
    let h = crate::dsp::rng::hash64(1, "node", 0);
    let b = n / 4;
    let w = rand_philox::philox4x32_10(
        [b as u32, (b >> 32) as u32, 0, 0],
        [h as u32, (h >> 32) as u32],
    )[(n % 4) as usize];
    w as f64 * (1.0 / 2147483648.0) - 1.0
}

/// The string as the module docs write it, against a plain history, with
/// every param constant but the trigger.
fn oracle(x: &[f64], freq: f64, decay: f64, bright: f64, amp: f64, trig: &[f64]) -> Vec<f64> {
    let l = (SR / freq).clamp(2.5, SR / 20.0);
    let w = 2.0 * PI / l;
    let a = (1.0 - bright) / 4.0;
    let h = 1.0 - 2.0 * a + 2.0 * a * libm::cos(w);
    let g = (libm::pow(10.0, -3.0 * l / (decay * SR)) / h).min(0.99999);
    let delta = libm::log(g * h) / l * (-2.0 * a * libm::sin(w) / h) / w;
    let ll = (l - delta).max(2.5);
    let n0 = (ll - 1.5).floor();
    let f = ll - 1.0 - n0;
    let eta = libm::sin((1.0 - f) * w / 2.0) / libm::sin((1.0 + f) * w / 2.0);
    let n0 = n0 as usize;
    let mut y: Vec<f64> = Vec::new();
    let past = |y: &Vec<f64>, k: usize| if y.len() >= k { y[y.len() - k] } else { 0.0 };
    let (mut lp1, mut ap1, mut high, mut left) = (0.0, 0.0, false, 0u64);
    for n in 0..x.len() {
        if trig[n] > 0.0 && !high {
            left = (l + 0.5).floor() as u64;
        }
        high = trig[n] > 0.0;
        let mut e = x[n];
        if left > 0 {
            left -= 1;
            e += amp * white(n as u64);
        }
        let lp = a * (past(&y, n0) + past(&y, n0 + 2)) + (1.0 - 2.0 * a) * past(&y, n0 + 1);
        let ap = eta * lp + lp1 - eta * ap1;
        lp1 = lp;
        ap1 = ap;
        y.push(e + g * ap);
    }
    y
}

#[test]
fn the_string_follows_its_documented_equations() {
    let frames = 6000;
    let gate: Vec<f64> = (0..frames)
        .map(|n| if n % 2500 < 1000 { 1.0 } else { 0.0 })
        .collect();
    for (freq, decay, bright, with_input) in [
        (220.0, 1.0, 0.5, false),
        (1234.5, 0.2, 0.0, true),
        (43.7, 3.0, 1.0, false),
        (19000.0, 0.01, 0.8, false),
    ] {
        let x = if with_input {
            test_signal(3, frames)
        } else {
            vec![0.0; frames]
        };
        let mut r = runner(&[
            ("freq", freq),
            ("decay", decay),
            ("brightness", bright),
            ("amp", 0.8),
        ]);
        let out = r.run(
            std::slice::from_ref(&x),
            &[(TRIGGER, gate.clone())],
            frames,
            &[64, 1, 333],
        );
        let want = oracle(&x, freq, decay, bright, 0.8, &gate);
        for n in 0..frames {
            assert!(
                (out[0][n] - want[n]).abs() <= 1e-12,
                "{freq} Hz n {n}: {} vs {}",
                out[0][n],
                want[n]
            );
        }
        assert!(out[0].iter().any(|v| v.abs() > 0.1));
    }
}

/// Complex amplitude of `hz` over a Hann window of `len` samples from
/// `start`, its phase referred to sample 0.
fn partial(y: &[f64], hz: f64, start: usize, len: usize) -> (f64, f64) {
    let (mut re, mut im) = (0.0, 0.0);
    for i in 0..len {
        let n = start + i;
        let win = 0.5 - 0.5 * libm::cos(2.0 * PI * i as f64 / len as f64);
        let ph = 2.0 * PI * hz * n as f64 / SR;
        re += win * y[n] * libm::cos(ph);
        im -= win * y[n] * libm::sin(ph);
    }
    (libm::hypot(re, im), libm::atan2(im, re))
}

fn pluck(freq: f64, decay: f64, bright: f64, frames: usize) -> Vec<f64> {
    let mut r = runner(&[
        ("freq", freq),
        ("decay", decay),
        ("brightness", bright),
        ("trigger", 1.0),
    ]);
    r.run(&[vec![0.0; frames]], &[], frames, &[4096]).remove(0)
}

/// The fundamental's frequency from the slope of its phase between two
/// windows half a second apart: within 0.1 cent of `freq` from 40 Hz to
/// 4 kHz, at every brightness.
#[test]
fn the_pitch_is_within_a_tenth_of_a_cent_from_40_hz_to_4_khz() {
    for freq in [
        40.0, 61.7, 110.0, 261.63, 440.0, 987.77, 2000.0, 3322.4, 4000.0,
    ] {
        for bright in [0.0, 0.5, 1.0] {
            // Half a second apart, or less for a dark high note, which
            // dies faster than `decay` asks (its loop filter loses more
            // than 8 s allows): the two windows span at most 40 dB of its
            // fall.
            let t = tuning::<crate::dsp::StrictMath>(freq, 8.0, bright, SR, longest_loop(SR));
            let per_pass = t.g * (1.0 - 2.0 * t.a + 2.0 * t.a * libm::cos(2.0 * PI / t.len));
            let db_per_sample = -20.0 * libm::log10(per_pass) / t.len;
            let span = (40.0 / db_per_sample) as usize;
            let gap = (span / 2).min(24000);
            let len = ((16.0 * SR / freq) as usize).max(4800).min(span / 2);
            let start = (t.len as usize) * 2;
            let y = pluck(freq, 8.0, bright, start + gap + len);
            let (_, p1) = partial(&y, freq, start, len);
            let (_, p2) = partial(&y, freq, start + gap, len);
            let mut dp = p2 - p1;
            while dp > PI {
                dp -= 2.0 * PI;
            }
            while dp < -PI {
                dp += 2.0 * PI;
            }
            let measured = freq + dp / (2.0 * PI * gap as f64 / SR);
            let cents = 1200.0 * libm::log2(measured / freq);
            assert!(
                cents.abs() < 0.1,
                "{freq} Hz brightness {bright}: {cents:+.4} cents"
            );
        }
    }
}

/// The fundamental falls 60 dB in `decay`; partial 5 by the loop's gain at
/// its frequency, `g·H(5ω)` per pass (`H` the loop filter's gain).
#[test]
fn the_fundamental_decays_in_decay_and_partials_by_the_loop_filter() {
    let freq = 220.0;
    let len = 4800;
    let (t1, t2) = (4800usize, 4800 + 19200);
    for (decay, bright) in [(1.0, 0.5), (2.5, 0.0), (0.5, 1.0)] {
        let y = pluck(freq, decay, bright, t2 + len);
        let fall = |hz: f64| {
            let (a1, _) = partial(&y, hz, t1, len);
            let (a2, _) = partial(&y, hz, t2, len);
            20.0 * libm::log10(a2 / a1) / ((t2 - t1) as f64 / SR)
        };
        let want = -60.0 / decay;
        let got = fall(freq);
        assert!(
            (got - want).abs() < 0.02 * want.abs(),
            "decay {decay}: {got} dB/s vs {want}"
        );
        let t = tuning::<crate::dsp::StrictMath>(freq, decay, bright, SR, longest_loop(SR));
        let w5 = 5.0 * 2.0 * PI / t.len;
        let per_pass = t.g * (1.0 - 2.0 * t.a + 2.0 * t.a * libm::cos(w5));
        let want5 = 20.0 * libm::log10(per_pass) * SR / t.len;
        let got5 = fall(5.0 * freq);
        assert!(
            (got5 - want5).abs() < 0.03 * want5.abs(),
            "partial 5, brightness {bright}: {got5} dB/s vs {want5}"
        );
    }
}

/// A held trigger plucks once; each new rising edge plucks again, and a
/// voice's note (a reset, then the gate set high) plucks at its first sample.
#[test]
fn plucks_on_each_rising_edge_only() {
    let frames = 3000;
    let mut r = runner(&[("freq", 400.0), ("decay", 0.01), ("trigger", 1.0)]);
    let out = r.run(&[vec![0.0; frames]], &[], frames, &[64]);
    assert!(out[0][0] != 0.0);
    assert!(
        out[0][2000..].iter().all(|v| v.abs() < 1e-6),
        "rang once, died away"
    );
    r.reset();
    let again = r.run(&[vec![0.0; frames]], &[], frames, &[64]);
    assert_eq!(out, again);
}
