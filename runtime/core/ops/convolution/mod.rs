//! `convolution`: convolution with an impulse response (a resource), with no
//! added latency in any profile.
//!
//! `out` convolves the input with IR channel 0, `out_r` with channel 1 (with
//! channel 0 again for a mono IR). Per sample:
//!
//! ```text
//! wet[n] = Σ_{k=0}^{L−1} h[k]·x[n−k]
//! out[n] = (1 − mix)·x[n] + (mix·gain)·wet[n]
//! ```
//!
//! `gain` scales the wet path only, so `mix = 0` is the dry input exactly.
//! `mix` is clamped to 0…1 per sample. The engine is chosen by the node's
//! profile:
//!
//! - **strict — direct.** Every output is summed in tap order,
//!   `((h[0]x[n] + h[1]x[n−1]) + h[2]x[n−2]) + …`, with separate `×` and `+`
//!   (never `mul_add`), from a contiguous input history. Speed comes from
//!   computing W neighbouring outputs at once, each with its own accumulator
//!   still in tap order, so the result is the same for any W, any block size,
//!   any vector width (the kernel dispatches to AVX2 when the CPU has it; AVX
//!   and SSE give identical IEEE results for `×` and `+`). Spans of taps
//!   whose products are exact zeros, or provably absorbed by the rounding of
//!   every accumulator, are skipped without changing a bit (`skippable`):
//!   real signals ring down into subnormals and zeros between notes, which
//!   strict keeps and some CPUs compute slowly.
//! - **repro — uniformly partitioned.** A direct head of the first P taps
//!   plus an overlap-save FFT tail of partitions of P taps (FFT size 2P)
//!   with a frequency-domain delay line: each partition's spectrum is
//!   multiplied into one accumulator, in ascending order, then one inverse
//!   FFT per P samples. P is the power of two in 64…4096 that minimises the
//!   estimated work per sample for the IR's length (`uniform_partition`:
//!   1024 for a 2 s IR at 48 kHz), never the block size, so small blocks do
//!   not multiply the partitions (at 64-sample blocks a 2 s IR would need
//!   1500 of them). The tail of P output samples only needs the input up to
//!   their start, so it is computed when that input completes: zero latency.
//!   Only the first tail partition needs the newest input block, so only its
//!   block (one forward FFT, one multiply-accumulate, one inverse FFT per
//!   channel) is computed at the boundary; the other partitions, from tap
//!   2P on, form a second segment with its own accumulator whose block is
//!   computed in steps spread over the period before it is heard, as live's
//!   are, so no callback carries the whole tail (a 10 s IR has 234
//!   partitions of 2048).
//! - **live — non-uniformly partitioned.** A direct head of 128 taps, then
//!   segments of two partitions each of 64, 128, 256, … taps, ending with
//!   uniform partitions of 4096 taps. A segment of partition size B starts at
//!   tap offset ≥ 2B, which leaves a whole period of B samples to compute each
//!   of its blocks: its work (one forward FFT, one complex multiply-accumulate
//!   per partition, one inverse FFT per channel) is spread as steps over that
//!   period at fixed sample offsets, so no block carries all segments' work.
//!
//! All three are pure functions of the input stream: partition boundaries
//! sit on the node's own sample counter and every step's inputs are complete
//! when it runs, so output does not depend on how frames are split into
//! calls (the FFT engines are bit-identical across block sizes too).
//!
//! State is the last `L + 6·4096` input samples and the sample counter; the
//! FFT engines rebuild their delay lines and pending tail blocks from that
//! history on `restore` with the same transforms in the same order, so
//! `restore(snapshot())` continues bit-exactly, and a snapshot from another
//! profile (same array shape) migrates the reverb tail.

mod direct;
mod partitioned;

use super::{
    build_any, fft_choice, no_lints, number, BuildCtx, Io, NodeProcessor, NodeState, OpSpec,
    Operator, ParamKind, ParamSpec, PartClear, Progress, StateError, Value,
};
use crate::dsp::fft::{FftNorm, FftProvider};
use crate::dsp::{Math, Sample};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;
use direct::{direct, span_max_bits, Bounds, SPAN};
use partitioned::{layout, Segment, MAX_PART};

const IR: usize = CONVOLUTION.index_of("ir");
const MIX: usize = CONVOLUTION.index_of("mix");
const GAIN: usize = CONVOLUTION.index_of("gain");

