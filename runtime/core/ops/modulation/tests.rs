//! Oracles for the modulation effects, computed here from the formulas in
//! the module docs (with `libm`), not from the implementation: where a held
//! or sampled LFO puts a delayed impulse, where a flanger's comb peaks, and
//! where a phaser's notches fall. Then state: snapshots migrate between
//! precisions (the conformance suite checks restore at one precision, the
//! save and reset in parts, and every block size).

use super::{CHORUS, FLANGER, PHASER};
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{values_with, NodeRunner};
use crate::ops::{OpSpec, StateValue, Value};
use crate::profile::Profile;
use core::f64::consts::{FRAC_PI_2, PI};

const SR: f64 = 48000.0;

fn runner(spec: &'static OpSpec, params: &[(&str, Value)], precision: Precision) -> NodeRunner {
    let profile = match precision {
        Precision::F64 => Profile::Strict,
        Precision::F32 => Profile::Repro,
    };
    NodeRunner::new(
        spec,
        values_with(spec, params),
        profile,
        Some(precision),
        SR,
        512,
        1,
    )
    .unwrap()
}

fn num(v: f64) -> Value {
    Value::Number(v)
}

/// Unit impulses at `at`, `frames` long.
fn impulses(frames: usize, at: &[usize]) -> Vec<f64> {
    let mut x = vec![0.0; frames];
    for &m in at {
        x[m] = 1.0;
    }
    x
}

/// The pulses of `y` (runs of nonzero samples, split where a sample is 0):
/// each one's (centroid, total weight).
fn pulses(y: &[f64]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let (mut w, mut m) = (0.0, 0.0);
    for (n, &v) in y.iter().enumerate() {
        if v != 0.0 {
            w += v;
            m += v * n as f64;
        } else if w != 0.0 {
            out.push((m / w, w));
            (w, m) = (0.0, 0.0);
        }
    }
    if w != 0.0 {
        out.push((m / w, w));
    }
    out
}

/// Linear interpolation's weight of input sample `m` at read position `p`.
fn hat(t: f64) -> f64 {
    (1.0 - t.abs()).max(0.0)
}

/// The delayed-impulse oracle for a line read at `d(n)` samples:
/// `y[n] = g·Σ_m x[m]·hat(n − d(n) − m)` for each voice's `d`, averaged.
fn swept_oracle(x: &[f64], delays: &[&dyn Fn(f64) -> f64]) -> Vec<f64> {
    let g = 1.0 / delays.len() as f64;
    (0..x.len())
        .map(|n| {
            delays
                .iter()
                .map(|d| {
                    let p = n as f64 - d(n as f64);
                    let lo = p.floor() as isize;
                    (lo..=lo + 1)
                        .filter(|&m| m >= 0 && (m as usize) < x.len())
                        .map(|m| x[m as usize] * hat(p - m as f64))
                        .sum::<f64>()
                })
                .sum::<f64>()
                * g
        })
        .collect()
}

/// The time `t` at which an impulse written at `m0` is read: `t − d(t) = m0`.
fn read_time(m0: f64, d: &dyn Fn(f64) -> f64) -> f64 {
    let mut t = m0 + d(m0);
    for _ in 0..100 {
        t = m0 + d(t);
    }
    t
}

