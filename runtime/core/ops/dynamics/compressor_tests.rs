use super::*;
use crate::dsp::math::{FastMath, StrictMath};
use crate::dsp::{Math, Precision, Sample};
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::Value;

const SR: f64 = 48000.0;

fn runner(set: &[(&str, f64)], rms: bool, precision: Precision, n_inputs: usize) -> NodeRunner {
    let mut values: Vec<(&str, Value)> = set.iter().map(|(n, v)| (*n, Value::Number(*v))).collect();
    values.push(("detector", Value::Enum(usize::from(rms))));
    let profile = match precision {
        Precision::F64 => Profile::Strict,
        Precision::F32 => Profile::Repro,
    };
    NodeRunner::new(
        &COMPRESSOR,
        values_with(&COMPRESSOR, &values),
        profile,
        Some(precision),
        SR,
        512,
        n_inputs,
    )
    .unwrap()
}

/// The static curve as the textbook writes it (output level from input
/// level, dB), independently of the node's gain-change form.
fn textbook_out_db(x: f64, t: f64, r: f64, w: f64, makeup: f64) -> f64 {
    let y = if 2.0 * (x - t) < -w {
        x
    } else if 2.0 * (x - t).abs() <= w {
        x + (1.0 / r - 1.0) * (x - t + w / 2.0) * (x - t + w / 2.0) / (2.0 * w)
    } else {
        t + (x - t) / r
    };
    y + makeup
}

fn db(x: f64) -> f64 {
    20.0 * libm::log10(x)
}

fn sine(amp: f64, frames: usize) -> Vec<f64> {
    (0..frames)
        .map(|i| amp * libm::sin(2.0 * core::f64::consts::PI * 1000.0 * i as f64 / SR))
        .collect()
}

/// (a) Steady 1 kHz sines at five levels (below, in and above the knee)
/// come out at the curve's level: the output's peak under the peak
/// detector, its RMS under the RMS detector.
#[test]
fn steady_sines_land_on_the_static_curve() {
    let (t, r, w, m) = (-20.0, 4.0, 8.0, 2.0);
    let curve = [("threshold", t), ("ratio", r), ("knee", w), ("makeup", m)];
    let frames = 48000;
    let tail = 24000; // 500 periods
    let mut worst = 0.0f64;
    for rms in [false, true] {
        let times = if rms {
            [("attack", 0.05), ("release", 0.05)]
        } else {
            [("attack", 0.0002), ("release", 2.0)]
        };
        for level in [-40.0, -25.0, -20.0, -17.0, -6.0] {
            // The level is the sine's peak (peak) or RMS (rms).
            let amp = libm::pow(10.0, level / 20.0) * if rms { libm::sqrt(2.0) } else { 1.0 };
            let x = sine(amp, frames);
            for precision in [Precision::F64, Precision::F32] {
                let mut set = curve.to_vec();
                set.extend(times);
                let mut node = runner(&set, rms, precision, 1);
                let out = node.run(std::slice::from_ref(&x), &[], frames, &[64]);
                let y = &out[0][frames - tail..];
                let measured = if rms {
                    libm::sqrt(y.iter().map(|v| v * v).sum::<f64>() / tail as f64)
                } else {
                    y.iter().fold(0.0f64, |m, v| m.max(v.abs()))
                };
                let err = db(measured) - textbook_out_db(level, t, r, w, m);
                worst = worst.max(err.abs());
                assert!(
                    err.abs() <= 0.05,
                    "rms {rms} level {level} {precision:?}: off by {err} dB"
                );
            }
        }
    }
    eprintln!("static curve: worst error {worst:.4} dB");
}

