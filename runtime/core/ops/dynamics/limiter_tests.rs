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

/// The largest magnitude of `x` 4× oversampled by scipy's `resample_poly`
/// (`tests/oracles/true_peak.py`), an interpolator independent of the
/// limiter's.
fn scipy_true_peak(x: &[f64], tag: &str) -> f64 {
    let dir = std::env::temp_dir().join(format!("morphrt-true-peak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{tag}.f64"));
    let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/oracles/true_peak.py");
    let o = std::process::Command::new("python3")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for the oracles: {e}"));
    assert!(
        o.status.success(),
        "true_peak.py failed (numpy and scipy: `python3 -m pip install numpy scipy`): {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let _ = std::fs::remove_file(&path);
    String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
}

/// The largest magnitude of `x` read by a BS.1770-4 meter: `x` stuffed
/// with three zeros after every sample and convolved with the 48-tap
/// prototype `h[i] = TRUE_PEAK_FIR[i % 4][i / 4]` (times 4 is folded into
/// the table).
fn bs1770_true_peak(x: &[f64]) -> f64 {
    let h: Vec<f64> = (0..48).map(|i| TRUE_PEAK_FIR[i % 4][i / 4]).collect();
    let mut up = vec![0.0; 4 * x.len()];
    for (i, v) in x.iter().enumerate() {
        up[4 * i] = *v;
    }
    (0..up.len())
        .map(|k| {
            let mut acc = 0.0;
            for (i, hi) in h.iter().enumerate() {
                if i <= k {
                    acc += hi * up[k - i];
                }
            }
            acc.abs()
        })
        .fold(0.0, f64::max)
}

fn tp_runner(ceiling: f64, true_peak: bool, precision: Precision) -> NodeRunner {
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
                ("true_peak", Value::Bool(true_peak)),
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

/// Noise 21 dB over the ceiling: with `true_peak` the output's true peak,
/// measured by scipy's 4× `resample_poly` and by a BS.1770-4 meter, is
/// within 0.1 dB of the ceiling (the sample peak still under it); without
/// it the waveform between samples overshoots by 5 dB.
#[test]
fn true_peak_holds_the_oversampled_peak_at_the_ceiling() {
    let frames = 48000;
    for (k, ceiling) in [-1.0, -6.0].into_iter().enumerate() {
        let c = libm::pow(10.0, ceiling / 20.0);
        let x = noise(11 + k as u64, c * libm::pow(10.0, 21.0 / 20.0), frames);
        for precision in [Precision::F64, Precision::F32] {
            let mut sample = tp_runner(ceiling, false, precision);
            let y = sample.run(std::slice::from_ref(&x), &[], frames, &[64]);
            let over = 20.0 * libm::log10(scipy_true_peak(&y[0], "sample") / c);

            let mut tp = tp_runner(ceiling, true, precision);
            let y = tp.run(std::slice::from_ref(&x), &[], frames, &[64]);
            let peak = y[0].iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let tp_over = 20.0 * libm::log10(scipy_true_peak(&y[0], "true") / c);
            let meter_over = 20.0 * libm::log10(bs1770_true_peak(&y[0]) / c);
            eprintln!(
                "ceiling {ceiling} dB {precision:?}: true peak over the ceiling \
                 {over:+.2} dB sample-peak limiting, {tp_over:+.3} dB with true_peak \
                 (BS.1770-4 meter {meter_over:+.3} dB)"
            );
            assert!(over > 2.0, "sample-peak limiting overshoots: {over}");
            assert!(tp_over < 0.1, "true peak {tp_over:+} dB over the ceiling");
            assert!(meter_over < 0.1, "BS.1770-4 meter {meter_over:+} dB over");
            // Not over-limited either: the loudest stretch nears the ceiling.
            assert!(tp_over > -1.0, "true peak {tp_over:+} dB");
            assert!(peak <= c * (1.0 + 1e-15), "sample peak {peak} over {c}");
        }
    }
}

/// Below the ceiling (in true peak too) `true_peak` is a pure delay of the
/// lookahead plus the interpolators' 12 samples, reported as latency.
#[test]
fn true_peak_adds_twelve_samples_of_latency() {
    let frames = 5000;
    // A slow sine at half the ceiling: its true peak is its sample peak.
    let x: Vec<f64> = (0..frames)
        .map(|n| 0.4 * libm::sin(2.0 * core::f64::consts::PI * 100.0 * n as f64 / SR))
        .collect();
    for precision in [Precision::F64, Precision::F32] {
        let mut r = tp_runner(-1.0, true, precision);
        let l = r.node().latency();
        assert_eq!(l, 240 + 12);
        let out = r.run(std::slice::from_ref(&x), &[], frames, &[7]);
        for n in 0..frames {
            let want = if n >= l { x[n - l] } else { 0.0 };
            let want = match precision {
                Precision::F64 => want,
                Precision::F32 => want as f32 as f64,
            };
            assert_eq!(out[0][n], want, "frame {n}");
        }
    }
    assert_eq!(tp_runner(-1.0, false, Precision::F64).node().latency(), 240);
}

/// A restored true-peak limiter continues bit for bit: the interpolator's
/// inputs and last segment peak are state.
#[test]
fn true_peak_state_restores_exactly() {
    let x = noise(21, 3.0, 6000);
    let mut a = tp_runner(-1.0, true, Precision::F64);
    a.run(&[x[..2003].to_vec()], &[], 2003, &[64]);
    let st = a.snapshot();
    let want = a.run(&[x[2003..].to_vec()], &[], 3997, &[64]);
    let mut b = tp_runner(-1.0, true, Precision::F64);
    b.node().restore(&st).unwrap();
    let got = b.run(&[x[2003..].to_vec()], &[], 3997, &[5]);
    assert_eq!(want, got);
    // A limiter without the detector has no such state to take.
    let mut c = tp_runner(-1.0, false, Precision::F64);
    c.node().restore(&st).unwrap();
    assert!(b.node().restore(&c.snapshot()).is_err());
}
