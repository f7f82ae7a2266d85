//! Oscillators: `sine`, `saw`, `square`, `triangle`, `impulse`, `wavetable`,
//! and `lfo`, a modulation source on the same phase accumulator.
//!
//! Phase is a u64 fixed-point fraction of a cycle in every profile; the
//! increment is computed in f64 once per frequency change (per sample only
//! while `freq` is modulated or ramping), so phase never drifts and migrates
//! exactly between precisions.

mod impulse;
mod lfo;
mod saw_square_triangle;
mod sine;
mod wavetable;

pub(crate) use impulse::IMPULSE;
pub(crate) use lfo::LFO;
pub(crate) use saw_square_triangle::{SAW, SQUARE, TRIANGLE};
pub(crate) use sine::SINE;
pub(crate) use wavetable::WAVETABLE;

use super::{
    frequency_lint, number, BuildCtx, Io, Lint, NodeProcessor, NodeState, OpSpec, Operator,
    OutputBound, ParamSpec, StateError, Value,
};
use super::{serial_lanes, LaneKernel, LaneMember, LaneSum, ParamState, SteadyLanes, MAX_LANES};
use crate::dsp::strict_sin;
use crate::dsp::vector::{
    phase_turns, sin_turns, sine_block, sine_block_add, sine_group, sine_group_span, SimdLevel,
    SineMember, SineOut, SineSteps, QUARTER,
};
use crate::dsp::{Math, MathKind, Sample};
use crate::profile::NodeProfile;
use crate::scene::Dimension;
use sine::{offset_phase, sine_arg};
use std::marker::PhantomData;
use std::mem::MaybeUninit;

const TWO_PI: f64 = 2.0 * core::f64::consts::PI;
/// 2^64 as f64 (exact).
const TWO_POW_64: f64 = 18446744073709551616.0;

/// A fixed-point phase accumulator.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Phasor {
    pub(crate) phase: u64,
    pub(crate) inc: u64,
    freq: f64,
}

impl Phasor {
    /// The per-sample increment for `freq` Hz at `sample_rate`, wrapping
    /// negative frequencies. Only `÷`, `floor` and an exact power-of-two
    /// scale: identical in every profile.
    #[inline]
    pub(crate) fn increment(freq: f64, sample_rate: f64) -> u64 {
        let cycles = freq / sample_rate;
        if !cycles.is_finite() {
            return 0;
        }
        let frac = cycles - cycles.floor();
        (frac * TWO_POW_64) as u64
    }

    /// The exact rate `freq / sample_rate` rounded up to a whole 2^-64
    /// cycle. [`increment`](Self::increment) truncates the f64 quotient,
    /// which is itself off by up to half an ulp, so its phase can lag: a
    /// period of a whole number of samples (1 kHz at 48 kHz) then wraps one
    /// sample late. Here the quotient is corrected with the division's exact
    /// remainder. Only `+ − × ÷`, `trunc`, `floor`, `ceil` and exact
    /// power-of-two scales: identical in every profile.
    pub(crate) fn increment_exact(freq: f64, sample_rate: f64) -> u64 {
        let cycles = freq / sample_rate;
        if !cycles.is_finite() {
            return 0;
        }
        // freq = cycles·sample_rate + rem exactly (the remainder of a
        // correctly rounded division is representable).
        let (p, e) = two_prod(cycles, sample_rate);
        let rem = (freq - p) - e;
        // Drop whole cycles (exact, unlike `1 + cycles` for negative ones),
        // then scale to a signed count of 2^-64 cycles and reduce mod 2^64.
        let scaled = (cycles - cycles.trunc()) * TWO_POW_64;
        let whole = scaled.floor();
        let below = (scaled - whole) + rem / sample_rate * TWO_POW_64;
        let up = if below.is_finite() { below.ceil() } else { 0.0 };
        (whole as i128 + up as i128) as u64
    }

    #[inline]
    pub(crate) fn set_freq(&mut self, freq: f64, sample_rate: f64) {
        if freq != self.freq || self.inc == 0 && freq != 0.0 {
            self.freq = freq;
            self.inc = Phasor::increment(freq, sample_rate);
        }
    }

    /// [`set_freq`](Self::set_freq) with [`increment_exact`](Self::increment_exact).
    #[inline]
    pub(crate) fn set_freq_exact(&mut self, freq: f64, sample_rate: f64) {
        if freq != self.freq || self.inc == 0 && freq != 0.0 {
            self.freq = freq;
            self.inc = Phasor::increment_exact(freq, sample_rate);
        }
    }

    /// The magnitude of the increment as a fraction of a cycle per sample,
    /// in [0, 0.5]: a negative frequency (or one above Nyquist, which folds)
    /// traverses the waveform backwards, and PolyBLEP's residual is the same
    /// for either direction given |dt|.
    #[inline]
    pub(crate) fn dt<S: Sample>(&self) -> S {
        let inc = if self.inc > 1 << 63 {
            self.inc.wrapping_neg()
        } else {
            self.inc
        };
        S::from_phase(inc)
    }

    #[inline]
    pub(crate) fn advance(&mut self) {
        self.phase = self.phase.wrapping_add(self.inc);
    }
}

/// Dekker's error-free product: `a·b = p + e` exactly (no FMA).
#[inline]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    fn split(x: f64) -> (f64, f64) {
        let c = 134217729.0 * x; // 2^27 + 1
        let hi = c - (c - x);
        (hi, x - hi)
    }
    let p = a * b;
    let (ah, al) = split(a);
    let (bh, bl) = split(b);
    let e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    (p, e)
}

// Every oscillator declares `freq` then `amp` (the shared params below), so
// one pair of indices serves all five; sine's `phase` and square's `duty`
// follow them as the shape's extra param. Saw's, square's and triangle's
// `phase` (the same param as sine's, [`PHASE_PARAM`]) offsets the u64 phase
// instead.
const FREQ: usize = SINE.index_of("freq");
const AMP: usize = SINE.index_of("amp");
const EXTRA: usize = SINE.index_of("phase");
const SAW_PHASE: usize = SAW.index_of("phase");
const SQUARE_PHASE: usize = SQUARE.index_of("phase");
const TRIANGLE_PHASE: usize = TRIANGLE.index_of("phase");
const _: () = {
    assert!(SAW.index_of("freq") == FREQ && SAW.index_of("amp") == AMP);
    assert!(SQUARE.index_of("freq") == FREQ && SQUARE.index_of("amp") == AMP);
    assert!(SQUARE.index_of("duty") == EXTRA);
    assert!(TRIANGLE.index_of("freq") == FREQ && TRIANGLE.index_of("amp") == AMP);
    assert!(IMPULSE.index_of("freq") == FREQ && IMPULSE.index_of("amp") == AMP);
};