/// (b) A level step covers 1 − 1/e of its change in `attack` (up) and
/// `release` (down). The detected level is read back from `gain` through
/// the hard-knee curve above threshold (gain dB = (1/ratio − 1)·(x − t)).
#[test]
fn a_level_step_covers_one_minus_one_over_e_in_attack_and_release() {
    let (t, r) = (-40.0, 4.0);
    let (attack_n, release_n) = (480usize, 2400usize);
    let (lo, hi) = (libm::pow(10.0, -30.0 / 20.0), libm::pow(10.0, -10.0 / 20.0));
    let (up, down, frames) = (20000, 40000, 60000);
    let x: Vec<f64> = (0..frames)
        .map(|i| {
            let a = if (up..down).contains(&i) { hi } else { lo };
            if i % 2 == 0 {
                a
            } else {
                -a
            }
        })
        .collect();
    let target = 1.0 - libm::exp(-1.0);
    for precision in [Precision::F64, Precision::F32] {
        let set = [
            ("threshold", t),
            ("ratio", r),
            ("knee", 0.0),
            ("attack", attack_n as f64 / SR),
            ("release", release_n as f64 / SR),
        ];
        let mut node = runner(&set, false, precision, 1);
        let out = node.run(std::slice::from_ref(&x), &[], frames, &[64, 13]);
        let level = |i: usize| {
            let g = db(out[1][i]);
            libm::pow(10.0, (t + g / (1.0 / r - 1.0)) / 20.0)
        };
        let before = level(up - 1);
        assert!(
            (before / lo - 1.0).abs() < 1e-3,
            "{precision:?} settled at lo"
        );
        let frac = (level(up - 1 + attack_n) - before) / (hi - before);
        eprintln!("{precision:?} attack: {frac:.5} (target {target:.5})");
        assert!((frac - target).abs() <= 0.05 * target, "attack {frac}");
        let before = level(down - 1);
        assert!(
            (before / hi - 1.0).abs() < 1e-3,
            "{precision:?} settled at hi"
        );
        let frac = (before - level(down - 1 + release_n)) / (before - lo);
        eprintln!("{precision:?} release: {frac:.5} (target {target:.5})");
        assert!((frac - target).abs() <= 0.05 * target, "release {frac}");
    }
}

/// (c) With lookahead L the signal comes out L samples late (the node's
/// latency) and the gain, computed from the undelayed key, starts falling
/// at the key's step: exactly L samples before the delayed step, so the
/// reduction is in place when the step leaves the delay.
#[test]
fn lookahead_delays_the_signal_by_its_latency_and_not_the_gain() {
    let l = 96; // 2 ms at 48 kHz
    let n0 = 1000;
    let frames = 4000;
    let x: Vec<f64> = (0..frames)
        .map(|i| {
            if i < n0 {
                0.0
            } else if i % 2 == 0 {
                0.5
            } else {
                -0.5
            }
        })
        .collect();
    let set = |la: f64| {
        vec![
            ("threshold", -60.0),
            ("knee", 0.0),
            ("attack", 0.001),
            ("lookahead", la),
        ]
    };
    for precision in [Precision::F64, Precision::F32] {
        let mut with = runner(&set(l as f64 / SR), false, precision, 1);
        assert_eq!(with.node().latency(), l);
        let mut without = runner(&set(0.0), false, precision, 1);
        assert_eq!(without.node().latency(), 0);
        for blocks in [vec![1], vec![7], vec![64], vec![512]] {
            with.reset();
            without.reset();
            let a = with.run(std::slice::from_ref(&x), &[], frames, &blocks);
            let b = without.run(std::slice::from_ref(&x), &[], frames, &blocks);
            let first_reduced = a[1].iter().position(|g| *g < 1.0).unwrap();
            let first_sound = a[0].iter().position(|y| *y != 0.0).unwrap();
            assert_eq!(first_reduced, n0, "{blocks:?}");
            assert_eq!(first_sound, n0 + l, "{blocks:?}");
            // The gain is the lookahead-free node's; the signal is in[n − L]
            // times it.
            assert_eq!(a[1], b[1]);
            for n in 0..frames {
                let d = if n >= l { x[n - l] } else { 0.0 };
                let d = match precision {
                    Precision::F64 => d,
                    Precision::F32 => d as f32 as f64,
                };
                match precision {
                    Precision::F64 => assert_eq!(a[0][n], d * a[1][n], "frame {n}"),
                    // The node multiplies by the unrounded gain.
                    Precision::F32 => {
                        assert!((a[0][n] - d * a[1][n]).abs() <= 1e-7 * d.abs(), "frame {n}")
                    }
                }
            }
            // By the time the step leaves the delay, the gain has fallen.
            assert!(a[1][n0 + l] < a[1][n0]);
        }
    }
}

