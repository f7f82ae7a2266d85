//! `saw` and `square` (band-limited by PolyBLEP, with hard sync) and
//! `triangle` (naive, or band-limited by PolyBLAMP with `band_limited`):
//! the piecewise-linear shapes of the shape oscillator.

use super::{
    freq_lints, OscOp, Shape, AMP_PARAM, FREQ_PARAM, PHASE_PARAM, SAW_PHASE, SQUARE_PHASE,
    TRIANGLE_PHASE,
};
use crate::dsp::{Math, Sample};
use crate::ops::{build_any, by_profile, no_choices, number, OpSpec, ParamKind, ParamSpec, Value};
use crate::profile::Profile;
use crate::scene::Dimension;

/// PolyBLEP residual for a discontinuity of height 2 at t = 0.
#[inline]
fn poly_blep<S: Sample>(t: S, dt: S) -> S {
    if dt <= S::ZERO {
        return S::ZERO;
    }
    if t < dt {
        let x = t / dt;
        x + x - x * x - S::ONE
    } else if t > S::ONE - dt {
        let x = (t - S::ONE) / dt;
        x * x + x + x + S::ONE
    } else {
        S::ZERO
    }
}

struct SawShape;
impl Shape for SawShape {
    const HAS_EXTRA: bool = false;
    const PHASE: Option<usize> = Some(SAW_PHASE);
    const SYNC: bool = true;
    #[inline]
    fn value<S: Sample, M: Math>(t: S, dt: S, _: f64) -> S {
        t + t - S::ONE - poly_blep(t, dt)
    }
    #[inline]
    fn naive<S: Sample>(t: S, _: f64) -> S {
        t + t - S::ONE
    }
}

struct SquareShape;
impl Shape for SquareShape {
    const HAS_EXTRA: bool = true;
    const PHASE: Option<usize> = Some(SQUARE_PHASE);
    const SYNC: bool = true;
    #[inline]
    fn naive<S: Sample>(t: S, duty: f64) -> S {
        if t < S::from_f64(duty.clamp(0.0, 1.0)) {
            S::ONE
        } else {
            -S::ONE
        }
    }
    #[inline]
    fn value<S: Sample, M: Math>(t: S, dt: S, duty: f64) -> S {
        let d = S::from_f64(duty.clamp(0.0, 1.0));
        let naive = if t < d { S::ONE } else { -S::ONE };
        let mut t2 = t - d;
        if t2 < S::ZERO {
            t2 += S::ONE;
        }
        naive + poly_blep(t, dt) - poly_blep(t2, dt)
    }
}

/// PolyBLAMP residual of a unit change of slope (per sample) at signed
/// distance `d` samples from the corner: (1 − |d|)³/6 within a sample of
/// it, 0 elsewhere (the integral of PolyBLEP's residual).
#[inline]
fn poly_blamp<S: Sample>(d: S) -> S {
    let u = S::ONE - d.abs();
    if u > S::ZERO {
        u * u * u / S::from_f64(6.0)
    } else {
        S::ZERO
    }
}

/// Signed distance of phase `t` from a corner at `e`, in cycles, within
/// (−0.5, 0.5].
#[inline]
fn from_corner<S: Sample>(t: S, e: S) -> S {
    let half = S::from_f64(0.5);
    let mut d = t - e;
    if d > half {
        d -= S::ONE;
    } else if d <= -half {
        d += S::ONE;
    }
    d
}

/// The triangle with PolyBLAMP at its corners (`band_limited`): the slope,
/// ±4 a cycle, changes by −8·dt a sample at the peak (t = ¼) and by +8·dt
/// at the trough (t = ¾); each corner adds that change times
/// [`poly_blamp`] of the distance in samples.
struct BandLimitedTriangleShape;
impl Shape for BandLimitedTriangleShape {
    const HAS_EXTRA: bool = false;
    const PHASE: Option<usize> = Some(TRIANGLE_PHASE);
    #[inline]
    fn value<S: Sample, M: Math>(t: S, dt: S, e: f64) -> S {
        let naive = TriangleShape::value::<S, M>(t, dt, e);
        if dt <= S::ZERO {
            return naive;
        }
        let change = S::from_f64(8.0) * dt;
        let peak = poly_blamp(from_corner(t, S::from_f64(0.25)) / dt);
        let trough = poly_blamp(from_corner(t, S::from_f64(0.75)) / dt);
        naive + change * (trough - peak)
    }
}

