//! `reverb`'s tests: the decay measured from the impulse response by the
//! standard T30 method (Schroeder backward integration of a band the test
//! filters out itself), the straightness of that decay, the stereo tail's
//! correlation, the line lengths, and state that migrates between
//! precisions and is saved in parts.

use super::*;
use crate::dsp::math::{FastMath, StrictMath};
use crate::dsp::Precision;
use crate::ops::conformance::test_signal;
use crate::ops::harness::{first_difference, values_with, NodeRunner};
use crate::ops::StateValue;

const SR: f64 = 48000.0;

fn runner(params: &[(&str, f64)], profile: Profile, precision: Precision) -> NodeRunner {
    let set: Vec<(&str, Value)> = params
        .iter()
        .map(|(n, v)| (*n, Value::Number(*v)))
        .collect();
    NodeRunner::new(
        &REVERB,
        values_with(&REVERB, &set),
        profile,
        Some(precision),
        SR,
        512,
        1,
    )
    .unwrap()
}

/// The wet impulse response (out, out_r), `seconds` long, strict f64.
fn impulse_response(params: &[(&str, f64)], seconds: f64) -> (Vec<f64>, Vec<f64>) {
    let mut set = vec![("mix", 1.0), ("predelay", 0.0)];
    set.extend_from_slice(params);
    let mut r = runner(&set, Profile::Strict, Precision::F64);
    let frames = (seconds * SR) as usize;
    let mut x = vec![0.0; frames];
    x[0] = 1.0;
    let mut out = r.run(&[x], &[], frames, &[512]);
    let right = out.pop().unwrap();
    (out.pop().unwrap(), right)
}

// ---- The test's own measuring tools (nothing from the operator) ----

/// An RBJ-cookbook lowpass or highpass biquad, direct form I.
struct TestBiquad {
    b: [f64; 3],
    a: [f64; 2],
    x: [f64; 2],
    y: [f64; 2],
}

impl TestBiquad {
    fn new(highpass: bool, fc: f64, q: f64) -> TestBiquad {
        let w = 2.0 * core::f64::consts::PI * fc / SR;
        let (s, c) = (libm::sin(w), libm::cos(w));
        let alpha = s / (2.0 * q);
        let a0 = 1.0 + alpha;
        let b = if highpass {
            [(1.0 + c) / 2.0, -(1.0 + c), (1.0 + c) / 2.0]
        } else {
            [(1.0 - c) / 2.0, 1.0 - c, (1.0 - c) / 2.0]
        };
        TestBiquad {
            b: [b[0] / a0, b[1] / a0, b[2] / a0],
            a: [-2.0 * c / a0, (1.0 - alpha) / a0],
            x: [0.0; 2],
            y: [0.0; 2],
        }
    }

    fn tick(&mut self, x: f64) -> f64 {
        let y = self.b[0] * x + self.b[1] * self.x[0] + self.b[2] * self.x[1]
            - self.a[0] * self.y[0]
            - self.a[1] * self.y[1];
        self.x = [x, self.x[0]];
        self.y = [y, self.y[0]];
        y
    }
}

/// An 8th-order Butterworth lowpass or highpass (48 dB/octave): four
/// biquads with Q = 1/(2·sin((2k−1)π/16)).
fn band(x: &[f64], highpass: bool, fc: f64) -> Vec<f64> {
    let mut stages: Vec<TestBiquad> = (1..=4)
        .map(|k| {
            let q = 1.0 / (2.0 * libm::sin((2 * k - 1) as f64 * core::f64::consts::PI / 16.0));
            TestBiquad::new(highpass, fc, q)
        })
        .collect();
    x.iter()
        .map(|&v| stages.iter_mut().fold(v, |s, st| st.tick(s)))
        .collect()
}

/// Schroeder's backward integral of `h²`, in dB re its start.
fn schroeder_db(h: &[f64]) -> Vec<f64> {
    let mut e = vec![0.0; h.len()];
    let mut acc = 0.0;
    for i in (0..h.len()).rev() {
        acc += h[i] * h[i];
        e[i] = acc;
    }
    let e0 = e[0];
    e.iter().map(|v| 10.0 * libm::log10(v / e0)).collect()
}

/// Least squares `y = a + b·x` over the points.
fn fit(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (x, y) in points {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
    }
    let b = sxy / sxx;
    (my - b * mx, b)
}

/// T30: the Schroeder curve's slope between −5 and −35 dB extrapolated to
/// 60 dB, in seconds, and the curve's largest deviation from that line (dB).
fn t30(h: &[f64]) -> (f64, f64) {
    let db = schroeder_db(h);
    let from = db.iter().position(|&d| d <= -5.0).expect("reaches -5 dB");
    let to = db.iter().position(|&d| d <= -35.0).expect("reaches -35 dB");
    let points: Vec<(f64, f64)> = (from..=to).map(|i| (i as f64 / SR, db[i])).collect();
    let (a, b) = fit(&points);
    let dev = points
        .iter()
        .map(|(t, d)| (d - (a + b * t)).abs())
        .fold(0.0, f64::max);
    (-60.0 / b, dev)
}

