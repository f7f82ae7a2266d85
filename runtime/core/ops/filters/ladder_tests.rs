//! Tests of `ladder`: the solver against a bisection solution of the same
//! equations in every profile, the low-level response against the bilinear
//! transform of the analog ladder (−24 dB/octave), self-oscillation at the
//! cutoff, bad input, and the oversampling factor carried across a restore.

use super::*;
use crate::dsp::oversample::{Oversampler, MAX_LATENCY};
use crate::dsp::Precision;
use crate::ops::harness::{values_with, NodeRunner};

const SR: f64 = 48000.0;
const TAU: f64 = 2.0 * core::f64::consts::PI;

/// The `oversampling` enum value pinning `factor` (None: "default").
fn os(factor: Option<u32>) -> Value {
    Value::Enum(match factor {
        None => 0,
        Some(1) => 1,
        Some(2) => 2,
        Some(4) => 3,
        Some(f) => panic!("no factor {f}"),
    })
}

fn runner(params: &[(&str, Value)], profile: Profile, precision: Option<Precision>) -> NodeRunner {
    NodeRunner::new(
        &LADDER,
        values_with(&LADDER, params),
        profile,
        precision,
        SR,
        512,
        1,
    )
    .unwrap()
}

fn render(r: &mut NodeRunner, x: &[f64], mods: &[(usize, Vec<f64>)]) -> Vec<f64> {
    r.run(&[x.to_vec()], mods, x.len(), &[64]).remove(0)
}

fn rel_rms(got: &[f64], want: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (a, b) in got.iter().zip(want) {
        num += (a - b) * (a - b);
        den += b * b;
    }
    libm::sqrt(num / den)
}

/// A logarithmic sine sweep from `f0` to `f1` Hz over `n` samples, amplitude 1.
fn log_sweep(f0: f64, f1: f64, n: usize) -> Vec<f64> {
    let dur = n as f64 / SR;
    let k = libm::log(f1 / f0);
    (0..n)
        .map(|i| {
            let t = i as f64 / SR;
            libm::sin(TAU * f0 * dur / k * (libm::exp(t / dur * k) - 1.0))
        })
        .collect()
}

