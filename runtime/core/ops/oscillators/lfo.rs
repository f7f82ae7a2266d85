//! `lfo`: a low-frequency modulation source, `offset + amount · shape`.
//!
//! The phase is the oscillators' u64 fixed-point fraction of a cycle
//! ([`Phasor`], with [`Phasor::increment_exact`], so a period of a whole
//! number of samples, `sample_rate / rate`, wraps exactly on that sample),
//! plus a signed count of the periods completed since the start: the pair
//! is the node's whole state, two integers, so it is block-size invariant
//! and migrates exactly between precisions.
//!
//! The random shapes read the locked Philox formula (scenes/README.md,
//! "Randomness"; [`crate::dsp::rng`]): the random value of period `k` is
//! `from_noise_word(word k of stream 0)` under the node's key
//! ([`BuildCtx::noise_hash`]), which is what a `noise` node with the same
//! key plays at sample `k`. It is a pure function of (key, k): no random
//! state is carried, and a snapshot holds none.

use super::{phase_offset, Phasor, PHASE_PARAM, TWO_PI};
use crate::dsp::rng::NoiseStream;
use crate::dsp::{Math, Sample};
use crate::ops::{
    build_any, by_profile, frequency_lint, no_choices, number, BuildCtx, Io, Lint, NodeProcessor,
    NodeState, OpSpec, Operator, ParamKind, ParamSpec, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const SHAPE: usize = LFO.index_of("shape");
const RATE: usize = LFO.index_of("rate");
const PHASE: usize = LFO.index_of("phase");
const BIPOLAR: usize = LFO.index_of("bipolar");
const AMOUNT: usize = LFO.index_of("amount");
const OFFSET: usize = LFO.index_of("offset");

/// `shape`'s choices, in the order of the `SH_*` constants below.
const SHAPES: &[&str] = &[
    "sine",
    "triangle",
    "saw",
    "square",
    "sample_hold",
    "smooth_random",
];
const SH_SINE: u8 = 0;
const SH_TRIANGLE: u8 = 1;
const SH_SAW: u8 = 2;
const SH_SQUARE: u8 = 3;
const SH_SAMPLE_HOLD: u8 = 4;
const SH_SMOOTH_RANDOM: u8 = 5;

/// The noise stream the random shapes draw from.
const STREAM: u32 = 0;

/// A phase offset in radians as (whole cycles, the fraction as a u64
/// phase): `rad / 2π = whole + frac · 2^-64`, the fraction exactly the
/// oscillators' [`phase_offset`], so a negative offset moves the random
/// shapes back into earlier periods rather than on into later ones.
#[inline]
fn split_offset(rad: f64) -> (i64, u64) {
    let turns = rad / TWO_PI;
    if !turns.is_finite() {
        return (0, 0);
    }
    (turns.floor() as i64, phase_offset(rad))
}

/// The bipolar shape (−1 … 1) at phase `t` ∈ [0, 1) of a cycle, given the
/// random values `a` of this period and `b` of the next.
#[inline(always)]
fn shape_value<S: Sample, M: Math, const SH: u8>(t: S, a: S, b: S) -> S {
    let half = S::from_f64(0.5);
    match SH {
        // Clamped for the fast sine, which peaks a few ppm above 1 (libm's
        // never leaves ±1, so strict's bits are sin's).
        SH_SINE => M::sin(S::from_f64(TWO_PI) * t).clamp(-S::ONE, S::ONE),
        SH_TRIANGLE => {
            let four = S::from_f64(4.0);
            if t < S::from_f64(0.25) {
                four * t
            } else if t < S::from_f64(0.75) {
                S::from_f64(2.0) - four * t
            } else {
                four * t - four
            }
        }
        SH_SAW => t + t - S::ONE,
        SH_SQUARE => {
            if t < half {
                S::ONE
            } else {
                -S::ONE
            }
        }
        SH_SAMPLE_HOLD => a,
        // Cosine interpolation from this period's value to the next one's
        // (the weight clamped for the fast cosine, as the sine).
        _ => {
            let w = (S::ONE - M::cos(S::from_f64(core::f64::consts::PI) * t)) * half;
            let w = w.clamp(S::ZERO, S::ONE);
            a + (b - a) * w
        }
    }
}

struct Lfo<S, M> {
    phasor: Phasor,
    /// Periods completed since the start (down for a negative rate).
    cycle: i64,
    sample_rate: f64,
    shape: u8,
    bipolar: bool,
    noise: NoiseStream,
    /// The random values of period `.0` and the next: a cache of a pure
    /// function of the period, not state.
    held: Option<(i64, S, S)>,
    _p: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Lfo<S, M> {
    /// The random value of period `k`: word `k` of the node's stream.
    #[inline]
    fn random(&mut self, k: i64) -> S {
        self.noise.sample::<S>(k as u64)
    }

    /// This period's and the next period's random values.
    #[inline]
    fn values(&mut self, k: i64) -> (S, S) {
        match self.held {
            Some((j, a, b)) if j == k => (a, b),
            _ => {
                let (a, b) = (self.random(k), self.random(k.wrapping_add(1)));
                self.held = Some((k, a, b));
                (a, b)
            }
        }
    }

    /// Advances one sample, counting a wrap as a period done (or undone,
    /// going backwards: an increment above 2^63 is a negative rate).
    #[inline(always)]
    fn advance(&mut self) {
        let old = self.phasor.phase;
        self.phasor.advance();
        let now = self.phasor.phase;
        if (self.phasor.inc as i64) >= 0 {
            if now < old {
                self.cycle = self.cycle.wrapping_add(1);
            }
        } else if now > old {
            self.cycle = self.cycle.wrapping_sub(1);
        }
    }

    fn render<const SH: u8>(&mut self, io: &mut Io<'_, S>) {
        let random = SH == SH_SAMPLE_HOLD || SH == SH_SMOOTH_RANDOM;
        let n = io.frames;
        let rate = io.params.get(RATE);
        let phase = io.params.get(PHASE);
        let amount = io.params.get(AMOUNT);
        let offset = io.params.get(OFFSET);
        let (rate_c, phase_c) = (rate.is_const(), phase.is_const());
        let (amount_c, offset_c) = (amount.is_const(), offset.is_const());
        let mut shift = split_offset(phase.value());
        let mut a = S::from_f64(amount.value());
        let mut o = S::from_f64(offset.value());
        self.phasor.set_freq_exact(rate.value(), self.sample_rate);
        let half = S::from_f64(0.5);
        let out = &mut io.outputs[0][..n];
        for (i, y) in out.iter_mut().enumerate() {
            if !rate_c {
                self.phasor.set_freq_exact(rate.at(i), self.sample_rate);
            }
            if !phase_c {
                shift = split_offset(phase.at(i));
            }
            if !amount_c {
                a = S::from_f64(amount.at(i));
            }
            if !offset_c {
                o = S::from_f64(offset.at(i));
            }
            let p = self.phasor.phase.wrapping_add(shift.1);
            let t = S::from_phase(p);
            let (va, vb) = if random {
                let k = self
                    .cycle
                    .wrapping_add(shift.0)
                    .wrapping_add((p < self.phasor.phase) as i64);
                self.values(k)
            } else {
                (S::ZERO, S::ZERO)
            };
            let x = shape_value::<S, M, SH>(t, va, vb);
            let u = if self.bipolar { x } else { (x + S::ONE) * half };
            *y = o + a * u;
            self.advance();
        }
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Lfo<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        match self.shape {
            SH_SINE => self.render::<SH_SINE>(io),
            SH_TRIANGLE => self.render::<SH_TRIANGLE>(io),
            SH_SAW => self.render::<SH_SAW>(io),
            SH_SQUARE => self.render::<SH_SQUARE>(io),
            SH_SAMPLE_HOLD => self.render::<SH_SAMPLE_HOLD>(io),
            _ => self.render::<SH_SMOOTH_RANDOM>(io),
        }
    }

    fn reset(&mut self) {
        self.phasor.phase = 0;
        self.cycle = 0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("phase", self.phasor.phase);
        st.put_i64("cycle", self.cycle);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let (phase, cycle) = (st.get_u64("phase")?, st.get_i64("cycle")?);
        self.phasor.phase = phase;
        self.cycle = cycle;
        Ok(())
    }
}

struct LfoOp;
impl Operator for LfoOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let shape = match cx.values[SHAPE] {
            Value::Enum(k) if k < SHAPES.len() => k as u8,
            ref other => return Err(format!("`shape` is not a shape: {other:?}")),
        };
        let bipolar = match cx.values[BIPOLAR] {
            Value::Bool(b) => b,
            ref other => return Err(format!("`bipolar` is not a boolean: {other:?}")),
        };
        Ok(Box::new(Lfo::<S, M> {
            phasor: Phasor::default(),
            cycle: 0,
            sample_rate: cx.sample_rate,
            shape,
            bipolar,
            noise: NoiseStream::new(cx.noise_hash, STREAM),
            held: None,
            _p: PhantomData,
        }))
    }
}

