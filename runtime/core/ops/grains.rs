//! `grains`: granular playback of a WAV resource (`file`) or, without one,
//! of the node's input `in` through a circular buffer, every random
//! choice drawn from the locked Philox streams (scenes/README.md,
//! "Randomness").
//!
//! **Streams.** The node's key is `noise`'s (`hash64(global seed, node id,
//! seed)`); word `n` of each stream belongs to absolute sample `n`:
//!
//! ```text
//! stream 0, word u:  a grain starts at n  ⇔  u < density/sr · 2^32   (as dust places impulses)
//! stream 1, word v:  its position jitter  j = v·2^−31 − 1            [−1, 1)
//! stream 2, word w:  its pan              q = w·2^−31 − 1            [−1, 1)
//! ```
//!
//! Streams 1 and 2 are read only at a grain's first sample. So where grains
//! start, where they read and where they sit in the stereo field are pure
//! functions of the sample index (and of the params there): the same at
//! every block size, as the grains' state is.
//!
//! **A grain** starting at sample `n` reads `position`, `size`, `pitch`,
//! `spread` and `pan_spread` at `n` and keeps them:
//!
//! ```text
//! len   = max(round(size·sr), 1) samples          r = 2^(pitch/12)   (libm exp2)
//! at    = clamp(position + spread·j, 0, 1)
//! p     = q·pan_spread;  θ = π/4·(1 + p);  (gl, gr) = √2·(cos θ, sin θ)   ((1, 1) when p = 0)
//! w(k)  = hann: 0.5 − 0.5·cos(2πk/len)   triangle: 1 − |2k − len|/len
//!         trapezoid: min(1, 4·min(k, len − k)/len)                 k = 0 … len − 1
//! ```
//!
//! (hann's cosine comes from a rotation by `2π/len` per sample, its sine
//! and cosine from libm at the grain's start.) From a file of `F` frames
//! the grain's read position starts at `at·F` frames and advances `r` a
//! sample, read by linear interpolation, silent outside the file. From the
//! input, the buffer holds the last `B = buffer·sr` input samples and the
//! grain reads `d` samples back (the current input is written after the
//! grains read, so `d ≥ 1`): `d` starts at `1 + at·(B − 1)`, held to
//! `[1 + max(r − 1, 0)·(len − 1), B − max(1 − r, 0)·(len − 1)]` (the lower
//! end wins) so a grain never reads input not yet arrived nor, when the
//! buffer is long enough, older than it holds, and falls by `r − 1` a
//! sample. Grain `k`'s sample is `w(k)·x(pos)`; `out` sums `gl` times each
//! grain (channel 0 of the file), `out_r` `gr` times each (channel 1, or 0
//! for a mono file or the input), times `amp` at the sample.
//!
//! **The pool.** At most `max_grains` grains sound at once, their slots
//! allocated when the node is built; a grain due while all are busy is
//! skipped (never stolen), so the work of a sample is at most
//! `max_grains` grain reads. Each grain's bookkeeping (position, window
//! phase, gains) is f64 at every precision and is the node's state with
//! the input buffer; the file and the buffer hold samples at the node's
//! precision. A non-finite input sample is stored as 0.