/// The ladder's equations solved by bisection: per internal-rate sample,
/// `u = tanh(drive·x − k·y4(u))` where `y4(u)` runs the four trapezoidal
/// stages from their states (`y = (g·v + s)/(1 + g)`, `s ← 2y − s`), the
/// root found by 200 halvings of [−1, 1]; through the same half-band
/// filters and latency as the node. `cutoff` is per base sample.
fn oracle(x: &[f64], drive: f64, cutoff: &[f64], resonance: f64, factor: u32) -> Vec<f64> {
    let k = 4.0 * resonance;
    let mut ovs = Oversampler::<f64>::new(factor);
    let mut s = [0.0f64; 4];
    x.iter()
        .zip(cutoff)
        .map(|(xi, fc)| {
            let fc = fc.clamp(1.0, 0.45 * SR);
            let g = libm::tan(core::f64::consts::PI * fc / (SR * factor as f64));
            ovs.process(xi * drive, |v| {
                let stages = |u: f64, s: &[f64; 4]| {
                    let mut ys = [0.0; 4];
                    let mut inp = u;
                    for (yk, sk) in ys.iter_mut().zip(s) {
                        *yk = (g * inp + sk) / (1.0 + g);
                        inp = *yk;
                    }
                    ys
                };
                let f = |u: f64| u - libm::tanh(v - k * stages(u, &s)[3]);
                let (mut lo, mut hi) = (-1.0f64, 1.0f64);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if f(mid) > 0.0 {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                let ys = stages(0.5 * (lo + hi), &s);
                for (sk, yk) in s.iter_mut().zip(ys) {
                    *sk = 2.0 * yk - *sk;
                }
                ys[3]
            })
        })
        .collect()
}

#[test]
fn ladder_matches_a_bisection_solution_of_its_equations_in_every_profile() {
    let x = log_sweep(30.0, 15000.0, 24000);
    // (profile, precision, oversampling, critical, bound)
    let runs = [
        (Profile::Strict, Precision::F64, None, false, 1e-12),
        (Profile::Strict, Precision::F64, Some(2), false, 1e-12),
        (Profile::Strict, Precision::F64, Some(4), false, 1e-12),
        (Profile::Repro, Precision::F32, None, false, 1e-4),
        (Profile::Repro, Precision::F64, None, false, 1e-9),
        (Profile::Live, Precision::F32, None, false, 1e-3),
        (Profile::Live, Precision::F32, None, true, 1e-3),
    ];
    // A cutoff swept by modulation around 800 Hz, and a constant one.
    let swept: Vec<f64> = (0..x.len())
        .map(|i| 800.0 + 600.0 * libm::sin(TAU * 2.0 * i as f64 / SR))
        .collect();
    for (drive, resonance, modulated) in [(1.0, 0.0, false), (4.0, 0.9, true), (10.0, 1.1, false)] {
        let cutoff: Vec<f64> = if modulated {
            swept.clone()
        } else {
            vec![800.0; x.len()]
        };
        let mods = if modulated {
            vec![(CUTOFF, swept.iter().map(|c| c - 800.0).collect())]
        } else {
            vec![]
        };
        for (profile, precision, factor, critical, bound) in runs {
            let params = [
                ("cutoff", Value::Number(800.0)),
                ("resonance", Value::Number(resonance)),
                ("drive", Value::Number(drive)),
                ("oversampling", os(factor)),
                ("critical", Value::Bool(critical)),
            ];
            let mut r = runner(&params, profile, Some(precision));
            let y = render(&mut r, &x, &mods);
            let np = NodeProfile::resolve(profile, &Default::default(), None);
            let f = np.oversampling_factor(factor, critical);
            let want = oracle(&x, drive, &cutoff, resonance, f);
            let err = rel_rms(&y, &want);
            let per_sample = r.node().iterations() as f64 / (x.len() as f64 * f as f64);
            eprintln!(
                "ladder drive {drive} resonance {resonance} {profile} {precision:?} {f}×: \
                 rel. RMS vs oracle {err:.2e} (bound {bound:.0e}), {per_sample:.2} steps/sample"
            );
            assert!(y.iter().all(|v| v.is_finite()));
            assert!(
                err <= bound,
                "drive {drive} resonance {resonance} {profile} {f}×: {err:e} > {bound:e}"
            );
        }
    }
}

/// The steady gain of a low-level sine at `f` Hz (after the node's latency).
fn tone_gain(params: &[(&str, Value)], f: f64) -> f64 {
    let level = 1e-4;
    let n = 48000;
    let x: Vec<f64> = (0..n)
        .map(|i| level * libm::sin(TAU * f * i as f64 / SR))
        .collect();
    let y = render(&mut runner(params, Profile::Strict, None), &x, &[]);
    // The amplitude by correlation over the last 24000 samples (a whole
    // number of cycles of every test frequency) against the input delayed
    // by the latency.
    let (mut c, mut s) = (0.0, 0.0);
    for (i, yi) in y.iter().enumerate().skip(n - 24000) {
        let t = (i - MAX_LATENCY) as f64 / SR;
        c += yi * libm::cos(TAU * f * t);
        s += yi * libm::sin(TAU * f * t);
    }
    2.0 * libm::sqrt(c * c + s * s) / 24000.0 / level
}

/// |H| of the analog ladder `1/((1 + s)⁴ + k)` at `s = jw`.
fn analog_ladder(w: f64, k: f64) -> f64 {
    // (1 + jw)^4 = (1 − 6w² + w⁴) + j(4w − 4w³)
    let re = 1.0 - 6.0 * w * w + w * w * w * w + k;
    let im = 4.0 * w - 4.0 * w * w * w;
    1.0 / libm::sqrt(re * re + im * im)
}

#[test]
fn ladder_at_low_level_is_the_bilinear_analog_ladder_falling_24_db_per_octave() {
    let fc = 200.0;
    let warped = |f: f64| {
        libm::tan(core::f64::consts::PI * f / SR) / libm::tan(core::f64::consts::PI * fc / SR)
    };
    for resonance in [0.0, 0.5, 0.9] {
        let params = [
            ("cutoff", Value::Number(fc)),
            ("resonance", Value::Number(resonance)),
        ];
        for f in [50.0, 100.0, 200.0, 400.0, 1600.0, 3200.0] {
            let got = tone_gain(&params, f);
            let want = analog_ladder(warped(f), 4.0 * resonance);
            let db = 20.0 * libm::log10(got / want);
            assert!(
                db.abs() < 0.01,
                "resonance {resonance} at {f} Hz: {got:e} vs {want:e} ({db:.4} dB)"
            );
        }
    }
    let params = [("cutoff", Value::Number(fc))];
    let slope = 20.0 * libm::log10(tone_gain(&params, 1600.0) / tone_gain(&params, 3200.0));
    eprintln!("ladder slope 1.6 → 3.2 kHz at a 200 Hz cutoff: {slope:.2} dB/octave");
    assert!((slope - 24.0).abs() < 0.5, "{slope} dB/octave");
    // The passband gain is 1/(1 + k).
    let half = [
        ("cutoff", Value::Number(fc)),
        ("resonance", Value::Number(0.5)),
    ];
    assert!((tone_gain(&half, 5.0) - 1.0 / 3.0).abs() < 1e-3);
}

/// The frequency of `y` by its upward zero crossings (linearly interpolated).
fn zero_crossing_hz(y: &[f64]) -> f64 {
    let mut first = None;
    let mut last = 0.0;
    let mut count = 0;
    for i in 1..y.len() {
        if y[i - 1] < 0.0 && y[i] >= 0.0 {
            let t = (i - 1) as f64 + y[i - 1] / (y[i - 1] - y[i]);
            if first.is_none() {
                first = Some(t);
            } else {
                count += 1;
            }
            last = t;
        }
    }
    count as f64 * SR / (last - first.expect("crossings"))
}

#[test]
fn ladder_self_oscillates_at_its_cutoff_in_every_profile() {
    let n = 48000;
    let mut kick = vec![0.0; n];
    kick[0] = 0.1;
    for profile in Profile::ALL {
        for fc in [110.0, 1000.0, 5000.0] {
            for resonance in [1.05, 1.25] {
                let params = [
                    ("cutoff", Value::Number(fc)),
                    ("resonance", Value::Number(resonance)),
                ];
                let y = render(&mut runner(&params, profile, None), &kick, &[]);
                let tail = &y[n / 2..];
                let peak = tail.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let hz = zero_crossing_hz(tail);
                let err = (hz / fc - 1.0).abs();
                eprintln!(
                    "ladder {profile} resonance {resonance} at {fc} Hz: oscillates at \
                     {hz:.2} Hz ({:.3} %), peak {peak:.3}",
                    100.0 * err
                );
                assert!(peak > 0.05 && peak < 1.0, "{profile} {fc} Hz: peak {peak}");
                assert!(err < 0.01, "{profile} {fc} Hz: {hz} Hz");
            }
        }
    }
    // Below resonance 1 the ring dies away.
    let params = [
        ("cutoff", Value::Number(1000.0)),
        ("resonance", Value::Number(0.95)),
    ];
    let y = render(&mut runner(&params, Profile::Strict, None), &kick, &[]);
    assert!(y[n / 2..].iter().all(|v| v.abs() < 1e-6));
}

#[test]
fn ladder_gives_bounded_finite_output_for_bad_input_and_extreme_params() {
    let mut x: Vec<f64> = log_sweep(30.0, 15000.0, 4000);
    for (i, bad) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e30, -1e30]
        .iter()
        .enumerate()
    {
        x[500 + 300 * i] = *bad;
    }
    for profile in Profile::ALL {
        for (cutoff, resonance, drive) in [
            (1.0, 0.0, 0.0),
            (1.0, MAX_RESONANCE, MAX_DRIVE),
            (1e5, MAX_RESONANCE, MAX_DRIVE),
            (1e5, 0.0, 1.0),
            (1000.0, MAX_RESONANCE, 1.0),
        ] {
            let params = [
                ("cutoff", Value::Number(cutoff)),
                ("resonance", Value::Number(resonance)),
                ("drive", Value::Number(drive)),
            ];
            let y = render(&mut runner(&params, profile, None), &x, &[]);
            let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(
                y.iter().all(|v| v.is_finite()) && peak <= 2.0,
                "{profile} cutoff {cutoff} resonance {resonance} drive {drive}: peak {peak}"
            );
        }
    }
}