#[test]
fn chorus_and_flanger_with_a_held_lfo_delay_by_the_midpoint_and_the_extremes() {
    // A held LFO (rate 0): left at its midpoint, right at sin(phase) = ±1.
    // Fractional delays: 10.3 ms = 494.4 samples, depth 2.1 ms = 100.8.
    let at = [100, 2100, 4100];
    let x = impulses(6000, &at);
    let (d, a) = (0.0103 * SR, 0.0021 * SR);
    let mut worst = 0.0f64;
    for spec in [&CHORUS, &FLANGER] {
        for (phase, right) in [(FRAC_PI_2, d + a), (-FRAC_PI_2, d - a)] {
            let mut params = vec![
                ("rate", num(0.0)),
                ("delay", num(0.0103)),
                ("depth", num(0.0021)),
                ("phase", num(phase)),
                ("mix", num(1.0)),
            ];
            if spec.name == "chorus" {
                params.push(("voices", Value::Integer(1)));
            } else {
                params.push(("feedback", num(0.0)));
            }
            let mut r = runner(spec, &params, Precision::F64);
            let y = r.run(std::slice::from_ref(&x), &[], x.len(), &[64, 7]);
            for (ch, want) in [(0, d), (1, right)] {
                let p = pulses(&y[ch]);
                assert_eq!(p.len(), at.len(), "{} ch {ch}", spec.name);
                for ((c, w), m0) in p.iter().zip(at) {
                    let got = c - m0 as f64;
                    worst = worst.max((got - want).abs());
                    assert!(
                        (got - want).abs() <= 1e-9,
                        "{} ch {ch} phase {phase}: delay {got}, formula {want}",
                        spec.name
                    );
                    assert!((w - 1.0).abs() <= 1e-12, "{}: weight {w}", spec.name);
                }
                // The interpolation weights: (1 − f) at ⌊d⌋, f at ⌊d⌋ + 1.
                let k = want.floor() as usize;
                let f = want - want.floor();
                assert!((y[ch][100 + k] - (1.0 - f)).abs() <= 1e-12);
                assert!((y[ch][100 + k + 1] - f).abs() <= 1e-12);
            }
        }
    }
    eprintln!("held LFO: chorus and flanger delays within {worst:e} samples of the formula");
}

#[test]
fn chorus_voices_sit_at_their_spread_phases() {
    // Three voices, spread 1: phases 0, 2π/3, 4π/3. Left: sin → 0, ±√3/2;
    // right (phase π/2): cos → 1, −1/2, −1/2 (two voices at one delay).
    let x = impulses(3000, &[200]);
    let (d, a) = (0.012 * SR, 0.003 * SR);
    let mut r = runner(
        &CHORUS,
        &[
            ("rate", num(0.0)),
            ("delay", num(0.012)),
            ("depth", num(0.003)),
            ("voices", Value::Integer(3)),
            ("spread", num(1.0)),
            ("phase", num(FRAC_PI_2)),
            ("mix", num(1.0)),
        ],
        Precision::F64,
    );
    let y = r.run(std::slice::from_ref(&x), &[], x.len(), &[64]);
    let s = libm::sqrt(3.0) / 2.0;
    let want = [
        vec![
            (d - s * a, 1.0 / 3.0),
            (d, 1.0 / 3.0),
            (d + s * a, 1.0 / 3.0),
        ],
        vec![(d - 0.5 * a, 2.0 / 3.0), (d + a, 1.0 / 3.0)],
    ];
    for ch in 0..2 {
        let got = pulses(&y[ch]);
        assert_eq!(got.len(), want[ch].len(), "ch {ch}: {got:?}");
        for ((c, w), (wd, ww)) in got.iter().zip(&want[ch]) {
            assert!((c - 200.0 - wd).abs() <= 1e-9, "ch {ch}: {c} vs {wd}");
            assert!((w - ww).abs() <= 1e-12, "ch {ch}: weight {w} vs {ww}");
        }
    }
    // Spread 0: every voice in step, one pulse of weight 1 at the midpoint.
    let mut r = runner(
        &CHORUS,
        &[
            ("rate", num(0.0)),
            ("delay", num(0.012)),
            ("depth", num(0.003)),
            ("voices", Value::Integer(5)),
            ("spread", num(0.0)),
            ("mix", num(1.0)),
        ],
        Precision::F64,
    );
    let y = r.run(std::slice::from_ref(&x), &[], x.len(), &[64]);
    let got = pulses(&y[0]);
    assert_eq!(got.len(), 1);
    assert!((got[0].0 - 200.0 - d).abs() <= 1e-9 && (got[0].1 - 1.0).abs() <= 1e-12);
}