/// `triangle`: the naive shape, or with `band_limited` the PolyBLAMP one.
fn build_triangle(
    cx: &crate::ops::BuildCtx<'_>,
    precision: crate::dsp::Precision,
    math: crate::dsp::MathKind,
) -> Result<crate::ops::AnyNode, String> {
    if matches!(
        cx.values.get(TRIANGLE_BAND_LIMITED),
        Some(Value::Bool(true))
    ) {
        build_any::<OscOp<BandLimitedTriangleShape>>(cx, precision, math)
    } else {
        build_any::<OscOp<TriangleShape>>(cx, precision, math)
    }
}

const TRIANGLE_BAND_LIMITED: usize = TRIANGLE.index_of("band_limited");

struct TriangleShape;
impl Shape for TriangleShape {
    const HAS_EXTRA: bool = false;
    const PHASE: Option<usize> = Some(TRIANGLE_PHASE);
    #[inline]
    fn value<S: Sample, M: Math>(t: S, _dt: S, _: f64) -> S {
        let four = S::from_f64(4.0);
        if t < S::from_f64(0.25) {
            four * t
        } else if t < S::from_f64(0.75) {
            S::from_f64(2.0) - four * t
        } else {
            four * t - four
        }
    }
}

pub(crate) static SAW: OpSpec = OpSpec {
    name: "saw",
    doc: "Band-limited (PolyBLEP) sawtooth, rising from -amp to amp; `phase` (rad, like sine's) starts it that far into its cycle. Hard sync: where the `sync` input rises through 0 (a master `square`'s phase wrap, a trigger) the phase restarts, the jump band-limited by PolyBLEP; with `sync` connected the output is one sample late.",
    inputs: &["sync"],
    outputs: &["out"],
    params: &[FREQ_PARAM, AMP_PARAM, PHASE_PARAM],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: freq_lints,
    cost: |p, _| by_profile(p, [2.2, 1.9, 1.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<OscOp<SawShape>>,
};

pub(crate) static SQUARE: OpSpec = OpSpec {
    name: "square",
    doc: "Band-limited (PolyBLEP) square/pulse wave; `duty` is the high fraction of a cycle; `phase` (rad, like sine's) starts it that far into its cycle. Hard sync by the `sync` input as `saw`'s.",
    inputs: &["sync"],
    outputs: &["out"],
    params: &[
        FREQ_PARAM,
        AMP_PARAM,
        number(
            "duty",
            Dimension::Scalar,
            0.5,
            0.0,
            1.0,
            "high fraction of the cycle",
        ),
        PHASE_PARAM,
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: freq_lints,
    cost: |p, _| by_profile(p, [4.0, 3.3, 3.3]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<OscOp<SquareShape>>,
};

pub(crate) static TRIANGLE: OpSpec = OpSpec {
    name: "triangle",
    doc: "Triangle wave starting at 0 and rising; `phase` (rad, like sine's) starts it that far into its cycle. Naive by default (its harmonics fall at 12 dB/octave and alias); `band_limited: true` rounds its corners by PolyBLAMP.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        FREQ_PARAM,
        AMP_PARAM,
        PHASE_PARAM,
        ParamSpec {
            name: "band_limited",
            kind: ParamKind::Bool { default: false },
            doc: "PolyBLAMP at the corners: far less aliasing",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: freq_lints,
    cost: |p, _| by_profile(p, [3.0, 1.9, 1.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_triangle,
};

#[cfg(test)]
mod tests {
    use super::super::tests::*;
    use super::super::TWO_PI;
    use super::*;
    use crate::dsp::Precision;
    use crate::dsp::StrictMath;

    /// `phase` π/2 plays the unshifted wave delayed by a quarter period:
    /// 375 Hz is 128 samples a period, so a quarter is 32 whole samples and
    /// 2^62 of the u64 phase, exactly; −π/2 the other way. Bit for bit in
    /// every profile, for each shape with a `phase`.
    #[test]
    fn a_quarter_cycle_of_phase_shifts_by_a_quarter_period() {
        let (period, frames) = (128, 4096);
        let quarter = core::f64::consts::FRAC_PI_2;
        for spec in [&SAW, &SQUARE, &TRIANGLE] {
            for (profile, precision) in PROFILES {
                let run = |phase: f64, n: usize| {
                    let p = [("freq", 375.0), ("amp", 0.8), ("phase", phase)];
                    render(spec, &p, profile, precision, n)
                };
                let plain = run(0.0, frames + period);
                let ahead = run(quarter, frames);
                let behind = run(-quarter, frames + period);
                let what = format!("{} {profile:?}", spec.name);
                assert_eq!(
                    ahead[..],
                    plain[period / 4..frames + period / 4],
                    "{what} +¼"
                );
                assert_eq!(
                    behind[period / 4..frames + period / 4],
                    plain[..frames],
                    "{what} −¼"
                );
                assert_ne!(
                    ahead[..],
                    plain[..frames],
                    "{what}: the phase changes the output"
                );
                // The default, 0, is the output without the param.
                let none = render(
                    spec,
                    &[("freq", 375.0), ("amp", 0.8)],
                    profile,
                    precision,
                    frames,
                );
                assert_eq!(none[..], plain[..frames], "{what} at phase 0");
            }
        }
    }

    #[test]
    fn polyblep_is_continuous_at_the_edges() {
        let dt = 0.01f64;
        assert!((poly_blep(0.0, dt) + 1.0).abs() < 1e-12);
        assert!((poly_blep(1.0 - 1e-12, dt) - 1.0).abs() < 1e-6);
        assert_eq!(poly_blep(0.5, dt), 0.0);
    }

    /// The saw and the triangle stay within ±1 at every increment, the
    /// square at duty 0.5 (what `output_bound` rests on): phases on a grid
    /// and beside each edge, in f32 and f64.
    #[test]
    fn the_bounded_shapes_stay_within_one() {
        fn peak<S: Sample>(dt: f64, t: f64) -> f64 {
            let (t, dt) = (S::from_f64(t), S::from_f64(dt));
            let v = [
                SawShape::value::<S, StrictMath>(t, dt, 0.0),
                SquareShape::value::<S, StrictMath>(t, dt, 0.5),
                TriangleShape::value::<S, StrictMath>(t, dt, 0.0),
                BandLimitedTriangleShape::value::<S, StrictMath>(t, dt, 0.0),
            ];
            v.iter().map(|x| x.to_f64().abs()).fold(0.0, f64::max)
        }
        let mut dts = vec![0.0, 1e-7, 1e-3, 0.01, 0.1, 0.25, 0.3, 0.4, 0.49, 0.5];
        dts.extend((1..=64).map(|k| k as f64 / 128.0 + 1.0 / 3.0 * 1e-3));
        for &dt in &dts {
            let mut ts: Vec<f64> = (0..4096).map(|k| k as f64 / 4096.0).collect();
            for edge in [0.0, 0.5, 1.0] {
                for k in -256..=256 {
                    ts.push(edge + dt * k as f64 / 256.0);
                    ts.push(edge + k as f64 * 1e-9);
                }
            }
            for t in ts.into_iter().filter(|t| (0.0..1.0).contains(t)) {
                let (a, b) = (peak::<f32>(dt, t), peak::<f64>(dt, t));
                assert!(a <= 1.0 && b <= 1.0, "dt {dt} t {t}: {a} {b}");
            }
        }
    }

    /// Naive DFT in f64 over `n` samples, with twiddle angles reduced exactly
    /// (index `bin·i mod n` into a table computed with libm).
    struct Dft {
        n: usize,
        cos: Vec<f64>,
        sin: Vec<f64>,
    }

    impl Dft {
        fn new(n: usize) -> Dft {
            let angle = |m: usize| TWO_PI * m as f64 / n as f64;
            Dft {
                n,
                cos: (0..n).map(|m| libm::cos(angle(m))).collect(),
                sin: (0..n).map(|m| libm::sin(angle(m))).collect(),
            }
        }

        /// Peak amplitude of the component at `bin` cycles per `n` samples
        /// (2|X|/n; |X|/n at DC and Nyquist).
        fn amp(&self, x: &[f64], bin: usize) -> f64 {
            assert_eq!(x.len(), self.n);
            let (mut re, mut im) = (0.0, 0.0);
            for (i, v) in x.iter().enumerate() {
                let m = (bin * i) % self.n;
                re += v * self.cos[m];
                im -= v * self.sin[m];
            }
            let a = (re * re + im * im).sqrt() / self.n as f64;
            if bin == 0 || 2 * bin == self.n {
                a
            } else {
                2.0 * a
            }
        }
    }

    /// Tolerance for the relative error of harmonic `k` of a 128-sample
    /// period. PolyBLEP's two-sample residual acts as a short smoothing
    /// kernel: the saw/square deficit measures ≈ (πk/128)²/3 (−0.02% at k = 1,
    /// −2.0% at k = 10); the sampled (naive) triangle's excess from its own
    /// aliases is about the same, positive. 3e-4·k² leaves 50% headroom.
    fn harmonic_tol(k: usize) -> f64 {
        1e-4 + 3e-4 * (k * k) as f64
    }

    fn db(x: f64) -> f64 {
        10.0 * libm::log10(x)
    }

    /// Phase distance of `t` from an edge at `e`, in (−0.5, 0.5], positive after it.
    fn signed_distance(t: f64, e: f64) -> f64 {
        let d = (t - e).rem_euclid(1.0);
        if d > 0.5 {
            d - 1.0
        } else {
            d
        }
    }

    /// The two-sample PolyBLEP residual of a unit step (+2 jump, normalized)
    /// at signed phase distance `d`: −(1 − d/dt)² just after the edge,
    /// +(1 + d/dt)² just before it, 0 elsewhere.
    fn residual(d: f64, dt: f64) -> f64 {
        if (0.0..dt).contains(&d) {
            let u = 1.0 - d / dt;
            -(u * u)
        } else if d < 0.0 && d > -dt {
            let u = 1.0 + d / dt;
            u * u
        } else {
            0.0
        }
    }

    #[test]
    fn saw_and_square_are_naive_away_from_edges_and_polyblep_near_them() {
        let frames = 4800;
        let amp = 0.9;
        for f in [
            hz(375, 1),
            hz(440, 1),
            hz(1000, 1),
            hz(7001, 2),
            hz(5000, 1),
        ] {
            let dt = f.dt();
            let saw = render(
                &SAW,
                &[("freq", f.f64()), ("amp", amp)],
                Profile::Strict,
                Precision::F64,
                frames,
            );
            let (mut away, mut near) = (0, 0);
            for (k, y) in saw.iter().enumerate() {
                let t = f.phase(k as u64);
                let d = signed_distance(t, 0.0);
                let naive = amp * (2.0 * t - 1.0);
                if d.abs() > 2.0 * dt {
                    assert!(
                        (y - naive).abs() <= 1e-12,
                        "saw {f:?} k {k}: {y} vs {naive}"
                    );
                    away += 1;
                }
                if d.abs() < 0.9 * dt {
                    assert!((y - naive).abs() > 1e-3, "saw {f:?} k {k}: no correction");
                    near += 1;
                }
                let want = amp * (2.0 * t - 1.0 - residual(d, dt));
                assert!((y - want).abs() <= 1e-9, "saw {f:?} k {k}: {y} vs {want}");
            }
            assert!(away > 0 && near > 0, "saw {f:?}: {away} away, {near} near");

            for duty in [0.5, 0.3] {
                let sq = render(
                    &SQUARE,
                    &[("freq", f.f64()), ("amp", amp), ("duty", duty)],
                    Profile::Strict,
                    Precision::F64,
                    frames,
                );
                let (mut away, mut near) = (0, 0);
                for (k, y) in sq.iter().enumerate() {
                    let t = f.phase(k as u64);
                    let (d_up, d_down) = (signed_distance(t, 0.0), signed_distance(t, duty));
                    let edge = d_up.abs().min(d_down.abs());
                    let naive = if t < duty { amp } else { -amp };
                    if edge > 2.0 * dt {
                        assert_eq!(*y, naive, "square {f:?} duty {duty} k {k}");
                        away += 1;
                    }
                    if edge < 0.9 * dt {
                        assert!(
                            (y - naive).abs() > 1e-3,
                            "square {f:?} k {k}: no correction"
                        );
                        near += 1;
                    }
                    let want = naive + amp * (residual(d_up, dt) - residual(d_down, dt));
                    assert!(
                        (y - want).abs() <= 1e-9,
                        "square {f:?} k {k}: {y} vs {want}"
                    );
                }
                assert!(
                    away > 0 && near > 0,
                    "square {f:?}: {away} away, {near} near"
                );
            }
        }
    }

    #[test]
    fn saw_and_square_harmonics_match_the_fourier_series() {
        // 375 Hz at 48 kHz: 128 samples per period, 375 whole periods in 1 s,
        // so harmonic k sits exactly on DFT bin 375·k.
        let frames = 48000;
        let dft = Dft::new(frames);
        let params = [("freq", 375.0), ("amp", 1.0)];
        let saw = render(&SAW, &params, Profile::Strict, Precision::F64, frames);
        let square = render(&SQUARE, &params, Profile::Strict, Precision::F64, frames);
        for k in 1..=10usize {
            let kf = k as f64;
            let a = dft.amp(&saw, 375 * k);
            let rel = a / (2.0 / (core::f64::consts::PI * kf)) - 1.0;
            eprintln!("saw harmonic {k}: relative error {rel:+.5}");
            assert!(
                rel.abs() <= harmonic_tol(k),
                "saw harmonic {k}: relative error {rel:e}"
            );
            let a = dft.amp(&square, 375 * k);
            if k % 2 == 1 {
                let rel = a / (4.0 / (core::f64::consts::PI * kf)) - 1.0;
                eprintln!("square harmonic {k}: relative error {rel:+.5}");
                assert!(
                    rel.abs() <= harmonic_tol(k),
                    "square harmonic {k}: relative error {rel:e}"
                );
            } else {
                let rel = a / (4.0 / core::f64::consts::PI);
                eprintln!("square even harmonic {k}: {rel:e} of the fundamental");
                assert!(rel < 1e-3, "square even harmonic {k}: {rel:e}");
            }
        }
    }

    #[test]
    fn polyblep_saw_aliases_far_less_than_a_naive_saw() {
        // 5 kHz at 48 kHz repeats every 48 samples, so all its energy, aliases
        // included, lies on the 1 kHz bins; harmonics are the 5 kHz bins.
        let frames = 48000;
        let f = hz(5000, 1);
        let blep = render(
            &SAW,
            &[("freq", f.f64()), ("amp", 1.0)],
            Profile::Strict,
            Precision::F64,
            frames,
        );
        let naive: Vec<f64> = (0..frames as u64).map(|k| 2.0 * f.phase(k) - 1.0).collect();
        let dft = Dft::new(frames);
        // Alias power in 20 Hz–20 kHz outside the harmonic bins, relative to
        // the fundamental, in dB.
        let alias_db = |x: &[f64], name: &str| {
            let power: Vec<f64> = (0..=24)
                .map(|j| {
                    let a = dft.amp(x, 1000 * j);
                    if j == 0 || j == 24 {
                        a * a
                    } else {
                        a * a / 2.0
                    }
                })
                .collect();
            let mean_square = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
            let total: f64 = power.iter().sum();
            assert!(
                (total / mean_square - 1.0).abs() < 1e-9,
                "{name}: the 1 kHz bins hold {total} of {mean_square}"
            );
            let alias: f64 = (1..=20).filter(|j| j % 5 != 0).map(|j| power[j]).sum();
            db(alias / power[5])
        };
        let (a_blep, a_naive) = (alias_db(&blep, "polyblep"), alias_db(&naive, "naive"));
        eprintln!("5 kHz saw alias: polyblep {a_blep:.2} dB, naive {a_naive:.2} dB");
        // Measured: polyblep −27.5 dB, naive −8.0 dB (19.5 dB better).
        assert!(
            a_naive - a_blep >= 18.0,
            "polyblep {a_blep:.2} dB vs naive {a_naive:.2} dB"
        );
    }

    #[test]
    fn triangle_hits_its_quarter_cycle_values_and_falls_as_one_over_k_squared() {
        let amp = 0.5;
        let frames = 48000;
        let naive = |t: f64| {
            if t < 0.25 {
                4.0 * t
            } else if t < 0.75 {
                2.0 - 4.0 * t
            } else {
                4.0 * t - 4.0
            }
        };
        // 375 Hz: 128 samples per period and every phase a binary fraction,
        // so each sample is exact in both precisions.
        for (profile, precision) in PROFILES {
            let out = render(
                &TRIANGLE,
                &[("freq", 375.0), ("amp", amp)],
                profile,
                precision,
                frames,
            );
            for p in (0..frames).step_by(128) {
                assert_eq!(out[p], 0.0, "{profile:?} period start {p}");
                assert_eq!(out[p + 32], amp, "{profile:?} quarter {p}");
                assert_eq!(out[p + 64], 0.0, "{profile:?} half {p}");
                assert_eq!(out[p + 96], -amp, "{profile:?} three quarters {p}");
            }
            for (k, y) in out.iter().enumerate() {
                assert_eq!(
                    *y,
                    amp * naive((k % 128) as f64 / 128.0),
                    "{profile:?} k {k}"
                );
            }
        }
        // 1 kHz: phases are multiples of 1/48, not binary fractions.
        let f = hz(1000, 1);
        let out = render(
            &TRIANGLE,
            &[("freq", f.f64()), ("amp", amp)],
            Profile::Strict,
            Precision::F64,
            frames,
        );
        for (k, y) in out.iter().enumerate() {
            let want = amp * naive(f.phase(k as u64));
            assert!((y - want).abs() <= 1e-12, "1 kHz k {k}: {y} vs {want}");
        }
        for p in (0..frames).step_by(48) {
            assert!(out[p].abs() <= 1e-12 && out[p + 24].abs() <= 1e-12);
            assert!((out[p + 12] - amp).abs() <= 1e-12 && (out[p + 36] + amp).abs() <= 1e-12);
        }
        // Fourier series: 8·amp/(π²k²) for odd k, nothing at even k.
        let out = render(
            &TRIANGLE,
            &[("freq", 375.0), ("amp", amp)],
            Profile::Strict,
            Precision::F64,
            frames,
        );
        let dft = Dft::new(frames);
        let pi2 = core::f64::consts::PI * core::f64::consts::PI;
        for k in 1..=10usize {
            let a = dft.amp(&out, 375 * k);
            if k % 2 == 1 {
                let rel = a / (8.0 * amp / (pi2 * (k * k) as f64)) - 1.0;
                eprintln!("triangle harmonic {k}: relative error {rel:+.5}");
                assert!(
                    rel.abs() <= harmonic_tol(k),
                    "triangle harmonic {k}: {rel:e}"
                );
            } else {
                let rel = a / (8.0 * amp / pi2);
                assert!(rel < 1e-3, "triangle even harmonic {k}: {rel:e}");
            }
        }
    }

    /// Power |X_k|² of bins 0 … N/2 of `x` (N a power of two), by the
    /// reference FFT.
    fn power_spectrum(x: &[f64]) -> Vec<f64> {
        use crate::dsp::fft::{plan_real, Complex, FftNorm, FftProvider};
        let n = x.len();
        let mut fft = plan_real::<f64>(FftProvider::Reference, n, FftNorm::Forward);
        let mut input = x.to_vec();
        let mut out = vec![Complex::new(0.0, 0.0); n / 2 + 1];
        fft.forward(&mut input, &mut out);
        out.iter().map(|c| c.re * c.re + c.im * c.im).collect()
    }

    /// The power of every bin up to 20 kHz that is no harmonic of a tone
    /// repeating `p` times in `x.len()` samples (`p` odd, the length a
    /// power of two: its harmonics lie on the multiples of `p` and its
    /// alias products, bar those of harmonics near the length, on the other
    /// bins), relative to the fundamental's, in dB.
    fn alias_db(x: &[f64], p: usize) -> f64 {
        let ps = power_spectrum(x);
        let top = 20_000 * x.len() / 48_000;
        let alias: f64 = (1..=top).filter(|b| b % p != 0).map(|b| ps[b]).sum();
        db(alias / ps[p])
    }

    /// 65536 samples and a tone repeating 6827 times in them (5000.24 Hz,
    /// a binary fraction of the sample rate, so the phase is exact).
    const LONG: usize = 1 << 16;

    #[test]
    fn band_limited_triangle_is_the_naive_one_plus_polyblamp_at_its_corners() {
        // The test's residual: (1 − |d|/dt)³/6 within a sample of a corner,
        // times the change of slope a sample, −8·dt at ¼ and +8·dt at ¾.
        let blamp = |d: f64, dt: f64| {
            let u = 1.0 - d.abs() / dt;
            if u > 0.0 {
                u * u * u / 6.0
            } else {
                0.0
            }
        };
        let naive = |t: f64| {
            if t < 0.25 {
                4.0 * t
            } else if t < 0.75 {
                2.0 - 4.0 * t
            } else {
                4.0 * t - 4.0
            }
        };
        for f in [hz(1000, 1), hz(7001, 2), hz(5000, 1), hz(-3001, 1)] {
            let amp = 0.7;
            let dt = f.dt().min(1.0 - f.dt());
            let mut r = runner(
                &TRIANGLE,
                &[("freq", f.f64()), ("amp", amp)],
                Profile::Strict,
                Precision::F64,
            );
            let bl = {
                let spec: &'static OpSpec = &TRIANGLE;
                let values = crate::ops::harness::values_with(
                    spec,
                    &[
                        ("freq", Value::Number(f.f64())),
                        ("amp", Value::Number(amp)),
                        ("band_limited", Value::Bool(true)),
                    ],
                );
                crate::ops::harness::NodeRunner::new(
                    spec,
                    values,
                    Profile::Strict,
                    Some(Precision::F64),
                    SR,
                    512,
                    0,
                )
                .unwrap()
                .run(&[], &[], 4800, BLOCKS)
                .remove(0)
            };
            let plain = r.run(&[], &[], 4800, BLOCKS).remove(0);
            let mut corrected = 0;
            for (k, y) in bl.iter().enumerate() {
                let t = f.phase(k as u64);
                let want = amp
                    * (naive(t) - 8.0 * dt * blamp(signed_distance(t, 0.25), dt)
                        + 8.0 * dt * blamp(signed_distance(t, 0.75), dt));
                assert!((y - want).abs() <= 1e-12, "{f:?} k {k}: {y} vs {want}");
                corrected += usize::from(*y != plain[k]);
            }
            assert!(corrected > 0, "{f:?}");
        }
    }

    /// At 5 kHz the PolyBLAMP triangle's alias products are far below the
    /// naive one's (measured: −52.8 dB against −31.5 dB), and it stays
    /// within ±amp.
    #[test]
    fn band_limited_triangle_aliases_far_less_than_the_naive_one() {
        let p = 6827;
        let freq = SR * p as f64 / LONG as f64;
        let render_tri = |band_limited: bool| {
            let spec: &'static OpSpec = &TRIANGLE;
            let values = crate::ops::harness::values_with(
                spec,
                &[
                    ("freq", Value::Number(freq)),
                    ("band_limited", Value::Bool(band_limited)),
                ],
            );
            crate::ops::harness::NodeRunner::new(
                spec,
                values,
                Profile::Strict,
                Some(Precision::F64),
                SR,
                4096,
                0,
            )
            .unwrap()
            .run(&[], &[], LONG, &[4096])
            .remove(0)
        };
        let (naive, bl) = (render_tri(false), render_tri(true));
        assert_eq!(
            naive,
            render(
                &TRIANGLE,
                &[("freq", freq)],
                Profile::Strict,
                Precision::F64,
                LONG
            ),
            "band_limited: false is the triangle without the param"
        );
        let (a_naive, a_bl) = (alias_db(&naive, p), alias_db(&bl, p));
        eprintln!("5 kHz triangle alias: naive {a_naive:.1} dB, polyblamp {a_bl:.1} dB");
        assert!(
            a_naive - a_bl >= 15.0,
            "naive {a_naive:.1} dB, polyblamp {a_bl:.1} dB"
        );
        assert!(bl.iter().all(|y| y.abs() <= 1.0));
    }

    /// A master's phase wrap as a sync input: a ramp through 0 at every
    /// wrap of a tone repeating `p` times in [`LONG`] samples (exact).
    fn master(p: usize, frames: usize) -> Vec<f64> {
        (0..frames)
            .map(|k| ((k * p + LONG / 2) % LONG) as f64 / LONG as f64 - 0.5)
            .collect()
    }

    fn synced(
        spec: &'static OpSpec,
        params: &[(&str, f64)],
        sync: &[f64],
        blocks: &[usize],
    ) -> Vec<f64> {
        let set: Vec<(&str, Value)> = params
            .iter()
            .map(|(n, v)| (*n, Value::Number(*v)))
            .collect();
        crate::ops::harness::NodeRunner::new(
            spec,
            crate::ops::harness::values_with(spec, &set),
            Profile::Strict,
            Some(Precision::F64),
            SR,
            4096,
            1,
        )
        .unwrap()
        .run(&[sync.to_vec()], &[], sync.len(), blocks)
        .remove(0)
    }

    /// With `sync` fed but never rising, a saw or square is the unsynced
    /// one a sample late, bit for bit.
    #[test]
    fn a_sync_input_that_never_rises_delays_by_one_sample() {
        for (spec, extra) in [(&SAW, 0.0), (&SQUARE, 0.3)] {
            let params = [("freq", 1234.5), ("amp", 0.8), ("duty", extra)];
            let params = &params[..if core::ptr::eq(spec, &SAW) { 2 } else { 3 }];
            let plain = render(spec, params, Profile::Strict, Precision::F64, 3000);
            let got = synced(spec, params, &vec![-0.5; 3000], BLOCKS);
            assert_eq!(got[0], 0.0);
            assert_eq!(got[1..], plain[..2999], "{}", spec.name);
        }
    }

    /// The slave saw restarts at each wrap of the master, PolyBLEP at the
    /// restart: away from the restarts (and its own wraps) it is the naive
    /// synced saw a sample late; its alias products are far below those of
    /// the same saw restarted naively (its own wraps still PolyBLEP); and it
    /// stays within ±amp. Measured: a slave at 0.77 × the master's 1001 Hz
    /// (no wrap of its own between restarts) −34.5 dB against −21.5 dB
    /// (square −37.1 against −24.8); at 1.77 × (one wrap of its own, whose
    /// PolyBLEP limits both alike) −24.8 against −15.6 (square −25.0
    /// against −15.1).
    #[test]
    fn hard_sync_restarts_at_the_master_wrap_with_far_less_aliasing_than_a_naive_reset() {
        for (ratio, better) in [(0.77, 10.0), (1.77, 6.0)] {
            hard_sync_at(ratio, better);
        }
    }

    fn hard_sync_at(ratio: f64, better: f64) {
        let p = 1367usize;
        let fs = ratio * SR * p as f64 / LONG as f64;
        let frames = 2 * LONG;
        let sync = master(p, frames);
        for blocks in [&[4096][..], BLOCKS] {
            let got = synced(&SAW, &[("freq", fs)], &sync, blocks);
            // The naive restarted saw, and the saw's own PolyBLEP only
            // (restarted naively): the slave phase runs from the last
            // master wrap at c·LONG/p samples.
            let dt = fs / SR;
            let phase_at = |k: usize| {
                let last = (k * p / LONG) as f64 * LONG as f64 / p as f64;
                let t = (k as f64 - last) * dt;
                (t - t.floor(), k as f64 - last)
            };
            let naive_reset: Vec<f64> = (LONG..frames)
                .map(|k| {
                    let (t, _) = phase_at(k);
                    2.0 * t - 1.0 - residual(signed_distance(t, 0.0), dt)
                })
                .collect();
            let mut checked = 0;
            for (k, y) in got.iter().enumerate().skip(LONG) {
                let (t, since) = phase_at(k - 1);
                let wrap = signed_distance(t, 0.0).abs() / dt;
                let next = phase_at(k).1;
                if since > 2.0 && next > 2.0 && wrap > 2.0 {
                    let want = 2.0 * t - 1.0;
                    assert!((y - want).abs() < 1e-9, "k {k}: {y} vs {want}");
                    checked += 1;
                }
            }
            assert!(checked > LONG / 2, "{checked}");
            let blep = &got[LONG..];
            let (a_blep, a_naive) = (alias_db(blep, p), alias_db(&naive_reset, p));
            eprintln!("hard sync saw ×{ratio} alias: polyblep {a_blep:.1} dB, naive reset {a_naive:.1} dB");
            assert!(
                a_naive - a_blep >= better,
                "polyblep {a_blep:.1}, naive {a_naive:.1}"
            );
            assert!(blep.iter().all(|y| y.abs() <= 1.0));
        }
        // The square too.
        let got = synced(&SQUARE, &[("freq", fs)], &sync, &[4096]);
        let blep = &got[LONG..];
        let dt = fs / SR;
        let naive_reset: Vec<f64> = (LONG..frames)
            .map(|k| {
                let last = (k * p / LONG) as f64 * LONG as f64 / p as f64;
                let t = (k as f64 - last) * dt;
                let t = t - t.floor();
                let v = if t < 0.5 { 1.0 } else { -1.0 };
                v + residual(signed_distance(t, 0.0), dt) - residual(signed_distance(t, 0.5), dt)
            })
            .collect();
        let (a_blep, a_naive) = (alias_db(blep, p), alias_db(&naive_reset, p));
        eprintln!(
            "hard sync square ×{ratio} alias: polyblep {a_blep:.1} dB, naive reset {a_naive:.1} dB"
        );
        assert!(
            a_naive - a_blep >= better,
            "polyblep {a_blep:.1}, naive {a_naive:.1}"
        );
    }
}