/// Most frames computed at once (the wet scratch size).
const CHUNK: usize = 1024;
/// Extra history beyond the IR length that every engine keeps (and
/// snapshots), enough for the FFT engines to rebuild exactly.
const EXTRA_HISTORY: usize = 6 * MAX_PART;
/// The longest IR accepted (frames).
const MAX_IR: usize = 1 << 24;

/// Which convolution algorithm a node runs (not to be confused with
/// `engine::Engine`, the block processor that runs a whole plan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConvEngine {
    /// Time-domain, summed in tap order (strict).
    Direct,
    /// Direct head plus equal FFT partitions (repro).
    Uniform,
    /// Direct head plus growing FFT partitions, work spread over blocks (live).
    NonUniform,
}

impl ConvEngine {
    /// The profile decides; nothing else does.
    fn for_profile(profile: Profile) -> ConvEngine {
        match profile {
            Profile::Strict => ConvEngine::Direct,
            Profile::Repro => ConvEngine::Uniform,
            Profile::Live => ConvEngine::NonUniform,
        }
    }

    /// The name `check` shows.
    fn name(self) -> &'static str {
        match self {
            ConvEngine::Direct => "direct",
            ConvEngine::Uniform => "uniform",
            ConvEngine::NonUniform => "non-uniform",
        }
    }
}

/// `check`'s view of a node: its engine, and the FFT its tail runs with.
fn conv_choices(profile: &NodeProfile, _: &[Value]) -> Vec<(&'static str, String)> {
    let engine = ConvEngine::for_profile(profile.profile);
    let mut v = vec![("conv", engine.name().to_string())];
    if engine != ConvEngine::Direct {
        v.push(("fft", fft_choice(profile)));
    }
    v
}

/// `convolution` at one precision.
pub(crate) struct Conv<S: Sample> {
    /// Direct-head taps per channel (1 or 2 channels).
    heads: Vec<Vec<S>>,
    /// The strict engine's exact skips: per channel the largest `|h|` of
    /// each span of taps, and the largest `|x|` (bits) of each span of the
    /// history, kept up to date up to `fill`. Empty for the FFT engines.
    hmax: Vec<Vec<S>>,
    xmax: Vec<u64>,
    /// Input history, a ring of `ring` samples stored twice over
    /// (`hist[i]` = `hist[i + ring]`), so the last `keep + CHUNK` samples
    /// are always contiguous and no block ever moves the history: sample
    /// `pos − k` (1 ≤ k ≤ `keep`) is at `hist[fill − k]`.
    hist: Vec<S>,
    ring: usize,
    fill: usize,
    /// Samples kept (and snapshotted) behind the newest.
    keep: usize,
    pos: u64,
    /// Chunks never cross a multiple of `grid` (the finest any segment
    /// needs: its partition, or for a spread one the step grid).
    grid: u64,
    segs: Vec<Segment<S>>,
    wet: Vec<Vec<S>>,
    /// Work counters (for tests and benchmarks): transforms run, and a cost
    /// estimate (N·log2 N per FFT, 4 per complex multiply-accumulate).
    pub(crate) ffts: u64,
    pub(crate) work: u64,
}

impl<S: Sample> Conv<S> {
    pub(crate) fn new(
        ir: &[Vec<f64>],
        engine: ConvEngine,
        provider: FftProvider,
        norm: FftNorm,
    ) -> Result<Conv<S>, String> {
        let len = ir.first().map_or(0, |c| c.len());
        if len == 0 {
            return Err("the impulse response has no frames".into());
        }
        if len > MAX_IR {
            return Err(format!(
                "the impulse response has {len} frames; at most {MAX_IR}"
            ));
        }
        let chans: Vec<&Vec<f64>> = ir.iter().take(2).collect();
        let (head, lay) = layout(engine, len);
        let heads: Vec<Vec<S>> = chans
            .iter()
            .map(|c| c[..head].iter().map(|v| S::from_f64(*v)).collect())
            .collect();
        let skips = engine == ConvEngine::Direct;
        let hmax = if skips {
            heads
                .iter()
                .map(|h| span_max_bits(h).map(S::from_bits_u64).collect())
                .collect()
        } else {
            Vec::new()
        };
        let segs: Vec<Segment<S>> = lay
            .into_iter()
            .map(|part| Segment::new(part, &chans, len, provider, norm))
            .collect();
        let keep = len + EXTRA_HISTORY;
        let grid = segs
            .iter()
            .map(|s| s.step_grid() as u64)
            .min()
            .unwrap_or(u64::MAX);
        // A multiple of the span, so both copies share the span grid.
        let ring = (keep + CHUNK).div_ceil(SPAN) * SPAN;
        let hist_len = 2 * ring;
        Ok(Conv {
            heads,
            hmax,
            xmax: if skips {
                vec![0; hist_len.div_ceil(SPAN)]
            } else {
                Vec::new()
            },
            hist: vec![S::ZERO; hist_len],
            ring,
            fill: ring,
            keep,
            pos: 0,
            grid,
            segs,
            wet: vec![vec![S::ZERO; CHUNK]; chans.len()],
            ffts: 0,
            work: 0,
        })
    }