/// A connected `sidechain` keys the gain; `in` is only scaled by it.
#[test]
fn a_connected_sidechain_keys_the_gain() {
    let frames = 9600;
    let music = sine(0.1, frames); // −20 dB: below threshold on its own
    let key: Vec<f64> = (0..frames)
        .map(|i| if (2400..4800).contains(&i) { 1.0 } else { 0.0 })
        .collect();
    let set = [("threshold", -30.0), ("ratio", 10.0), ("knee", 0.0)];
    let mut keyed = runner(&set, false, Precision::F64, 2);
    let out = keyed.run(&[music.clone(), key], &[], frames, &[64]);
    // Silent key: no reduction, the music passes unchanged.
    assert!(out[1][..2400].iter().all(|g| *g == 1.0));
    assert_eq!(&out[0][..2400], &music[..2400]);
    // Under the key the gain falls towards (−30 − 0)·(1 − 1/10) = −27 dB.
    let g = db(out[1][4799]);
    assert!((g + 27.0).abs() < 0.1, "{g}");
    for i in 0..frames {
        assert_eq!(out[0][i], music[i] * out[1][i]);
    }
    // Unconnected: the key is `in` itself, a −20 dB peak over a −30 dB
    // threshold: reduced, by at most the −9 dB its peak calls for (the
    // 10 ms attack settles below the peak of a 1 kHz sine).
    let mut own = runner(&set, false, Precision::F64, 1);
    let out = own.run(std::slice::from_ref(&music), &[], frames, &[64]);
    let g = db(out[1][frames - 1]);
    assert!((-9.0..-6.0).contains(&g), "{g}");
}

/// Snapshots migrate: f64 state (detector level, lookahead line) restores
/// into an f32 node and back, continuing within f32 rounding.
#[test]
fn snapshots_migrate_between_precisions() {
    let x = crate::ops::conformance::test_signal(9, 6000);
    let set = [
        ("threshold", -24.0),
        ("lookahead", 0.003),
        ("attack", 0.001),
    ];
    let mut a = runner(&set, true, Precision::F64, 1);
    a.run(&[x[..2000].to_vec()], &[], 2000, &[64]);
    let mut b = runner(&set, true, Precision::F32, 1);
    b.node().restore(&a.snapshot()).unwrap();
    let mut c = runner(&set, true, Precision::F64, 1);
    let ya = a.run(&[x[2000..4000].to_vec()], &[], 2000, &[64]);
    let yb = b.run(&[x[2000..4000].to_vec()], &[], 2000, &[64]);
    for (p, q) in ya[0].iter().zip(&yb[0]) {
        assert!((p - q).abs() <= 1e-6, "{p} vs {q}");
    }
    c.node().restore(&b.snapshot()).unwrap();
    let ya = a.run(&[x[4000..].to_vec()], &[], 2000, &[64]);
    let yc = c.run(&[x[4000..].to_vec()], &[], 2000, &[64]);
    for (p, q) in ya[0].iter().zip(&yc[0]) {
        assert!((p - q).abs() <= 1e-6, "{p} vs {q}");
    }
}

#[test]
fn a_snapshot_of_another_lookahead_is_refused() {
    let mut a = runner(&[("lookahead", 0.001)], false, Precision::F64, 1);
    a.run(&[vec![0.5; 100]], &[], 100, &[64]);
    let mut b = runner(&[("lookahead", 0.002)], false, Precision::F64, 1);
    assert!(b.node().restore(&a.snapshot()).is_err());
}

#[test]
fn the_knee_is_continuous_with_matching_slopes() {
    let (t, r, w) = (-20.0, 4.0, 10.0);
    for edge in [t - w / 2.0, t + w / 2.0] {
        let below = gain_db(edge - 1e-9, t, r, w);
        let above = gain_db(edge + 1e-9, t, r, w);
        assert!((below - above).abs() < 1e-8);
    }
    assert_eq!(gain_db(-40.0, t, r, w), 0.0);
    assert!((gain_db(0.0, t, r, w) - (-15.0)).abs() < 1e-12);
    // At the threshold the soft knee sits (1/R − 1)·W/8 below the hard one.
    assert!((gain_db(t, t, r, w) - (0.25 - 1.0) * w / 8.0).abs() < 1e-12);
}