/// A static `rate` above Nyquist (in magnitude) folds back below it.
fn rate_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    let Some(hz) = values.get(RATE).and_then(Value::as_number) else {
        return Vec::new();
    };
    if hz.abs() <= 0.5 * sample_rate {
        // Within Nyquist: no lint, and no message to format.
        return Vec::new();
    }
    let alias = super::alias_hz(hz, sample_rate);
    let instead = format!("the lfo runs at its alias, {alias} Hz, since nothing runs faster than");
    frequency_lint(
        values,
        RATE,
        "rate",
        sample_rate,
        0.5,
        &instead,
        super::alias_hz,
    )
    .into_iter()
    .collect()
}

/// `morphrt bench` of `benches/costs/lfo.json` (one node per shape; best of
/// four 1 s runs, benches/costs.md): a sine or cosine per sample costs
/// about twice the piecewise-linear shapes, whose figures (and
/// sample_hold's, one Philox block per four periods) lie within a
/// nanosecond of each other and are given as their largest.
fn lfo_cost(p: &crate::profile::NodeProfile, values: &[Value]) -> f64 {
    let ns = match values.get(SHAPE) {
        Some(Value::Enum(k)) if *k == SH_SINE as usize => [10.4, 7.3, 10.5],
        Some(Value::Enum(k)) if *k == SH_SMOOTH_RANDOM as usize => [11.8, 8.2, 13.4],
        _ => [5.1, 4.4, 5.5],
    };
    by_profile(p, ns)
}

