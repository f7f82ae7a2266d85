//! `limiter`: a brickwall lookahead limiter.
//!
//! With `L = max(round(lookahead·sr), 1)` samples of lookahead, a window of
//! `W = L + 1` samples, `c = 10^(ceiling/20)` and `a = exp(−1/(release·sr))`,
//! per sample:
//!
//! ```text
//! r[n] = min(1, c / |x[n]|)                 the gain x[n] needs
//! h[n] = min(r[n−L] … r[n])                 peak hold over the window
//! s[n] = h[n]                  if h[n] < s[n−1]   (instant)
//!      = h[n] + a·(s[n−1] − h[n])  otherwise      (release)
//! g[n] = (s[n−L] + … + s[n]) / W            moving average over the window
//! out[n] = x[n−L] · g[n]
//! ```
//!
//! Every term of the average is at most `h` of a window holding `n − L`, so
//! `g[n] ≤ r[n−L]` and `|out| ≤ c` on any input: the gain ramps down
//! linearly over the lookahead to reach the needed reduction when the peak
//! leaves the delay line. It changes by at most 1/W per sample going down
//! and at most 1 − a going up (no steps). The output is finally clamped to
//! ±c at the node's precision, which only removes the last bit of rounding.
//! The limit is on sample peaks: the waveform between samples may exceed it.
//!
//! **True peak.** With `true_peak`, `r` comes from the true peak instead
//! of `|x|`. The limiter runs [`TP_DELAY`] = 12 samples behind its input,
//! on `x[m] = x[n − 12]`, and measures the segment `(m, m+1)` at seven
//! points:
//!
//! - the four of ITU-R BS.1770-4 Annex 2, the input 4× oversampled by the
//!   Recommendation's 48-tap polyphase FIR ([`TRUE_PEAK_FIR`]), which fall
//!   at 1/8, 3/8, 5/8 and 7/8 of the segment (the prototype's delay is 23.5
//!   oversampled samples), so a BS.1770-4 meter reads what the limiter saw;
//! - and the three quarter points `m + k/4`, where an oversampler aligned
//!   on the samples (as most are) reads, interpolated by a 24-tap
//!   Kaiser-windowed sinc (β = 7, each phase normalised to a DC gain of 1).
//!   The Recommendation's filter alone leaves a 4× meter on the other grid
//!   up to 0.6 dB over the ceiling on full-band noise (its points miss the
//!   peaks between them, and its response rises near Nyquist).
//!
//! ```text
//! p[m] = max(|x[m]|, seg[m−1], seg[m])      seg[m]: the largest |point| on (m, m+1)
//! r[m] = min(1, c / p[m])
//! ```
//!
//! Both ends of every segment are reduced for its peak, so the output's
//! oversampled peak stays at the ceiling within the interpolators' error
//! and the gain's change over a sample (the tests measure it against
//! scipy). The latency is `L + 12`. The sums run in a fixed order in f64 at
//! every precision (the taps designed with libm at build); the 24 inputs
//! they read and the last `seg` are state.
//!
//! `h` is a sliding minimum kept in a monotonic deque (O(1) amortised per
//! sample) in a ring allocated at build; the moving average is a running
//! sum, re-summed exactly once per W samples so rounding cannot drift. The
//! state is the ring of `x` (the delay line), the rings of `r` (from which
//! `restore` rebuilds the deque) and of `s`, `s[n]`, the running sum and
//! the sample count; the gains are f64 at every precision.