    /// Where sample `pos` goes so that the `keep` before it and up to
    /// `CHUNK` after it are contiguous: the ring index of `pos − keep`,
    /// plus `keep`.
    fn fill_at(&self, pos: u64) -> usize {
        let r = self.ring as u64;
        let start = (pos % r + r - self.keep as u64 % r) % r;
        start as usize + self.keep
    }

    /// Writes `x`, the input from `self.pos` on, into both copies of the
    /// ring: a bounded cost per sample, whatever the history's length.
    fn write_history(&mut self, x: &[S]) {
        let r = self.ring;
        let at = (self.pos % r as u64) as usize;
        let first = x.len().min(r - at);
        for copy in [0, r] {
            self.hist[copy + at..copy + at + first].copy_from_slice(&x[..first]);
            self.hist[copy..copy + x.len() - first].copy_from_slice(&x[first..]);
            self.update_xmax(copy + at, copy + at + first);
            self.update_xmax(copy, copy + x.len() - first);
        }
    }

    /// Recomputes the history span bounds that cover `[from, to)`, each over
    /// its samples below `to` (later samples are not read before their span
    /// is recomputed again as they arrive).
    fn update_xmax(&mut self, from: usize, to: usize) {
        if self.xmax.is_empty() || from >= to {
            return;
        }
        for b in from / SPAN..=(to - 1) / SPAN {
            let lo = b * SPAN;
            let hi = (lo + SPAN).min(to);
            self.xmax[b] = span_max_bits(&self.hist[lo..hi]).next().unwrap_or(0);
        }
    }

    /// Convolves `x` (one chunk, not crossing a grid line) into `self.wet`.
    fn chunk(&mut self, x: &[S]) {
        let n = x.len();
        self.fill = self.fill_at(self.pos);
        self.write_history(x);
        let base = self.fill;
        for (c, (h, w)) in self.heads.iter().zip(self.wet.iter_mut()).enumerate() {
            let bounds = self.hmax.get(c).map(|hm| Bounds {
                h: hm,
                x: &self.xmax,
            });
            direct(h, bounds, &self.hist, base, &mut w[..n]);
        }
        for seg in &self.segs {
            seg.add_tail(self.pos, &mut self.wet, n);
        }
        self.fill += n;
        self.pos += n as u64;
        if self.pos.is_multiple_of(self.grid) {
            self.advance();
        }
    }

    /// Frames for the next chunk starting at `self.pos`.
    fn chunk_len(&self, remaining: usize) -> usize {
        let to_grid = self.grid - self.pos % self.grid;
        remaining.min(CHUNK).min(to_grid.min(CHUNK as u64) as usize)
    }

    /// Convolves a whole signal (tests, benchmarks): wet output per channel.
    #[cfg(test)]
    pub(crate) fn run_wet(&mut self, x: &[S], blocks: &[usize]) -> Vec<Vec<S>> {
        let mut out = vec![Vec::with_capacity(x.len()); self.heads.len()];
        let mut p = 0;
        let mut bi = 0;
        while p < x.len() {
            let blk = blocks[bi % blocks.len()].max(1).min(x.len() - p);
            bi += 1;
            let mut q = p;
            while q < p + blk {
                let n = self.chunk_len(p + blk - q);
                self.chunk(&x[q..q + n]);
                for (o, w) in out.iter_mut().zip(&self.wet) {
                    o.extend_from_slice(&w[..n]);
                }
                q += n;
            }
            p += blk;
        }
        out
    }

    fn clear(&mut self) {
        while self.clear_part(0, usize::MAX) != Progress::Done {}
    }