#[test]
fn t30_of_each_band_is_its_rt60() {
    // The low band is below crossover/10 and the high band above 5.3 ×
    // the crossover, 8th-order Butterworth splits written here.
    for (size, rt_low, rt_high, crossover, low_fc, high_fc) in [
        (1.0, 1.5, 0.5, 1500.0, 150.0, 8000.0),
        (2.0, 3.0, 1.0, 1000.0, 100.0, 6000.0),
        (0.5, 0.8, 1.6, 2000.0, 200.0, 10000.0),
    ] {
        let seconds = 2.0 * rt_low.max(rt_high) + 0.3;
        let (h, _) = impulse_response(
            &[
                ("size", size),
                ("rt60_low", rt_low),
                ("rt60_high", rt_high),
                ("crossover", crossover),
            ],
            seconds,
        );
        let (low, low_dev) = t30(&band(&h, false, low_fc));
        let (high, high_dev) = t30(&band(&h, true, high_fc));
        eprintln!(
            "size {size}: low band T30 {low:.4} s (rt60_low {rt_low}, {:+.2} %, curve within {low_dev:.3} dB), \
             high band T30 {high:.4} s (rt60_high {rt_high}, {:+.2} %, curve within {high_dev:.3} dB)",
            100.0 * (low / rt_low - 1.0),
            100.0 * (high / rt_high - 1.0)
        );
        assert!((low / rt_low - 1.0).abs() < 0.10, "low {low} vs {rt_low}");
        assert!(
            (high / rt_high - 1.0).abs() < 0.10,
            "high {high} vs {rt_high}"
        );
    }
}

/// With one rt60 in both bands the whole response decays along one line:
/// the Schroeder curve stays within 1 dB of its fit over −5 … −35 dB, and
/// the energy in 20 ms windows (broadband, 960 samples each) stays within
/// 1.5 dB of the fitted line (rms within 0.5 dB) from 50 ms (or two passes
/// of the longest line) down 40 dB: no flutter, no ringing mode.
#[test]
fn the_decay_is_a_straight_line_in_db() {
    for size in [0.5, 1.0, 3.0] {
        let rt = 1.2;
        let (h, r) = impulse_response(
            &[("size", size), ("rt60_low", rt), ("rt60_high", rt)],
            2.0 * rt + 0.3,
        );
        for (name, h) in [("out", &h), ("out_r", &r)] {
            let (t, dev) = t30(h);
            assert!((t / rt - 1.0).abs() < 0.05, "{name}: T30 {t} vs {rt}");
            assert!(dev < 1.0, "{name}: Schroeder curve off its fit by {dev} dB");
            let win = 960;
            // After the first two passes of the longest line: a big room's
            // first echoes are sparse by design.
            let first = ((0.05f64).max(2.0 * BASE_S[LINES - 1] * size) * SR) as usize / win;
            let energies: Vec<(f64, f64)> = h
                .chunks_exact(win)
                .enumerate()
                .skip(first)
                .map(|(k, c)| {
                    let e: f64 = c.iter().map(|v| v * v).sum();
                    ((k * win) as f64 / SR, 10.0 * libm::log10(e))
                })
                .collect();
            let top = energies[0].1;
            let kept: Vec<(f64, f64)> = energies
                .iter()
                .copied()
                .take_while(|(_, e)| *e > top - 40.0)
                .collect();
            let (a, b) = fit(&kept);
            let res: Vec<f64> = kept.iter().map(|(t, e)| e - (a + b * t)).collect();
            let max = res.iter().map(|v| v.abs()).fold(0.0, f64::max);
            let rms = libm::sqrt(res.iter().map(|v| v * v).sum::<f64>() / res.len() as f64);
            eprintln!(
                "size {size} {name}: T30 {t:.4} s, Schroeder within {dev:.3} dB; \
                 {} windows of 20 ms: residual max {max:.2} dB, rms {rms:.2} dB",
                kept.len()
            );
            assert!(
                max < 1.5 && rms < 0.5,
                "{name}: window residual max {max} rms {rms}"
            );
        }
    }
}

/// A DC offset at the input leaves none in the wet signal, in every
/// profile, even with the low band's longest decay: over the fourth second
/// the mean of each output is under 1e-3 of the offset (the network used to
/// multiply it: −44 and +5 times at `rt60_low` 100 s).
#[test]
fn a_dc_offset_leaves_no_offset_in_the_wet_signal() {
    let dc = 0.01;
    let frames = (4.0 * SR) as usize;
    let x = vec![dc; frames];
    for rt60_low in [2.0, 100.0] {
        for (profile, precision) in [
            (Profile::Strict, Precision::F64),
            (Profile::Repro, Precision::F32),
            (Profile::Live, Precision::F32),
        ] {
            let set = [("mix", 1.0), ("predelay", 0.0), ("rt60_low", rt60_low)];
            let mut r = runner(&set, profile, precision);
            let out = r.run(std::slice::from_ref(&x), &[], frames, &[512]);
            for (name, y) in ["out", "out_r"].iter().zip(&out) {
                let last = &y[(3.0 * SR) as usize..];
                let mean = last.iter().sum::<f64>() / last.len() as f64;
                eprintln!(
                    "rt60_low {rt60_low} {profile:?} {name}: mean over 3 … 4 s {:+.2e} of the offset",
                    mean / dc
                );
                assert!(
                    mean.abs() < 1e-3 * dc,
                    "rt60_low {rt60_low} {profile:?} {name}: DC out {mean:e} for {dc} in"
                );
            }
        }
    }
}