const FREQ_PARAM: ParamSpec = number("freq", Dimension::Frequency, 440.0, -1e6, 1e6, "frequency");
const AMP_PARAM: ParamSpec = number(
    "amp",
    Dimension::Amplitude,
    1.0,
    -1e6,
    1e6,
    "peak amplitude",
);
/// A phase offset in radians (2π is one cycle): `sine`'s, `saw`'s,
/// `square`'s, `triangle`'s and `lfo`'s.
const PHASE_PARAM: ParamSpec = number("phase", Dimension::Angle, 0.0, -1e6, 1e6, "phase offset");

/// A phase offset in radians as a u64 fraction of a cycle, added to the
/// phase before a shape reads it (saw, square, triangle, lfo). Like
/// [`Phasor::increment`], only `÷`, `floor` and an exact power-of-two
/// scale: identical in every profile; 0 (the default) adds nothing, so the
/// output is the same bits as without the param, and a quarter cycle
/// (π/2) is exactly 2^62.
#[inline]
fn phase_offset(rad: f64) -> u64 {
    Phasor::increment(rad, TWO_PI)
}

/// The frequency a phase stepping `hz` per second plays at `sample_rate`:
/// the step wraps a whole cycle, so above Nyquist its alias, in magnitude
/// `|hz − sr·round(hz/sr)|`.
pub(super) fn alias_hz(hz: f64, sample_rate: f64) -> f64 {
    (hz - sample_rate * (hz / sample_rate).round()).abs()
}

/// Every oscillator's lints: a static `freq` above Nyquist (in magnitude)
/// folds back below it, so the node plays that alias instead (at a sample
/// rate that divides the frequency, 0 Hz: silence for a sine).
fn freq_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    let Some(hz) = values.get(FREQ).and_then(Value::as_number) else {
        return Vec::new();
    };
    if hz.abs() <= 0.5 * sample_rate {
        // Within Nyquist: no lint, and no message to format.
        return Vec::new();
    }
    let alias = alias_hz(hz, sample_rate);
    let instead =
        format!("the oscillator plays its alias, {alias} Hz, since nothing renders above");
    frequency_lint(values, FREQ, "freq", sample_rate, 0.5, &instead, alias_hz)
        .into_iter()
        .collect()
}

/// How far past ±1 the fast sine can go: its per-sample formula
/// (`dsp::vector::sin_turns`) peaks at 1 + 3.6e-6, a test checking every
/// phase it can be given; the block kernel (`dsp::vector::sine_block`)
/// within 1 + 1e-6, a test bounding it from every fine phase.
const FAST_SINE_PEAK: f64 = 1.0 + 1.0 / 131072.0;

/// An oscillator's output bound, for [`super::output_bound`]: `|amp|`
/// times the waveform's peak. Every waveform stays within ±1 exactly (a
/// test checks them on a grid of phases and increments, in f32 and f64):
/// the triangle and the saw by construction, PolyBLEP's residual only
/// smoothing the saw's step between its levels; the square too at duty
/// 0.5 (both steps' residuals then pull toward 0), but not near duty 0 or
/// 1, where the f32 phase of the second step rounds, so it has a bound
/// only at a static duty of 0.5; an impulse is `amp` or 0; the sine under
/// strict and std math is `sin`, under fast math up to
/// [`FAST_SINE_PEAK`].
pub(super) fn output_bound(
    op: &OpSpec,
    profile: &NodeProfile,
    values: &[Value],
) -> Option<OutputBound> {
    let amp = values.get(AMP)?.as_number()?.abs();
    if core::ptr::eq(op, &SINE) && profile.math == MathKind::Fast {
        Some(OutputBound {
            peak: amp * FAST_SINE_PEAK,
            exact: false,
            params: &["amp"],
        })
    } else if core::ptr::eq(op, &SQUARE) {
        (values.get(EXTRA)?.as_number()? == 0.5).then_some(OutputBound {
            peak: amp,
            exact: true,
            params: &["amp", "duty"],
        })
    } else if [&SINE, &SAW, &TRIANGLE, &IMPULSE]
        .iter()
        .any(|o| core::ptr::eq(op, *o))
    {
        Some(OutputBound {
            peak: amp,
            exact: true,
            params: &["amp"],
        })
    } else {
        None
    }
}

/// The waveform a [`Osc`] renders.
trait Shape: Send + 'static {
    /// One sample at phase `t` ∈ [0,1) with per-sample increment `dt` ∈ [0,1),
    /// `extra` the shape's third param (sine phase offset in rad, square duty).
    fn value<S: Sample, M: Math>(t: S, dt: S, extra: f64) -> S;
    const HAS_EXTRA: bool;
    /// The index of a `phase` param (rad) added to the u64 phase before
    /// [`value`](Self::value) reads it (saw, square, triangle; sine adds its own
    /// `phase` in the argument, as `extra`).
    const PHASE: Option<usize> = None;
    /// Under fast math with constant params, the block is rendered by the
    /// vector sine kernel straight from the u64 phase (`dsp::vector`).
    const FAST_SINE: bool = false;
    /// The shape has a `sync` input (input 0): see [`Osc::process_sync`].
    const SYNC: bool = false;
    /// The shape without its band-limiting correction at phase `t`, for
    /// the jump a sync reset makes (shapes with [`SYNC`](Self::SYNC)).
    fn naive<S: Sample>(_t: S, _extra: f64) -> S {
        S::ZERO
    }
}

/// Ties a processor to its sample type, math policy and shape without storing them.
type Marker<S, M, W> = PhantomData<fn() -> (S, M, W)>;