    /// Zeroes part `[done, done + budget)` of the history and the segments'
    /// buffers; once complete, rewinds the counters: the node is then as
    /// built.
    fn clear_part(&mut self, done: usize, budget: usize) -> Progress {
        let mut part = PartClear::new(done, budget);
        part.zero(&mut self.hist, S::ZERO);
        part.zero(&mut self.xmax, 0);
        for s in self.segs.iter_mut() {
            s.clear_part(&mut part);
        }
        let p = part.progress();
        if p == Progress::Done {
            self.pos = 0;
            self.fill = self.fill_at(0);
            for s in self.segs.iter_mut() {
                s.rewind();
            }
        }
        p
    }
}

impl<S: Sample> NodeProcessor<S> for Conv<S> {
    fn process(&mut self, io: &mut Io<'_, S>) {
        let frames = io.frames;
        let mix = io.params.get(MIX);
        let gain = io.params.get(GAIN);
        let constant = mix.is_const() && gain.is_const();
        let coeffs = |i: usize| {
            let m = mix.at(i);
            let m = if m.is_nan() { 0.0 } else { m.clamp(0.0, 1.0) };
            (S::from_f64(1.0 - m), S::from_f64(m * gain.at(i)))
        };
        let (c_dry, c_wet) = coeffs(0);
        let mut done = 0;
        while done < frames {
            let n = self.chunk_len(frames - done);
            let x = &io.inputs[0][done..done + n];
            self.chunk(x);
            let x = &io.inputs[0][done..done + n];
            let (left, right) = io.outputs.split_at_mut(1);
            let left = &mut left[0][done..done + n];
            let right = &mut right[0][done..done + n];
            let wl = &self.wet[0][..n];
            let wr = &self.wet[self.wet.len() - 1][..n];
            for i in 0..n {
                let (d, w) = if constant {
                    (c_dry, c_wet)
                } else {
                    coeffs(done + i)
                };
                left[i] = d * x[i] + w * wl[i];
                right[i] = d * x[i] + w * wr[i];
            }
            done += n;
        }
    }

    fn reset(&mut self) {
        self.clear();
    }

    fn snapshot(&self, st: &mut NodeState) {
        st.put_samples("history", &self.hist[self.fill - self.keep..self.fill]);
        st.put_u64("position", self.pos);
    }

    fn reset_part(&mut self, done: usize, budget: usize) -> Progress {
        self.clear_part(done, budget)
    }

    /// The history oldest first, then the sample counter. Sample `j` of
    /// the history at N is the input at `pos(N) − keep + j`; it stays in
    /// `hist` until `j + 1` more frames have arrived, so copying oldest
    /// first at least as fast as frames arrive reads it before it goes.
    fn save_part(&self, st: &mut NodeState, done: usize, budget: usize) -> Progress {
        let keep = self.keep;
        let at_n = if done == 0 {
            self.pos
        } else {
            st.get_u64("position").map_or(self.pos, |p| p.min(self.pos))
        };
        // Frames that arrived since N: history samples before this are gone
        // (never, when the caller keeps its side of the contract).
        let aged = ((self.pos - at_n) as usize).min(keep);
        let end = done.saturating_add(budget).min(keep);
        let from = done.max(aged);
        // History sample j at N sits at `fill − keep + j − aged` now.
        let base = self.fill - keep;
        let part = if from < end {
            &self.hist[base + from - aged..base + end - aged]
        } else {
            &self.hist[..0]
        };
        st.put_samples_part("history", keep, from.min(keep), part);
        if done == 0 {
            st.put_u64("position", self.pos);
        }
        if end >= keep {
            Progress::Done
        } else {
            Progress::Copied(end)
        }
    }

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let pos = st.get_u64("position")?;
        let keep = self.keep;
        let r = self.ring;
        self.hist.fill(S::ZERO);
        // Into the ring where it would have been written, then copied to
        // the other copy.
        let fill = self.fill_at(pos);
        let read = st.get_samples("history", &mut self.hist[fill - keep..fill]);
        for q in fill - keep..fill {
            let other = if q < r { q + r } else { q - r };
            self.hist[other] = self.hist[q];
        }
        // The span bounds follow the history even when the read failed part way.
        let len = self.hist.len();
        self.update_xmax(0, len);
        read?;
        self.fill = fill;
        self.pos = pos;
        self.rebuild();
        Ok(())
    }
}

