use super::*;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;

const SR: f64 = 48000.0;

fn runner(ceiling: f64, release: f64, lookahead: f64, precision: Precision) -> NodeRunner {
    let profile = match precision {
        Precision::F64 => Profile::Strict,
        Precision::F32 => Profile::Repro,
    };
    NodeRunner::new(
        &LIMITER,
        values_with(
            &LIMITER,
            &[
                ("ceiling", Value::Number(ceiling)),
                ("release", Value::Number(release)),
                ("lookahead", Value::Number(lookahead)),
            ],
        ),
        profile,
        Some(precision),
        SR,
        4096,
        1,
    )
    .unwrap()
}

/// Deterministic uniform noise in [−amp, amp].
fn noise(seed: u64, amp: f64, frames: usize) -> Vec<f64> {
    let mut x = seed;
    (0..frames)
        .map(|_| {
            x = crate::dsp::rng::mix64(x.wrapping_add(0x9e3779b97f4a7c15));
            amp * ((x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
        })
        .collect()
}

/// The worst cases: full-scale square, impulses (isolated, in bursts, far
/// over full scale), noise at +12 dB, alternating ±full scale and ±4.
fn worst_cases(frames: usize) -> Vec<(&'static str, Vec<f64>)> {
    let square: Vec<f64> = (0..frames)
        .map(|i| if (i / 50) % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let mut impulses = vec![0.0; frames];
    let mut k = 0usize;
    let mut step = 1usize;
    while k < frames {
        impulses[k] = if k.is_multiple_of(3) { 4.0 } else { -1.0 };
        k += step;
        step = step % 97 + 1;
    }
    let alternating: Vec<f64> = (0..frames)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let alternating4: Vec<f64> = alternating.iter().map(|x| 4.0 * x).collect();
    let mut burst = noise(3, 0.1, frames);
    for (i, v) in burst.iter_mut().enumerate() {
        if i % 1000 < 5 {
            *v = 3.0 * if i % 2 == 0 { 1.0 } else { -1.0 };
        }
    }
    vec![
        ("square", square),
        ("impulses", impulses),
        ("noise +12 dB", noise(1, 4.0, frames)),
        ("alternating", alternating),
        ("alternating ×4", alternating4),
        ("bursts", burst),
    ]
}

#[test]
fn the_output_never_exceeds_the_ceiling() {
    let frames = 20000;
    let mut closest = f64::INFINITY;
    for (name, x) in worst_cases(frames) {
        for ceiling in [-1.0, -6.0, 0.0] {
            let c = libm::pow(10.0, ceiling / 20.0);
            for lookahead in [0.0, 0.001, 0.005] {
                for precision in [Precision::F64, Precision::F32] {
                    for blocks in [vec![1], vec![7], vec![64], vec![4096], vec![5, 300, 33]] {
                        let mut r = runner(ceiling, 0.05, lookahead, precision);
                        let out = r.run(std::slice::from_ref(&x), &[], frames, &blocks);
                        let peak = out[0].iter().fold(0.0f64, |m, y| m.max(y.abs()));
                        // The node converts dB with its own exp: allow the
                        // last bit of that conversion.
                        assert!(
                            peak <= c * (1.0 + 1e-15),
                            "{name} ceiling {ceiling} lookahead {lookahead} {precision:?} \
                             {blocks:?}: peak {peak} over {c}"
                        );
                        closest = closest.min((c - peak) / c);
                    }
                }
            }
        }
    }
    eprintln!("closest approach to the ceiling: {closest:e} of it");
}

#[test]
fn below_the_ceiling_it_is_a_pure_delay() {
    let frames = 5000;
    let x = noise(2, 0.3, frames);
    for precision in [Precision::F64, Precision::F32] {
        let mut r = runner(-1.0, 0.1, 0.005, precision);
        let l = r.node().latency();
        assert_eq!(l, 240);
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[64]);
        for n in 0..frames {
            let want = if n >= l { x[n - l] } else { 0.0 };
            let want = match precision {
                Precision::F64 => want,
                Precision::F32 => want as f32 as f64,
            };
            assert_eq!(out[0][n], want, "frame {n}");
            assert_eq!(out[1][n], 1.0);
        }
    }
    // A lookahead of 0 still looks one sample ahead.
    assert_eq!(runner(-1.0, 0.1, 0.0, Precision::F64).node().latency(), 1);
}

/// An isolated peak leaves the delay at exactly the ceiling: the gain has
/// ramped down over the lookahead to the reduction it needs, no further.
/// Then the gain recovers smoothly: it falls by at most 1/W and rises by
/// at most 1 − a per sample (a the release coefficient), never steps.
#[test]
fn a_peak_is_met_exactly_and_the_gain_moves_smoothly() {
    let frames = 30000;
    let n0 = 1000;
    let mut x = vec![0.01; frames];
    x[n0] = 4.0;
    let release = 0.02;
    let a = libm::exp(-1.0 / (release * SR));
    let ceiling = -1.0;
    let c = libm::pow(10.0, ceiling / 20.0);
    for precision in [Precision::F64, Precision::F32] {
        let mut r = runner(ceiling, release, 0.005, precision);
        let l = r.node().latency();
        let w = (l + 1) as f64;
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[64]);
        let (y, g) = (&out[0], &out[1]);
        assert!(
            (y[n0 + l] - c).abs() <= 1e-6 * c,
            "{precision:?}: {}",
            y[n0 + l]
        );
        // Before the peak the gain is 1; it starts falling when the peak
        // enters the window, L samples before it leaves the delay.
        assert!(g[..n0].iter().all(|g| *g == 1.0));
        assert!(g[n0] < 1.0);
        let mut worst_up = 0.0f64;
        let mut worst_down = 0.0f64;
        for n in 1..frames {
            let d = g[n] - g[n - 1];
            worst_up = worst_up.max(d);
            worst_down = worst_down.min(d);
        }
        assert!(worst_down >= -(1.0 - c / 4.0) / w - 1e-6, "{worst_down}");
        assert!(worst_up <= (1.0 - a) + 1e-6, "{worst_up} vs {}", 1.0 - a);
        // And it recovers: back within 0.1% of 1 ten time constants on.
        let back = n0 + 2 * l + (10.0 * release * SR) as usize;
        assert!(g[back] > 0.999, "{}", g[back]);
        eprintln!(
            "{precision:?}: largest gain step down {worst_down:.3e} (bound {:.3e}), up {worst_up:.3e} (bound {:.3e})",
            -(1.0 - c / 4.0) / w,
            1.0 - a
        );
    }
}

/// Snapshots migrate: the gains are f64 in both precisions and the peak
/// hold is rebuilt from the saved needs, so a restore mid-reduction
/// continues within f32 rounding (and bit-exactly at the same precision:
/// the conformance suite).
#[test]
fn snapshots_migrate_between_precisions() {
    let x = noise(5, 2.0, 6000);
    let mut a = runner(-3.0, 0.01, 0.002, Precision::F64);
    a.run(&[x[..2000].to_vec()], &[], 2000, &[64]);
    let mut b = runner(-3.0, 0.01, 0.002, Precision::F32);
    b.node().restore(&a.snapshot()).unwrap();
    let ya = a.run(&[x[2000..4000].to_vec()], &[], 2000, &[64]);
    let yb = b.run(&[x[2000..4000].to_vec()], &[], 2000, &[64]);
    for (p, q) in ya[0].iter().zip(&yb[0]) {
        assert!((p - q).abs() <= 1e-6, "{p} vs {q}");
    }
    let mut c = runner(-3.0, 0.01, 0.002, Precision::F64);
    c.node().restore(&b.snapshot()).unwrap();
    let ya = a.run(&[x[4000..].to_vec()], &[], 2000, &[64]);
    let yc = c.run(&[x[4000..].to_vec()], &[], 2000, &[64]);
    for (p, q) in ya[0].iter().zip(&yc[0]) {
        assert!((p - q).abs() <= 1e-6, "{p} vs {q}");
    }
    // Another lookahead does not fit.
    let mut d = runner(-3.0, 0.01, 0.003, Precision::F64);
    assert!(d.node().restore(&a.snapshot()).is_err());
}

#[test]
fn a_lookahead_under_a_sample_is_linted() {
    let lints = |t: f64| {
        (LIMITER.lints)(
            &values_with(&LIMITER, &[("lookahead", Value::Number(t))]),
            SR,
        )
    };
    assert!(lints(0.005).is_empty());
    assert!(lints(1.0 / SR).is_empty());
    let l = lints(0.0);
    assert_eq!(l.len(), 1);
    assert!(
        l[0].message.contains("looks 1 sample ahead"),
        "{}",
        l[0].message
    );
}