#[test]
fn ladder_restored_into_another_factor_or_precision_continues() {
    // Strict f64 1× for 0.25 s, then restored into repro f32 2× (and back):
    // the output continues within what the two paths differ by when run
    // from the start, and far closer than a node starting empty.
    let x = log_sweep(60.0, 6000.0, 24000);
    let params = [
        ("cutoff", Value::Number(1200.0)),
        ("resonance", Value::Number(0.8)),
        ("drive", Value::Number(3.0)),
    ];
    let split = 12000;
    for (from, to) in [
        (Profile::Strict, Profile::Repro),
        (Profile::Repro, Profile::Strict),
    ] {
        let mut a = runner(&params, from, None);
        a.run(&[x[..split].to_vec()], &[], split, &[64]);
        let st = a.snapshot();
        let mut b = runner(&params, to, None);
        b.node().restore(&st).unwrap();
        b.set_clock(split as u64);
        let tail = b.run(&[x[split..].to_vec()], &[], x.len() - split, &[64]);
        let whole = render(&mut runner(&params, to, None), &x, &[]);
        let mut fresh = runner(&params, to, None);
        fresh.set_clock(split as u64);
        let empty = fresh.run(&[x[split..].to_vec()], &[], x.len() - split, &[64]);
        // The first 20 ms, where an empty node differs most.
        let w = 960;
        let err = rel_rms(&tail[0][..w], &whole[split..split + w]);
        let cold = rel_rms(&empty[0][..w], &whole[split..split + w]);
        eprintln!("ladder {from} → {to}: restored {err:.2e}, empty {cold:.2e}");
        assert!(err < 2e-2, "{from} → {to}: {err}");
        assert!(cold > 10.0 * err, "{from} → {to}: {cold} vs {err}");
    }
}