use super::detector::Coef;
use super::{db_to_lin, lookahead_samples};
use crate::dsp::{Math, Precision, Sample};
use crate::ops::{
    build_any, by_profile, no_choices, number, BuildCtx, Io, Lint, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::profile::Profile;
use crate::scene::Dimension;
use std::marker::PhantomData;

const CEILING: usize = LIMITER.index_of("ceiling");
const RELEASE: usize = LIMITER.index_of("release");
const LOOKAHEAD: usize = LIMITER.index_of("lookahead");

/// The shortest release, in seconds.
const MIN_RELEASE: f64 = 1e-4;

const TRUE_PEAK: usize = LIMITER.index_of("true_peak");

/// Taps per phase of the BS.1770-4 interpolator.
const TP_TAPS: usize = 12;
/// Taps of the quarter-point interpolator.
const QP_TAPS: usize = 24;
/// The samples the true-peak detector runs behind its input.
const TP_DELAY: usize = 12;
/// The quarter-point interpolator's Kaiser window parameter.
const QP_BETA: f64 = 7.0;

/// ITU-R BS.1770-4 Annex 2: the 4× true-peak interpolator, phase `q`'s
/// taps `h[q][j]`; oversampled sample `4p + q` is `Σ_j h[q][j]·x[p − j]`.
pub(crate) const TRUE_PEAK_FIR: [[f64; TP_TAPS]; 4] = [
    [
        0.0017089843750,
        0.0109863281250,
        -0.0196533203125,
        0.0332031250000,
        -0.0594482421875,
        0.1373291015625,
        0.9721679687500,
        -0.1022949218750,
        0.0476074218750,
        -0.0266113281250,
        0.0148925781250,
        -0.0083007812500,
    ],
    [
        -0.0291748046875,
        0.0292968750000,
        -0.0517578125000,
        0.0891113281250,
        -0.1665039062500,
        0.4650878906250,
        0.7797851562500,
        -0.2003173828125,
        0.1015625000000,
        -0.0582275390625,
        0.0330810546875,
        -0.0189208984375,
    ],
    [
        -0.0189208984375,
        0.0330810546875,
        -0.0582275390625,
        0.1015625000000,
        -0.2003173828125,
        0.7797851562500,
        0.4650878906250,
        -0.1665039062500,
        0.0891113281250,
        -0.0517578125000,
        0.0292968750000,
        -0.0291748046875,
    ],
    [
        -0.0083007812500,
        0.0148925781250,
        -0.0266113281250,
        0.0476074218750,
        -0.1022949218750,
        0.9721679687500,
        0.1373291015625,
        -0.0594482421875,
        0.0332031250000,
        -0.0196533203125,
        0.0109863281250,
        0.0017089843750,
    ],
];

/// The modified Bessel function `I0(x)` by its power series (30 terms:
/// exact to rounding for the `x ≤ 7` it is used at).
fn bessel_i0(x: f64) -> f64 {
    let (mut sum, mut term) = (1.0, 1.0);
    for k in 1..30 {
        let t = x / (2.0 * k as f64);
        term *= t * t;
        sum += term;
    }
    sum
}

/// The quarter-point interpolator: `taps[k − 1][i]` weighs `x[m − 11 + i]`
/// for the value at `m + k/4`, a Kaiser-windowed sinc over ±12 samples.
fn quarter_taps() -> [[f64; QP_TAPS]; 3] {
    let half = (QP_TAPS / 2) as f64;
    let mut taps = [[0.0; QP_TAPS]; 3];
    for (k, phase) in taps.iter_mut().enumerate() {
        let f = (k + 1) as f64 / 4.0;
        for (i, h) in phase.iter_mut().enumerate() {
            let t = (i as f64 - (half - 1.0)) - f;
            let u = t / half;
            let win = bessel_i0(QP_BETA * libm::sqrt((1.0 - u * u).max(0.0))) / bessel_i0(QP_BETA);
            let pt = core::f64::consts::PI * t;
            *h = libm::sin(pt) / pt * win;
        }
        let dc: f64 = phase.iter().sum();
        for h in phase.iter_mut() {
            *h /= dc;
        }
    }
    taps
}

/// The true-peak detector: the last 24 inputs, the quarter-point taps and
/// the last segment's peak.
#[derive(Clone, Copy)]
struct TruePeak {
    /// `x[n − 23] … x[n]`, oldest first.
    hist: [f64; QP_TAPS],
    /// `seg[m − 1]`.
    seg: f64,
    quarter: [[f64; QP_TAPS]; 3],
}

impl TruePeak {
    fn new() -> TruePeak {
        TruePeak {
            hist: [0.0; QP_TAPS],
            seg: 0.0,
            quarter: quarter_taps(),
        }
    }

    fn clear(&mut self) {
        self.hist = [0.0; QP_TAPS];
        self.seg = 0.0;
    }

    /// Takes `x[n]`; returns `x[m] = x[n − 12]` and its true peak `p[m]`.
    #[inline]
    fn push(&mut self, x: f64) -> (f64, f64) {
        self.hist.copy_within(1.., 0);
        self.hist[QP_TAPS - 1] = x;
        // `hist[11 + k]` is `x[m + k]`.
        let mut seg = 0.0f64;
        for taps in &TRUE_PEAK_FIR {
            // BS.1770's sample p = m + 6: Σ_j h[j]·x[m + 6 − j].
            let mut acc = 0.0;
            for (j, h) in taps.iter().enumerate() {
                acc += h * self.hist[17 - j];
            }
            seg = seg.max(acc.abs());
        }
        for taps in &self.quarter {
            let mut acc = 0.0;
            for (h, x) in taps.iter().zip(&self.hist) {
                acc += h * x;
            }
            seg = seg.max(acc.abs());
        }
        let xm = self.hist[QP_TAPS - 1 - TP_DELAY];
        let p = xm.abs().max(self.seg).max(seg);
        self.seg = seg;
        (xm, p)
    }
}

/// `limiter` at one precision and math policy.
struct Limiter<S, M> {
    /// Window length W = lookahead + 1; every ring below is W long and
    /// written at `n % W`.
    w: usize,
    /// Input: slot `(n + 1) % W` holds `x[n − L]`.
    xs: Vec<S>,
    /// The gains the inputs need, `r`, for the window.
    rs: Vec<f64>,
    /// The released hold `s`, for the moving average.
    ss: Vec<f64>,
    /// The sliding minimum's deque: absolute sample indices, oldest first,
    /// and their `r` (strictly increasing); a ring of W slots.
    dq: Vec<u64>,
    dq_val: Vec<f64>,
    dq_head: usize,
    dq_len: usize,
    /// `s[n − 1]`.
    held: f64,
    /// Σ ss.
    sum: f64,
    /// The absolute index of the next sample (starts at W, so the initial
    /// window's indices are all in the past).
    n: u64,
    /// `n % W`, the slot this sample writes.
    pos: usize,
    ceiling: f64,
    /// The largest sample of this precision ≤ `ceiling`.
    ceiling_s: S,
    sample_rate: f64,
    release: Coef,
    /// The true-peak detector, with `true_peak`.
    tp: Option<TruePeak>,
    _p: PhantomData<fn() -> M>,
}

impl<S: Sample, M: Math> Limiter<S, M> {
    /// `i` wrapped once into `0..W` (`i < 2W`).
    #[inline]
    fn wrap(&self, i: usize) -> usize {
        if i >= self.w {
            i - self.w
        } else {
            i
        }
    }

    /// Pushes sample `i`, whose gain is `r`, onto the deque.
    #[inline]
    fn dq_push(&mut self, i: u64, r: f64) {
        while self.dq_len > 0 && self.dq_val[self.wrap(self.dq_head + self.dq_len - 1)] >= r {
            self.dq_len -= 1;
        }
        // Expired entries leave from the front.
        while self.dq_len > 0 && self.dq[self.dq_head] + self.w as u64 <= i {
            self.dq_head = self.wrap(self.dq_head + 1);
            self.dq_len -= 1;
        }
        let slot = self.wrap(self.dq_head + self.dq_len);
        self.dq[slot] = i;
        self.dq_val[slot] = r;
        self.dq_len += 1;
    }

    /// The deque of the window ending at `n − 1`, from `rs`.
    fn rebuild_deque(&mut self) {
        self.dq_head = 0;
        self.dq_len = 0;
        let w = self.w as u64;
        for i in self.n - w..self.n {
            self.dq_push(i, self.rs[(i % w) as usize]);
        }
        self.pos = (self.n % w) as usize;
    }

    /// One input sample: through the true-peak detector when there is one.
    #[inline]
    fn tick(&mut self, x: S, a: f64) -> (S, f64) {
        match &mut self.tp {
            Some(tp) => {
                let (xm, p) = tp.push(x.to_f64());
                self.limit(S::from_f64(xm), p, a)
            }
            None => self.limit(x, x.to_f64().abs(), a),
        }
    }

    /// Sample `x`, whose peak is `xa`, into the limiter proper.
    #[inline]
    fn limit(&mut self, x: S, xa: f64, a: f64) -> (S, f64) {
        let w = self.w;
        let pos = self.pos;
        let r = if xa > self.ceiling {
            self.ceiling / xa
        } else {
            1.0
        };
        self.rs[pos] = r;
        self.dq_push(self.n, r);
        let h = self.dq_val[self.dq_head];
        let s = if h < self.held {
            h
        } else {
            h + a * (self.held - h)
        };
        self.held = s;
        self.sum += s - self.ss[pos];
        self.ss[pos] = s;
        let next = if pos + 1 == w { 0 } else { pos + 1 };
        if next == 0 {
            self.sum = self.ss.iter().sum();
        }
        let g = self.sum / w as f64;
        let delayed = self.xs[next];
        self.xs[pos] = x;
        self.n += 1;
        self.pos = next;
        let c = self.ceiling_s;
        let y = S::from_f64(delayed.to_f64() * g);
        let y = if y > c {
            c
        } else if y < -c {
            -c
        } else {
            y
        };
        (y, g)
    }

    fn clear(&mut self) {
        self.rs.fill(1.0);
        self.ss.fill(1.0);
        self.finish_clear();
    }

    /// The scalars after the rings are cleared.
    fn finish_clear(&mut self) {
        if let Some(tp) = &mut self.tp {
            tp.clear();
        }
        self.held = 1.0;
        self.sum = self.w as f64;
        self.n = self.w as u64;
        self.rebuild_deque();
    }
}

impl<S: Sample, M: Math> NodeProcessor<S> for Limiter<S, M> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let rel = io.params.get(RELEASE);
        let sr = self.sample_rate;
        let x = &io.inputs[0][..n];
        let (out, rest) = io.outputs.split_at_mut(1);
        let out = &mut out[0][..n];
        let gain = &mut rest[0][..n];
        let release = |t: f64| {
            if t.is_nan() {
                MIN_RELEASE
            } else {
                t.max(MIN_RELEASE)
            }
        };
        if rel.is_const() {
            let a = self.release.get::<M>(release(rel.value()), sr);
            for i in 0..n {
                let (y, g) = self.tick(x[i], a);
                out[i] = y;
                gain[i] = S::from_f64(g);
            }
        } else {
            for i in 0..n {
                let a = self.release.get::<M>(release(rel.at(i)), sr);
                let (y, g) = self.tick(x[i], a);
                out[i] = y;
                gain[i] = S::from_f64(g);
            }
        }
    }

    fn reset(&mut self) {
        self.xs.fill(S::ZERO);
        self.clear();
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        part.zero(&mut self.xs, S::ZERO);
        part.zero(&mut self.rs, 1.0);
        part.zero(&mut self.ss, 1.0);
        let p = part.progress();
        if p == Progress::Done {
            self.finish_clear();
        }
        p
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("input", &self.xs);
        st.put_samples::<f64>("need", &self.rs);
        st.put_samples::<f64>("hold", &self.ss);
        self.put_scalars(st);
    }

    /// The scalars at N, then the rings oldest first from `n % W` (the slot
    /// the next frame writes).
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let n = if done == 0 {
            self.put_scalars(st);
            self.n
        } else {
            st.get_u64("n").unwrap_or(self.n)
        };
        let start = (n % self.w as u64) as usize;
        st.put_ring_part("input", &self.xs, start, done, budget);
        st.put_ring_part::<f64>("need", &self.rs, start, done, budget);
        let next = st.put_ring_part::<f64>("hold", &self.ss, start, done, budget);
        if next >= self.w {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let n = st.get_u64("n")?;
        if n < self.w as u64 {
            return Err(StateError::Shape {
                name: "n",
                expected: self.w,
                found: n as usize,
            });
        }
        let tp = match self.tp {
            Some(mut tp) => {
                st.get_samples::<f64>("tp_input", &mut tp.hist)?;
                tp.seg = st.get_sample::<f64>("tp_seg")?;
                Some(tp)
            }
            None => None,
        };
        st.get_samples("input", &mut self.xs)?;
        st.get_samples::<f64>("need", &mut self.rs)?;
        st.get_samples::<f64>("hold", &mut self.ss)?;
        self.held = st.get_sample::<f64>("held")?;
        self.sum = st.get_sample::<f64>("sum")?;
        self.n = n;
        self.rebuild_deque();
        self.tp = tp;
        Ok(())
    }

    fn latency(&self) -> usize {
        self.w - 1 + if self.tp.is_some() { TP_DELAY } else { 0 }
    }
}

