//! Pink and brown: the filters written out from the documented table,
//! their slopes measured by Welch's method per octave band, their level,
//! and white's bits untouched by the new param.
use super::*;
use crate::dsp::{Precision, StrictMath};
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::noise::NOISE;
use crate::ops::Value;
use core::f64::consts::PI;
use rustfft::num_complex::Complex;

const SR: f64 = 48000.0;

fn runner(color: usize, precision: Precision) -> NodeRunner {
    let profile = match precision {
        Precision::F64 => Profile::Strict,
        Precision::F32 => Profile::Repro,
    };
    NodeRunner::new(
        &NOISE,
        values_with(&NOISE, &[("color", Value::Enum(color))]),
        profile,
        Some(precision),
        SR,
        4096,
        0,
    )
    .unwrap()
}

use crate::profile::Profile;

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

/// The sections from the module docs' table, and the gain that makes the
/// RMS 0.2 found by summing the impulse response's squares directly.
fn sections(color: usize) -> (Vec<(f64, f64)>, f64) {
    let z = |hz: f64| libm::exp(-2.0 * PI * hz / SR);
    let s: Vec<(f64, f64)> = if color == 1 {
        let poles = [4.05, 16.3, 69.6, 273.0, 1150.0, 6320.0, 23300.0];
        let zeros = [7.74, 34.6, 138.0, 550.0, 2570.0, 18100.0, 40700.0];
        poles
            .iter()
            .zip(zeros)
            .map(|(p, q)| (z(*p), z(q)))
            .collect()
    } else {
        vec![(z(5.0), 0.0)]
    };
    let mut state = vec![(0.0, 0.0); s.len()];
    let mut sum = 0.0;
    for n in 0..3_000_000 {
        let mut v = if n == 0 { 1.0 } else { 0.0 };
        for (k, (p, q)) in s.iter().enumerate() {
            let t = v - q * state[k].0 + p * state[k].1;
            state[k] = (v, t);
            v = t;
        }
        sum += v * v;
    }
    (s, 0.2 / (sum / 3.0).sqrt())
}

fn oracle(color: usize, frames: usize) -> Vec<f64> {
    let (s, gain) = sections(color);
    let mut state = vec![(0.0, 0.0); s.len()];
    (0..frames)
        .map(|n| {
            let mut v = white(n as u64);
            for (k, (p, q)) in s.iter().enumerate() {
                let t = v - q * state[k].0 + p * state[k].1;
                state[k] = (v, t);
                v = t;
            }
            gain * v
        })
        .collect()
}

#[test]
fn pink_and_brown_are_the_documented_filters_of_the_white_words() {
    for color in [1, 2] {
        let mut r = runner(color, Precision::F64);
        let out = r.run(&[], &[], 20000, &[64, 1, 999]);
        let want = oracle(color, 20000);
        for n in 0..20000 {
            assert!(
                (out[0][n] - want[n]).abs() <= 1e-9 * want[n].abs().max(1e-3),
                "color {color} n {n}: {} vs {}",
                out[0][n],
                want[n]
            );
        }
    }
}

/// Welch's method: Hann-windowed segments of 2^15 samples, half
/// overlapping, their periodograms averaged.
fn welch(x: &[f64]) -> Vec<f64> {
    let n = 1 << 15;
    let fft = rustfft::FftPlanner::<f64>::new().plan_fft_forward(n);
    let win: Vec<f64> = (0..n)
        .map(|i| 0.5 - 0.5 * libm::cos(2.0 * PI * i as f64 / n as f64))
        .collect();
    let mut psd = vec![0.0; n / 2];
    let mut segs = 0;
    let mut start = 0;
    while start + n <= x.len() {
        let mut buf: Vec<Complex<f64>> = (0..n)
            .map(|i| Complex::new(x[start + i] * win[i], 0.0))
            .collect();
        fft.process(&mut buf);
        for (p, c) in psd.iter_mut().zip(&buf) {
            *p += c.norm_sqr();
        }
        segs += 1;
        start += n / 2;
    }
    psd.iter().map(|p| p / segs as f64).collect()
}

/// Mean density in dB per octave band `[lo·2^k, lo·2^(k+1))`, and each
/// band's geometric centre.
fn bands(psd: &[f64], lo: f64, count: usize) -> Vec<(f64, f64)> {
    let bin = SR / (2.0 * psd.len() as f64);
    (0..count)
        .map(|k| {
            let (a, b) = (lo * libm::exp2(k as f64), lo * libm::exp2(k as f64 + 1.0));
            let sel: Vec<f64> = (0..psd.len())
                .filter(|i| (*i as f64 * bin) >= a && (*i as f64 * bin) < b)
                .map(|i| psd[i])
                .collect();
            let mean = sel.iter().sum::<f64>() / sel.len() as f64;
            (libm::sqrt(a * b), 10.0 * libm::log10(mean))
        })
        .collect()
}