/// `repr(C)`: the steps, then the phasor right after their header, so a
/// lane kernel reads one run of cache lines per member.
#[repr(C)]
struct Osc<S, M, W> {
    /// The fast sine kernel's steps for the current increment (recomputed
    /// when it changes; not state: a function of the increment).
    steps: SineSteps,
    phasor: Phasor,
    sample_rate: f64,
    /// The instruction set of the fast sine kernel (chosen at build).
    simd: SimdLevel,
    _p: Marker<S, M, W>,
    /// An edge feeds the `sync` input: the output runs one sample late
    /// ([`Osc::process_sync`]), with this state.
    sync: Option<Sync<S>>,
}

/// A synced oscillator's state between samples: the last `sync` input
/// and the sample not yet written (the one before a reset is corrected
/// once the reset is seen).
#[derive(Clone, Copy)]
struct Sync<S> {
    last: f64,
    pending: S,
}

impl<S: Sample, M: Math, W: Shape> Osc<S, M, W> {
    /// Hard sync: where `sync` rises from ≤ 0 to > 0, between samples n − 1
    /// and n at the fraction τ of a sample where a line through the two
    /// crosses 0, the phase restarts from 0 (plus `phase`); the wave jumps
    /// there by J, the naive shape after the restart less the naive shape
    /// at the phase it had reached. PolyBLEP spreads the jump over the two
    /// samples around it: sample n − 1 gains (J/2)·(1 − τ)², sample n
    /// loses (J/2)·τ² (and is read without the shape's own correction of
    /// an edge at phase 0, which the restart replaces). The output is
    /// therefore one sample late: sample n − 1 is written at n.
    fn process_sync(&mut self, io: &mut Io<'_, S>) {
        let Some(mut sync) = self.sync else {
            return;
        };
        let n = io.frames;
        let freq = io.params.get(FREQ);
        let amp = io.params.get(AMP);
        let extra = io.params.get(EXTRA);
        let offset = W::PHASE.map(|i| io.params.get(i));
        let input = &io.inputs[0][..n];
        let out = &mut io.outputs[0][..n];
        let half = S::from_f64(0.5);
        for (i, o) in out.iter_mut().enumerate() {
            self.phasor.set_freq(freq.at(i), self.sample_rate);
            let a = S::from_f64(amp.at(i));
            let e = if W::HAS_EXTRA { extra.at(i) } else { 0.0 };
            let off = offset.map_or(0, |o| phase_offset(o.at(i)));
            let dt = self.phasor.dt::<S>();
            let s = input[i].to_f64();
            let mut y = None;
            if sync.last <= 0.0 && s > 0.0 {
                let tau = -sync.last / (s - sync.last);
                let tau = if tau >= 0.0 { tau.min(1.0) } else { 0.0 };
                let inc = self.phasor.inc as i64 as f64;
                let before = self.phasor.phase.wrapping_sub(self.phasor.inc);
                let edge = before.wrapping_add((inc * tau) as i64 as u64);
                let jump = W::naive::<S>(S::from_phase(off), e)
                    - W::naive::<S>(S::from_phase(edge.wrapping_add(off)), e);
                let (tau, rest) = (S::from_f64(tau), S::from_f64(1.0 - tau));
                sync.pending += a * (half * jump * rest * rest);
                self.phasor.phase = (inc * (1.0 - tau.to_f64())) as i64 as u64;
                let t = S::from_phase(self.phasor.phase.wrapping_add(off));
                let base = if t < dt {
                    W::naive::<S>(t, e)
                } else {
                    W::value::<S, M>(t, dt, e)
                };
                y = Some(a * (base - half * jump * tau * tau));
            }
            sync.last = s;
            let y = y.unwrap_or_else(|| {
                let t = S::from_phase(self.phasor.phase.wrapping_add(off));
                a * W::value::<S, M>(t, dt, e)
            });
            *o = sync.pending;
            sync.pending = y;
            self.phasor.advance();
        }
        self.sync = Some(sync);
    }
}