impl<S: Sample, M: Math> Limiter<S, M> {
    fn put_scalars(&self, st: &mut NodeState) {
        st.put_sample::<f64>("held", self.held);
        st.put_sample::<f64>("sum", self.sum);
        st.put_u64("n", self.n);
        if let Some(tp) = &self.tp {
            st.put_samples::<f64>("tp_input", &tp.hist);
            st.put_sample::<f64>("tp_seg", tp.seg);
        }
    }
}

/// The largest sample of precision `S` at most `c` (c > 0).
fn round_down<S: Sample>(c: f64) -> S {
    let s = S::from_f64(c);
    if s.to_f64() <= c {
        return s;
    }
    match S::PRECISION {
        Precision::F64 => s,
        Precision::F32 => S::from_f32(f32::from_bits(s.to_f32().to_bits() - 1)),
    }
}

/// A `lookahead` that rounds to no sample: the limiter looks one ahead.
fn limiter_lints(values: &[Value], sample_rate: f64) -> Vec<Lint> {
    let Some(t) = values[LOOKAHEAD].as_number() else {
        return Vec::new();
    };
    if (t * sample_rate).round() >= 1.0 {
        return Vec::new();
    }
    vec![Lint {
        param: "lookahead",
        message: format!(
            "`lookahead` {t} s is under half a sample at {sample_rate} Hz: the limiter looks 1 sample ahead (latency 1)"
        ),
        help: Some(format!(
            "write a lookahead of at least 1 sample ({} s); a few ms lets the gain ramp down smoothly",
            1.0 / sample_rate
        )),
        held: None,
    }]
}