/// The worst distance in dB of the bands from a line of `slope` dB/octave
/// (its offset fitted), and the slope of the best free line.
fn against_line(b: &[(f64, f64)], slope: f64) -> (f64, f64) {
    let oct: Vec<f64> = b.iter().map(|(f, _)| libm::log2(*f)).collect();
    let db: Vec<f64> = b.iter().map(|(_, d)| *d).collect();
    let m = oct.len() as f64;
    let offset = db.iter().zip(&oct).map(|(d, o)| d - slope * o).sum::<f64>() / m;
    let worst = db
        .iter()
        .zip(&oct)
        .map(|(d, o)| (d - slope * o - offset).abs())
        .fold(0.0, f64::max);
    let (mo, md) = (oct.iter().sum::<f64>() / m, db.iter().sum::<f64>() / m);
    let cov: f64 = oct.iter().zip(&db).map(|(o, d)| (o - mo) * (d - md)).sum();
    let var: f64 = oct.iter().map(|o| (o - mo) * (o - mo)).sum();
    (worst, cov / var)
}

/// Pink is −3 dB/octave within ±0.5 dB in every octave band from 20 Hz to
/// 20 kHz; brown −6 dB/octave within ±0.5 dB from 20 Hz to 5 kHz, measured
/// over 44 s of each by Welch's method.
#[test]
fn pink_and_brown_have_their_slopes_by_welch_per_octave_band() {
    let frames = 1 << 21;
    for (color, slope, lo, count) in [(1, -3.0, 20.0, 10), (2, -6.0, 20.0, 8)] {
        let mut r = runner(color, Precision::F64);
        let y = r.run(&[], &[], frames, &[4096]).remove(0);
        let mut b = bands(&welch(&y), lo, count);
        if color == 1 {
            // The last octave stops at 20 kHz.
            let psd = welch(&y);
            let bin = SR / (2.0 * psd.len() as f64);
            let sel: Vec<f64> = (0..psd.len())
                .filter(|i| (*i as f64 * bin) >= 10240.0 && (*i as f64 * bin) < 20000.0)
                .map(|i| psd[i])
                .collect();
            let mean = sel.iter().sum::<f64>() / sel.len() as f64;
            b[count - 1] = (libm::sqrt(10240.0 * 20000.0), 10.0 * libm::log10(mean));
        }
        let (worst, fitted) = against_line(&b, slope);
        assert!(
            worst <= 0.5,
            "color {color}: {worst:.3} dB off {slope} dB/octave: {b:?}"
        );
        assert!(
            (fitted - slope).abs() < 0.1,
            "color {color}: fitted {fitted:.3} dB/octave"
        );
    }
}

/// Both have an RMS of amp/5, and brown stays there: each second of 40
/// has it within 40 % (a random walk's would grow as the square root of
/// time), its peak far inside its bound.
#[test]
fn pink_and_brown_have_an_rms_of_a_fifth_and_brown_does_not_drift() {
    let frames = 40 * 48000;
    for color in [1, 2] {
        let mut r = runner(color, Precision::F64);
        let y = r.run(&[], &[], frames, &[4096]).remove(0);
        let rms = |v: &[f64]| (v.iter().map(|a| a * a).sum::<f64>() / v.len() as f64).sqrt();
        let all = rms(&y);
        assert!((all - 0.2).abs() < 0.02, "color {color}: RMS {all}");
        if color == 2 {
            for s in y.chunks(48000) {
                let r = rms(s);
                assert!(r > 0.2 * 0.6 && r < 0.2 * 1.4, "a second's RMS {r}");
            }
            let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(peak < 1.2, "{peak}");
        }
    }
}

/// The closed form of `Σ h²` agrees with the impulse response summed.
#[test]
fn the_power_gain_in_closed_form_is_the_summed_impulse_response() {
    for (color, f) in [
        (1, ColorFilter::pink::<StrictMath>(SR)),
        (2, ColorFilter::brown::<StrictMath>(SR)),
    ] {
        let (_, gain) = sections(color);
        assert!(
            (f.gain - gain).abs() < 1e-9 * gain,
            "color {color}: {} vs {gain}",
            f.gain
        );
    }
}

/// The white default is unchanged by the colour param: the locked words.
#[test]
fn white_is_still_the_locked_words() {
    let mut r = runner(0, Precision::F64);
    let out = r.run(&[], &[], 1000, &[64]);
    for (n, y) in out[0].iter().enumerate() {
        assert_eq!(y.to_bits(), white(n as u64).to_bits());
    }
}