impl<S: Sample, M: Math, W: Shape> NodeProcessor<S> for Osc<S, M, W> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        if W::SYNC && self.sync.is_some() {
            return self.process_sync(io);
        }
        let n = io.frames;
        let freq = io.params.get(FREQ);
        let amp = io.params.get(AMP);
        let extra = if W::HAS_EXTRA {
            Some(io.params.get(EXTRA))
        } else {
            None
        };
        let offset = W::PHASE.map(|i| io.params.get(i));
        let out = &mut io.outputs[0][..n];
        let all_const = freq.is_const()
            && amp.is_const()
            && extra.is_none_or(|e| e.is_const())
            && offset.is_none_or(|o| o.is_const());
        if all_const && W::FAST_SINE && M::KIND == MathKind::Fast {
            self.phasor.set_freq(freq.value(), self.sample_rate);
            let a = amp.value() as f32;
            // The phase offset (rad) as a fraction of a cycle added to the
            // phase: sin(2π·phase + offset) without a per-sample call.
            let e = extra.map_or(0.0, |e| e.value());
            let (phase, inc) = (self.phasor.phase, self.phasor.inc);
            self.steps.set(inc);
            sine_block(self.simd, &self.steps, phase, offset_phase(0, e), a, out);
            self.phasor.phase = phase.wrapping_add(inc.wrapping_mul(n as u64));
        } else if all_const
            && W::FAST_SINE
            && M::KIND == MathKind::Strict
            && core::mem::size_of::<S>() == 8
        {
            // Strict f64 sine: the arguments of the whole block first, then
            // `libm::sin` of all of them in lanes (the same bits as the
            // per-sample call below), then the amplitude.
            self.phasor.set_freq(freq.value(), self.sample_rate);
            let a = S::from_f64(amp.value());
            let e = S::from_f64(extra.map_or(0.0, |e| e.value()));
            for o in out.iter_mut() {
                *o = sine_arg(self.phasor.phase, e);
                self.phasor.advance();
            }
            strict_sin::sin_block(self.simd, out);
            for o in out.iter_mut() {
                *o = a * *o;
            }
        } else if all_const {
            self.phasor.set_freq(freq.value(), self.sample_rate);
            let a = S::from_f64(amp.value());
            let e = extra.map_or(0.0, |e| e.value());
            let off = offset.map_or(0, |o| phase_offset(o.value()));
            let dt = self.phasor.dt::<S>();
            for o in out.iter_mut() {
                let t = S::from_phase(self.phasor.phase.wrapping_add(off));
                *o = a * W::value::<S, M>(t, dt, e);
                self.phasor.advance();
            }
        } else {
            for (i, o) in out.iter_mut().enumerate() {
                self.phasor.set_freq(freq.at(i), self.sample_rate);
                let a = S::from_f64(amp.at(i));
                let e = extra.map_or(0.0, |e| e.at(i));
                *o = if W::FAST_SINE && M::KIND == MathKind::Fast {
                    // The kernel's formula, sample by sample.
                    let t = phase_turns(offset_phase(self.phasor.phase, e));
                    a * S::from_f32(sin_turns(t))
                } else {
                    let off = offset.map_or(0, |o| phase_offset(o.at(i)));
                    let t = S::from_phase(self.phasor.phase.wrapping_add(off));
                    let dt = self.phasor.dt::<S>();
                    a * W::value::<S, M>(t, dt, e)
                };
                self.phasor.advance();
            }
        }
    }

    fn reset(&mut self) {
        self.phasor.phase = 0;
        if let Some(sync) = &mut self.sync {
            *sync = Sync {
                last: 0.0,
                pending: S::ZERO,
            };
        }
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_u64("phase", self.phasor.phase);
        if let Some(sync) = &self.sync {
            st.put_samples::<f64>("sync_last", &[sync.last]);
            st.put_sample("sync_pending", sync.pending);
        }
    }

    /// A synced node restored from an unsynced one's state starts with
    /// its sync state at rest.
    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        self.phasor.phase = st.get_u64("phase")?;
        if let Some(sync) = &mut self.sync {
            let mut last = [0.0f64];
            if st.get_samples("sync_last", &mut last).is_err() {
                last[0] = 0.0;
            }
            sync.last = last[0];
            sync.pending = st.get_sample("sync_pending").unwrap_or(S::ZERO);
        }
        Ok(())
    }

    /// One sample late while synced (the correction before a reset).
    fn latency(&self) -> usize {
        usize::from(self.sync.is_some())
    }

    /// Its kernel is already vectorised over time: a group saves the
    /// engine's per-node work. The live sine's kernel reads each member's
    /// params and runs the block kernel itself, and sums straight into a
    /// fused input.
    fn lanes(&self, _: SimdLevel) -> Option<LaneKernel<S>> {
        if W::FAST_SINE && M::KIND == MathKind::Fast {
            Some(fast_sine_lanes::<S, M, W>)
        } else {
            Some(serial_lanes::<S, Self>)
        }
    }

    /// An oscillator: a bounded waveform times a finite `amp`.
    fn always_finite(&self) -> bool {
        true
    }

    /// The live sine keeps each member's phase, increment, offset and amp.
    fn steady_lanes(&self, members: usize) -> Option<Box<dyn SteadyLanes<S>>> {
        if W::FAST_SINE && M::KIND == MathKind::Fast {
            Some(Box::new(SteadySines::<S, M, W> {
                kept: vec![Kept::default(); members],
                steps: vec![SineSteps::default(); members],
                simd: SimdLevel::BASE,
                since: 0,
                advanced: 0,
                _p: PhantomData,
            }))
        } else {
            None
        }
    }
}

/// What [`SteadySines`] keeps of one member: its phase when it was kept,
/// its increment, offset and amp.
#[derive(Clone, Copy, Default)]
struct Kept {
    base: u64,
    inc: u64,
    offset: u64,
    amp: f32,
    /// The member's node when it was kept.
    node: NodeId,
}

/// Which object a node is: its address and vtable as the engine lent it
/// when it was kept (found then to be an `Osc<S, M, W>`). A node lent later
/// with the same pointer is that `Osc` still, without asking its type
/// again (a dynamic call per node and chunk). Only ever compared, never
/// read through.
#[derive(Clone, Copy)]
struct NodeId(*const dyn std::any::Any);

impl Default for NodeId {
    fn default() -> Self {
        NodeId(std::ptr::null::<()>() as *const dyn std::any::Any)
    }
}

// SAFETY: the pointer is only compared, never dereferenced.
unsafe impl Send for NodeId {}
// SAFETY: as above.
unsafe impl std::marker::Sync for NodeId {}

/// The live sine's steady chunks ([`SteadyLanes`]): [`fast_sine_lanes`]
/// for members on the grid of anchors summed into a fused input, from the
/// kept params. What it keeps is written when it is kept, never in a
/// steady chunk (only the frame count moves), so threads summing spans of
/// a chunk read it where it lies.
struct SteadySines<S, M, W> {
    kept: Vec<Kept>,
    /// Each member's steps, copied when kept (what a span reads instead
    /// of the node).
    steps: Vec<SineSteps>,
    simd: SimdLevel,
    /// Frames every member has run steady since it was kept: member k's
    /// phase is `base + inc·since`.
    since: u64,
    /// The members before this one have been advanced by the chunk's
    /// runs so far (runs go in member order): what `undo` may take back,
    /// also after a run that panicked part way.
    advanced: usize,
    _p: Marker<S, M, W>,
}

impl<S: Sample, M: Math, W: Shape> SteadySines<S, M, W> {
    /// `node` as an `Osc<S, M, W>` when it is the node `kept` was kept
    /// for.
    #[inline]
    fn osc<'a>(kept: &Kept, node: &'a mut dyn std::any::Any) -> Option<&'a mut Osc<S, M, W>> {
        let at: *mut dyn std::any::Any = node;
        if std::ptr::eq(at as *const dyn std::any::Any, kept.node.0) {
            // SAFETY: the same object, with the same vtable, as the node
            // this kept copy (of these `S`, `M`, `W`) found to be an
            // `Osc<S, M, W>` when it kept it.
            Some(unsafe { &mut *at.cast::<Osc<S, M, W>>() })
        } else {
            None
        }
    }

    /// Member `k`'s phase at the chunk's start.
    fn phase(&self, k: &Kept) -> u64 {
        k.base.wrapping_add(k.inc.wrapping_mul(self.since))
    }

    /// Whether members `k0..` are sines as kept: phasor and steps.
    fn check(&self, k0: usize, nodes: &mut [&mut dyn std::any::Any]) -> bool {
        let Some(kept) = self.kept.get(k0..k0 + nodes.len()) else {
            return false;
        };
        nodes.iter_mut().zip(kept).all(|(node, kept)| {
            Self::osc(kept, &mut **node).is_some_and(|o| {
                o.phasor.phase == self.phase(kept)
                    && o.phasor.inc == kept.inc
                    && o.steps.inc() == kept.inc
            })
        })
    }

    /// Members `k0..` (their nodes) moved on by `n` frames; the frame
    /// count moves once the last member has.
    fn advance_nodes(&mut self, k0: usize, nodes: &mut [&mut dyn std::any::Any], n: usize) {
        let end = (k0 + nodes.len()).min(self.kept.len());
        for (node, kept) in nodes.iter_mut().zip(&self.kept[k0.min(end)..end]) {
            if let Some(o) = Self::osc(kept, &mut **node) {
                o.phasor.phase = self
                    .phase(kept)
                    .wrapping_add(kept.inc.wrapping_mul(n as u64));
            }
        }
        self.advanced = end;
        if end == self.kept.len() {
            self.since = self.since.wrapping_add(n as u64);
        }
    }
}