#[test]
fn ladder_repro_and_live_stay_within_their_parity_bounds_of_strict() {
    // At the same factor, repro within 1e-3 and live within 3e-2 of strict
    // (relative RMS), across cutoff, resonance and drive.
    let x = log_sweep(30.0, 15000.0, 24000);
    for factor in [1, 2] {
        for (cutoff, resonance, drive) in [
            (100.0, 0.0, 1.0),
            (1000.0, 0.9, 4.0),
            (8000.0, 0.5, 10.0),
            (400.0, 1.1, 2.0),
        ] {
            let params = [
                ("cutoff", Value::Number(cutoff)),
                ("resonance", Value::Number(resonance)),
                ("drive", Value::Number(drive)),
                ("oversampling", os(Some(factor))),
            ];
            let strict = render(&mut runner(&params, Profile::Strict, None), &x, &[]);
            for (profile, bound) in [(Profile::Repro, 1e-3), (Profile::Live, 3e-2)] {
                let y = render(&mut runner(&params, profile, None), &x, &[]);
                let err = rel_rms(&y, &strict);
                assert!(
                    err <= bound,
                    "{profile} {factor}× cutoff {cutoff} resonance {resonance} drive {drive}: {err:e}"
                );
            }
        }
    }
}

#[test]
fn ladder_choices_and_lints_follow_the_profile_and_the_design_limit() {
    let np = |p| NodeProfile::resolve(p, &Default::default(), None);
    let d = values_with(&LADDER, &[]);
    assert_eq!(
        ladder_choices(&np(Profile::Strict), &d),
        [
            ("os", "1x".to_string()),
            ("newton_iterations", "32".to_string())
        ]
    );
    assert_eq!(
        ladder_choices(&np(Profile::Repro), &d),
        [("os", "2x".to_string()), ("newton_tol", "1e-6".to_string())]
    );
    assert_eq!(ladder_worst_steps(&np(Profile::Repro), &d), 64);
    let high = values_with(&LADDER, &[("cutoff", Value::Number(30000.0))]);
    let lints = ladder_lints(&high, SR);
    assert_eq!(lints.len(), 1);
    assert_eq!(lints[0].held.as_ref().map(|h| h.plays), Some(0.45 * SR));
    assert!(ladder_lints(&d, SR).is_empty());
}