/// The wet impulse response sums to 0 (its DC gain), where it summed to
/// −1.42 and +0.24 before the network blocked DC.
#[test]
fn the_impulse_response_sums_to_zero() {
    let (l, r) = impulse_response(&[], 8.0);
    for (name, h) in [("out", &l), ("out_r", &r)] {
        let sum: f64 = h.iter().sum();
        let energy: f64 = h.iter().map(|v| v * v).sum();
        eprintln!("{name}: impulse response sum {sum:e}, energy {energy:.3}");
        assert!(sum.abs() < 1e-9, "{name}: sum {sum}");
        assert!(energy > 0.1, "{name}: a reverb still rings ({energy})");
    }
}

#[test]
fn the_stereo_tail_is_decorrelated() {
    for size in [0.5, 1.0, 4.0] {
        let (l, r) = impulse_response(&[("size", size)], 1.5);
        let from = (0.1 * SR) as usize;
        let (mut lr, mut ll, mut rr) = (0.0, 0.0, 0.0);
        for (a, b) in l[from..].iter().zip(&r[from..]) {
            lr += a * b;
            ll += a * a;
            rr += b * b;
        }
        let rho = lr / libm::sqrt(ll * rr);
        eprintln!("size {size}: L/R correlation over the tail from 0.1 s: {rho:+.4}");
        assert!(rho.abs() < 0.3, "size {size}: correlation {rho}");
    }
}

#[test]
fn line_lengths_are_distinct_primes_scaled_by_size() {
    for sr in [8000.0, 44100.0, 48000.0, 96000.0, 192000.0] {
        for size in [0.25, 0.5, 1.0, 2.0, 4.0] {
            let len = line_lengths(sr, size).unwrap();
            for (i, &n) in len.iter().enumerate() {
                assert!(is_prime(n), "{n}");
                let want = (BASE_S[i] * size * sr).round();
                assert!(n as f64 >= want, "{sr} {size}: {n} < {want}");
                // Stepping to a prime moves a length by well under 1 %
                // (or a few samples at the shortest).
                assert!(
                    (n as f64 - want) <= (0.01 * want).max(20.0),
                    "{n} vs {want}"
                );
                for &m in &len[..i] {
                    assert!(m < n, "lengths rise");
                    let (mut a, mut b) = (n, m);
                    while b != 0 {
                        (a, b) = (b, a % b);
                    }
                    assert_eq!(a, 1, "{n} and {m} are coprime");
                }
            }
        }
    }
    let total: usize = line_lengths(48000.0, 4.0).unwrap().iter().sum();
    assert!(total > 90_000, "{total}");
    assert!(line_lengths(1e9, 4.0).is_err());
}

#[test]
fn the_feedback_matrix_is_orthogonal_exactly() {
    let mut cols = [[0.0f64; LINES]; LINES];
    for (j, col) in cols.iter_mut().enumerate() {
        col[j] = 1.0;
        hadamard(col);
        for (i, v) in col.iter().enumerate() {
            assert_eq!(*v, 0.25 * walsh(i, j));
        }
    }
    for a in 0..LINES {
        for b in 0..LINES {
            let dot: f64 = (0..LINES).map(|i| cols[a][i] * cols[b][i]).sum();
            assert_eq!(dot, if a == b { 1.0 } else { 0.0 });
        }
    }
    // The two outputs' taps are orthogonal too.
    let dot: f64 = (0..LINES)
        .map(|i| OUT_SIGNS[i] * OUT_SIGNS[i] * walsh(RIGHT_ROW, i))
        .sum();
    assert_eq!(dot, 0.0);
}

#[test]
fn predelay_and_mix_shape_the_start() {
    // Nothing wet comes out before predelay + the shortest line.
    let pd = 0.01;
    let mut r = runner(
        &[("predelay", pd), ("mix", 0.25)],
        Profile::Strict,
        Precision::F64,
    );
    let x = test_signal(3, 3000);
    let out = r.run(std::slice::from_ref(&x), &[], 3000, &[64]);
    let first = (pd * SR) as usize + line_lengths(SR, 1.0).unwrap()[0];
    for n in 0..3000 {
        if n < first {
            assert_eq!(out[0][n], 0.75 * x[n], "frame {n}");
            assert_eq!(out[1][n], 0.75 * x[n], "frame {n}");
        }
    }
    assert!(out[0][first..]
        .iter()
        .zip(&x[first..])
        .any(|(y, x)| *y != 0.75 * x));
}

#[test]
fn wild_modulation_stays_finite() {
    let x = test_signal(7, 4000);
    let wild: Vec<f64> = (0..4000)
        .map(|i| match i % 5 {
            0 => 1e9,
            1 => -1e9,
            2 => f64::NAN,
            3 => 0.0,
            _ => 3.0,
        })
        .collect();
    let mods: Vec<(usize, Vec<f64>)> = [RT60_LOW, RT60_HIGH, CROSSOVER, PREDELAY, MIX]
        .into_iter()
        .map(|p| (p, wild.clone()))
        .collect();
    let mut r = runner(&[], Profile::Strict, Precision::F64);
    let y = r.run(std::slice::from_ref(&x), &mods, 4000, &[64]);
    assert!(y.iter().flatten().all(|v| v.is_finite()));
}