use super::delay::Ring;
use super::{
    build_any, by_profile, no_choices, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState,
    OpSpec, Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::dsp::rng::NoiseStream;
use crate::dsp::{Math, Sample};
use crate::profile::Profile;
use crate::scene::Dimension;

const FILE: usize = GRAINS.index_of("file");
const POSITION: usize = GRAINS.index_of("position");
const SIZE: usize = GRAINS.index_of("size");
const DENSITY: usize = GRAINS.index_of("density");
const PITCH: usize = GRAINS.index_of("pitch");
const SPREAD: usize = GRAINS.index_of("spread");
const PAN_SPREAD: usize = GRAINS.index_of("pan_spread");
const WINDOW: usize = GRAINS.index_of("window");
const AMP: usize = GRAINS.index_of("amp");
const BUFFER: usize = GRAINS.index_of("buffer");
const MAX_GRAINS: usize = GRAINS.index_of("max_grains");

/// The stream that decides where grains start.
const WHEN: u32 = 0;
/// The stream of their position jitter.
const WHERE: u32 = 1;
/// The stream of their pan.
const PAN: u32 = 2;

/// The `window` choices, in index order.
const WINDOWS: &[&str] = &["hann", "triangle", "trapezoid"];

/// One grain's f64 fields in the pool, in this order.
const POS: usize = 0;
const STEP: usize = 1;
const K: usize = 2;
const LEN: usize = 3;
const COS: usize = 4;
const SIN: usize = 5;
const ROT_COS: usize = 6;
const ROT_SIN: usize = 7;
const INV_LEN: usize = 8;
const GAIN_L: usize = 9;
const GAIN_R: usize = 10;
const FIELDS: usize = 11;

/// A word as a uniform draw in [−1, 1), noise's f64 map.
#[inline(always)]
fn unit(word: u32) -> f64 {
    word as f64 * (1.0 / 2147483648.0) - 1.0
}

/// The threshold a stream-0 word is compared with: `density/sr · 2^32`,
/// density held to 0 … sr.
#[inline(always)]
fn threshold(density: f64, sample_rate: f64) -> f64 {
    let p = density / sample_rate;
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    p * 4294967296.0
}

/// A grain's window.
#[derive(Clone, Copy, PartialEq)]
enum Window {
    Hann,
    Triangle,
    Trapezoid,
}

/// Where the grains read.
enum Source<S> {
    /// A file: channel 0, and channel 1 when it has one.
    File { left: Vec<S>, right: Option<Vec<S>> },
    /// The input, through a ring of the last `buffer` seconds.
    Input(Ring<S>),
}

/// `grains` at one precision.
struct Grains<S> {
    source: Source<S>,
    /// `max_grains` slots of [`FIELDS`] f64 each; the first `active` sound.
    pool: Vec<f64>,
    active: usize,
    window: Window,
    when: NoiseStream,
    at: NoiseStream,
    pan: NoiseStream,
    sample_rate: f64,
}

/// The params a grain reads at its first sample.
struct Onset {
    position: f64,
    size: f64,
    pitch: f64,
    spread: f64,
    pan_spread: f64,
}

impl<S: Sample> Grains<S> {
    /// Starts a grain at absolute sample `n`, unless every slot is busy.
    fn start(&mut self, n: u64, o: &Onset) {
        if self.active * FIELDS >= self.pool.len() {
            return;
        }
        let len = libm::round(o.size * self.sample_rate).max(1.0);
        let r = libm::exp2(o.pitch / 12.0);
        let at = (o.position + o.spread * unit(self.at.word(n))).clamp(0.0, 1.0);
        let p = o.pan_spread * unit(self.pan.word(n));
        let (gl, gr) = if p == 0.0 {
            (1.0, 1.0)
        } else {
            let theta = core::f64::consts::FRAC_PI_4 * (1.0 + p);
            (
                core::f64::consts::SQRT_2 * libm::cos(theta),
                core::f64::consts::SQRT_2 * libm::sin(theta),
            )
        };
        let (pos, step) = match &self.source {
            Source::File { left, .. } => (at * left.len() as f64, r),
            Source::Input(ring) => {
                let b = (ring.len() - 2) as f64;
                let lo = 1.0 + (r - 1.0).max(0.0) * (len - 1.0);
                let hi = b - (1.0 - r).max(0.0) * (len - 1.0);
                ((1.0 + at * (b - 1.0)).min(hi).max(lo), r - 1.0)
            }
        };
        let rot = 2.0 * core::f64::consts::PI / len;
        let g = &mut self.pool[self.active * FIELDS..][..FIELDS];
        g[POS] = pos;
        g[STEP] = step;
        g[K] = 0.0;
        g[LEN] = len;
        g[COS] = 1.0;
        g[SIN] = 0.0;
        g[ROT_COS] = libm::cos(rot);
        g[ROT_SIN] = libm::sin(rot);
        g[INV_LEN] = 1.0 / len;
        g[GAIN_L] = gl;
        g[GAIN_R] = gr;
        self.active += 1;
    }

    /// Both channels of every sounding grain at this sample, summed, and
    /// each grain moved on (a finished one leaves the pool: the last
    /// slot's grain takes its place).
    #[inline]
    fn play(&mut self) -> (f64, f64) {
        let (mut l, mut r) = (0.0, 0.0);
        let mut i = 0;
        while i < self.active {
            let g = &mut self.pool[i * FIELDS..][..FIELDS];
            let k = g[K];
            let w = match self.window {
                Window::Hann => 0.5 - 0.5 * g[COS],
                Window::Triangle => 1.0 - (2.0 * k - g[LEN]).abs() * g[INV_LEN],
                Window::Trapezoid => (4.0 * k.min(g[LEN] - k) * g[INV_LEN]).min(1.0),
            };
            let (a, b) = match &self.source {
                Source::File { left, right } => {
                    let a = read_file(left, g[POS]);
                    let b = match right {
                        Some(right) => read_file(right, g[POS]),
                        None => a,
                    };
                    g[POS] += g[STEP];
                    (a, b)
                }
                Source::Input(ring) => {
                    let a = ring.read(g[POS]).to_f64();
                    g[POS] -= g[STEP];
                    (a, a)
                }
            };
            l += g[GAIN_L] * (w * a);
            r += g[GAIN_R] * (w * b);
            if self.window == Window::Hann {
                let (c, s) = (g[COS], g[SIN]);
                g[COS] = c * g[ROT_COS] - s * g[ROT_SIN];
                g[SIN] = s * g[ROT_COS] + c * g[ROT_SIN];
            }
            g[K] = k + 1.0;
            if g[K] >= g[LEN] {
                self.active -= 1;
                let last = self.active * FIELDS;
                self.pool.copy_within(last..last + FIELDS, i * FIELDS);
            } else {
                i += 1;
            }
        }
        (l, r)
    }
}

/// A file channel at frame position `p`: linear between frame `⌊p⌋` and
/// the next, 0 outside the file.
#[inline(always)]
fn read_file<S: Sample>(data: &[S], p: f64) -> f64 {
    if !(p >= 0.0 && p < data.len() as f64) {
        return 0.0;
    }
    let i = p as usize;
    let f = p - i as f64;
    let a = data[i].to_f64();
    let b = data.get(i + 1).map_or(0.0, |b| b.to_f64());
    a + f * (b - a)
}

impl<S: Sample> NodeProcessor<S> for Grains<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        let p = |i| io.params.get(i);
        let (position, size, density, pitch) = (p(POSITION), p(SIZE), p(DENSITY), p(PITCH));
        let (spread, pan_spread, amp) = (p(SPREAD), p(PAN_SPREAD), p(AMP));
        let sr = self.sample_rate;
        let input = io.inputs.first().map(|v| &v[..n]);
        let (left, right) = io.outputs.split_at_mut(1);
        let (left, right) = (&mut left[0][..n], &mut right[0][..n]);
        for i in 0..n {
            let at = io.start + i as u64;
            if (self.when.word(at) as f64) < threshold(density.at(i), sr) {
                let onset = Onset {
                    position: position.at(i),
                    size: size.at(i),
                    pitch: pitch.at(i),
                    spread: spread.at(i),
                    pan_spread: pan_spread.at(i),
                };
                self.start(at, &onset);
            }
            let (l, r) = self.play();
            if let Source::Input(ring) = &mut self.source {
                let x = input.map_or(S::ZERO, |x| x[i]);
                ring.push(if x.to_f64().is_finite() { x } else { S::ZERO });
            }
            let a = amp.at(i);
            left[i] = S::from_f64(a * l);
            right[i] = S::from_f64(a * r);
        }
    }

    fn reset(&mut self) {
        self.active = 0;
        if let Source::Input(ring) = &mut self.source {
            ring.reset();
        }
    }

    /// The pool empties at the first part; the buffer is zeroed in parts.
    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        self.active = 0;
        let Source::Input(ring) = &mut self.source else {
            return Progress::Done;
        };
        let mut part = PartClear::new(done, budget);
        ring.zero_part(&mut part);
        let p = part.progress();
        if p == Progress::Done {
            ring.rewind();
        }
        p
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples::<f64>("grains", &self.pool);
        st.put_u64("active", self.active as u64);
        if let Source::Input(ring) = &self.source {
            ring.snapshot(st, "buffer", "write");
        }
    }

    /// The grains at the first part; the buffer, oldest sample first, in parts.
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        if done == 0 {
            st.put_samples::<f64>("grains", &self.pool);
            st.put_u64("active", self.active as u64);
        }
        let Source::Input(ring) = &self.source else {
            return Progress::Done;
        };
        let next = ring.save_part(st, "buffer", "write", done, budget);
        if next >= ring.len() {
            Progress::Done
        } else {
            Progress::Copied(next)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let active = st.get_u64("active")?;
        if active as usize * FIELDS > self.pool.len() {
            return Err(StateError::Shape {
                name: "active",
                expected: self.pool.len() / FIELDS,
                found: active as usize,
            });
        }
        if let Source::Input(ring) = &mut self.source {
            ring.restore(st, "buffer", "write")?;
        }
        st.get_samples::<f64>("grains", &mut self.pool)?;
        self.active = active as usize;
        Ok(())
    }
}