/// Over a signal swept from −40 dB to 0 dB (below, in and above the
/// knee), live's `gain` stays within 1e-5 relative of strict's at block
/// sizes 1, 7, 64 and 4096.
#[test]
fn live_gain_is_within_1e_5_of_strict_through_the_knee() {
    let frames = 24000;
    let x: Vec<f64> = (0..frames)
        .map(|i| {
            let level = -40.0 + 40.0 * i as f64 / frames as f64;
            libm::pow(10.0, level / 20.0)
                * libm::sin(2.0 * core::f64::consts::PI * 440.0 * i as f64 / SR)
        })
        .collect();
    let set = [("threshold", -20.0), ("attack", 0.001), ("release", 0.05)];
    let values: Vec<(&str, Value)> = set.iter().map(|(n, v)| (*n, Value::Number(*v))).collect();
    let node = |profile, precision| {
        let values = values_with(&COMPRESSOR, &values);
        NodeRunner::new(&COMPRESSOR, values, profile, Some(precision), SR, 4096, 1).unwrap()
    };
    let strict =
        node(Profile::Strict, Precision::F64).run(std::slice::from_ref(&x), &[], frames, &[64]);
    let reduced = strict[1].iter().filter(|g| **g < 0.99).count();
    assert!(reduced > frames / 4, "the sweep is compressed: {reduced}");
    for block in [1, 7, 64, 4096] {
        let live = node(Profile::Live, Precision::F32).run(
            std::slice::from_ref(&x),
            &[],
            frames,
            &[block],
        );
        let worst = live[1]
            .iter()
            .zip(&strict[1])
            .map(|(l, s)| (l - s).abs() / s)
            .fold(0.0f64, f64::max);
        assert!(worst <= 1e-5, "block {block}: relative error {worst:e}");
    }
}

/// Levels from 1e-12 to 10 (−240 dB to +20 dB) in small geometric steps,
/// with zero and the curve's own edges among them.
fn level_sweep(curve: &Curve) -> Vec<f64> {
    let mut levels = vec![0.0, curve.floor, 1e-30];
    let mut x = 1e-12;
    while x < 10.0 {
        levels.push(x);
        x *= 1.000_7;
    }
    for edge in [
        curve.threshold - 0.5 * curve.knee,
        curve.threshold + 0.5 * curve.knee,
    ] {
        let l = libm::pow(10.0, edge / 20.0);
        levels.extend([l * (1.0 - 1e-12), l, l * (1.0 + 1e-12)]);
    }
    levels
}

/// The fast curve (log2 domain, polynomial log2 and exp2) gives the exact
/// curve's gain (libm's ln and exp) within 2e-8 relative, over levels
/// from −240 dB to +20 dB and curves from hard to wide knees, gentle to
/// brickwall ratios; a NaN threshold means no reduction, as exactly.
#[test]
fn the_fast_curve_is_within_2e_8_of_the_exact_curve() {
    let mut worst = 0.0f64;
    for threshold in [-60.0, -30.0, -20.0, -3.0, 0.0] {
        for ratio in [1.0, 1.5, 4.0, 20.0, 1000.0] {
            for knee in [0.0, 0.5, 6.0, 24.0] {
                let curve = Curve::new::<StrictMath>(threshold, ratio, knee);
                let fast = Curve::new::<FastMath>(threshold, ratio, knee);
                for level in level_sweep(&curve) {
                    let exact = curve.gain::<StrictMath>(level);
                    let got = fast.gain::<FastMath>(level);
                    let rel = (got - exact).abs() / exact;
                    worst = worst.max(rel);
                    assert!(
                        rel <= 2e-8,
                        "threshold {threshold} ratio {ratio} knee {knee} level {level:e}: \
                         {got} vs {exact}"
                    );
                }
            }
        }
    }
    eprintln!("fast curve: worst relative error {worst:e}");
    let nan = Curve::new::<FastMath>(f64::NAN, 4.0, 6.0);
    assert_eq!(nan.gain::<FastMath>(0.5), 1.0);
    assert_eq!(
        Curve::new::<StrictMath>(f64::NAN, 4.0, 6.0).gain::<StrictMath>(0.5),
        1.0
    );
}