/// A snapshot of an f64 node restores into an f32 node (the state rounded)
/// and back; the f32 node continues close to the f64 one.
#[test]
fn state_migrates_between_precisions() {
    let x = test_signal(5, 8000);
    let params = [("size", 4.0), ("predelay", 0.003), ("mix", 0.6)];
    let mut r64 = runner(&params, Profile::Strict, Precision::F64);
    r64.run(&[x[..5000].to_vec()], &[], 5000, &[64]);
    let st = r64.snapshot();
    let names: Vec<&str> = st.entries.iter().map(|(n, _)| n.as_ref()).collect();
    assert_eq!(names, ["lines", "damp", "dc", "predelay", "frames"]);
    let want = r64.run(&[x[5000..].to_vec()], &[], 3000, &[64]);

    let mut r32 = runner(&params, Profile::Repro, Precision::F32);
    r32.node().restore(&st).unwrap();
    let st32 = r32.snapshot();
    for ((_, a), (_, b)) in st.entries.iter().zip(&st32.entries) {
        match (a, b) {
            (StateValue::F64(a), StateValue::F32(b)) => {
                assert_eq!(a.len(), b.len());
                assert!(a.iter().zip(b).all(|(p, q)| *p as f32 == *q));
            }
            (StateValue::U64(a), StateValue::U64(b)) => assert_eq!(a, b),
            _ => panic!("unexpected state kinds"),
        }
    }
    r32.set_clock(5000);
    let got = r32.run(&[x[5000..].to_vec()], &[], 3000, &[64]);
    let peak = want[0].iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (w, g) in want.iter().zip(&got) {
        let err = w
            .iter()
            .zip(g)
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(err < 1e-4 * peak.max(1.0), "f64 → f32: error {err:e}");
    }

    // f32 → f64 is exact: the f64 node continues bit for bit as the f32
    // state's values, and its own snapshot holds them unchanged.
    let mut back = runner(&params, Profile::Strict, Precision::F64);
    back.node().restore(&st32).unwrap();
    let st64 = back.snapshot();
    for ((_, a), (_, b)) in st32.entries.iter().zip(&st64.entries) {
        match (a, b) {
            (StateValue::F32(a), StateValue::F64(b)) => {
                assert!(a.iter().zip(b).all(|(p, q)| *p as f64 == *q));
            }
            (StateValue::U64(a), StateValue::U64(b)) => assert_eq!(a, b),
            _ => panic!("unexpected state kinds"),
        }
    }
}

/// At size 4 (97 k samples of lines at 48 kHz) a save in small parts,
/// the node running between them, is the snapshot at its first part; a
/// reset in parts is a reset.
#[test]
fn long_state_is_saved_and_reset_in_parts() {
    let x = test_signal(9, 40000);
    let params = [("size", 4.0), ("predelay", 0.1)];
    let mut a = runner(&params, Profile::Strict, Precision::F64);
    a.run(&[x[..10000].to_vec()], &[], 10000, &[64]);
    let st = a.snapshot();
    let mut parts = st.clone();
    let budget = 512;
    let mut p = a.node().save_part(&mut parts, 0, budget);
    let mut at = 10000;
    let mut calls = 1;
    while let Progress::Copied(done) = p {
        a.run(&[x[at..at + budget].to_vec()], &[], budget, &[budget]);
        at += budget;
        calls += 1;
        p = a.node().save_part(&mut parts, done, budget);
    }
    assert_eq!(parts, st);
    assert!(calls > 20, "{calls} parts");

    // Restored, it continues as the node that was snapshotted would have.
    let mut b = runner(&params, Profile::Strict, Precision::F64);
    b.run(&[x[..10000].to_vec()], &[], 10000, &[64]);
    let want = b.run(&[x[10000..20000].to_vec()], &[], 10000, &[64]);
    let mut c = runner(&params, Profile::Strict, Precision::F64);
    c.node().restore(&st).unwrap();
    c.set_clock(10000);
    let got = c.run(&[x[10000..20000].to_vec()], &[], 10000, &[7]);
    assert_eq!(first_difference(&want, &got), None);

    // A reset in parts, then a run from 0, is a fresh node's run.
    let mut done = 0;
    while let Progress::Copied(n) = c.node().reset_part(done, budget) {
        assert!(n > done);
        done = n;
    }
    c.set_clock(0);
    let fresh = runner(&params, Profile::Strict, Precision::F64).run(
        &[x[..5000].to_vec()],
        &[],
        5000,
        &[64],
    );
    let again = c.run(&[x[..5000].to_vec()], &[], 5000, &[64]);
    assert_eq!(first_difference(&fresh, &again), None);
}