struct GrainsOp;
impl Operator for GrainsOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let file = match cx.values.get(FILE) {
            Some(Value::Resource(f)) if !f.channels.is_empty() => Some(f),
            _ => None,
        };
        let source = match file {
            Some(_) if cx.input_connected(0) => {
                return Err("give `file` or connect `in`, not both".to_string())
            }
            Some(f) => {
                let convert = |c: &Vec<f64>| c.iter().map(|x| S::from_f64(*x)).collect();
                Source::File {
                    left: convert(&f.channels[0]),
                    right: f.channels.get(1).map(convert),
                }
            }
            None => Source::Input(Ring::new(cx.number(BUFFER), cx.sample_rate)?),
        };
        let max_grains = match cx.values.get(MAX_GRAINS) {
            Some(Value::Integer(m)) => (*m).clamp(1, 1024) as usize,
            _ => 32,
        };
        let window = match cx.values.get(WINDOW) {
            Some(Value::Enum(1)) => Window::Triangle,
            Some(Value::Enum(2)) => Window::Trapezoid,
            _ => Window::Hann,
        };
        Ok(Box::new(Grains::<S> {
            source,
            pool: vec![0.0; max_grains * FIELDS],
            active: 0,
            window,
            when: NoiseStream::new(cx.noise_hash, WHEN),
            at: NoiseStream::new(cx.noise_hash, WHERE),
            pan: NoiseStream::new(cx.noise_hash, PAN),
            sample_rate: cx.sample_rate,
        }))
    }
}

