//! Oscillators: `sine`, `saw`, `square`, `triangle`, `impulse`.
//!
//! Phase is a u64 fixed-point fraction of a cycle in every profile; the
//! increment is computed in f64 once per frequency change (per sample only
//! while `freq` is modulated or ramping), so phase never drifts and migrates
//! exactly between precisions.

use super::{
    build_any, number, BuildCtx, Io, NodeState, OpSpec, Operator, ParamSpec, Processor, StateError,
};
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const TWO_PI: f64 = 2.0 * core::f64::consts::PI;
/// 2^64 as f64 (exact).
const TWO_POW_64: f64 = 18446744073709551616.0;

/// A fixed-point phase accumulator.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Phasor {
    pub phase: u64,
    pub inc: u64,
    freq: f64,
}

impl Phasor {
    /// The per-sample increment for `freq` Hz at `sample_rate`, wrapping
    /// negative frequencies. Only `÷`, `floor` and an exact power-of-two
    /// scale: identical in every profile.
    #[inline]
    pub fn increment(freq: f64, sample_rate: f64) -> u64 {
        let cycles = freq / sample_rate;
        if !cycles.is_finite() {
            return 0;
        }
        let frac = cycles - cycles.floor();
        (frac * TWO_POW_64) as u64
    }

    #[inline]
    pub fn set_freq(&mut self, freq: f64, sample_rate: f64) {
        if freq != self.freq || self.inc == 0 && freq != 0.0 {
            self.freq = freq;
            self.inc = Phasor::increment(freq, sample_rate);
        }
    }

    /// The increment as a fraction of a cycle per sample, in (−0.5, 0.5].
    #[inline]
    pub fn dt<S: Sample>(&self) -> S {
        S::from_phase(self.inc)
    }

    #[inline]
    pub fn advance(&mut self) {
        self.phase = self.phase.wrapping_add(self.inc);
    }
}

const FREQ: usize = 0;
const AMP: usize = 1;

const FREQ_PARAM: ParamSpec = number("freq", Dimension::Frequency, 440.0, -1e6, 1e6, "frequency");
const AMP_PARAM: ParamSpec = number(
    "amp",
    Dimension::Amplitude,
    1.0,
    -1e6,
    1e6,
    "peak amplitude",
);

/// The waveform a [`Osc`] renders.
trait Shape: Send + 'static {
    /// One sample at phase `t` ∈ [0,1) with per-sample increment `dt` ∈ [0,1),
    /// `extra` the shape's third param (sine phase offset in rad, square duty).
    fn value<S: Sample, M: Math>(t: S, dt: S, extra: f64) -> S;
    const HAS_EXTRA: bool;
}

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

struct SineShape;
impl Shape for SineShape {
    const HAS_EXTRA: bool = true;
    #[inline]
    fn value<S: Sample, M: Math>(t: S, _dt: S, phase: f64) -> S {
        M::sin(S::from_f64(TWO_PI) * t + S::from_f64(phase))
    }
}

struct SawShape;
impl Shape for SawShape {
    const HAS_EXTRA: bool = false;
    #[inline]
    fn value<S: Sample, M: Math>(t: S, dt: S, _: f64) -> S {
        t + t - S::ONE - poly_blep(t, dt)
    }
}

struct SquareShape;
impl Shape for SquareShape {
    const HAS_EXTRA: bool = true;
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

struct TriangleShape;
impl Shape for TriangleShape {
    const HAS_EXTRA: bool = false;
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

/// Ties a processor to its sample type, math policy and shape without storing them.
type Marker<S, M, W> = PhantomData<fn() -> (S, M, W)>;

struct Osc<S, M, W> {
    phasor: Phasor,
    sample_rate: f64,
    _p: Marker<S, M, W>,
}

impl<S: Sample, M: Math, W: Shape> Processor<S> for Osc<S, M, W> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let freq = io.params.get(FREQ);
        let amp = io.params.get(AMP);
        let extra = if W::HAS_EXTRA {
            Some(io.params.get(2))
        } else {
            None
        };
        let out = &mut io.outputs[0][..n];
        let all_const = freq.is_const() && amp.is_const() && extra.is_none_or(|e| e.is_const());
        if all_const {
            self.phasor.set_freq(freq.value(), self.sample_rate);
            let a = S::from_f64(amp.value());
            let e = extra.map_or(0.0, |e| e.value());
            let dt = self.phasor.dt::<S>();
            for o in out.iter_mut() {
                *o = a * W::value::<S, M>(S::from_phase(self.phasor.phase), dt, e);
                self.phasor.advance();
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                self.phasor.set_freq(freq.at(i), self.sample_rate);
                let a = S::from_f64(amp.at(i));
                let e = extra.map_or(0.0, |e| e.at(i));
                let dt = self.phasor.dt::<S>();
                *o = a * W::value::<S, M>(S::from_phase(self.phasor.phase), dt, e);
                self.phasor.advance();
            }
        }
    }