#[test]
fn a_crossover_above_the_design_limit_is_linted() {
    let mut v = values_with(&REVERB, &[]);
    assert!(reverb_lints(&v, SR).is_empty());
    v[CROSSOVER] = Value::Number(30_000.0);
    let l = reverb_lints(&v, SR);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0].param, "crossover");
    assert!(
        l[0].message
            .ends_with("the damping shelf is designed at 23520 Hz"),
        "{}",
        l[0].message
    );
}

// ---- The scalar implementation the lanes replace, kept as the reference ----

/// `v ← ¼·H16·v` as the scalar code computes it: the butterflies stage by
/// stage (h = 1, 2, 4, 8), pair by pair, then the scale.
fn reference_hadamard<S: Sample>(v: &mut [S; LINES]) {
    let mut h = 1;
    while h < LINES {
        let mut i = 0;
        while i < LINES {
            for j in i..i + h {
                let (a, b) = (v[j], v[j + h]);
                v[j] = a + b;
                v[j + h] = a - b;
            }
            i += 2 * h;
        }
        h *= 2;
    }
    let q = S::from_f64(QUARTER);
    for x in v.iter_mut() {
        *x *= q;
    }
}

/// One sample of the scalar network: line by line, with `%` on the
/// predelay ring and a wrap test per line.
fn reference_tick<S: Sample, M: Math>(
    r: &mut Reverb<S, M>,
    x: S,
    predelay: f64,
    mix: f64,
) -> (S, S) {
    let plen = r.pre.len();
    r.pre[r.pre_w] = x;
    let d = limit(predelay * r.sample_rate, 0.0, r.max_pre);
    let whole = d.floor();
    let frac = S::from_f64(d - whole);
    let k = whole as usize;
    let a = r.pre[(r.pre_w + plen - k) % plen];
    let b = r.pre[(r.pre_w + plen - k - 1) % plen];
    let u = a + frac * (b - a);
    r.pre_w += 1;
    if r.pre_w == plen {
        r.pre_w = 0;
    }
    // Where the node fuses (`fuses`, at this CPU's level), every `p·q + s`
    // below is one rounding.
    let fused = super::fuses::<S, M>(SimdLevel::detect());
    #[allow(clippy::disallowed_methods)] // the fused network's reference
    let fma = |p: S, q: S, s: S| {
        if fused {
            // (Only f32 fuses: in f32, one rounding.)
            S::from_f32(p.to_f32().mul_add(q.to_f32(), s.to_f32()))
        } else {
            p * q + s
        }
    };
    let mut y = [S::ZERO; LINES];
    let (b, a) = (r.dc_b, r.dc_alpha);
    for (i, y) in y.iter_mut().enumerate() {
        let by = b * r.lines[r.pos[i]];
        *y = by + r.dc[i];
        r.dc[i] = fma(a, *y, -by);
    }
    let (mut wet_l, mut wet_r) = (S::ZERO, S::ZERO);
    for (i, &y) in y.iter().enumerate() {
        wet_l = fma(r.out_l[i], y, wet_l);
        wet_r = fma(r.out_r[i], y, wet_r);
    }
    let mut v = [S::ZERO; LINES];
    let (alpha, beta) = (r.alpha, r.beta);
    for i in 0..LINES {
        let lp = fma(beta, y[i], r.damp[i]);
        r.damp[i] = fma(alpha, lp, beta * y[i]);
        v[i] = fma(r.g_hi[i], y[i], r.g_diff[i] * lp);
    }
    reference_hadamard(&mut v);
    for (i, v) in v.iter().enumerate() {
        r.lines[r.pos[i]] = fma(r.in_gain[i], u, *v);
        r.pos[i] += 1;
        if r.pos[i] == r.off[i] + r.len[i] {
            r.pos[i] = r.off[i];
        }
    }
    r.frames += 1;
    let mix = limit(mix, 0.0, 1.0);
    let (dry, wet) = (S::from_f64(1.0 - mix), S::from_f64(mix));
    (dry * x + wet * wet_l, dry * x + wet * wet_r)
}

/// The scalar reference's (out, out_r) for `x`, built as the operator
/// builds the node under `np`; `mix` per sample (the modulated value as the
/// node reads it), predelay constant.
fn reference_render<S: Sample, M: Math>(
    values: &[Value],
    np: &crate::profile::NodeProfile,
    x: &[f64],
    predelay: f64,
    mix: &[f64],
) -> Vec<Vec<f64>> {
    let cx = BuildCtx {
        sample_rate: SR,
        values,
        n_inputs: 1,
        connected: &[true],
        noise_hash: 0,
        profile: np,
    };
    let mut r = Reverb::<S, M>::new(&cx).unwrap();
    let _fp = crate::dsp::fpmode::FpGuard::new(np.flush_to_zero);
    let (mut l, mut rr) = (Vec::new(), Vec::new());
    for (&x, &m) in x.iter().zip(mix) {
        let (a, b) = reference_tick(&mut r, S::from_f64(x), predelay, m);
        l.push(a.to_f64());
        rr.push(b.to_f64());
    }
    vec![l, rr]
}