/// ns a sample: the onset draw, plus each grain sounding on average
/// (`density · size`, at most `max_grains`), as `bench` measured them.
fn grains_cost(p: &crate::profile::NodeProfile, values: &[Value]) -> f64 {
    let number = |i: usize| values.get(i).and_then(Value::as_number).unwrap_or(0.0);
    let most = match values.get(MAX_GRAINS) {
        Some(Value::Integer(m)) => *m as f64,
        _ => 32.0,
    };
    let sounding = (number(DENSITY) * number(SIZE)).clamp(0.0, most.max(1.0));
    by_profile(p, [13.0, 12.0, 12.0]) + by_profile(p, [15.0, 15.0, 14.0]) * sounding
}

/// `grains`: granular playback; see the module docs.
pub(crate) static GRAINS: OpSpec = OpSpec {
    name: "grains",
    doc: "Granular playback of a WAV resource (`file`) or, without one, of `in` through a \
          buffer of the last `buffer` seconds. Grains start at random, `density` a second on \
          average (Philox stream 0, as `dust`); each is `size` long, read from `position` \
          (0 … 1 through the file; through the buffer, 0 newest … 1 oldest) jittered by \
          ±`spread` (stream 1), `pitch` semitones up, shaped by `window`, panned equal-power \
          by up to ±`pan_spread` (stream 2). At most `max_grains` sound at once: a grain due \
          while all are busy is skipped. `out` and `out_r` (a stereo file's channel 1), times \
          `amp` (scenes/README.md, \"Granular playback\").",
    inputs: &["in"],
    outputs: &["out", "out_r"],
    params: &[
        ParamSpec {
            name: "file",
            kind: ParamKind::OptionalResource,
            doc: "the audio file (\"@resource:NAME\"); none: the grains read `in`",
            settable_by_events: false,
        },
        number(
            "position",
            Dimension::Scalar,
            0.0,
            0.0,
            1.0,
            "where grains start reading: 0 … 1 through the file, or how far back in the buffer",
        ),
        number(
            "size",
            Dimension::Time,
            0.1,
            0.001,
            2.0,
            "each grain's length",
        ),
        number(
            "density",
            Dimension::Frequency,
            10.0,
            0.0,
            1e4,
            "mean grains started a second (held to the sample rate)",
        ),
        number(
            "pitch",
            Dimension::Scalar,
            0.0,
            -48.0,
            48.0,
            "semitones: each grain reads at 2^(pitch/12) times the original speed",
        ),
        number(
            "spread",
            Dimension::Scalar,
            0.0,
            0.0,
            1.0,
            "each grain's position jitters by up to ±spread (of the file or the buffer)",
        ),
        number(
            "pan_spread",
            Dimension::Scalar,
            0.0,
            0.0,
            1.0,
            "each grain is panned at random by up to ±pan_spread (1: hard left … hard right)",
        ),
        ParamSpec {
            name: "window",
            kind: ParamKind::Enum {
                choices: WINDOWS,
                default: "hann",
            },
            doc: "each grain's envelope: hann (raised cosine), triangle, or trapezoid (linear \
                  fades over its first and last quarter)",
            settable_by_events: false,
        },
        number("amp", Dimension::Amplitude, 1.0, -1e6, 1e6, "output gain"),
        ParamSpec {
            name: "buffer",
            kind: ParamKind::Number {
                dim: Dimension::Time,
                default: 4.0,
                min: 0.01,
                max: 60.0,
                modulatable: false,
            },
            doc: "how much of `in` the grains can reach back into (allocated at build)",
            settable_by_events: false,
        },
        ParamSpec {
            name: "max_grains",
            kind: ParamKind::Integer {
                default: 32,
                min: 1,
                max: 1024,
            },
            doc: "grains sounding at once at most; a grain due when all are busy is skipped",
            settable_by_events: false,
        },
        ParamSpec {
            name: "seed",
            kind: ParamKind::Integer {
                default: 0,
                min: 0,
                max: i64::MAX,
            },
            doc: "local seed, mixed with the global seed and the node id",
            settable_by_events: false,
        },
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: true,
    precision_param: None,
    solver_steps: None,
    choices: no_choices,
    lints: no_lints,
    cost: grains_cost,
    algorithms: Some([
        "f64, libm",
        "f64 grains over f32 samples, libm at each grain's start",
        "f64 grains over f32 samples, libm at each grain's start",
    ]),
    build: build_any::<GrainsOp>,
};

#[cfg(test)]
#[path = "grains_tests.rs"]
mod tests;