#[test]
fn a_running_lfo_delays_by_the_formula_at_its_extremes_and_midpoints() {
    // 1.5 Hz at 48 kHz: a period of 32000 samples, so the left LFO peaks at
    // sample 8000, crosses zero falling at 16000 and bottoms at 24000.
    let rate = 1.5;
    let (d, a) = (0.015 * SR, 0.004 * SR);
    let every = 250;
    let at: Vec<usize> = (1..128).map(|k| k * every).collect();
    let x = impulses(33000, &at);
    let lfo = |n: f64, off: f64| libm::sin(2.0 * PI * rate * n / SR + off);
    let mut worst_centroid = 0.0f64;
    for spec in [&CHORUS, &FLANGER] {
        let mut params = vec![
            ("rate", num(rate)),
            ("delay", num(0.015)),
            ("depth", num(0.004)),
            ("phase", num(PI / 3.0)),
            ("mix", num(1.0)),
        ];
        if spec.name == "chorus" {
            params.push(("voices", Value::Integer(1)));
        } else {
            params[1] = ("delay", num(0.0075));
            params[2] = ("depth", num(0.0025));
            params.push(("feedback", num(0.0)));
        }
        let (d, a) = if spec.name == "chorus" {
            (d, a)
        } else {
            (0.0075 * SR, 0.0025 * SR)
        };
        let mut r = runner(spec, &params, Precision::F64);
        let y = r.run(std::slice::from_ref(&x), &[], x.len(), &[64, 1, 300]);
        for (ch, off) in [(0, 0.0), (1, PI / 3.0)] {
            let dn = move |n: f64| d + a * lfo(n, off);
            // The whole output, sample by sample.
            let want = swept_oracle(&x, &[&dn]);
            for (n, (g, w)) in y[ch].iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-9,
                    "{} ch {ch} n {n}: {g} vs {w}",
                    spec.name
                );
            }
            // Each pulse's centroid, against the delay where it is read.
            for ((c, _), &m0) in pulses(&y[ch]).iter().zip(&at) {
                let t = read_time(m0 as f64, &dn);
                worst_centroid = worst_centroid.max((c - t).abs());
                assert!(
                    (c - t).abs() <= 0.05,
                    "{} ch {ch}: pulse at {c}, formula {t}",
                    spec.name
                );
            }
        }
        // At the left LFO's extremes and midpoints, read by the pulses
        // whose read time falls nearest them.
        let left = pulses(&y[0]);
        for (n_star, l) in [
            (8000.0, 1.0),
            (16000.0, 0.0),
            (24000.0, -1.0),
            (32000.0, 0.0),
        ] {
            let want = d + a * l;
            let (k, (c, _)) = left
                .iter()
                .enumerate()
                .min_by(|p, q| (p.1 .0 - n_star).abs().total_cmp(&(q.1 .0 - n_star).abs()))
                .unwrap();
            let got = c - at[k] as f64;
            // Within the LFO's change over the distance to n*.
            let slope = a * 2.0 * PI * rate / SR;
            let tol = slope * (c - n_star).abs() + 0.05;
            assert!(
                (got - want).abs() <= tol,
                "{} at {n_star}: {got} vs {want} (±{tol})",
                spec.name
            );
        }
    }
    eprintln!("running LFO: pulse centroids within {worst_centroid:e} samples of t − d(t) = m0");
}

/// `|H(f)|` of an impulse response by the naive DFT, `f` in Hz (the
/// twiddle `e^{−iωn}` by rotation: off by some 1e-12 after 16384 steps).
fn magnitude(h: &[f64], f: f64) -> f64 {
    let w = 2.0 * PI * f / SR;
    let (cw, sw) = (libm::cos(w), libm::sin(w));
    let (mut c, mut s) = (1.0, 0.0);
    let (mut re, mut im) = (0.0, 0.0);
    for &v in h {
        re += v * c;
        im -= v * s;
        (c, s) = (c * cw - s * sw, s * cw + c * sw);
    }
    libm::sqrt(re * re + im * im)
}