struct ConvolutionOp;
impl Operator for ConvolutionOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn NodeProcessor<S>>, String> {
        let Some(Value::Resource(ir)) = cx.values.get(IR) else {
            return Err("`ir` must be an audio resource (\"@resource:NAME\")".to_string());
        };
        let engine = ConvEngine::for_profile(cx.profile.profile);
        let conv = Conv::<S>::new(
            &ir.channels,
            engine,
            cx.profile.fft_provider(),
            cx.profile.fft_norm(),
        )
        .map_err(|e| format!("`{}`: {e}", ir.path.display()))?;
        Ok(Box::new(conv))
    }
}

/// `convolution`: zero-latency convolution reverb; see the module docs.
/// Nanoseconds per sample (`benches/costs.md`): strict's direct
/// convolution is one multiply and add per tap and output channel, ≈ 0.065
/// ns each (a 2 s stereo IR at 48 kHz: ≈ 12.5 µs per sample, 1.7× real
/// time); repro's uniformly partitioned FFT ≈ 0.0045 ns per tap and
/// channel; live's non-uniform partitions grow slower than the IR.
fn convolution_cost(p: &NodeProfile, values: &[Value]) -> f64 {
    let taps = match values.get(IR) {
        Some(Value::Resource(a)) => {
            a.channels.first().map_or(0, Vec::len) * a.channels.len().clamp(1, 2)
        }
        _ => 0,
    } as f64;
    match p.profile {
        Profile::Strict => 10.0 + 0.065 * taps,
        Profile::Repro => 10.0 + 0.0045 * taps,
        Profile::Live => 80.0 + 0.0002 * taps,
    }
}

pub(crate) static CONVOLUTION: OpSpec = OpSpec {
    name: "convolution",
    doc: "Convolves the input with an impulse response (a WAV resource) with no added latency: \
          out = (1−mix)·in + mix·gain·(in ∗ ir). `out` uses IR channel 0, `out_r` channel 1 \
          (channel 0 for a mono IR). Strict: direct, summed in tap order; repro: uniformly \
          partitioned FFT; live: non-uniformly partitioned FFT.",
    inputs: &["in"],
    outputs: &["out", "out_r"],
    params: &[
        ParamSpec {
            name: "ir",
            kind: ParamKind::Resource,
            doc: "the impulse response (\"@resource:NAME\"), at the scene's sample rate",
            settable_by_events: false,
        },
        number(
            "mix",
            Dimension::Scalar,
            1.0,
            0.0,
            1.0,
            "wet fraction of the output (0 dry, 1 wet only)",
        ),
        number(
            "gain",
            Dimension::Amplitude,
            1.0,
            -1e6,
            1e6,
            "gain of the wet (convolved) signal",
        ),
    ],
    tier: Profile::Strict,
    variadic_inputs: false,
    uses_rng: false,
    precision_param: None,
    solver_steps: None,
    choices: conv_choices,
    lints: no_lints,
    cost: convolution_cost,
    algorithms: Some([
        "direct time-domain, summed in tap order",
        "uniformly partitioned FFT (rustfft, ortho), direct head, tail work after the first partition spread over blocks",
        "non-uniformly partitioned FFT (rustfft, backward), direct head, tail work spread over blocks",
    ]),
    build: build_any::<ConvolutionOp>,
};

/// Seeds of the shipped IRs (`resources/hall.wav`, `resources/room.wav`).
pub const HALL_SEED: u64 = 2024;
/// Seed of `resources/room.wav`.
pub const ROOM_SEED: u64 = 7;
/// Seed of `resources/bench-ir.wav`, the mono 2 s (96,000-tap) IR of the
/// convolution benchmark scene (`scenes/bench/w2.json`).
pub const BENCH_IR_SEED: u64 = 96000;