impl<S: Sample, M: Math, W: Shape> SteadyLanes<S> for SteadySines<S, M, W> {
    fn load(&mut self, k: usize, node: &mut dyn std::any::Any, params: &[ParamState]) -> bool {
        // The node as it is lent (its vtable the one every lending gives).
        let id = NodeId(&*node);
        let (Some(o), Some(kept), Some(steps)) = (
            node.downcast_mut::<Osc<S, M, W>>(),
            self.kept.get_mut(k),
            self.steps.get_mut(k),
        ) else {
            return false;
        };
        let e = params[EXTRA].value;
        *kept = Kept {
            node: id,
            base: o.phasor.phase,
            inc: o.phasor.inc,
            offset: if e == 0.0 { 0 } else { offset_phase(0, e) },
            amp: params[AMP].value as f32,
        };
        steps.clone_from(&o.steps);
        self.simd = o.simd;
        self.since = 0;
        // The steps must be the increment's (the kernel set both from
        // these params).
        o.steps.inc() == o.phasor.inc && o.phasor.freq == params[FREQ].value
    }

    fn run(
        &mut self,
        k0: usize,
        nodes: &mut [&mut dyn std::any::Any],
        n: usize,
        _start: u64,
        sum: &mut LaneSum<'_, S>,
    ) -> bool {
        // The runs before this one (of members before `k0`) ran whole.
        self.advanced = k0;
        if !self.check(k0, nodes) {
            return false;
        }
        let end = k0 + nodes.len();
        for b in (k0..end).step_by(MAX_LANES) {
            let to = (b + MAX_LANES).min(end);
            self.sum_batch(b..to, (0, n), sum.dst, sum.first);
            sum.first = false;
        }
        self.advance_nodes(k0, nodes, n);
        true
    }

    fn undo(&mut self, k0: usize, nodes: &mut [&mut dyn std::any::Any], _n: usize) {
        // The frame count moves with the chunk's last member, after which
        // nothing is taken back: the members' phases are as at its start.
        let end = (k0 + nodes.len()).min(self.advanced);
        let Some(kept) = self.kept.get(k0..end.max(k0)) else {
            return;
        };
        for (node, kept) in nodes.iter_mut().zip(kept) {
            if let Some(o) = Self::osc(kept, &mut **node) {
                o.phasor.phase = self.phase(kept);
            }
        }
    }

    fn spans(&self) -> bool {
        true
    }

    fn span(&self, from: usize, to: usize, dst: &mut [S]) {
        let count = self.kept.len();
        for b in (0..count).step_by(MAX_LANES) {
            self.sum_batch(b..(b + MAX_LANES).min(count), (from, to), dst, b == 0);
        }
    }

    fn settle(&self, k0: usize, nodes: &mut [&mut dyn std::any::Any], n: usize) -> usize {
        let Some(kept) = self.kept.get(k0..k0 + nodes.len()) else {
            return 0;
        };
        let mut done = 0;
        for (node, kept) in nodes.iter_mut().zip(kept) {
            let phase = self.phase(kept);
            match Self::osc(kept, &mut **node) {
                Some(o)
                    if o.phasor.phase == phase
                        && o.phasor.inc == kept.inc
                        && o.steps.inc() == kept.inc =>
                {
                    o.phasor.phase = phase.wrapping_add(kept.inc.wrapping_mul(n as u64));
                }
                _ => break,
            }
            done += 1;
        }
        done
    }

    fn unsettle(&self, k0: usize, nodes: &mut [&mut dyn std::any::Any]) {
        let Some(kept) = self.kept.get(k0..k0 + nodes.len()) else {
            return;
        };
        for (node, kept) in nodes.iter_mut().zip(kept) {
            if let Some(o) = Self::osc(kept, &mut **node) {
                o.phasor.phase = self.phase(kept);
            }
        }
    }

    fn settled(&mut self, n: usize) {
        self.since = self.since.wrapping_add(n as u64);
    }
}