/// The extremum of `g` in `[lo, hi]` by golden-section search (`sign` 1:
/// minimum, −1: maximum).
fn golden(g: &dyn Fn(f64) -> f64, mut lo: f64, mut hi: f64, sign: f64) -> f64 {
    let r = (libm::sqrt(5.0) - 1.0) / 2.0;
    while hi - lo > 1e-7 {
        let (a, b) = (hi - r * (hi - lo), lo + r * (hi - lo));
        if sign * g(a) < sign * g(b) {
            hi = b;
        } else {
            lo = a;
        }
    }
    0.5 * (lo + hi)
}

/// The local extrema of `|H|` on a grid of `step` Hz over `(from, to)`,
/// refined by golden section.
fn extrema(h: &[f64], from: f64, to: f64, step: f64, sign: f64) -> Vec<f64> {
    let grid: Vec<(f64, f64)> = (0..)
        .map(|k| from + k as f64 * step)
        .take_while(|f| *f <= to)
        .map(|f| (f, magnitude(h, f)))
        .collect();
    grid.windows(3)
        .filter(|w| sign * w[1].1 < sign * w[0].1 && sign * w[1].1 <= sign * w[2].1)
        .map(|w| golden(&|f| magnitude(h, f), w[0].0, w[2].0, sign))
        .collect()
}

/// The node's impulse response on both channels, `frames` long.
fn impulse_response(
    spec: &'static OpSpec,
    params: &[(&str, Value)],
    frames: usize,
) -> Vec<Vec<f64>> {
    let x = impulses(frames, &[0]);
    let mut r = runner(spec, params, Precision::F64);
    r.run(std::slice::from_ref(&x), &[], frames, &[64])
}

#[test]
fn a_flanger_with_feedback_peaks_every_one_over_its_delay() {
    // Held LFO: left at 3.1 ms = 148.8 samples, right (phase π/2) at
    // 3.1 + 1.05 ms = 199.2 samples. The wet comb z^−d / (1 − fb·z^−d)
    // peaks at k·sr/d (fb > 0) or (k + ½)·sr/d (fb < 0).
    let mut report = Vec::new();
    for fb in [0.7, -0.7] {
        let h = impulse_response(
            &FLANGER,
            &[
                ("rate", num(0.0)),
                ("delay", num(0.0031)),
                ("depth", num(0.00105)),
                ("feedback", num(fb)),
                ("phase", num(FRAC_PI_2)),
                ("mix", num(1.0)),
            ],
            16384,
        );
        for (ch, d) in [(0, 0.0031 * SR), (1, (0.0031 + 0.00105) * SR)] {
            let spacing = SR / d;
            let peaks = extrema(&h[ch], 20.0, 3000.0, spacing / 16.0, -1.0);
            let first = if fb > 0.0 { 1.0 } else { 0.5 };
            assert!(peaks.len() >= 6, "fb {fb} ch {ch}: {peaks:?}");
            let mut worst = 0.0f64;
            for (k, f) in peaks.iter().enumerate() {
                let want = (k as f64 + first) * spacing;
                worst = worst.max((f - want).abs() / spacing);
                assert!(
                    (f - want).abs() <= 1e-3 * spacing,
                    "fb {fb} ch {ch} peak {k}: {f} Hz, formula {want} Hz"
                );
            }
            let measured = (peaks[peaks.len() - 1] - peaks[0]) / (peaks.len() - 1) as f64;
            assert!(
                (measured - spacing).abs() <= 1e-4 * spacing,
                "fb {fb} ch {ch}: spacing {measured} Hz vs sr/d {spacing} Hz"
            );
            report.push(format!(
                "fb {fb} d {d:.1}: spacing {measured:.4} Hz vs {spacing:.4} Hz (worst peak {worst:.2e} of a spacing)"
            ));
        }
    }
    eprintln!("flanger comb: {}", report.join("; "));
}