/// The fast gains computed in vector lanes are the bits of the scalar
/// fast curve at every instruction set this CPU runs, at every length
/// (whole vectors and remainders), also for runs whose every level is at
/// or below the floor (with a NaN among them, or one level over).
#[test]
fn fast_gains_in_lanes_are_the_scalar_bits_at_every_instruction_set() {
    use crate::dsp::vector::SimdLevel;
    for knee in [0.0, 6.0] {
        let curve = Curve::new::<FastMath>(-24.0, 3.0, knee);
        let quiet: Vec<f64> = (0..64).map(|i| curve.floor * i as f64 / 63.0).collect();
        let mut with_nan = quiet.clone();
        with_nan[9] = f64::NAN;
        let mut one_over = quiet.clone();
        one_over[40] = curve.floor * 1.5;
        for levels in [&quiet, &with_nan, &one_over] {
            let want: Vec<u64> = levels
                .iter()
                .map(|l| curve.fast_gain(*l).to_bits())
                .collect();
            for simd in SimdLevel::available() {
                let mut gain = vec![0.0; levels.len()];
                curve.gains::<FastMath>(simd, levels, &mut gain);
                let got: Vec<u64> = gain.iter().map(|g| g.to_bits()).collect();
                assert_eq!(got, want, "{simd:?}, knee {knee}, quiet run");
            }
        }
        assert!(curve.fast_gain(one_over[40]) < 1.0, "knee {knee}");
        let levels = level_sweep(&curve);
        let want: Vec<u64> = levels
            .iter()
            .map(|l| curve.fast_gain(*l).to_bits())
            .collect();
        for simd in SimdLevel::available() {
            for len in [1, 3, 8, 17, levels.len()] {
                let mut gain = vec![0.0; len];
                curve.gains::<FastMath>(simd, &levels[..len], &mut gain);
                let got: Vec<u64> = gain.iter().map(|g| g.to_bits()).collect();
                assert_eq!(got, want[..len], "{simd:?}, {len} levels, knee {knee}");
            }
        }
    }
}

/// Strict's and repro's gains computed in lanes (libm's log and exp
/// ported) are the bits of the exact curve called level by level, at every instruction
/// set this CPU runs and every length: over levels from −240 dB to +20 dB,
/// for hard and soft knees, gentle to brickwall ratios, a NaN threshold,
/// and runs with zero, subnormal, infinite and NaN levels among them.
#[test]
fn exact_gains_in_lanes_are_the_bits_of_the_calls_at_every_instruction_set() {
    use crate::dsp::vector::SimdLevel;
    for (threshold, ratio, knee) in [
        (-24.0, 3.0, 0.0),
        (-20.0, 4.0, 6.0),
        (-40.0, 1.5, 12.0),
        (-6.0, 1000.0, 0.5),
        (f64::NAN, 4.0, 6.0),
    ] {
        let curve = Curve::new::<StrictMath>(threshold, ratio, knee);
        let mut levels = level_sweep(&curve);
        levels.extend([
            5e-324,
            f64::MIN_POSITIVE,
            1.0,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ]);
        levels.extend([-1.0, 2.0, 0.0, 1e-3]);
        let want: Vec<u64> = levels
            .iter()
            .map(|l| curve.gain::<StrictMath>(*l).to_bits())
            .collect();
        assert!(
            threshold.is_nan() || want.iter().any(|g| f64::from_bits(*g) < 0.5),
            "the sweep compresses"
        );
        for simd in SimdLevel::available() {
            for len in [1, 7, 8, 17, levels.len()] {
                let mut gain = vec![0.0; len];
                curve.gains::<StrictMath>(simd, &levels[..len], &mut gain);
                let got: Vec<u64> = gain.iter().map(|g| g.to_bits()).collect();
                assert_eq!(
                    got,
                    want[..len],
                    "{simd:?}, {len} levels, threshold {threshold}, ratio {ratio}, knee {knee}"
                );
                // Repro's (std math) curve takes the same functions.
                curve.gains::<crate::dsp::StdMath>(simd, &levels[..len], &mut gain);
                let got: Vec<u64> = gain.iter().map(|g| g.to_bits()).collect();
                assert_eq!(got, want[..len], "std math, {simd:?}, {len} levels");
            }
        }
    }
}

/// A groove to duck: the plucked notes and echoes of
/// `scenes/pluck-delay.json` played node by node (1.5 s in steady state),
/// and a kick on every beat at 120 bpm keying it — a 55 Hz sine under an
/// exponential decay (30 ms) with a 1 ms attack ramp, at 0.9.
fn duck_inputs() -> (Vec<f64>, Vec<f64>) {
    let music = crate::ops::harness::pluck_delay_signal(SR);
    let beat = (0.5 * SR) as usize;
    let kick = (0..music.len())
        .map(|i| {
            let t = (i % beat) as f64 / SR;
            let ramp = (t / 0.001).min(1.0);
            0.9 * ramp * libm::exp(-t / 0.03) * libm::sin(2.0 * std::f64::consts::PI * 55.0 * t)
        })
        .collect();
    (music, kick)
}