impl<S: Sample, M: Math, W: Shape> SteadySines<S, M, W> {
    /// Frames `from..to` of the chunk of members `batch` (at most
    /// [`MAX_LANES`]) summed into `dst` (`to − from` frames), from the kept
    /// copy: the bits [`fast_sine_lanes`] sums for those frames.
    fn sum_batch(
        &self,
        batch: std::ops::Range<usize>,
        (from, to): (usize, usize),
        dst: &mut [S],
        first: bool,
    ) {
        let mut group: [MaybeUninit<SineMember<'_>>; MAX_LANES] =
            [const { MaybeUninit::uninit() }; MAX_LANES];
        let count = batch.len().min(MAX_LANES);
        for (slot, k) in group.iter_mut().zip(batch.take(count)) {
            let kept = &self.kept[k];
            slot.write(SineMember {
                steps: &self.steps[k],
                phase: self.phase(kept),
                offset: kept.offset,
                amp: kept.amp,
            });
        }
        // SAFETY: the first `count` entries were written above; they hold
        // only a reference and plain values (nothing to drop).
        let group =
            unsafe { std::slice::from_raw_parts(group.as_ptr().cast::<SineMember<'_>>(), count) };
        sum_sines_span(self.simd, group, (from, to), dst, first);
    }
}

/// Frames `from..to` of a chunk of live sine members (each `phase` its
/// phase at the chunk's start) summed into `dst` (`to − from` frames) in
/// member order, the first written when `first`: runs of members on the
/// grid through [`sine_group_span`] when `from` is on a quarter, the
/// others one by one from their phase at `from`. The same bits as those
/// frames of [`sum_sines`] over the whole chunk.
fn sum_sines_span<S: Sample>(
    simd: SimdLevel,
    members: &[SineMember<'_>],
    (from, to): (usize, usize),
    dst: &mut [S],
    mut first: bool,
) {
    let dst = &mut dst[..to - from];
    let quartered = from.is_multiple_of(QUARTER);
    let mut k = 0;
    while k < members.len() {
        let run = if quartered {
            members[k..]
                .iter()
                .take_while(|m| m.steps.position(m.phase) == 0)
                .count()
        } else {
            0
        };
        if run > 0 && from == 0 {
            sine_group(simd, &members[k..k + run], to, SineOut::Sum(dst, first));
            first = false;
            k += run;
            continue;
        }
        if run > 0 {
            sine_group_span(simd, &members[k..k + run], (from, to), dst, first);
            first = false;
            k += run;
            continue;
        }
        let m = &members[k];
        let phase = m
            .phase
            .wrapping_add(m.steps.inc().wrapping_mul(from as u64));
        if first {
            sine_block(simd, m.steps, phase, m.offset, m.amp, dst);
            first = false;
        } else {
            sine_block_add(simd, m.steps, phase, m.offset, m.amp, dst);
        }
        k += 1;
    }
}

/// Live sine members summed into `sum` in member order (the output
/// buffers left unwritten): runs of members on the grid of anchors
/// through `sine_group` together, the others one by one. The sum's
/// additions are the members' in order either way, so the bits are those
/// of each member's own kernel summed in turn.
fn sum_sines<S: Sample>(
    simd: SimdLevel,
    members: &[SineMember<'_>],
    n: usize,
    sum: &mut LaneSum<'_, S>,
) {
    let mut from = 0;
    while from < members.len() {
        let run = members[from..]
            .iter()
            .take_while(|m| m.steps.position(m.phase) == 0)
            .count();
        if run > 0 {
            let run = &members[from..from + run];
            sine_group(simd, run, n, SineOut::Sum(&mut *sum.dst, sum.first));
            sum.first = false;
            from += run.len();
            continue;
        }
        let m = &members[from];
        if sum.first {
            sine_block(simd, m.steps, m.phase, m.offset, m.amp, sum.dst);
            sum.first = false;
        } else {
            sine_block_add(simd, m.steps, m.phase, m.offset, m.amp, sum.dst);
        }
        from += 1;
    }
}

/// The live sine's lane kernel: each member's constant-param branch of
/// [`Osc::process`] (the same bits), its samples written to its output or,
/// with a fused `sum`, added to the sum straight from the kernel.
fn fast_sine_lanes<S: Sample, M: Math, W: Shape>(
    members: &mut [LaneMember<'_, S>],
    n: usize,
    start: u64,
    sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    // Params to increments and offsets; members on the grid of anchors
    // (all of them, for blocks that are whole segments from phase 0) go to
    // `sine_group` together, the others one by one, in member order; each
    // member's phase is advanced last, once every sample is out, so a
    // panic leaves every member as it was (`LaneKernel`).
    if members.len() > MAX_LANES {
        return serial_lanes::<S, Osc<S, M, W>>(members, n, start, sum);
    }
    let mut on_grid = true;
    let mut simd = SimdLevel::BASE;
    let mut group: [MaybeUninit<SineMember<'_>>; MAX_LANES] =
        [const { MaybeUninit::uninit() }; MAX_LANES];
    let mut outs: [MaybeUninit<&mut [S]>; MAX_LANES] = [const { MaybeUninit::uninit() }; MAX_LANES];
    // Each member's phase, and what it becomes after the chunk.
    let mut phases: [MaybeUninit<(&mut u64, u64)>; MAX_LANES] =
        [const { MaybeUninit::uninit() }; MAX_LANES];
    let mut count = 0;
    // Every member's phasor and params on their way to the cache at once,
    // rather than one miss after another in the loop below.
    #[cfg(target_arch = "x86_64")]
    for m in members.iter() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let node = (&*m.node as *const dyn std::any::Any).cast::<u8>();
        let phasor = node.wrapping_add(std::mem::offset_of!(Osc<S, M, W>, phasor));
        let steps = node
            .wrapping_add(std::mem::offset_of!(Osc<S, M, W>, steps))
            .wrapping_add(SineSteps::HEADER);
        // SAFETY: a prefetch only hints the cache; it never faults or
        // reads into the program, whatever the address.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(phasor.cast());
            _mm_prefetch::<_MM_HINT_T0>(steps.cast());
            _mm_prefetch::<_MM_HINT_T0>(m.params.as_ptr().cast());
            _mm_prefetch::<_MM_HINT_T0>(m.outputs.as_ptr().cast());
        }
    }
    for m in members.iter_mut() {
        let LaneMember {
            node,
            params,
            outputs,
            ..
        } = m;
        let Some(o) = node.downcast_mut::<Osc<S, M, W>>() else {
            continue;
        };
        o.phasor.set_freq(params[FREQ].value, o.sample_rate);
        o.steps.set(o.phasor.inc);
        let (phase, inc) = (o.phasor.phase, o.phasor.inc);
        let e = params[EXTRA].value;
        on_grid &= o.steps.position(phase) == 0;
        simd = o.simd;
        let Osc { steps, phasor, .. } = o;
        phases[count].write((
            &mut phasor.phase,
            phase.wrapping_add(inc.wrapping_mul(n as u64)),
        ));
        group[count].write(SineMember {
            steps,
            phase,
            // `offset_phase(0, 0.0)` is 0.
            offset: if e == 0.0 { 0 } else { offset_phase(0, e) },
            amp: params[AMP].value as f32,
        });
        outs[count].write(&mut outputs[0][..n]);
        count += 1;
    }
    // SAFETY: the first `count` entries of both were written above; they
    // hold only references and plain values (nothing to drop).
    let group =
        unsafe { std::slice::from_raw_parts(group.as_ptr().cast::<SineMember<'_>>(), count) };
    let outs =
        unsafe { std::slice::from_raw_parts_mut(outs.as_mut_ptr().cast::<&mut [S]>(), count) };
    match sum {
        Some(s) if !s.outputs => sum_sines(simd, group, n, s),
        other => {
            if on_grid {
                sine_group(simd, group, n, SineOut::Each(outs));
            } else {
                for (m, out) in group.iter().zip(outs.iter_mut()) {
                    sine_block(simd, m.steps, m.phase, m.offset, m.amp, out);
                }
            }
            if let Some(s) = other {
                for o in outs.iter() {
                    s.add(o);
                }
            }
        }
    }
    // SAFETY: the first `count` entries were written above; they hold a
    // reference and a plain value (nothing to drop).
    let phases = unsafe {
        std::slice::from_raw_parts_mut(phases.as_mut_ptr().cast::<(&mut u64, u64)>(), count)
    };
    for (phase, next) in phases.iter_mut() {
        **phase = *next;
    }
    0
}

struct OscOp<W>(PhantomData<W>);
impl<W: Shape> Operator for OscOp<W> {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        Ok(Box::new(Osc::<S, M, W> {
            phasor: Phasor::default(),
            sample_rate: cx.sample_rate,
            simd: SimdLevel::detect(),
            steps: SineSteps::default(),
            _p: PhantomData,
            sync: (W::SYNC && cx.input_connected(0)).then_some(Sync {
                last: 0.0,
                pending: S::ZERO,
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::ops::harness::{first_difference, values_with, NodeRunner};
    use crate::ops::{OpSpec, Value};
    use crate::profile::Profile;

    /// The fast sine at every phase the per-sample formula can give it
    /// (each multiple of 2^-24 of a cycle) stays within [`FAST_SINE_PEAK`];
    /// so does the block kernel, whose samples are a·Im(w^j) + b·Re(w^j)
    /// with (a, b) the anchor's seed times w^(16q): the seed is at most the
    /// largest coarse step of `turn_cis` times the largest fine one (every
    /// one of its 2^24 fine phases is tried) times 1 + 2^-22 for the
    /// complex product's roundings; |w^(16q)| and |w^j| are each at most
    /// 1 + 2^-23 (f64 values on the unit circle, rounded); the quarter's
    /// complex product rounds by at most 1 + 2^-22, and the sample's two
    /// products and sum by 1 + 2^-22 more.
    #[test]
    fn the_fast_sine_peaks_within_its_bound() {
        let peak = (0..1u32 << 24)
            .map(|k| sin_turns(k as f32 * (1.0 / 16777216.0)).abs())
            .fold(0.0f32, f32::max);
        assert!(peak as f64 <= FAST_SINE_PEAK, "peak {peak}");
        let hypot = |c: f32, s: f32| (c as f64 * c as f64 + s as f64 * s as f64).sqrt();
        let coarse = (0..256u64)
            .map(|k| {
                let (c, s) = crate::dsp::vector::turn_cis(k << 56);
                hypot(c, s)
            })
            .fold(0.0f64, f64::max);
        // turn_cis at a coarse step of exactly (1, 0) is its fine step.
        let fine = (0..1u64 << 24)
            .map(|d| {
                let (c, s) = crate::dsp::vector::turn_cis(d << 32);
                hypot(c, s)
            })
            .fold(0.0f64, f64::max);
        let u = 1.0 / 16777216.0;
        let seed = coarse * fine * (1.0 + 4.0 * u);
        let quarter = seed * (1.0 + 2.0 * u) * (1.0 + 4.0 * u);
        let bound = quarter * (1.0 + 2.0 * u) * (1.0 + 4.0 * u);
        // (amp's rounding to f32 and into (a, b): 1 + 2^-23 more.)
        let bound = bound * (1.0 + 2.0 * u);
        assert!(bound <= FAST_SINE_PEAK, "kernel bound {bound}");
        // Rendered at W1's rates and off the grid, the kernel stays within it.
        let mut out = vec![0.0f32; 4096];
        for i in 0..64u64 {
            let inc = crate::dsp::rng::mix64(i) >> (i % 7);
            let steps = SineSteps::new(inc);
            sine_block(SimdLevel::detect(), &steps, i << 58, 0, 1.0, &mut out);
            let m = out.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            assert!(m as f64 <= bound, "inc {inc:#x}: {m}");
        }
    }

    /// Rendered, every bounded oscillator stays within its bound under every
    /// profile, up to Nyquist; a square off duty 0.5 and other operators
    /// declare none.
    #[test]
    fn rendered_oscillators_stay_within_their_output_bound() {
        for spec in [&SINE, &SAW, &SQUARE, &TRIANGLE, &IMPULSE] {
            for (profile, precision) in PROFILES {
                let np = NodeProfile::resolve(profile, &Default::default(), None);
                for freq in [1.0, 440.0, 3001.5, 11_999.0, 17_000.25, 23_999.0, 24_000.0] {
                    let values = values_with(
                        spec,
                        &[("freq", Value::Number(freq)), ("amp", Value::Number(0.5))],
                    );
                    let bound = output_bound(spec, &np, &values).expect("a bound");
                    let out = render(
                        spec,
                        &[("freq", freq), ("amp", 0.5)],
                        profile,
                        precision,
                        4000,
                    );
                    let peak = out.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                    assert!(
                        peak <= bound.peak,
                        "{} {profile:?} {freq} Hz: {peak}",
                        spec.name
                    );
                }
            }
        }
        let np = NodeProfile::resolve(Profile::Strict, &Default::default(), None);
        let duty = values_with(&SQUARE, &[("duty", Value::Number(0.9))]);
        assert_eq!(output_bound(&SQUARE, &np, &duty), None);
        let noise = crate::ops::lookup("noise").unwrap();
        assert_eq!(output_bound(noise, &np, &values_with(noise, &[])), None);
    }

    #[test]
    fn increment_is_exact_for_binary_fractions() {
        assert_eq!(Phasor::increment(12000.0, 48000.0), 1 << 62);
        assert_eq!(Phasor::increment(-12000.0, 48000.0), 3 << 62);
        assert_eq!(Phasor::increment(0.0, 48000.0), 0);
        assert_eq!(Phasor::increment(f64::NAN, 48000.0), 0);
    }

    // Independent oracles. Phases are reduced exactly in integer arithmetic
    // (frac(k·f/sr) for a rational f), never through the node's u64 phasor.

    pub(super) const SR: f64 = 48000.0;
    pub(super) const SR_INT: u64 = 48000;
    /// Block sizes cycled through by the renders below.
    pub(super) const BLOCKS: &[usize] = &[64, 7, 300, 1, 128];

    pub(super) fn runner(
        spec: &'static OpSpec,
        params: &[(&str, f64)],
        profile: Profile,
        precision: Precision,
    ) -> NodeRunner {
        let set: Vec<(&str, Value)> = params
            .iter()
            .map(|(n, v)| (*n, Value::Number(*v)))
            .collect();
        NodeRunner::new(
            spec,
            values_with(spec, &set),
            profile,
            Some(precision),
            SR,
            512,
            0,
        )
        .unwrap()
    }

    pub(super) fn render(
        spec: &'static OpSpec,
        params: &[(&str, f64)],
        profile: Profile,
        precision: Precision,
        frames: usize,
    ) -> Vec<f64> {
        runner(spec, params, profile, precision)
            .run(&[], &[], frames, BLOCKS)
            .remove(0)
    }

    pub(super) const PROFILES: [(Profile, Precision); 3] = [
        (Profile::Strict, Precision::F64),
        (Profile::Repro, Precision::F32),
        (Profile::Live, Precision::F32),
    ];

    /// A frequency of `num / den` Hz, exact in f64 (`den` a small power of two).
    #[derive(Clone, Copy, Debug)]
    pub(super) struct Hz {
        num: i64,
        den: u64,
    }

    pub(super) const fn hz(num: i64, den: u64) -> Hz {
        Hz { num, den }
    }

    impl Hz {
        pub(super) fn f64(self) -> f64 {
            self.num as f64 / self.den as f64
        }

        /// Phase of sample `k` in cycles, frac(k·f/sr), reduced exactly.
        pub(super) fn phase(self, k: u64) -> f64 {
            let d = (self.den * SR_INT) as i128;
            let r = (k as i128 * self.num as i128).rem_euclid(d);
            r as f64 / d as f64
        }

        /// Cycles per sample, in [0, 1).
        pub(super) fn dt(self) -> f64 {
            self.phase(1)
        }

        /// The exact rate in units of 2^-64 cycle per sample, rounded up.
        pub(super) fn increment_ceil(self) -> u64 {
            let d = (self.den * SR_INT) as u128;
            let r = (self.num as i128).rem_euclid(d as i128) as u128;
            (r << 64).div_ceil(d) as u64
        }
    }

    #[test]
    fn increments_against_the_exact_rate() {
        for f in [
            hz(440, 1),
            hz(1000, 1),
            hz(441, 1),
            hz(12000, 1),
            hz(34001, 2),
            hz(-6001, 2),
            hz(1, 16),
            hz(96001, 1),
            hz(-48000, 1),
        ] {
            let exact = f.increment_ceil();
            assert_eq!(Phasor::increment_exact(f.f64(), SR), exact, "{f:?}");
            // `increment` rounds twice (the quotient, then `cycles − floor`
            // for negative rates), each by at most half an ulp, then
            // truncates: within that of the exact rate either way.
            let lag = exact.wrapping_sub(Phasor::increment(f.f64(), SR)) as i64;
            let (q, frac) = ((f.f64() / SR).abs(), exact as f64 / TWO_POW_64);
            let bound = (q + frac) * TWO_POW_64 * f64::EPSILON / 2.0 + 1.0;
            assert!((lag.abs() as f64) <= bound, "{f:?}: lag {lag} > {bound}");
        }
    }

    #[test]
    fn phase_after_n_samples_is_n_increments() {
        let blocks = crate::ops::harness::conformance_block_sizes();
        for freq in [440.0, 1000.0, 17000.5, 12345.678, -3000.5, 0.1, 0.0] {
            for spec in [&SINE, &SAW, &SQUARE, &TRIANGLE, &IMPULSE] {
                let inc = if core::ptr::eq(spec, &IMPULSE) {
                    Phasor::increment_exact(freq, SR)
                } else {
                    Phasor::increment(freq, SR)
                };
                for (profile, precision) in PROFILES {
                    let frames = if core::ptr::eq(spec, &SINE) {
                        480_011
                    } else {
                        20_011
                    };
                    let mut r = runner(spec, &[("freq", freq)], profile, precision);
                    r.run(&[], &[], frames, &blocks[5]);
                    let phase = r.snapshot().get_u64("phase").unwrap();
                    assert_eq!(
                        phase,
                        (frames as u64).wrapping_mul(inc),
                        "{} {freq} Hz {profile:?}",
                        spec.name
                    );
                }
            }
        }
    }

    #[test]
    fn modulated_freq_adds_to_the_static_value_bit_for_bit() {
        let frames = 5000;
        for spec in [&SINE, &SAW, &SQUARE, &TRIANGLE, &IMPULSE] {
            for (profile, precision) in PROFILES {
                let want = runner(spec, &[("freq", 1000.0)], profile, precision).run(
                    &[],
                    &[],
                    frames,
                    BLOCKS,
                );
                for (base, modulation) in [(0.0, 1000.0), (400.0, 600.0), (1441.0, -441.0)] {
                    let mut r = runner(spec, &[("freq", base)], profile, precision);
                    let got = r.run(&[], &[(FREQ, vec![modulation; frames])], frames, BLOCKS);
                    let what = format!("{} {profile:?}: {base} Hz + {modulation} Hz", spec.name);
                    if core::ptr::eq(spec, &SINE) && profile == Profile::Live {
                        // Live's block kernel (constant params) and its
                        // per-sample formula (modulated) are two fast sines
                        // of the same phase: within their errors (≤ 1e-6,
                        // ≤ 4e-6) of each other, the phase bit for bit.
                        let d = want[0]
                            .iter()
                            .zip(&got[0])
                            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                        assert!(d <= 5e-6, "{what}: {d:e}");
                        let mut w = runner(spec, &[("freq", 1000.0)], profile, precision);
                        w.run(&[], &[], frames, BLOCKS);
                        assert_eq!(w.snapshot(), r.snapshot(), "{what}");
                    } else {
                        assert_eq!(first_difference(&want, &got), None, "{what}");
                    }
                }
            }
        }
    }
}