pub(crate) static LFO: OpSpec = OpSpec {
    name: "lfo",
    doc: "Low-frequency oscillator for modulation: out = offset + amount · shape, the shape \
          −1 … 1 (`bipolar`, the default) or 0 … 1. Shapes: sine (sin 2πt), triangle (0 rising \
          to 1 at a quarter cycle), saw (rising from −1), square (1 for the first half cycle, \
          then −1), sample_hold (a new random value in [−1, 1) each period, held), \
          smooth_random (cosine interpolation from one period's random value to the next's). \
          Routed into a param it adds in the param's canonical unit: an lfo with offset 0 and \
          amount 300 into a `cutoff` swings it ±300 Hz. The random value of period k is what \
          a `noise` node with the same key plays at sample k (Philox 4x32-10, the locked \
          formula: scenes/README.md, \"Randomness\"); a period of sample_rate/rate samples \
          is exact to the sample when that is a whole number.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        ParamSpec {
            name: "shape",
            kind: ParamKind::Enum {
                choices: SHAPES,
                default: "sine",
            },
            doc: "the waveform (each described above)",
            settable_by_events: false,
        },
        number(
            "rate",
            Dimension::Frequency,
            1.0,
            -1e6,
            1e6,
            "cycles (and random periods) per second; negative runs backwards",
        ),
        PHASE_PARAM,
        ParamSpec {
            name: "bipolar",
            kind: ParamKind::Bool { default: true },
            doc: "true: the shape spans −1 … 1; false: 0 … 1",
            settable_by_events: false,
        },
        number(
            "amount",
            Dimension::Amplitude,
            1.0,
            -1e6,
            1e6,
            "scale of the shape, in the target's unit (Hz into a cutoff)",
        ),
        number(
            "offset",
            Dimension::Scalar,
            0.0,
            -1e6,
            1e6,
            "added to the scaled shape, in the target's unit",
        ),
        ParamSpec {
            name: "seed",
            kind: ParamKind::Integer {
                default: 0,
                min: 0,
                max: i64::MAX,
            },
            doc: "local seed of the random shapes, mixed with the global seed and the node id",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: true,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: rate_lints,
    cost: lfo_cost,
    algorithms: None,
    build: build_any::<LfoOp>,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{first_difference, values_with, NodeRunner};

    const SR: f64 = 48000.0;
    const SR_INT: i64 = 48000;
    /// Block sizes cycled through by the renders below.
    const BLOCKS: &[usize] = &[64, 7, 300, 1, 128];

    const PROFILES: [(Profile, Precision); 3] = [
        (Profile::Strict, Precision::F64),
        (Profile::Repro, Precision::F32),
        (Profile::Live, Precision::F32),
    ];

    fn shape(name: &str) -> Value {
        Value::Enum(SHAPES.iter().position(|s| *s == name).expect("a shape"))
    }

    fn runner(set: &[(&str, Value)], profile: Profile, precision: Precision) -> NodeRunner {
        NodeRunner::new(
            &LFO,
            values_with(&LFO, set),
            profile,
            Some(precision),
            SR,
            512,
            0,
        )
        .unwrap()
    }

    fn render(set: &[(&str, Value)], profile: Profile, precision: Precision, n: usize) -> Vec<f64> {
        runner(set, profile, precision)
            .run(&[], &[], n, BLOCKS)
            .remove(0)
    }

    fn strict(set: &[(&str, Value)], n: usize) -> Vec<f64> {
        render(set, Profile::Strict, Precision::F64, n)
    }

    fn num(v: f64) -> Value {
        Value::Number(v)
    }

    // The independent oracle of the random shapes: Philox 4x32-10 written
    // out from the Random123 definition (its round, multipliers and Weyl
    // key bumps), checked against Random123's known answers (the table
    // `dsp::philox::RANDOM123_KAT`, which rand_philox is checked against
    // too), and the locked key/counter layout and word mapping of
    // scenes/README.md, "Randomness".

    fn philox4x32_10(ctr: [u32; 4], key: [u32; 2]) -> [u32; 4] {
        let (mut c, mut k) = (ctr, key);
        for round in 0..10 {
            if round > 0 {
                k = [
                    k[0].wrapping_add(0x9E37_79B9),
                    k[1].wrapping_add(0xBB67_AE85),
                ];
            }
            let p0 = 0xD251_1F53u64 * c[0] as u64;
            let p1 = 0xCD9E_8D57u64 * c[2] as u64;
            c = [
                (p1 >> 32) as u32 ^ c[1] ^ k[0],
                p1 as u32,
                (p0 >> 32) as u32 ^ c[3] ^ k[1],
                p0 as u32,
            ];
        }
        c
    }

    #[test]
    fn the_oracle_philox_gives_random123s_known_answers() {
        for (ctr, key, want) in crate::dsp::philox::RANDOM123_KAT {
            assert_eq!(philox4x32_10(ctr, key), want);
        }
    }

    /// Word `n` of stream 0 under the harness's key, `hash64(1, "node", 0)`.
    fn oracle_word(n: u64) -> u32 {
        let h = crate::dsp::rng::hash64(1, "node", 0);
        let b = n / 4;
        philox4x32_10(
            [b as u32, (b >> 32) as u32, 0, 0],
            [h as u32, (h >> 32) as u32],
        )[(n % 4) as usize]
    }

    /// The random value of period `k` at f64: word · 2^-31 − 1.
    fn v64(k: i64) -> f64 {
        oracle_word(k as u64) as f64 * (1.0 / 2147483648.0) - 1.0
    }

    /// At f32: (word >> 8) · 2^-23 − 1.
    fn v32(k: i64) -> f32 {
        (oracle_word(k as u64) >> 8) as f32 * (1.0 / 8388608.0) - 1.0
    }

    /// The period of sample `n` at `num / den` Hz: floor(n · rate / sr),
    /// exactly.
    fn period(n: usize, num: i64, den: i64) -> i64 {
        (n as i128 * num as i128).div_euclid((den * SR_INT) as i128) as i64
    }

    /// The phase of sample `n` at `num / den` Hz, in cycles, exactly reduced.
    fn phase(n: usize, num: i64, den: i64) -> f64 {
        let d = (den * SR_INT) as i128;
        (n as i128 * num as i128).rem_euclid(d) as f64 / d as f64
    }

    /// 46.875 Hz: 1024 samples a period, every phase a binary fraction.
    const P: usize = 1024;
    const BIN_RATE: f64 = 46.875;

    /// The closed forms of the periodic shapes at phase t.
    fn closed_form(name: &str, t: f64) -> f64 {
        match name {
            "sine" => libm::sin(2.0 * core::f64::consts::PI * t),
            "triangle" if t < 0.25 => 4.0 * t,
            "triangle" if t < 0.75 => 2.0 - 4.0 * t,
            "triangle" => 4.0 * t - 4.0,
            "saw" => 2.0 * t - 1.0,
            "square" if t < 0.5 => 1.0,
            "square" => -1.0,
            _ => unreachable!(),
        }
    }

    #[test]
    fn each_shape_at_0_quarter_half_and_three_quarters_of_a_period() {
        // (shape, values at 0, ¼, ½, ¾ of the period); the sine's are
        // within 2^-52 of 0, 1, 0, −1 (sin of the rounded π).
        let want: [(&str, [f64; 4]); 4] = [
            ("sine", [0.0, 1.0, 0.0, -1.0]),
            ("triangle", [0.0, 1.0, 0.0, -1.0]),
            ("saw", [-1.0, -0.5, 0.0, 0.5]),
            ("square", [1.0, 1.0, -1.0, -1.0]),
        ];
        let frames = 8 * P;
        for (name, at) in want {
            for (profile, precision) in PROFILES {
                let set = [("shape", shape(name)), ("rate", num(BIN_RATE))];
                let out = render(&set, profile, precision, frames);
                let tol = if name == "sine" {
                    if precision == Precision::F64 {
                        f64::EPSILON
                    } else {
                        1e-5
                    }
                } else {
                    0.0
                };
                for m in 0..8 {
                    for (q, w) in at.iter().enumerate() {
                        let y = out[m * P + q * P / 4];
                        assert!(
                            (y - w).abs() <= tol,
                            "{name} {profile:?} period {m} quarter {q}: {y} vs {w}"
                        );
                    }
                }
                // Every sample against the closed form at its exact phase.
                let tol = if precision == Precision::F64 {
                    4.0 * f64::EPSILON
                } else {
                    1e-5
                };
                for (n, y) in out.iter().enumerate() {
                    let w = closed_form(name, (n % P) as f64 / P as f64);
                    assert!((y - w).abs() <= tol, "{name} {profile:?} n {n}: {y} vs {w}");
                }
            }
        }
        // A rate whose phases are not binary fractions: 1 kHz, 48 samples.
        for name in ["sine", "triangle", "saw", "square"] {
            let out = strict(&[("shape", shape(name)), ("rate", num(1000.0))], 4800);
            let mut err = 0.0f64;
            for (n, y) in out.iter().enumerate() {
                let w = closed_form(name, phase(n, 1000, 1));
                // The square's edge at ½: phase 24/48 is exactly ½ in both.
                err = err.max((y - w).abs());
            }
            eprintln!("lfo {name} at 1 kHz: max error {err:e} against the closed form");
            assert!(err <= 1e-13, "{name}: {err:e}");
        }
    }

    #[test]
    fn the_period_is_sample_rate_over_rate_to_the_sample() {
        // Whole-number periods (480, 48, 16000 and 64000 samples) and
        // fractional ones (7 Hz: 6857 1/7; 15.375 Hz: 3121 39/41), forwards and
        // backwards: sample n is in period floor(n·rate/sr), exactly, read
        // through sample_hold against the oracle's value of that period.
        let frames = 200_000;
        for (num_, den) in [
            (100, 1),
            (1000, 1),
            (3, 1),
            (3, 4),
            (7, 1),
            (123, 8),
            (-100, 1),
            (-7, 1),
        ] {
            let rate = num_ as f64 / den as f64;
            let out = strict(
                &[("shape", shape("sample_hold")), ("rate", num(rate))],
                frames,
            );
            for (n, y) in out.iter().enumerate() {
                let k = period(n, num_, den);
                assert_eq!(
                    y.to_bits(),
                    v64(k).to_bits(),
                    "{rate} Hz sample {n}: period {k}"
                );
            }
            // The saw wraps on each multiple of a whole-number period, and
            // only there.
            if den == 1 && SR_INT % num_.abs() == 0 && num_ > 0 {
                let p = (SR_INT / num_) as usize;
                let saw = strict(&[("shape", shape("saw")), ("rate", num(rate))], frames);
                for n in 1..frames {
                    assert_eq!(saw[n] < saw[n - 1], n % p == 0, "{rate} Hz saw at {n}");
                }
                assert_eq!(saw[0], -1.0);
            }
        }
    }

    #[test]
    fn random_values_are_the_oracle_philox_bit_for_bit() {
        let frames = 12 * P;
        // sample_hold, bipolar and unipolar, with amount and offset; at
        // f64 (strict) and f32 (repro, live: the f32 word mapping).
        for bipolar in [true, false] {
            for (amount, offset) in [(1.0, 0.0), (300.0, 1000.0), (-0.25, 0.5)] {
                let set = [
                    ("shape", shape("sample_hold")),
                    ("rate", num(BIN_RATE)),
                    ("bipolar", Value::Bool(bipolar)),
                    ("amount", num(amount)),
                    ("offset", num(offset)),
                ];
                let out = strict(&set, frames);
                for (n, y) in out.iter().enumerate() {
                    let v = v64((n / P) as i64);
                    let u = if bipolar { v } else { (v + 1.0) * 0.5 };
                    let want = offset + amount * u;
                    assert_eq!(y.to_bits(), want.to_bits(), "{set:?} n {n}");
                }
                for profile in [Profile::Repro, Profile::Live] {
                    let out = render(&set, profile, Precision::F32, frames);
                    for (n, y) in out.iter().enumerate() {
                        let v = v32((n / P) as i64);
                        let u = if bipolar { v } else { (v + 1.0) * 0.5 };
                        let want = offset as f32 + amount as f32 * u;
                        assert_eq!(*y, want as f64, "{profile:?} {set:?} n {n}");
                    }
                }
            }
        }
        // smooth_random: v_k + (v_{k+1} − v_k)·(1 − cos(π t))/2 across
        // period k, with libm's cos (strict's), bit for bit; it starts each
        // period on v_k and passes the midpoint half way.
        for bipolar in [true, false] {
            let set = [
                ("shape", shape("smooth_random")),
                ("rate", num(BIN_RATE)),
                ("bipolar", Value::Bool(bipolar)),
                ("amount", num(300.0)),
                ("offset", num(1000.0)),
            ];
            let out = strict(&set, frames);
            for (n, y) in out.iter().enumerate() {
                let k = (n / P) as i64;
                let (a, b) = (v64(k), v64(k + 1));
                let t = (n % P) as f64 / P as f64;
                let w = (1.0 - libm::cos(core::f64::consts::PI * t)) * 0.5;
                let x = a + (b - a) * w;
                let u = if bipolar { x } else { (x + 1.0) * 0.5 };
                let want = 1000.0 + 300.0 * u;
                assert_eq!(y.to_bits(), want.to_bits(), "bipolar {bipolar} n {n}");
                if n % P == 0 {
                    let at = if bipolar { a } else { (a + 1.0) * 0.5 };
                    assert_eq!(*y, 1000.0 + 300.0 * at);
                }
                if n % P == P / 2 {
                    let mid = (a + b) * 0.5;
                    let mid = if bipolar { mid } else { (mid + 1.0) * 0.5 };
                    assert!((y - (1000.0 + 300.0 * mid)).abs() <= 1e-12);
                }
            }
        }
        // The key is the node's: another seed draws other values.
        let h = crate::dsp::rng::hash64(1, "node", 0);
        assert_ne!(h, crate::dsp::rng::hash64(1, "node", 5));
        // And the value of period k is what `noise` plays at sample k.
        let noise = crate::ops::lookup("noise").unwrap();
        let hiss = NodeRunner::new(
            noise,
            values_with(noise, &[]),
            Profile::Strict,
            Some(Precision::F64),
            SR,
            512,
            0,
        )
        .unwrap()
        .run(&[], &[], 12, &[12])
        .remove(0);
        let held = strict(
            &[("shape", shape("sample_hold")), ("rate", num(BIN_RATE))],
            frames,
        );
        for (k, v) in hiss.iter().enumerate() {
            assert_eq!(held[k * P], *v, "period {k}");
        }
    }

    #[test]
    fn unipolar_shapes_span_0_to_1() {
        let frames = 64 * P;
        for name in SHAPES {
            for (profile, precision) in PROFILES {
                let set = [
                    ("shape", shape(name)),
                    ("rate", num(BIN_RATE)),
                    ("bipolar", Value::Bool(false)),
                ];
                let out = render(&set, profile, precision, frames);
                let lo = out.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = out.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                assert!(lo >= 0.0 && hi <= 1.0, "{name} {profile:?}: {lo} … {hi}");
                if !name.contains("random") && *name != "sample_hold" {
                    // The saw's top is 1 − 1/P unipolar (its last phase before a wrap).
                    let top = 1.0 - 1.0 / P as f64;
                    assert!(lo <= 1e-6 && hi >= top - 1e-6, "{name}: {lo} … {hi}");
                } else {
                    // 64 random values spread over most of the range.
                    assert!(lo < 0.1 && hi > 0.9, "{name}: {lo} … {hi}");
                    assert!(hi < 1.0, "{name}: the random values stay below 1");
                }
                // The bipolar shape is 2·unipolar − 1.
                let bi = render(
                    &[("shape", shape(name)), ("rate", num(BIN_RATE))],
                    profile,
                    precision,
                    frames,
                );
                for (n, (u, b)) in out.iter().zip(&bi).enumerate() {
                    assert!((2.0 * u - 1.0 - b).abs() <= 1e-6, "{name} {n}: {u} {b}");
                }
            }
        }
    }

    #[test]
    fn amount_and_offset_scale_and_shift_the_shape_bit_for_bit() {
        let frames = 4 * P;
        for name in SHAPES {
            for (profile, precision) in PROFILES {
                let plain = render(
                    &[("shape", shape(name)), ("rate", num(BIN_RATE))],
                    profile,
                    precision,
                    frames,
                );
                // Into a cutoff: 1000 Hz ± 300 Hz.
                let set = [
                    ("shape", shape(name)),
                    ("rate", num(BIN_RATE)),
                    ("amount", num(300.0)),
                    ("offset", num(1000.0)),
                ];
                let out = render(&set, profile, precision, frames);
                for (n, (y, x)) in out.iter().zip(&plain).enumerate() {
                    let want = if precision == Precision::F64 {
                        1000.0 + 300.0 * x
                    } else {
                        (1000.0f32 + 300.0f32 * *x as f32) as f64
                    };
                    assert_eq!(*y, want, "{name} {profile:?} n {n}");
                    assert!((700.0..=1300.0).contains(y), "{name} {n}: {y}");
                }
                // Modulating amount and offset adds to their static values.
                let mut r = runner(
                    &[("shape", shape(name)), ("rate", num(BIN_RATE))],
                    profile,
                    precision,
                );
                let got = r.run(
                    &[],
                    &[
                        (AMOUNT, vec![299.0; frames]),
                        (OFFSET, vec![1000.0; frames]),
                    ],
                    frames,
                    BLOCKS,
                );
                assert_eq!(first_difference(&[out], &got), None, "{name} {profile:?}");
            }
        }
    }

    #[test]
    fn a_quarter_cycle_of_phase_is_the_shape_a_quarter_period_on() {
        let quarter = core::f64::consts::FRAC_PI_2;
        let frames = 8 * P;
        for name in SHAPES {
            for (profile, precision) in PROFILES {
                let set = |ph: f64| {
                    [
                        ("shape", shape(name)),
                        ("rate", num(BIN_RATE)),
                        ("phase", num(ph)),
                    ]
                };
                let plain = render(&set(0.0), profile, precision, frames + P);
                let ahead = render(&set(quarter), profile, precision, frames);
                let behind = render(&set(-quarter), profile, precision, frames);
                for n in 0..frames {
                    assert_eq!(ahead[n], plain[n + P / 4], "{name} {profile:?} +¼ n {n}");
                    if n >= P / 4 {
                        assert_eq!(behind[n], plain[n - P / 4], "{name} {profile:?} −¼ n {n}");
                    }
                }
                // Before the start, −¼ reads period −1 (the random shapes'
                // value of word 2^64 − 1).
                if *name == "sample_hold" && precision == Precision::F64 {
                    assert_eq!(behind[0], v64(-1));
                }
                // A whole cycle of phase is the next period.
                let whole = render(
                    &set(2.0 * core::f64::consts::PI),
                    profile,
                    precision,
                    frames,
                );
                assert_eq!(whole[..], plain[P..frames + P], "{name} {profile:?} 2π");
            }
        }
    }

    #[test]
    fn snapshots_migrate_between_precisions_exactly() {
        // The state is two integers (the u64 phase and the period count),
        // so an f64 node's snapshot continues an f32 node exactly where an
        // f32 run went, and back.
        let frames = 5 * P + 77;
        let split = 2 * P + 300;
        for name in SHAPES {
            let set = [("shape", shape(name)), ("rate", num(-7.0))];
            for (from, to) in [
                (
                    (Profile::Strict, Precision::F64),
                    (Profile::Repro, Precision::F32),
                ),
                (
                    (Profile::Repro, Precision::F32),
                    (Profile::Strict, Precision::F64),
                ),
            ] {
                let whole = render(&set, to.0, to.1, frames);
                let mut first = runner(&set, from.0, from.1);
                first.run(&[], &[], split, BLOCKS);
                let st = first.snapshot();
                assert_eq!(st.get_i64("cycle").unwrap(), -1, "{name}");
                let mut second = runner(&set, to.0, to.1);
                second.node().restore(&st).unwrap();
                second.set_clock(split as u64);
                let tail = second.run(&[], &[], frames - split, BLOCKS);
                assert_eq!(tail[0][..], whole[split..], "{name} {from:?} → {to:?}");
            }
        }
    }

    #[test]
    fn a_rate_above_nyquist_is_linted() {
        let lints = rate_lints(&values_with(&LFO, &[("rate", num(30_000.0))]), SR);
        assert_eq!(lints.len(), 1);
        assert_eq!(lints[0].param, "rate");
        assert!(
            lints[0].message.contains("18000 Hz"),
            "{}",
            lints[0].message
        );
        assert!(rate_lints(&values_with(&LFO, &[("rate", num(5.0))]), SR).is_empty());
    }
}