/// The lanes compute what the scalar network computes, bit for bit, under
/// every profile, at block sizes 1, 7, 64 and 4096, with the params
/// constant and with `mix` modulated (the per-sample path, at blocks 1 and
/// 64), on 1.5 s of a
/// shipped scene's output; repro and live stay within their parity bound
/// of strict.
#[test]
fn lanes_match_the_scalar_network_bit_for_bit() {
    let x = crate::ops::harness::pluck_delay_signal(SR);
    let n = x.len();
    let wobble: Vec<f64> = (0..n)
        .map(|i| 0.2 * libm::sin(i as f64 * 2.0 * PI * 0.7 / SR))
        .collect();
    let set = [
        ("mix", Value::Number(0.3)),
        ("predelay", Value::Number(0.0137)),
    ];
    let values = values_with(&REVERB, &set);
    let mut strict = None;
    for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
        let np = crate::profile::NodeProfile::resolve(profile, &Default::default(), None);
        for modulated in [false, true] {
            let held: Vec<f64>;
            let mix: &[f64] = if modulated {
                held = wobble
                    .iter()
                    .map(|w| {
                        let w = match np.precision {
                            Precision::F32 => *w as f32 as f64,
                            Precision::F64 => *w,
                        };
                        0.3 + w
                    })
                    .collect();
                &held
            } else {
                held = vec![0.3; n];
                &held
            };
            use crate::dsp::math::MathKind;
            let want = match (np.precision, np.math) {
                (Precision::F64, MathKind::Strict) => {
                    reference_render::<f64, crate::dsp::math::StrictMath>(
                        &values, &np, &x, 0.0137, mix,
                    )
                }
                (Precision::F32, MathKind::Std) => {
                    reference_render::<f32, crate::dsp::math::StdMath>(
                        &values, &np, &x, 0.0137, mix,
                    )
                }
                (Precision::F32, MathKind::Fast) => reference_render::<
                    f32,
                    crate::dsp::math::FastMath,
                >(&values, &np, &x, 0.0137, mix),
                other => panic!("no reference for {other:?}"),
            };
            let mods = if modulated {
                vec![(MIX, wobble.clone())]
            } else {
                Vec::new()
            };
            let sizes: &[usize] = if modulated {
                &[1, 64]
            } else {
                &[1, 7, 64, 4096]
            };
            for &blocks in sizes {
                let mut r =
                    NodeRunner::new(&REVERB, values.clone(), profile, None, SR, 4096, 1).unwrap();
                let got = r.run(std::slice::from_ref(&x), &mods, n, &[blocks]);
                if let Some(d) = first_difference(&got, &want) {
                    panic!("{profile:?}, mix modulated {modulated}, block {blocks}: {d}");
                }
            }
            if profile == Profile::Strict && !modulated {
                strict = Some(want);
            } else if !modulated {
                let s = strict.as_ref().unwrap();
                for (a, b) in want.iter().zip(s) {
                    let err: f64 = a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum();
                    let norm: f64 = b.iter().map(|q| q * q).sum();
                    let rel = (err / norm).sqrt();
                    let bound = profile.default_parity_bound();
                    assert!(
                        rel <= bound,
                        "{profile:?}: relative RMS {rel:e} > {bound:e}"
                    );
                }
            }
        }
    }
}

/// The wet (out, out_r) of the reverb with `in_r` fed, strict f64, for
/// the left and right inputs given, at block `block`.
fn stereo_wet(left: &[f64], right: &[f64], block: usize) -> Vec<Vec<f64>> {
    let set = [
        ("mix", Value::Number(1.0)),
        ("predelay", Value::Number(0.0)),
    ];
    let mut r = NodeRunner::new(
        &REVERB,
        values_with(&REVERB, &set),
        Profile::Strict,
        Some(Precision::F64),
        SR,
        4096,
        2,
    )
    .unwrap();
    r.run(&[left.to_vec(), right.to_vec()], &[], left.len(), &[block])
}

fn energy(x: &[f64]) -> f64 {
    x.iter().map(|v| v * v).sum()
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let ab: f64 = a.iter().zip(b).map(|(p, q)| p * q).sum();
    ab / libm::sqrt(energy(a) * energy(b))
}

/// With `in_r` fed, an impulse on the left and one on the right enter the
/// lines through orthogonal taps: their tails are decorrelated from each
/// other on each output, each carries the energy of the mono network's
/// impulse response (within 0.5 dB), and the network is linear in the
/// two inputs (both at once is the sum of each alone).
#[test]
fn a_stereo_input_feeds_the_lines_through_distinct_taps() {
    let n = (1.5 * SR) as usize;
    let mut imp = vec![0.0; n];
    imp[0] = 1.0;
    let silent = vec![0.0; n];
    let from_left = stereo_wet(&imp, &silent, 512);
    let from_right = stereo_wet(&silent, &imp, 512);
    let (mono_l, mono_r) = impulse_response(&[], 1.5);
    let mono = energy(&mono_l) + energy(&mono_r);
    let tail = (0.1 * SR) as usize;
    for (name, a, b) in [
        ("out", &from_left[0], &from_right[0]),
        ("out_r", &from_left[1], &from_right[1]),
    ] {
        let rho = correlation(&a[tail..], &b[tail..]);
        eprintln!("{name}: left-only vs right-only tail correlation {rho:+.4}");
        assert!(rho.abs() < 0.3, "{name}: correlation {rho}");
        assert!(a != b, "{name}: the two inputs give one output");
    }
    for (name, y) in [("left", &from_left), ("right", &from_right)] {
        let e = energy(&y[0]) + energy(&y[1]);
        let db = 10.0 * libm::log10(e / mono);
        eprintln!("{name} input: wet energy {db:+.3} dB re the mono input's");
        assert!(db.abs() < 0.5, "{name}: {db} dB");
    }
    // The left input alone is the mono network (its taps are the mono
    // input's), bit for bit.
    assert_eq!(from_left[0], mono_l);
    let x = test_signal(11, n);
    let x_r = test_signal(12, n);
    let both = stereo_wet(&x, &x_r, 64);
    let (a, b) = (stereo_wet(&x, &silent, 64), stereo_wet(&silent, &x_r, 64));
    for c in 0..2 {
        let err: f64 = (0..n)
            .map(|i| both[c][i] - (a[c][i] + b[c][i]))
            .fold(0.0, |m, d: f64| m.max(d.abs()));
        assert!(err < 1e-12, "channel {c}: not linear ({err:e})");
    }
}