struct LimiterOp;
impl Operator for LimiterOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let lookahead = lookahead_samples(cx.number(LOOKAHEAD), cx.sample_rate)?.max(1);
        let w = lookahead + 1;
        let ceiling = db_to_lin::<M>(cx.number(CEILING));
        let mut node = Limiter::<S, M> {
            w,
            xs: vec![S::ZERO; w],
            rs: vec![1.0; w],
            ss: vec![1.0; w],
            dq: vec![0; w],
            dq_val: vec![1.0; w],
            dq_head: 0,
            dq_len: 0,
            held: 1.0,
            sum: w as f64,
            n: w as u64,
            pos: 0,
            ceiling,
            ceiling_s: round_down::<S>(ceiling),
            sample_rate: cx.sample_rate,
            release: Coef::NEW,
            tp: matches!(cx.values[TRUE_PEAK], Value::Bool(true)).then(TruePeak::new),
            _p: PhantomData,
        };
        node.clear();
        Ok(Box::new(node))
    }
}

pub(crate) static LIMITER: OpSpec = OpSpec {
    name: "limiter",
    doc: "Brickwall lookahead limiter: |out| never exceeds `ceiling` (sample peaks). The \
          gain each input needs is held over the lookahead window, released with `release`, \
          and averaged over the window, so it ramps down over the lookahead and reaches the \
          reduction a peak needs as the peak leaves the delay; `out` is `in` delayed by \
          `lookahead` (reported as latency) times that gain. `gain` is the gain as a linear \
          factor (1 = no reduction). `true_peak` limits the 4× oversampled (ITU-R BS.1770-4) \
          true peak instead, 12 samples more latency.",
    inputs: &["in"],
    outputs: &["out", "gain"],
    params: &[
        ParamSpec {
            name: "ceiling",
            kind: ParamKind::Number {
                dim: Dimension::Level,
                default: -1.0,
                min: -60.0,
                max: 0.0,
                modulatable: false,
            },
            doc: "largest output level in dB FS (`-1` or `\"-1dB\"`); fixed at build",
            settable_by_events: false,
        },
        number(
            "release",
            Dimension::Time,
            0.1,
            MIN_RELEASE,
            60.0,
            "time constant of the gain's recovery after a peak (at least 0.1 ms)",
        ),
        ParamSpec {
            name: "lookahead",
            kind: ParamKind::Number {
                dim: Dimension::Time,
                default: 0.005,
                min: 0.0,
                max: 0.1,
                modulatable: false,
            },
            doc: "how far ahead peaks are seen (at least 1 sample), reported as latency; \
                  fixed at build",
            settable_by_events: false,
        },
        ParamSpec {
            name: "true_peak",
            kind: ParamKind::Bool { default: false },
            doc: "limit the true peak instead of sample peaks (for a −1 dBTP master): the \
                  input 4× oversampled by ITU-R BS.1770-4's 48-tap interpolator and at the \
                  quarter points between samples; adds 12 samples of latency; fixed at build",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: limiter_lints,
    cost: |p, _| by_profile(p, [11.4, 15.7, 19.9]),
    algorithms: Some(crate::ops::describe::NO_FAST_MATH),
    build: build_any::<LimiterOp>,
};

#[cfg(test)]
#[path = "limiter_tests.rs"]
mod tests;