/// A phaser's closed-form notches: N stages at break frequency `fb_hz`.
fn notches(stages: usize, fb_hz: f64) -> Vec<f64> {
    let t = libm::tan(PI * fb_hz / SR);
    (0..stages / 2)
        .map(|k| {
            let theta = (2 * k + 1) as f64 * PI / (2 * stages) as f64;
            SR / PI * libm::atan(t * libm::tan(theta))
        })
        .collect()
}

#[test]
fn phaser_notches_fall_where_the_allpass_phase_is_an_odd_multiple_of_pi() {
    // Held LFO: left at `center`, right at center·2^(±depth) (phase ±π/2).
    let mut report = Vec::new();
    for (stages, center, depth, feedback) in [
        (4, 800.0, 1.5, 0.0),
        (8, 1200.0, 1.0, 0.0),
        (12, 500.0, 2.0, 0.0),
        (6, 900.0, 1.0, 0.6),
        (2, 3000.0, 0.5, 0.3),
    ] {
        for phase in [FRAC_PI_2, -FRAC_PI_2] {
            let h = impulse_response(
                &PHASER,
                &[
                    ("rate", num(0.0)),
                    ("stages", Value::Integer(stages)),
                    ("center", num(center)),
                    ("depth", num(depth)),
                    ("feedback", num(feedback)),
                    ("phase", num(phase)),
                    ("mix", num(0.5)),
                ],
                8192,
            );
            let sign = if phase > 0.0 { 1.0 } else { -1.0 };
            for (ch, fb_hz) in [(0, center), (1, center * libm::exp2(sign * depth))] {
                let want = notches(stages as usize, fb_hz);
                let got = extrema(&h[ch], 1.0, 23900.0, 5.0, 1.0);
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{stages} stages at {fb_hz} Hz: {got:?} vs {want:?}"
                );
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-3,
                        "{stages} stages at {fb_hz} Hz, feedback {feedback}: notch {g} Hz, formula {w} Hz"
                    );
                    // Without feedback the notch is a zero; with it, the
                    // depth is |fb/(2(1 + fb))|.
                    let depth_at = magnitude(&h[ch], *g);
                    let floor = 0.5 * feedback / (1.0 + feedback);
                    assert!(
                        (depth_at - floor).abs() <= 1e-6,
                        "{stages} stages: |H| at the notch {depth_at}, want {floor}"
                    );
                }
                if ch == 0 && phase > 0.0 {
                    report.push(format!(
                        "{stages} stages @ {fb_hz} Hz fb {feedback}: {got:.3?} vs {want:.3?}"
                    ));
                }
            }
        }
    }
    eprintln!("phaser notches: {}", report.join("; "));
}

#[test]
fn a_fully_wet_phaser_without_feedback_is_allpass() {
    let h = impulse_response(
        &PHASER,
        &[
            ("rate", num(0.0)),
            ("stages", Value::Integer(6)),
            ("feedback", num(0.0)),
            ("mix", num(1.0)),
        ],
        8192,
    );
    for (ch, h) in h.iter().enumerate() {
        for k in 1..200 {
            let f = k as f64 * 119.0;
            let m = magnitude(h, f);
            assert!((m - 1.0).abs() <= 1e-9, "ch {ch} at {f} Hz: {m}");
        }
    }
}