/// The compressor computed sample by sample as written in the module
/// docs, with the detector's ballistics spelled out (as `c·e + (1 − c)·r`
/// under fast math, fused where the CPU has FMA) and the curve's
/// `gain` (exact under strict and std math, the fast curve under fast
/// math): `(out, gain)` with the inputs and outputs rounded to `S`, in the
/// FP mode the node runs in.
#[allow(clippy::too_many_arguments, clippy::disallowed_methods)] // the fused oracle
fn reference<S: Sample, M: Math>(
    music: &[f64],
    key: &[f64],
    rms: bool,
    (threshold, ratio, knee): (f64, f64, f64),
    (attack, release): (f64, f64),
    makeup: f64,
    lookahead: usize,
    flush: bool,
) -> Vec<Vec<f64>> {
    let _fp = crate::dsp::fpmode::FpGuard::new(flush);
    let curve = Curve::new::<M>(threshold, ratio, knee);
    let makeup = db_to_lin::<M>(makeup);
    let (ca, cr) = (
        M::coef_exp(-1.0 / (attack * SR)),
        M::coef_exp(-1.0 / (release * SR)),
    );
    let round = |v: f64| S::from_f64(v).to_f64();
    // The node fuses the fast step where the CPU has FMA (`Detector::run`).
    let fused = crate::dsp::vector::SimdLevel::detect().has_fma();
    let mut e = 0.0f64;
    let (mut out, mut gain) = (Vec::new(), Vec::new());
    for i in 0..music.len() {
        let k = round(key[i]);
        let r = if rms { k * k } else { k.abs() };
        let c = if r > e { ca } else { cr };
        e = if M::KIND != crate::dsp::MathKind::Fast {
            r + c * (e - r)
        } else if fused {
            c.mul_add(e, (1.0 - c) * r)
        } else {
            c * e + (1.0 - c) * r
        };
        if !e.is_finite() || e < 1e-30 {
            e = 0.0;
        }
        let level = if rms { e.sqrt() } else { e };
        let g = curve.gain::<M>(level);
        let d = if i >= lookahead {
            round(music[i - lookahead])
        } else {
            0.0
        };
        out.push(round(d * (g * makeup)));
        gain.push(round(g));
    }
    vec![out, gain]
}