/// A synthetic reverb impulse response, reproducible bit for bit: per
/// channel, seeded Philox noise (stream = channel) under an exponential decay
/// reaching −60 dB at `rt60`, faded in over 12 ms after a 4 ms pre-delay,
/// plus eight early reflections in the first 60 ms (positions and signs from
/// stream 16 + channel), through a one-pole lowpass at 7 kHz; finally all
/// channels are scaled together to unit mean energy per channel. Only `+ − × ÷`
/// and the pinned libm, so every build produces the same samples.
pub fn synth_ir(
    seconds: f64,
    rt60: f64,
    seed: u64,
    channels: usize,
    sample_rate: f64,
) -> Vec<Vec<f64>> {
    use crate::dsp::rng::{mix64, NoiseStream};
    let n = libm::round(seconds * sample_rate) as usize;
    let key = mix64(seed);
    let pre = libm::round(0.004 * sample_rate) as usize;
    let fade = 0.012 * sample_rate;
    // ln(1000) = 60 dB of amplitude decay.
    let k = 6.907_755_278_982_137 / (rt60 * sample_rate);
    let a = 1.0 - libm::exp(-2.0 * core::f64::consts::PI * 7000.0 / sample_rate);
    let mut out: Vec<Vec<f64>> = (0..channels)
        .map(|c| {
            let mut noise = NoiseStream::new(key, c as u32);
            let mut er = NoiseStream::new(key, 16 + c as u32);
            let mut raw = vec![0.0f64; n];
            for (i, r) in raw.iter_mut().enumerate().skip(pre) {
                let t = (i - pre) as f64;
                let env = libm::exp(-k * t);
                let ramp = if t < fade { t / fade } else { 1.0 };
                *r = noise.sample::<f64>(i as u64) * env * ramp * 0.5;
            }
            for r in 0..8u64 {
                let u = er.word(2 * r) as f64 / 4294967296.0;
                let sign = if er.word(2 * r + 1) & 1 == 0 {
                    1.0
                } else {
                    -1.0
                };
                let at = pre + libm::round(u * 0.056 * sample_rate) as usize;
                if at < n {
                    raw[at] += sign * libm::exp(-k * (at - pre) as f64) * (1.0 - 0.08 * r as f64);
                }
            }
            let mut y = 0.0;
            for v in raw.iter_mut() {
                y += a * (*v - y);
                *v = y;
            }
            raw
        })
        .collect();
    let energy: f64 = out.iter().flatten().map(|v| v * v).sum::<f64>() / channels.max(1) as f64;
    if energy > 0.0 {
        let g = 1.0 / energy.sqrt();
        out.iter_mut().flatten().for_each(|v| *v *= g);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::AudioData;
    use std::sync::Arc;

    const SR: f64 = 48000.0;

    /// The independent oracle: textbook direct convolution in f64.
    pub(super) fn oracle(x: &[f64], h: &[f64]) -> Vec<f64> {
        (0..x.len())
            .map(|n| {
                let mut s = 0.0;
                for k in 0..h.len().min(n + 1) {
                    s += h[k] * x[n - k];
                }
                s
            })
            .collect()
    }

    pub(super) fn rel_l2(want: &[f64], got: &[f64]) -> f64 {
        let num: f64 = want.iter().zip(got).map(|(a, b)| (a - b) * (a - b)).sum();
        let den: f64 = want.iter().map(|a| a * a).sum();
        (num / den).sqrt()
    }

    pub(super) fn audio(channels: Vec<Vec<f64>>) -> Arc<AudioData> {
        Arc::new(AudioData {
            path: "ir.wav".into(),
            sample_rate: 48000,
            channels,
        })
    }

    /// `synth_ir` rounded to f32, as the shipped WAV files hold it.
    pub(super) fn ir_f32(seconds: f64, rt60: f64, seed: u64, channels: usize) -> Vec<Vec<f64>> {
        synth_ir(seconds, rt60, seed, channels, SR)
            .into_iter()
            .map(|c| c.into_iter().map(|v| v as f32 as f64).collect())
            .collect()
    }

    pub(super) fn room() -> Vec<Vec<f64>> {
        ir_f32(0.3, 0.25, ROOM_SEED, 2)
    }

    /// A short synthetic IR: 1500 taps of decaying test signal.
    pub(super) fn short_ir() -> Vec<Vec<f64>> {
        let a = test_signal(21, 1500);
        vec![a
            .iter()
            .enumerate()
            .map(|(i, v)| v * libm::exp(-(i as f64) / 400.0))
            .collect()]
    }

    pub(super) fn runner(
        ir: Vec<Vec<f64>>,
        set: &[(&str, f64)],
        profile: Profile,
        max_block: usize,
    ) -> NodeRunner {
        let mut params = vec![("ir", Value::Resource(audio(ir)))];
        params.extend(set.iter().map(|(n, v)| (*n, Value::Number(*v))));
        NodeRunner::new(
            &CONVOLUTION,
            values_with(&CONVOLUTION, &params),
            profile,
            None,
            SR,
            max_block,
            1,
        )
        .unwrap()
    }

    pub(super) fn tolerance(p: Profile) -> f64 {
        match p {
            Profile::Strict => 1e-12,
            Profile::Repro => 1e-5,
            Profile::Live => 1e-4,
        }
    }

    /// Every profile matches the oracle within its tolerance, with the room
    /// IR (stereo) and a short mono IR, at several block sizes.
    #[test]
    fn every_profile_matches_direct_convolution() {
        let x = test_signal(5, 24000);
        for ir in [room(), short_ir()] {
            let want: Vec<Vec<f64>> = ir.iter().map(|h| oracle(&x, h)).collect();
            for p in Profile::ALL {
                let mut first: Option<Vec<Vec<f64>>> = None;
                for blocks in [vec![64], vec![1000], vec![128, 3, 77, 4096]] {
                    let mut r = runner(ir.clone(), &[], p, 4096);
                    let out = r.run(std::slice::from_ref(&x), &[], x.len(), &blocks);
                    for (c, w) in want.iter().enumerate() {
                        let e = rel_l2(w, &out[c]);
                        println!(
                            "{p:?} taps {} blocks {blocks:?} ch {c}: rel L2 {e:.3e}",
                            ir[0].len()
                        );
                        assert!(e <= tolerance(p), "{p:?}: rel L2 {e:e}");
                    }
                    if ir.len() == 1 {
                        assert_eq!(out[0], out[1], "mono IR: out_r repeats out");
                    }
                    // Bit-identical at every block size, in every profile.
                    match &first {
                        None => first = Some(out),
                        Some(f) => assert!(
                            crate::ops::harness::first_difference(f, &out).is_none(),
                            "{p:?}: block size changed the output"
                        ),
                    }
                }
            }
        }
    }

    /// A decaying mono IR of `len` taps.
    pub(super) fn decaying_ir(len: usize, seed: u64) -> Vec<Vec<f64>> {
        let a = test_signal(seed, len);
        let tau = len as f64 / 4.0;
        vec![a
            .iter()
            .enumerate()
            .map(|(i, v)| v * libm::exp(-(i as f64) / tau))
            .collect()]
    }

    #[test]
    fn impulses_give_the_ir_at_the_same_sample() {
        let ir = room();
        for p in Profile::ALL {
            for block in [1usize, 64, 4096] {
                for at in [0usize, 1000] {
                    let frames = 20000;
                    let mut x = vec![0.0; frames];
                    x[at] = 1.0;
                    let mut r = runner(ir.clone(), &[], p, block);
                    let out = r.run(&[x], &[], frames, &[block]);
                    for (c, h) in ir.iter().enumerate() {
                        let y = &out[c];
                        let first = y.iter().position(|v| v.abs() > 1e-7).unwrap();
                        let h0 = h.iter().position(|v| v.abs() > 1e-7).unwrap();
                        assert_eq!(first, at + h0, "{p:?} block {block} impulse at {at}");
                        for k in 0..(frames - at).min(h.len()) {
                            let tol = if p == Profile::Strict { 0.0 } else { 1e-5 };
                            assert!(
                                (y[at + k] - h[k]).abs() <= tol,
                                "{p:?} block {block} at {at} tap {k}: {} vs {}",
                                y[at + k],
                                h[k]
                            );
                        }
                        assert!(y[..at].iter().all(|v| *v == 0.0));
                    }
                }
            }
        }
    }

    #[test]
    fn mix_and_gain() {
        let ir = short_ir();
        let x = test_signal(8, 4000);
        let wet = oracle(&x, &ir[0]);
        for p in Profile::ALL {
            let tol = if p == Profile::Strict { 1e-15 } else { 1e-5 };
            let mut r = runner(ir.clone(), &[("mix", 0.0)], p, 256);
            let out = r.run(std::slice::from_ref(&x), &[], x.len(), &[256]);
            for (a, b) in x.iter().zip(&out[0]) {
                // Dry only is the input exactly (at the node's precision).
                let want = if p == Profile::Strict {
                    *a
                } else {
                    *a as f32 as f64
                };
                assert_eq!(*b, want);
            }
            let g = 0.5;
            let mut r = runner(ir.clone(), &[("mix", 0.25), ("gain", g)], p, 256);
            let out = r.run(std::slice::from_ref(&x), &[], x.len(), &[256]);
            for n in 0..x.len() {
                let want = 0.75 * x[n] + 0.25 * g * wet[n];
                assert!((out[0][n] - want).abs() <= tol, "{p:?} n {n}");
            }
        }
    }
}