/// The stereo network's bits do not depend on the block size, and the dry
/// part of `out_r` is `in_r`.
#[test]
fn a_stereo_input_is_the_same_at_every_block_size() {
    let x = crate::ops::harness::pluck_delay_signal(SR);
    let n = x.len();
    let x_r: Vec<f64> = (0..n)
        .map(|i| if i >= 1 { x[i - 1] } else { 0.0 })
        .collect();
    let want = stereo_wet(&x, &x_r, 1);
    for block in [7, 64, 4096] {
        let got = stereo_wet(&x, &x_r, block);
        assert_eq!(first_difference(&got, &want), None, "block {block}");
    }
    let set = [("mix", Value::Number(0.0))];
    let mut dry = NodeRunner::new(
        &REVERB,
        values_with(&REVERB, &set),
        Profile::Strict,
        Some(Precision::F64),
        SR,
        4096,
        2,
    )
    .unwrap();
    let out = dry.run(&[x.clone(), x_r.clone()], &[], n, &[64]);
    assert_eq!(out[0], x);
    assert_eq!(out[1], x_r);
}

/// The network, mono and stereo, gives the same bits at every instruction
/// set this CPU runs (AVX-512 runs groups of sixteen samples in f32 and
/// eight in f64, AVX2 eight and four, the build's baseline one sample at a
/// time), at block sizes 1, 7, 64 and 4096, on 1.5 s of a shipped scene's
/// output on the left and a filtered copy of it on the right, with a
/// predelay between samples.
#[test]
fn the_network_is_the_same_at_every_instruction_set() {
    fn check<S: Sample, M: Math>(profile: Profile) {
        let x = crate::ops::harness::pluck_delay_signal(SR);
        let right: Vec<f64> = (0..x.len())
            .map(|i| 0.5 * x[i] + 0.5 * if i >= 3 { x[i - 3] } else { 0.0 })
            .collect();
        let values = values_with(&REVERB, &[]);
        same_at_every_instruction_set::<S, M>(profile, SR, &values, (&x, &right), (0.0137, 0.4));
    }
    check::<f32, crate::dsp::math::FastMath>(Profile::Live);
    check::<f32, crate::dsp::math::StdMath>(Profile::Repro);
    check::<f64, crate::dsp::math::StrictMath>(Profile::Strict);
}

/// At sample rates so low that the shortest lines hold fewer samples than
/// a group, every instruction set plays the bits of the step one sample at
/// a time, mono and stereo, in f32 and f64 (a group over such a line once
/// wrote outside it): at 1 kHz and size 0.25 (lines of 5, 7, 11, …
/// samples: shorter than every group) and at 3 kHz (11, 13, …: AVX2's
/// f32 groups of eight run, AVX-512's of sixteen do not).
#[test]
fn lines_shorter_than_a_group_play_the_same_bits_at_every_instruction_set() {
    for (rate, shortest) in [(1000.0, 5), (3000.0, 11)] {
        assert_eq!(line_lengths(rate, 0.25).unwrap()[0], shortest);
        let x: Vec<f64> = (0..3000)
            .map(|i| libm::sin(i as f64 * 0.0917) * 0.5)
            .collect();
        let right: Vec<f64> = x.iter().rev().copied().collect();
        let values = values_with(&REVERB, &[("size", Value::Number(0.25))]);
        let input = (&x[..], &right[..]);
        same_at_every_instruction_set::<f32, FastMath>(
            Profile::Live,
            rate,
            &values,
            input,
            (0.0, 0.5),
        );
        same_at_every_instruction_set::<f64, StrictMath>(
            Profile::Strict,
            rate,
            &values,
            input,
            (0.0, 0.5),
        );
    }
}