/// On a groove (a shipped scene's plucks, keyed by a kick), in two
/// settings (a keyed peak duck with a soft knee; an RMS hard-knee compressor
/// of the music itself with makeup and lookahead): every profile gives
/// the bits of the sample-by-sample reference at block sizes 1, 7, 64 and
/// 4096, strict's being the exact curve through libm; and repro and live
/// stay within their parity bound of strict, their gain within 1e-5.
#[test]
fn every_profile_is_its_per_sample_reference_at_any_block_size_on_a_scene() {
    let (music, kick) = duck_inputs();
    let n = music.len();
    assert!(music.iter().any(|v| v.abs() > 0.05) && kick.iter().any(|v| v.abs() > 0.5));
    // (keyed, rms, threshold, ratio, knee, attack, release, makeup, lookahead s)
    let settings = [
        (true, false, -30.0, 6.0, 6.0, 0.002, 0.16, 0.0, 0.0),
        (false, true, -32.0, 4.0, 0.0, 0.005, 0.1, 3.0, 0.002),
    ];
    for (keyed, rms, t, r, w, a, rel, m, la) in settings {
        let set = [
            ("threshold", t),
            ("ratio", r),
            ("knee", w),
            ("attack", a),
            ("release", rel),
            ("makeup", m),
            ("lookahead", la),
        ];
        let lookahead = (la * SR).round() as usize;
        let key = if keyed { &kick } else { &music };
        let inputs = if keyed {
            vec![music.clone(), kick.clone()]
        } else {
            vec![music.clone()]
        };
        let mut strict: Option<Vec<Vec<f64>>> = None;
        for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
            let flush = profile != Profile::Strict;
            let want = match profile {
                Profile::Strict => reference::<f64, StrictMath>(
                    &music,
                    key,
                    rms,
                    (t, r, w),
                    (a, rel),
                    m,
                    lookahead,
                    flush,
                ),
                Profile::Repro => reference::<f32, crate::dsp::StdMath>(
                    &music,
                    key,
                    rms,
                    (t, r, w),
                    (a, rel),
                    m,
                    lookahead,
                    flush,
                ),
                Profile::Live => reference::<f32, FastMath>(
                    &music,
                    key,
                    rms,
                    (t, r, w),
                    (a, rel),
                    m,
                    lookahead,
                    flush,
                ),
            };
            for block in [1, 7, 64, 4096] {
                let mut values: Vec<(&str, Value)> =
                    set.iter().map(|(n, v)| (*n, Value::Number(*v))).collect();
                values.push(("detector", Value::Enum(usize::from(rms))));
                let values = values_with(&COMPRESSOR, &values);
                let mut node =
                    NodeRunner::new(&COMPRESSOR, values, profile, None, SR, 4096, inputs.len())
                        .unwrap();
                let got = node.run(&inputs, &[], n, &[block]);
                for (port, (g, w)) in got.iter().zip(&want).enumerate() {
                    if let Some(i) = (0..n).find(|&i| g[i].to_bits() != w[i].to_bits()) {
                        panic!(
                            "{profile:?} keyed {keyed} block {block} output {port} frame {i}: \
                             {} vs {}",
                            g[i], w[i]
                        );
                    }
                }
            }
            match &strict {
                None => {
                    let reduced = want[1].iter().filter(|g| **g < 0.8).count();
                    assert!(reduced > n / 10, "keyed {keyed}: compressed: {reduced}");
                    strict = Some(want);
                }
                Some(s) => {
                    let err: f64 = want[0]
                        .iter()
                        .zip(&s[0])
                        .map(|(p, q)| (p - q) * (p - q))
                        .sum();
                    let norm: f64 = s[0].iter().map(|q| q * q).sum();
                    let rms_err = (err / norm).sqrt();
                    assert!(
                        rms_err <= profile.default_parity_bound(),
                        "{profile:?} keyed {keyed}: relative RMS {rms_err:e}"
                    );
                    let worst = want[1]
                        .iter()
                        .zip(&s[1])
                        .map(|(p, q)| (p - q).abs() / q)
                        .fold(0.0f64, f64::max);
                    eprintln!(
                        "{profile:?} keyed {keyed}: relative RMS {rms_err:e}, gain within {worst:e}"
                    );
                    assert!(
                        worst <= 1e-5,
                        "{profile:?} keyed {keyed}: gain off by {worst:e}"
                    );
                }
            }
        }
    }
}

/// A threshold held for three blocks at a time, then another, then the
/// first again: each block compresses by the curve of its own settings
/// (the curve kept from the block before is not reused once they change)
/// — the bits of the same thresholds as a modulation, which computes the
/// curve every sample — under strict and repro, whose held and modulated
/// paths step alike.
#[test]
fn a_setting_changed_between_blocks_changes_the_curve() {
    let x = duck_inputs().0[..64 * 12].to_vec();
    let n = x.len();
    let thresholds = [-30.0, -12.0, -30.0, -40.0];
    for profile in [Profile::Strict, Profile::Repro] {
        let node = || {
            let values = values_with(&COMPRESSOR, &[]);
            NodeRunner::new(&COMPRESSOR, values, profile, None, SR, 4096, 1).unwrap()
        };
        let mut held = node();
        let mut got = Vec::new();
        for b in 0..12 {
            *held.param_state(THRESHOLD) = crate::ops::ParamState::constant(thresholds[b / 3]);
            let y = held.run(&[x[b * 64..(b + 1) * 64].to_vec()], &[], 64, &[64]);
            got.extend(y[0].iter().copied());
        }
        let mut moved = node();
        *moved.param_state(THRESHOLD) = crate::ops::ParamState::constant(0.0);
        let signal: Vec<f64> = (0..n).map(|i| thresholds[i / 192]).collect();
        let want = moved.run(std::slice::from_ref(&x), &[(THRESHOLD, signal)], n, &[64]);
        let bits = |v: &[f64]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want[0]), "{profile:?}");
        let mut fixed = node();
        *fixed.param_state(THRESHOLD) = crate::ops::ParamState::constant(-30.0);
        let first = fixed.run(std::slice::from_ref(&x), &[], n, &[64]);
        assert_ne!(
            bits(&got),
            bits(&first[0]),
            "{profile:?}: the change matters"
        );
    }
}