/// Runs each operator at f64, moves its state to f32 and back, and checks
/// the arrays round, the counters and LFO phase carry exactly, and the f32
/// node continues close to the f64 one.
#[test]
fn state_migrates_between_precisions() {
    let x = test_signal(7, 6000);
    type Case = (
        &'static OpSpec,
        Vec<(&'static str, Value)>,
        &'static [&'static str],
    );
    let cases: [Case; 3] = [
        (
            &CHORUS,
            vec![("rate", num(3.0)), ("voices", Value::Integer(4))],
            &["buffer", "write", "lfo"],
        ),
        (
            &FLANGER,
            vec![("rate", num(2.0)), ("feedback", num(0.8))],
            &["buffer", "write", "buffer_r", "write_r", "lfo"],
        ),
        (
            &PHASER,
            vec![
                ("rate", num(4.0)),
                ("stages", Value::Integer(8)),
                ("feedback", num(0.5)),
            ],
            &["allpass", "lfo"],
        ),
    ];
    let split = 4000;
    for (spec, params, names) in cases {
        let mut r64 = runner(spec, &params, Precision::F64);
        let full = r64.run(std::slice::from_ref(&x), &[], x.len(), &[64]);
        let mut head = runner(spec, &params, Precision::F64);
        head.run(&[x[..split].to_vec()], &[], split, &[64]);
        let st = head.snapshot();
        let got: Vec<&str> = st.entries.iter().map(|(n, _)| n.as_ref()).collect();
        assert_eq!(got, names, "{}", spec.name);
        // f64 → f32: arrays rounded, counters exact.
        let mut r32 = runner(spec, &params, Precision::F32);
        r32.node().restore(&st).unwrap();
        let st32 = r32.snapshot();
        for ((name, a), (_, b)) in st.entries.iter().zip(&st32.entries) {
            match (a, b) {
                (StateValue::F64(a), StateValue::F32(b)) => {
                    assert_eq!(a.len(), b.len());
                    assert!(a.iter().zip(b).all(|(p, q)| *p as f32 == *q), "{name}");
                }
                (StateValue::U64(a), StateValue::U64(b)) => assert_eq!(a, b, "{name}"),
                _ => panic!("{}: {name}: unexpected kinds", spec.name),
            }
        }
        // f32 → f64 is exact.
        let mut back = runner(spec, &params, Precision::F64);
        back.node().restore(&st32).unwrap();
        let st64 = back.snapshot();
        for ((name, a), (_, b)) in st32.entries.iter().zip(&st64.entries) {
            match (a, b) {
                (StateValue::F32(a), StateValue::F64(b)) => {
                    assert!(a.iter().zip(b).all(|(p, q)| *p as f64 == *q), "{name}")
                }
                (StateValue::U64(a), StateValue::U64(b)) => assert_eq!(a, b, "{name}"),
                _ => panic!("{}: {name}: unexpected kinds", spec.name),
            }
        }
        // The migrated f32 node goes on where the f64 one would.
        r32.set_clock(split as u64);
        let tail = r32.run(&[x[split..].to_vec()], &[], x.len() - split, &[64]);
        for ch in 0..2 {
            let err = tail[ch]
                .iter()
                .zip(&full[ch][split..])
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                err <= 1e-4,
                "{} ch {ch}: f32 after migration off by {err:e}",
                spec.name
            );
        }
    }
}

/// Settings that will not do what they say are warned about.
#[test]
fn lints_name_a_clamped_sweep() {
    use crate::ops::harness::values_with;
    let v = values_with(&CHORUS, &[("depth", num(0.01)), ("delay", num(0.005))]);
    let l = (CHORUS.lints)(&v, SR);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].param, "depth");
    assert!(
        l[0].message.contains("held at 1 sample"),
        "{}",
        l[0].message
    );
    assert!((CHORUS.lints)(&values_with(&CHORUS, &[]), SR).is_empty());
    assert!((FLANGER.lints)(&values_with(&FLANGER, &[]), SR).is_empty());
    let v = values_with(&FLANGER, &[("depth", num(0.004)), ("delay", num(0.001))]);
    assert_eq!((FLANGER.lints)(&v, SR).len(), 1);
    assert!((PHASER.lints)(&values_with(&PHASER, &[]), SR).is_empty());
    let v = values_with(&PHASER, &[("center", num(8000.0)), ("depth", num(2.0))]);
    let l = (PHASER.lints)(&v, SR);
    assert_eq!(l.len(), 1);
    assert!(l[0].message.contains("32000 Hz"), "{}", l[0].message);
    let v = values_with(&PHASER, &[("center", num(40.0)), ("depth", num(6.0))]);
    let l = (PHASER.lints)(&v, SR);
    assert!(
        l.iter().any(|l| l.message.contains("held at 1 Hz")),
        "{l:?}"
    );
}