/// The reverb of `values` at `rate` under `profile`, fed `input.0` (and
/// `input.1` on `in_r`, stereo), with `(predelay, mix)`: the same bits at
/// every instruction set this CPU runs and at blocks of 1, 7, 64 and 4096
/// as the baseline's at blocks of 64, mono and stereo.
fn same_at_every_instruction_set<S: Sample, M: Math>(
    profile: Profile,
    rate: f64,
    values: &[Value],
    input: (&[f64], &[f64]),
    (predelay, mix): (f64, f64),
) {
    let n = input.0.len();
    let left: Vec<S> = input.0.iter().map(|&v| S::from_f64(v)).collect();
    let right: Vec<S> = input.1.iter().map(|&v| S::from_f64(v)).collect();
    let np = crate::profile::NodeProfile::resolve(profile, &Default::default(), None);
    for stereo in [false, true] {
        let render = |level: SimdLevel, block: usize| -> Vec<S> {
            let cx = BuildCtx {
                sample_rate: rate,
                values,
                n_inputs: 2,
                connected: &[true, stereo],
                noise_hash: 0,
                profile: &np,
            };
            let mut r = Reverb::<S, M>::new(&cx).unwrap();
            let (mut l, mut rr) = (vec![S::ZERO; n], vec![S::ZERO; n]);
            let mut at = 0;
            while at < n {
                let span = at..(at + block).min(n);
                r.run(
                    level,
                    &left[span.clone()],
                    stereo.then(|| &right[span.clone()]),
                    &mut l[span.clone()],
                    &mut rr[span.clone()],
                    predelay,
                    mix,
                );
                at = span.end;
            }
            l.into_iter().chain(rr).collect()
        };
        let want = render(SimdLevel::BASE, 64);
        assert!(
            want.iter().any(|v| v.to_f64().abs() > 0.01),
            "the output is silent"
        );
        // A network that fuses (`fuses`) is held to the first fusing
        // level's one sample at a time (the scalar fused step): the groups
        // of every level and block size give its bits.
        let fusing = SimdLevel::available().find(|&l| super::fuses::<S, M>(l));
        let want_fused = fusing.map(|l| render(l, 1));
        if let Some(f) = &want_fused {
            assert!(
                f.iter().zip(&want).any(|(a, b)| a.to_f64() != b.to_f64()),
                "{profile:?}: the fused network plays the unfused one's bits"
            );
        }
        for level in SimdLevel::available() {
            let want = match &want_fused {
                Some(f) if super::fuses::<S, M>(level) => f,
                _ => &want,
            };
            for block in [1, 7, 64, 4096] {
                let got = render(level, block);
                let differ = got
                    .iter()
                    .zip(want)
                    .position(|(a, b)| a.to_f64().to_bits() != b.to_f64().to_bits());
                assert_eq!(
                    differ, None,
                    "{profile:?} at {rate} Hz, stereo {stereo}, {level:?}, block {block}: \
                     first differing sample (out, then out_r)"
                );
            }
        }
    }
}

/// A run of the predelay gives, sample for sample, what stepping it one
/// sample at a time gives (the rings and write index too): mono and stereo,
/// at delays from 0 to the ring's longest (so reads wrap, and the run meets
/// samples it writes), fractions between samples, and runs of every length
/// up to a chunk that start anywhere in the ring.
#[test]
fn a_predelay_run_is_its_steps_one_at_a_time() {
    fn check<const STEREO: bool>() {
        let plen = 301;
        let x = test_signal(3, 4000);
        let x_r: Vec<f64> = x.iter().map(|v| 0.5 - v).collect();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % m as u64) as usize
        };
        for k in [
            0,
            1,
            2,
            15,
            16,
            63,
            64,
            65,
            150,
            plen - 66,
            plen - 3,
            plen - 2,
        ] {
            let frac = 0.3125;
            let (mut a, mut a_r) = (vec![0.0f64; plen], vec![0.0f64; plen]);
            let (mut b, mut b_r) = (a.clone(), a_r.clone());
            let (mut wa, mut wb) = (0, 0);
            let mut at = 0;
            while at + CHUNK < x.len() {
                let n = 1 + next(CHUNK);
                let (xs, xs_r) = (&x[at..at + n], &x_r[at..at + n]);
                let (mut u, mut u_r) = ([0.0; CHUNK], [0.0; CHUNK]);
                let pa_r: &mut [f64] = if STEREO { &mut a_r } else { &mut [] };
                predelay_run::<f64, STEREO>(
                    &mut a,
                    pa_r,
                    &mut wa,
                    (k, frac),
                    xs,
                    xs_r,
                    &mut u,
                    &mut u_r,
                );
                for t in 0..n {
                    let pb_r: &mut [f64] = if STEREO { &mut b_r } else { &mut [] };
                    let (v, v_r) = predelay_step::<f64, STEREO>(
                        &mut b,
                        pb_r,
                        &mut wb,
                        (k, frac),
                        xs[t],
                        xs_r[t],
                    );
                    let what = format!("delay {k}, stereo {STEREO}, sample {}", at + t);
                    assert_eq!(u[t].to_bits(), v.to_bits(), "{what}");
                    assert_eq!(u_r[t].to_bits(), v_r.to_bits(), "{what}, right");
                }
                assert_eq!(wa, wb, "delay {k}: write index");
                at += n;
            }
            assert_eq!(a, b, "delay {k}: ring");
            assert_eq!(a_r, b_r, "delay {k}: right ring");
        }
    }
    check::<false>();
    check::<true>();
}