    fn reset(&mut self) {
        self.phasor.phase = 0;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("phase", self.phasor.phase);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.phasor.phase = st.get_u64("phase")?;
        Ok(())
    }
}

struct OscOp<W>(PhantomData<W>);
impl<W: Shape> Operator for OscOp<W> {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
        Ok(Box::new(Osc::<S, M, W> {
            phasor: Phasor::default(),
            sample_rate: cx.sample_rate,
            _p: PhantomData,
        }))
    }
}

pub static SINE: OpSpec = OpSpec {
    name: "sine",
    doc: "Sine oscillator: amp · sin(2π·phase + phase offset).",
    inputs: &[],
    outputs: &["out"],
    params: &[
        FREQ_PARAM,
        AMP_PARAM,
        number("phase", Dimension::Angle, 0.0, -1e6, 1e6, "phase offset"),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: build_any::<OscOp<SineShape>>,
};

pub static SAW: OpSpec = OpSpec {
    name: "saw",
    doc: "Band-limited (PolyBLEP) sawtooth, rising from -amp to amp.",
    inputs: &[],
    outputs: &["out"],
    params: &[FREQ_PARAM, AMP_PARAM],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: build_any::<OscOp<SawShape>>,
};

pub static SQUARE: OpSpec = OpSpec {
    name: "square",
    doc: "Band-limited (PolyBLEP) square/pulse wave; `duty` is the high fraction of a cycle.",
    inputs: &[],
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
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: build_any::<OscOp<SquareShape>>,
};

pub static TRIANGLE: OpSpec = OpSpec {
    name: "triangle",
    doc: "Triangle wave starting at 0 and rising (not band-limited; its harmonics fall at 12 dB/octave).",
    inputs: &[],
    outputs: &["out"],
    params: &[FREQ_PARAM, AMP_PARAM],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: build_any::<OscOp<TriangleShape>>,
};

/// Impulse train: `amp` on the first sample of every cycle; at 0 Hz a single
/// impulse on the first sample after build or reset.
struct Impulse<S> {
    phasor: Phasor,
    sample_rate: f64,
    fired: bool,
    _p: PhantomData<fn() -> S>,
}

impl<S: Sample> Processor<S> for Impulse<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let freq = io.params.get(FREQ);
        let amp = io.params.get(AMP);
        for (i, o) in io.outputs[0][..io.frames].iter_mut().enumerate() {
            self.phasor.set_freq(freq.at(i), self.sample_rate);
            let hit = if self.phasor.inc == 0 {
                !self.fired
            } else {
                self.phasor.phase < self.phasor.inc
            };
            self.fired = true;
            *o = if hit { S::from_f64(amp.at(i)) } else { S::ZERO };
            self.phasor.advance();
        }
    }

    fn reset(&mut self) {
        self.phasor.phase = 0;
        self.fired = false;
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("phase", self.phasor.phase);
        st.put_bool("fired", self.fired);
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.phasor.phase = st.get_u64("phase")?;
        self.fired = st.get_bool("fired")?;
        Ok(())
    }
}

struct ImpulseOp;
impl Operator for ImpulseOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
        Ok(Box::new(Impulse::<S> {
            phasor: Phasor::default(),
            sample_rate: cx.sample_rate,
            fired: false,
            _p: PhantomData,
        }))
    }
}

pub static IMPULSE: OpSpec = OpSpec {
    name: "impulse",
    doc: "Impulse train at `freq`; 0 Hz gives a single impulse at sample 0.",
    inputs: &[],
    outputs: &["out"],
    params: &[
        number(
            "freq",
            Dimension::Frequency,
            0.0,
            0.0,
            1e6,
            "impulses per second (0 = one impulse)",
        ),
        AMP_PARAM,
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    build: build_any::<ImpulseOp>,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increment_is_exact_for_binary_fractions() {
        assert_eq!(Phasor::increment(12000.0, 48000.0), 1 << 62);
        assert_eq!(Phasor::increment(-12000.0, 48000.0), 3 << 62);
        assert_eq!(Phasor::increment(0.0, 48000.0), 0);
        assert_eq!(Phasor::increment(f64::NAN, 48000.0), 0);
    }

    #[test]
    fn polyblep_is_continuous_at_the_edges() {
        let dt = 0.01f64;
        assert!((poly_blep(0.0, dt) + 1.0).abs() < 1e-12);
        assert!((poly_blep(1.0 - 1e-12, dt) - 1.0).abs() < 1e-6);
        assert_eq!(poly_blep(0.5, dt), 0.0);
    }
}
