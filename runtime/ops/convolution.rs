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
//!   every accumulator, are skipped without changing a bit ([`skippable`]):
//!   real signals ring down into subnormals and zeros between notes, which
//!   strict keeps and some CPUs compute slowly.
//! - **repro — uniformly partitioned.** A direct head of the first P taps
//!   plus an overlap-save FFT tail of partitions of P taps (FFT size 2P)
//!   with a frequency-domain delay line: each partition's spectrum is
//!   multiplied into one accumulator, in ascending order, then one inverse
//!   FFT per P samples. P is the power of two in 64…4096 that minimises the
//!   estimated work per sample for the IR's length ([`uniform_partition`]:
//!   1024 for a 2 s IR at 48 kHz), never the block size, so small blocks do
//!   not multiply the partitions (at 64-sample blocks a 2 s IR would need
//!   1500 of them). The tail of P output samples only needs the input up to
//!   their start, so it is computed when that input completes: zero latency.
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

use super::{
    build_any, fft_choice, no_lints, number, BuildCtx, Io, NodeState, OpSpec, Operator, ParamKind,
    ParamSpec, Processor, StateError, Value,
};
use crate::dsp::fft::{plan_real, Complex, FftNorm, FftProvider, RealFft};
use crate::dsp::{Math, Sample};
use crate::profile::{NodeProfile, Profile};
use crate::scene::Dimension;

const IR: usize = CONVOLUTION.index_of("ir");
const MIX: usize = CONVOLUTION.index_of("mix");
const GAIN: usize = CONVOLUTION.index_of("gain");

/// Most frames computed at once (the wet scratch size).
const CHUNK: usize = 1024;
/// The largest partition of any engine.
const MAX_PART: usize = 4096;
/// Extra history beyond the IR length that every engine keeps (and
/// snapshots), enough for the FFT engines to rebuild exactly.
const EXTRA_HISTORY: usize = 6 * MAX_PART;
/// The live engine's direct head.
const LIVE_HEAD: usize = 128;
/// The live engine's largest partition.
const LIVE_MAX_PART: usize = 4096;
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

/// One uniformly partitioned overlap-save segment: taps
/// `[off, off + count·b)` in partitions of `b`, FFT size `2b`.
struct Segment<S: Sample> {
    b: usize,
    off: usize,
    count: usize,
    /// z-ring length in blocks.
    ring: usize,
    /// Work spread over the period (else done at the boundary).
    spread: bool,
    fft: Box<dyn RealFft<S>>,
    /// Partition spectra per channel, `count × (b+1)`.
    h: Vec<Vec<Complex<S>>>,
    /// Frequency-domain delay line of input-window spectra, `count × (b+1)`.
    fdl: Vec<Complex<S>>,
    /// Per-channel accumulator of the block in flight.
    acc: Vec<Vec<Complex<S>>>,
    /// Per-channel tail output ring, `ring × b`.
    z: Vec<Vec<S>>,
    tbuf: Vec<S>,
    obuf: Vec<S>,
    /// The block in flight (its input is `[(blk−1)b, (blk+1)b)`), its start
    /// time `(blk+1)·b` and the steps done.
    blk: u64,
    start: u64,
    done: usize,
}

impl<S: Sample> Segment<S> {
    fn steps(&self) -> usize {
        self.count + 2
    }

    /// Sample offset into the period at which step `i` becomes due.
    fn due(&self, i: usize) -> u64 {
        if self.spread {
            ((self.b * (2 * i + 1)) / (2 * self.steps())) as u64
        } else {
            0
        }
    }
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
    /// Input history: `hist[..fill]`, the newest sample last.
    hist: Vec<S>,
    fill: usize,
    /// Samples kept (and snapshotted) behind the newest.
    keep: usize,
    pos: u64,
    /// Chunks never cross a multiple of `grid` (the smallest partition).
    grid: u64,
    segs: Vec<Segment<S>>,
    wet: Vec<Vec<S>>,
    /// Work counters (for tests and benchmarks): transforms run, and a cost
    /// estimate (N·log2 N per FFT, 4 per complex multiply-accumulate).
    pub(crate) ffts: u64,
    pub(crate) work: u64,
}

/// Taps, and history samples, per span of the strict engine's skip test.
const SPAN: usize = 64;

/// Magnitude bounds that let the direct kernel skip spans of taps exactly
/// (strict engine only; see [`skippable`]).
#[derive(Clone, Copy)]
pub(crate) struct Bounds<'a, S> {
    /// Largest `|h[k]|` over taps `[c·SPAN, (c+1)·SPAN)`, per span `c`.
    h: &'a [S],
    /// Largest `|x[i]|` over history `[b·SPAN, (b+1)·SPAN)` as magnitude bits
    /// (`abs().to_bits_u64()`; a NaN is above every number), per block `b`.
    x: &'a [u64],
}

/// Whether adding the products of one tap span to every accumulator of a
/// `W`-output group provably leaves each accumulator's bits unchanged, so
/// the span can be skipped without changing any output bit. `hmax` bounds
/// `|h|` over the span and `[lo, hi]` are the history indices it reads.
///
/// Each output is `acc = ((+0 + h0·x0) + h1·x1) + …` in tap order, in IEEE
/// round-to-nearest arithmetic (no FMA), and a skipped term must be exactly
/// a no-op for the `acc` of the moment:
///
/// 1. **Bound without the product.** `p = fl(H·X)` with `H ≥ |h|`, `X ≥ |x|`
///    over the span bounds every product: `|h·x| ≤ H·X` as reals and
///    rounding is monotone, so `|fl(h·x)| = fl(|h·x|) ≤ fl(H·X) = p`. Only
///    this one product of bounds is computed, never the (possibly
///    subnormal) products themselves. A NaN or infinite `h` or `x` makes `p`
///    NaN or infinite, and nothing is skipped.
/// 2. **Exact zeros.** `p = 0` means every product is `+0` or `−0` (finite
///    `h`, `x`: zero inputs, zero taps, or products that round to zero). The
///    accumulator is never `−0`: it starts at `+0`, and a round-to-nearest
///    sum is `−0` only when both addends are `−0`. So `acc + (±0)` is `acc`
///    for a nonzero `acc` and `+0 + (±0) = +0`: the sign of a zero product
///    never shows. (A NaN `acc` stays NaN, and the engine replaces a NaN
///    output with silence, so no bit of it is ever observed.)
/// 3. **Absorbed products.** Otherwise, with `p` below the smallest normal
///    (only then can products be subnormal, where some CPUs take a slow
///    microcode path), a term with `|fl(h·x)| ≤ p < acc.absorb_bound()` is
///    strictly less than half the gap from `acc` to either neighbour, so
///    `acc + fl(h·x)` rounds back to `acc` — never a tie (see
///    [`Sample::absorb_bound`]). Compared against the smallest bound of the
///    `W` accumulators, it holds for every lane.
///
/// Induction over the span: each term leaves `acc` unchanged, so the next
/// term meets the same `acc` and the same bound; skipping the whole span
/// gives the bits of summing it term by term, in tap order.
#[inline(always)]
fn skippable<S: Sample, const W: usize>(
    hmax: S,
    xbits: &[u64],
    lo: usize,
    hi: usize,
    acc: &[S; W],
) -> bool {
    let mut m = 0u64;
    for &b in &xbits[lo / SPAN..=hi / SPAN] {
        m = m.max(b);
    }
    let p = hmax * S::from_bits_u64(m);
    // False for a NaN `p` too.
    let tiny = p < S::MIN_POSITIVE;
    if !tiny {
        return false;
    }
    if p == S::ZERO {
        return true;
    }
    let mut t = acc[0].absorb_bound();
    for a in &acc[1..] {
        t = t.min(a.absorb_bound());
    }
    p < t
}

/// `out[i] = Σ_k h[k]·x[base + i − k]` in tap order, for `W` outputs, taking
/// the taps a span of [`SPAN`] at a time and skipping spans that provably
/// change no bit (with `bounds`).
#[inline(always)]
fn direct_w<S: Sample, const W: usize>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    let mut acc = [S::ZERO; W];
    for (c, hc) in h.chunks(SPAN).enumerate() {
        let top = base - c * SPAN;
        if let Some(b) = bounds {
            if skippable(b.h[c], b.x, top + 1 - hc.len(), top + W - 1, &acc) {
                continue;
            }
        }
        for (k, hk) in hc.iter().enumerate() {
            let s = top - k;
            let xs: &[S; W] = x[s..s + W].try_into().unwrap();
            for j in 0..W {
                acc[j] += *hk * xs[j];
            }
        }
    }
    out[..W].copy_from_slice(&acc);
}

#[inline(always)]
fn direct_kernel<S: Sample>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    let n = out.len();
    let mut i = 0;
    while i + 32 <= n {
        direct_w::<S, 32>(h, bounds, x, base + i, &mut out[i..]);
        i += 32;
    }
    while i + 8 <= n {
        direct_w::<S, 8>(h, bounds, x, base + i, &mut out[i..]);
        i += 8;
    }
    while i < n {
        direct_w::<S, 1>(h, bounds, x, base + i, &mut out[i..]);
        i += 1;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn direct_avx2<S: Sample>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    direct_kernel(h, bounds, x, base, out)
}

/// Direct convolution of `out.len()` outputs; output `i` is at history index
/// `base + i`, which must have `h.len() − 1` samples before it. With
/// `bounds` (the strict engine), spans of taps that provably change no bit
/// are skipped; the result is the same bits either way.
pub(crate) fn direct<S: Sample>(
    h: &[S],
    bounds: Option<Bounds<'_, S>>,
    x: &[S],
    base: usize,
    out: &mut [S],
) {
    debug_assert!(base + 1 >= h.len() && base + out.len() <= x.len());
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked above).
        unsafe { direct_avx2(h, bounds, x, base, out) };
        return;
    }
    direct_kernel(h, bounds, x, base, out)
}

/// Largest magnitude over each [`SPAN`] of `v`, as bits.
fn span_max_bits<S: Sample>(v: &[S]) -> impl Iterator<Item = u64> + '_ {
    v.chunks(SPAN)
        .map(|c| c.iter().map(|s| s.abs().to_bits_u64()).max().unwrap_or(0))
}

/// The repro engine's partition size for an IR of `len` taps: the power of
/// two in 64…4096 that minimises the estimated work per output sample of a
/// direct head of P taps (one multiply-add per tap) plus a tail of
/// ⌈(len − P)/P⌉ partitions (per sample about one complex multiply-add per
/// partition, and two FFTs of 2P per P samples).
/// It depends on the IR length only, so the output is the same at every
/// block size setting; the tail of each P samples is computed when their
/// input completes, whatever the block size.
fn uniform_partition(len: usize) -> usize {
    // A complex multiply-add streams one partition spectrum and one delay
    // line bin from memory; measured at 48 kHz with a 2 s IR, it costs about
    // 16 direct taps.
    const CMAC_COST: f64 = 16.0;
    let cost = |p: usize| {
        let parts = len.saturating_sub(p).div_ceil(p) as f64;
        let pf = p as f64;
        let fft = if parts > 0.0 {
            4.0 * f64::from((2 * p).trailing_zeros())
        } else {
            0.0
        };
        pf + CMAC_COST * parts * (pf + 1.0) / pf + fft
    };
    let mut best = 64;
    let mut p = 128;
    while p <= MAX_PART {
        if cost(p) < cost(best) {
            best = p;
        }
        p *= 2;
    }
    best
}

/// The partition layout of an engine for an IR of `len` taps:
/// (direct head length, [(b, off, count, spread)]).
fn layout(engine: ConvEngine, len: usize) -> (usize, Vec<(usize, usize, usize, bool)>) {
    match engine {
        ConvEngine::Direct => (len, Vec::new()),
        ConvEngine::Uniform => {
            let p = uniform_partition(len);
            if len <= p {
                return (len, Vec::new());
            }
            (p, vec![(p, p, (len - p).div_ceil(p), false)])
        }
        ConvEngine::NonUniform => {
            if len <= LIVE_HEAD {
                return (len, Vec::new());
            }
            let mut segs = Vec::new();
            let (mut b, mut off) = (LIVE_HEAD / 2, LIVE_HEAD);
            while off < len {
                let count = if b < LIVE_MAX_PART {
                    (len - off).div_ceil(b).min(2)
                } else {
                    (len - off).div_ceil(b)
                };
                segs.push((b, off, count, true));
                off += count * b;
                b = (b * 2).min(LIVE_MAX_PART);
            }
            (LIVE_HEAD, segs)
        }
    }
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
        let mut segs = Vec::new();
        for (b, off, count, spread) in lay {
            debug_assert!(off % b == 0 && off >= b && b <= MAX_PART);
            let n = 2 * b;
            // Partition spectra in f64, scaled so inverse(forward(x)·H) is
            // the linear convolution under any normalisation.
            let mut f64fft = plan_real::<f64>(provider, n, norm);
            let (a, bi) = norm.scales(n);
            let c = 1.0 / (n as f64 * a * a * bi);
            let mut tb = vec![0.0f64; n];
            let mut sp = vec![Complex::new(0.0f64, 0.0); b + 1];
            let h =
                chans
                    .iter()
                    .map(|ch| {
                        let mut out = Vec::with_capacity(count * (b + 1));
                        for j in 0..count {
                            tb.fill(0.0);
                            let lo = off + j * b;
                            let hi = (lo + b).min(len);
                            tb[..hi - lo].copy_from_slice(&ch[lo..hi]);
                            f64fft.forward(&mut tb, &mut sp);
                            out.extend(sp.iter().map(|z| {
                                Complex::new(S::from_f64(z.re * c), S::from_f64(z.im * c))
                            }));
                        }
                        out
                    })
                    .collect();
            let ring = off / b + 1;
            let zero = Complex::new(S::ZERO, S::ZERO);
            segs.push(Segment {
                b,
                off,
                count,
                ring,
                spread,
                fft: plan_real::<S>(provider, n, norm),
                h,
                fdl: vec![zero; count * (b + 1)],
                acc: vec![vec![zero; b + 1]; chans.len()],
                z: vec![vec![S::ZERO; ring * b]; chans.len()],
                tbuf: vec![S::ZERO; n],
                obuf: vec![S::ZERO; n],
                blk: 0,
                start: 0,
                done: count + 2,
            });
        }
        let keep = len + EXTRA_HISTORY;
        let grid = segs.iter().map(|s| s.b as u64).min().unwrap_or(u64::MAX);
        let hist_len = keep + keep.max(4 * CHUNK);
        Ok(Conv {
            heads,
            hmax,
            xmax: if skips {
                vec![0; hist_len.div_ceil(SPAN)]
            } else {
                Vec::new()
            },
            hist: vec![S::ZERO; hist_len],
            fill: keep,
            keep,
            pos: 0,
            grid,
            segs,
            wet: vec![vec![S::ZERO; CHUNK]; chans.len()],
            ffts: 0,
            work: 0,
        })
    }

    /// Runs step `step` of segment `si`'s block in flight.
    fn step(&mut self, si: usize) {
        let pos = self.pos;
        let fill = self.fill;
        let seg = &mut self.segs[si];
        let (b, nb) = (seg.b, seg.b + 1);
        let step = seg.done;
        let blk = seg.blk;
        if step == 0 {
            // The input window [(blk−1)b, (blk+1)b), zero before sample 0.
            let end = (blk + 1) * b as u64;
            let zeros = (2 * b).saturating_sub(end as usize);
            seg.tbuf[..zeros].fill(S::ZERO);
            let lo = fill - (pos - (end - (2 * b - zeros) as u64)) as usize;
            let hi = fill - (pos - end) as usize;
            seg.tbuf[zeros..].copy_from_slice(&self.hist[lo..hi]);
            let slot = (blk % seg.count as u64) as usize;
            seg.fft
                .forward(&mut seg.tbuf, &mut seg.fdl[slot * nb..(slot + 1) * nb]);
            for a in seg.acc.iter_mut() {
                a.fill(Complex::new(S::ZERO, S::ZERO));
            }
            self.ffts += 1;
            self.work += fft_cost(2 * b);
        } else if step <= seg.count {
            let j = step - 1;
            let slot = ((blk + (seg.count - j) as u64) % seg.count as u64) as usize;
            let x = &seg.fdl[slot * nb..(slot + 1) * nb];
            for (acc, h) in seg.acc.iter_mut().zip(&seg.h) {
                cmac(acc, x, &h[j * nb..(j + 1) * nb]);
            }
            self.work += 4 * (nb * seg.acc.len()) as u64;
        } else {
            let slot = (blk % seg.ring as u64) as usize;
            // The accumulator is the inverse's scratch: step 0 of the next
            // block clears it before any use.
            for (acc, z) in seg.acc.iter_mut().zip(seg.z.iter_mut()) {
                seg.fft.inverse(acc, &mut seg.obuf);
                z[slot * b..(slot + 1) * b].copy_from_slice(&seg.obuf[b..]);
                self.ffts += 1;
                self.work += fft_cost(2 * b);
            }
        }
        seg.done += 1;
    }

    /// At sample time `self.pos` (a chunk end): runs due steps, then starts
    /// blocks whose input just completed.
    fn advance(&mut self) {
        for si in 0..self.segs.len() {
            loop {
                let s = &self.segs[si];
                if s.done >= s.steps() || s.start + s.due(s.done) > self.pos {
                    break;
                }
                self.step(si);
            }
            let s = &mut self.segs[si];
            if self.pos % s.b as u64 == 0 {
                // Blocks that completed before are finished by now.
                debug_assert!(s.done == s.steps());
                s.blk = self.pos / s.b as u64 - 1;
                s.start = self.pos;
                s.done = 0;
                while self.segs[si].done < self.segs[si].steps()
                    && self.segs[si].due(self.segs[si].done) == 0
                {
                    self.step(si);
                }
            }
        }
    }

    /// Makes room for `n` more samples in the history.
    fn room(&mut self, n: usize) {
        if self.fill + n > self.hist.len() {
            let from = self.fill - self.keep;
            self.hist.copy_within(from..self.fill, 0);
            self.fill = self.keep;
            self.update_xmax(0, self.fill);
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
        self.room(n);
        self.hist[self.fill..self.fill + n].copy_from_slice(x);
        let base = self.fill;
        self.update_xmax(base, base + n);
        for (c, (h, w)) in self.heads.iter().zip(self.wet.iter_mut()).enumerate() {
            let bounds = self.hmax.get(c).map(|hm| Bounds {
                h: hm,
                x: &self.xmax,
            });
            direct(h, bounds, &self.hist, base, &mut w[..n]);
        }
        for seg in &self.segs {
            // z index of the chunk's first output.
            let t = self.pos as i64 - seg.off as i64;
            let rlen = seg.ring * seg.b;
            // Outputs before the segment's first tap reaches them get nothing.
            let skip = (-t).clamp(0, n as i64) as usize;
            let first = (t + skip as i64) as usize % rlen;
            for (z, w) in seg.z.iter().zip(self.wet.iter_mut()) {
                let (mut i, mut zi) = (skip, first);
                while i < n {
                    let run = (n - i).min(rlen - zi);
                    for (w, z) in w[i..i + run].iter_mut().zip(&z[zi..zi + run]) {
                        *w += *z;
                    }
                    i += run;
                    zi = 0;
                }
            }
        }
        self.fill += n;
        self.pos += n as u64;
        if self.pos % self.grid == 0 {
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
        self.hist.fill(S::ZERO);
        self.xmax.fill(0);
        self.fill = self.keep;
        self.pos = 0;
        let zero = Complex::new(S::ZERO, S::ZERO);
        for s in self.segs.iter_mut() {
            s.fdl.fill(zero);
            for a in s.acc.iter_mut() {
                a.fill(zero);
            }
            for z in s.z.iter_mut() {
                z.fill(S::ZERO);
            }
            s.blk = 0;
            s.start = 0;
            s.done = s.steps();
        }
    }

    /// Recomputes every segment's delay line and pending tail blocks from
    /// the history at `self.pos`, with the same transforms in the same order
    /// as `process` ran them.
    fn rebuild(&mut self) {
        for si in 0..self.segs.len() {
            let (b, off, count) = {
                let s = &self.segs[si];
                (s.b as i64, s.off as i64, s.count as i64)
            };
            let zero = Complex::new(S::ZERO, S::ZERO);
            self.segs[si].fdl.fill(zero);
            for z in self.segs[si].z.iter_mut() {
                z.fill(S::ZERO);
            }
            let nb = self.pos as i64 / b; // blocks whose input is complete
                                          // First z block a future output reads.
            let m0 = (self.pos as i64 - off).div_euclid(b).max(0);
            for blk in (m0 - count).max(0)..nb {
                let s = &mut self.segs[si];
                s.blk = blk as u64;
                s.done = 0;
                let steps = if blk >= m0 { s.steps() } else { 1 };
                for _ in 0..steps {
                    self.step(si);
                }
            }
            let s = &mut self.segs[si];
            s.blk = (nb - 1).max(0) as u64;
            s.start = (nb * b) as u64;
            s.done = s.steps();
        }
    }
}

#[inline]
fn fft_cost(n: usize) -> u64 {
    (n * n.trailing_zeros() as usize) as u64
}

/// `acc += x·h`, bin by bin.
#[inline(always)]
fn cmac_kernel<S: Sample>(acc: &mut [Complex<S>], x: &[Complex<S>], h: &[Complex<S>]) {
    for ((a, x), h) in acc.iter_mut().zip(x).zip(h) {
        a.re += x.re * h.re - x.im * h.im;
        a.im += x.re * h.im + x.im * h.re;
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn cmac_avx2<S: Sample>(acc: &mut [Complex<S>], x: &[Complex<S>], h: &[Complex<S>]) {
    cmac_kernel(acc, x, h)
}

/// `acc += x·h`, bin by bin, in AVX2 registers when the CPU has them (the
/// same `×`, `−`, `+` per bin, no FMA: the same bits as the plain loop).
#[inline]
fn cmac<S: Sample>(acc: &mut [Complex<S>], x: &[Complex<S>], h: &[Complex<S>]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked above).
        unsafe { cmac_avx2(acc, x, h) };
        return;
    }
    cmac_kernel(acc, x, h)
}

impl<S: Sample> Processor<S> for Conv<S> {
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

    fn restore(&mut self, st: &NodeState) -> Result<(), StateError> {
        let pos = st.get_u64("position")?;
        let keep = self.keep;
        self.hist.fill(S::ZERO);
        let read = st.get_samples("history", &mut self.hist[..keep]);
        // The span bounds follow the history even when the read failed part way.
        let len = self.hist.len();
        self.update_xmax(0, len);
        read?;
        self.fill = keep;
        self.pos = pos;
        self.rebuild();
        Ok(())
    }
}

struct ConvolutionOp;
impl Operator for ConvolutionOp {
    fn build<S: Sample, M: Math>(cx: &BuildCtx<'_>) -> Result<Box<dyn Processor<S>>, String> {
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

pub static CONVOLUTION: OpSpec = OpSpec {
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
        "uniformly partitioned FFT (rustfft, ortho), direct head",
        "non-uniformly partitioned FFT (rustfft, backward), direct head, tail work spread over blocks",
    ]),
    build: build_any::<ConvolutionOp>,
};

/// Seeds of the shipped IRs (`resources/hall.wav`, `resources/room.wav`).
pub const HALL_SEED: u64 = 2024;
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
    use crate::dsp::Precision;
    use crate::ops::conformance::test_signal;
    use crate::ops::harness::{values_with, NodeRunner};
    use crate::ops::AudioData;
    use std::sync::Arc;

    const SR: f64 = 48000.0;

    /// The independent oracle: textbook direct convolution in f64.
    fn oracle(x: &[f64], h: &[f64]) -> Vec<f64> {
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

    fn rel_l2(want: &[f64], got: &[f64]) -> f64 {
        let num: f64 = want.iter().zip(got).map(|(a, b)| (a - b) * (a - b)).sum();
        let den: f64 = want.iter().map(|a| a * a).sum();
        (num / den).sqrt()
    }

    fn audio(channels: Vec<Vec<f64>>) -> Arc<AudioData> {
        Arc::new(AudioData {
            path: "ir.wav".into(),
            sample_rate: 48000,
            channels,
        })
    }

    /// `synth_ir` rounded to f32, as the shipped WAV files hold it.
    fn ir_f32(seconds: f64, rt60: f64, seed: u64, channels: usize) -> Vec<Vec<f64>> {
        synth_ir(seconds, rt60, seed, channels, SR)
            .into_iter()
            .map(|c| c.into_iter().map(|v| v as f32 as f64).collect())
            .collect()
    }

    fn room() -> Vec<Vec<f64>> {
        ir_f32(0.3, 0.25, ROOM_SEED, 2)
    }

    /// A short synthetic IR: 1500 taps of decaying test signal.
    fn short_ir() -> Vec<Vec<f64>> {
        let a = test_signal(21, 1500);
        vec![a
            .iter()
            .enumerate()
            .map(|(i, v)| v * libm::exp(-(i as f64) / 400.0))
            .collect()]
    }

    fn runner(
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

    fn tolerance(p: Profile) -> f64 {
        match p {
            Profile::Strict => 1e-12,
            Profile::Repro => 1e-5,
            Profile::Live => 1e-4,
        }
    }

    #[test]
    fn engines_follow_the_profile() {
        assert_eq!(layout(ConvEngine::Direct, 96000), (96000, vec![]));
        // issue9: repro used partitions of the block size (1500 of them for a
        // 2 s IR at block 64); the partition now follows the IR length.
        assert_eq!(
            layout(ConvEngine::Uniform, 96000),
            (1024, vec![(1024, 1024, 93, false)])
        );
        assert_eq!(layout(ConvEngine::Uniform, 40), (40, vec![]));
        // The live layout: a 128-tap head, pairs of growing partitions, 4096 at the end,
        // every segment starting at ≥ 2 partitions so its work can be spread.
        let (head, segs) = layout(ConvEngine::NonUniform, 96000);
        assert_eq!(head, 128);
        let mut next = head;
        for (b, off, count, spread) in &segs {
            assert_eq!(*off, next);
            assert!(*off >= 2 * b && *spread);
            next += count * b;
        }
        assert!(next >= 96000 && next - 96000 < 4096);
        assert_eq!(segs.last().unwrap().0, 4096);
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
    fn decaying_ir(len: usize, seed: u64) -> Vec<Vec<f64>> {
        let a = test_signal(seed, len);
        let tau = len as f64 / 4.0;
        vec![a
            .iter()
            .enumerate()
            .map(|(i, v)| v * libm::exp(-(i as f64) / tau))
            .collect()]
    }

    // issue9: repro's partitions were the block size; each partition size the
    // IR length now selects must still match the direct oracle at blocks 1,
    // 7, 64, 128, 4096, bit-identically across them.
    #[test]
    fn issue9_repro_partition_sizes_match_direct_convolution() {
        let x = test_signal(41, 20000);
        for (len, p) in [
            (500, 64),
            (1500, 128),
            (5000, 256),
            (20000, 512),
            (40000, 1024),
        ] {
            assert_eq!(uniform_partition(len), p, "{len} taps");
            let ir = decaying_ir(len, len as u64);
            let want = oracle(&x, &ir[0]);
            let mut first: Option<Vec<Vec<f64>>> = None;
            for block in [1usize, 7, 64, 128, 4096] {
                let mut r = runner(ir.clone(), &[], Profile::Repro, block);
                let out = r.run(std::slice::from_ref(&x), &[], x.len(), &[block]);
                let e = rel_l2(&want, &out[0]);
                assert!(
                    e <= tolerance(Profile::Repro),
                    "{len} taps block {block}: {e:e}"
                );
                match &first {
                    None => first = Some(out),
                    Some(f) => assert!(
                        crate::ops::harness::first_difference(f, &out).is_none(),
                        "{len} taps: block {block} changed the output"
                    ),
                }
            }
        }
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

    // issue9: the FFT engines' accumulators now double as inverse-FFT scratch
    // and repro's partitions grew; a restore mid-partition must still rebuild
    // the delay lines and tail so the output continues bit for bit.
    #[test]
    fn issue9_fft_engines_resume_bit_exactly_from_a_snapshot() {
        let ir = decaying_ir(40000, 3);
        let x = test_signal(12, 30000);
        for p in [Profile::Repro, Profile::Live] {
            let mut whole = runner(ir.clone(), &[], p, 64);
            let want = whole.run(std::slice::from_ref(&x), &[], x.len(), &[64]);
            for split in [1000usize, 17001] {
                let mut a = runner(ir.clone(), &[], p, 64);
                a.run(&[x[..split].to_vec()], &[], split, &[64]);
                let st = a.snapshot();
                let mut b = runner(ir.clone(), &[], p, 64);
                b.node().restore(&st).unwrap();
                b.set_clock(split as u64);
                let out = b.run(&[x[split..].to_vec()], &[], x.len() - split, &[64, 7]);
                let tail: Vec<Vec<f64>> = want.iter().map(|c| c[split..].to_vec()).collect();
                assert!(
                    crate::ops::harness::first_difference(&tail, &out).is_none(),
                    "{p:?}: resumed at {split} differs"
                );
            }
        }
    }

    #[test]
    fn strict_restore_migrates_to_the_fft_engines() {
        let ir = room();
        let x = test_signal(9, 30000);
        let want = oracle(&x, &ir[0]);
        let split = 17000;
        let mut strict = runner(ir.clone(), &[], Profile::Strict, 128);
        strict.run(&[x[..split].to_vec()], &[], split, &[128]);
        let st = strict.snapshot();
        for p in [Profile::Repro, Profile::Live] {
            let mut r = runner(ir.clone(), &[], p, 128);
            r.node().restore(&st).unwrap();
            r.set_clock(split as u64);
            let out = r.run(&[x[split..].to_vec()], &[], x.len() - split, &[128]);
            let e = rel_l2(&want[split..], &out[0]);
            assert!(e <= tolerance(p), "{p:?} after migration: {e:e}");
        }
    }

    /// Under live the tail work of a 2 s IR is spread: no 64-sample block does
    /// vastly more work than the mean (counted, not timed).
    #[test]
    fn live_spreads_the_tail_work() {
        let ir = ir_f32(2.0, 1.8, HALL_SEED, 2);
        let x: Vec<f32> = test_signal(3, 4 * 48000)
            .iter()
            .map(|v| *v as f32)
            .collect();
        let mut ratios = Vec::new();
        for engine in [ConvEngine::NonUniform, ConvEngine::Uniform] {
            let mut c =
                Conv::<f32>::new(&ir, engine, FftProvider::RustFft, FftNorm::Backward).unwrap();
            let mut per_block = Vec::new();
            let mut ffts = Vec::new();
            for blk in x.chunks(64) {
                let (w0, f0) = (c.work, c.ffts);
                c.run_wet(blk, &[64]);
                per_block.push((c.work - w0) as f64);
                ffts.push(c.ffts - f0);
            }
            let mean = per_block.iter().sum::<f64>() / per_block.len() as f64;
            let max = per_block.iter().cloned().fold(0.0, f64::max);
            let fmax = *ffts.iter().max().unwrap();
            let fmean = ffts.iter().sum::<u64>() as f64 / ffts.len() as f64;
            println!(
                "{engine:?}: work per 64-block mean {mean:.0} max {max:.0} (ratio {:.2}); FFTs per block mean {fmean:.2} max {fmax}",
                max / mean
            );
            ratios.push(max / mean);
        }
        assert!(
            ratios[0] <= 8.0,
            "live max/mean work per block {}",
            ratios[0]
        );
    }

    /// The naive oracle of the strict engine: each output summed in tap
    /// order from `+0`, every tap, the history before sample 0 being `+0`,
    /// with separate `×` and `+` at precision `S`.
    fn tap_order_sum<S: Sample>(x: &[S], h: &[S]) -> Vec<S> {
        (0..x.len())
            .map(|n| {
                let mut s = S::ZERO;
                for (k, hk) in h.iter().enumerate() {
                    let xv = if k <= n { x[n - k] } else { S::ZERO };
                    s += *hk * xv;
                }
                s
            })
            .collect()
    }

    /// A signal shaped like a strict render's steady state, in miniature:
    /// bursts of noise, each ringing down through tiny normals and
    /// subnormals into a limit cycle of ±(smallest subnormal) and zeros of
    /// both signs, long runs of exact `+0` and `−0`, lone subnormals.
    fn subnormal_signal(frames: usize) -> Vec<f64> {
        let noise = test_signal(31, frames);
        let tiny = f64::from_bits(1);
        let mut x = vec![0.0f64; frames];
        let mut y = 0.0f64;
        for (i, xi) in x.iter_mut().enumerate() {
            let t = i % 700;
            *xi = match t {
                0..=89 => {
                    y = noise[i] * 0.5;
                    y
                }
                // 2^-20 per sample reaches the subnormals in ~50 samples, 0.3
                // keeps inexact mantissas on the way down.
                90..=199 => {
                    y *= if t % 2 == 0 { 1.0 / 1048576.0 } else { 0.3 };
                    y
                }
                200..=399 => [tiny, -tiny, 0.0, -0.0][t % 4],
                400..=499 => 0.0,
                500..=599 => -0.0,
                650 => -3.0 * tiny,
                _ => {
                    if i % 2 == 0 {
                        0.0
                    } else {
                        -0.0
                    }
                }
            };
        }
        x
    }

    /// An IR with a zero pre-delay, zero taps of both signs, tiny normal and
    /// subnormal taps among ordinary ones.
    fn subnormal_ir(len: usize, scale: f64) -> Vec<f64> {
        let a = test_signal(17, len);
        (0..len)
            .map(|k| match k {
                0..=69 => 0.0,
                200..=263 => -0.0,
                300..=309 => f64::from_bits(5 + k as u64) * scale,
                400..=409 => 1e-300 * a[k] * scale,
                _ => a[k] * libm::exp(-(k as f64) / 150.0) * scale,
            })
            .collect()
    }

    fn same_bits<S: Sample>(got: &[S], want: &[S], label: &str) {
        assert_eq!(got.len(), want.len(), "{label}");
        for (n, (g, w)) in got.iter().zip(want).enumerate() {
            let nan = g.to_f64().is_nan() && w.to_f64().is_nan();
            assert!(
                nan || g.to_bits_u64() == w.to_bits_u64(),
                "{label}: output {n}: {g:?} vs the tap-order sum {w:?}"
            );
        }
    }

    fn strict_matches_tap_order_sum<S: Sample>(x: &[f64], ir: &[f64], label: &str) {
        let xs: Vec<S> = x.iter().map(|v| S::from_f64(*v)).collect();
        let hs: Vec<S> = ir.iter().map(|v| S::from_f64(*v)).collect();
        let want = tap_order_sum(&xs, &hs);
        for blocks in [
            vec![1],
            vec![7],
            vec![64],
            vec![4096],
            vec![3, 61, 1000, 128],
        ] {
            let mut c = Conv::<S>::new(
                &[ir.to_vec()],
                ConvEngine::Direct,
                FftProvider::Reference,
                FftNorm::Ortho,
            )
            .unwrap();
            let got = c.run_wet(&xs, &blocks);
            same_bits(
                &got[0],
                &want,
                &format!("{label} {:?} blocks {blocks:?}", S::PRECISION),
            );
        }
    }

    // issue9: strict convolution was slow on subnormal inputs; the exact skips
    // (zero spans, zero products, absorbed products) must not change one bit.
    #[test]
    fn issue9_strict_skips_match_a_naive_tap_order_sum() {
        // Long enough for the history to wrap (its span bounds are rebuilt then).
        let x = subnormal_signal(40000);
        for (scale, name) in [
            (1.0, "unit IR"),
            // Products of subnormal inputs are normal here: nothing tiny to skip.
            (1e300, "huge IR"),
            // Products of ordinary inputs are subnormal here.
            (1e-305, "tiny IR"),
        ] {
            strict_matches_tap_order_sum::<f64>(&x, &subnormal_ir(450, scale), name);
        }
        // The same at f32 (a strict node may be pinned to f32), on f32's scale.
        for (scale, name) in [(1.0, "unit IR"), (1e30, "huge IR"), (1e-36, "tiny IR")] {
            strict_matches_tap_order_sum::<f32>(&x, &subnormal_ir(450, scale), name);
        }
        // Non-finite input: a NaN or an infinity is never skipped past.
        let mut x = subnormal_signal(3000);
        x[1000] = f64::INFINITY;
        x[2100] = f64::NAN;
        strict_matches_tap_order_sum::<f64>(&x, &subnormal_ir(450, 1.0), "non-finite input");
        // A non-finite tap: infinity × 0 is NaN, so zero inputs are not skipped either.
        let mut ir = subnormal_ir(450, 1.0);
        ir[100] = f64::INFINITY;
        strict_matches_tap_order_sum::<f64>(&subnormal_signal(3000), &ir, "infinite tap");
    }

    // issue9: a snapshot restores the history's span bounds too, so a resumed
    // strict render keeps the bits of the uninterrupted one.
    #[test]
    fn issue9_strict_restore_keeps_the_skips_exact() {
        let x = subnormal_signal(12000);
        let ir = subnormal_ir(450, 1.0);
        let whole = tap_order_sum(&x, &ir);
        let split = 5000;
        let mut a = runner(vec![ir.clone()], &[], Profile::Strict, 64);
        a.run(&[x[..split].to_vec()], &[], split, &[64]);
        let st = a.snapshot();
        let mut b = runner(vec![ir], &[], Profile::Strict, 64);
        b.node().restore(&st).unwrap();
        b.set_clock(split as u64);
        let out = b.run(&[x[split..].to_vec()], &[], x.len() - split, &[64, 5]);
        // mix = 1: out = 0·x + 1·wet, which is wet bit for bit (wet is never −0).
        same_bits(&out[0], &whole[split..], "resumed");
    }

    /// Each skip rule fires where it should and nowhere else.
    #[test]
    fn issue9_skip_rules() {
        let sub = f64::from_bits(1);
        let bits = |v: f64| [v.abs().to_bits(); 4];
        // Exact zero inputs, and products that round to zero: skipped even at acc = +0.
        assert!(skippable(0.3, &bits(0.0), 0, 100, &[0.0; 8]));
        assert!(skippable(0.3, &bits(sub), 0, 100, &[0.0; 8]));
        assert!(skippable(0.0, &bits(1.0), 0, 100, &[0.0; 8]));
        // A product that may be a nonzero subnormal is not skipped at +0 ...
        assert!(!skippable(0.9, &bits(sub), 0, 100, &[0.0; 8]));
        // ... nor when one lane is small ...
        let mut acc = [1.0; 8];
        acc[5] = 2.0 * f64::MIN_POSITIVE;
        assert!(!skippable(0.9, &bits(sub * 3.0), 0, 100, &acc));
        // ... but is when every lane absorbs it.
        acc[5] = -1e-3;
        assert!(skippable(0.9, &bits(sub * 3.0), 0, 100, &[1.0; 8]));
        assert!(skippable(0.9, &bits(1e-310), 0, 100, &acc));
        // A subnormal product that a small lane would not absorb.
        acc[5] = 1e-300;
        assert!(!skippable(0.9, &bits(1e-310), 0, 100, &acc));
        // Normal-sized products are always summed (no subnormal, nothing to gain).
        assert!(!skippable(0.9, &bits(1e-200), 0, 100, &[1e200; 8]));
        // Non-finite: never.
        assert!(!skippable(f64::INFINITY, &bits(0.0), 0, 100, &[1.0; 8]));
        assert!(!skippable(0.5, &bits(f64::NAN), 0, 100, &[1.0; 8]));
        assert!(!skippable(0.9, &bits(sub), 0, 100, &[f64::NAN; 8]));
        // (0.5 × the smallest subnormal rounds to 0: an exact zero, skipped
        // at any accumulator — a NaN one stays NaN.)
        assert!(skippable(0.5, &bits(sub), 0, 100, &[f64::NAN; 8]));
        // The largest block in the read range counts.
        let mut xb = [0u64; 4];
        xb[3] = 1.0f64.to_bits();
        assert!(skippable(0.5, &xb, 0, 3 * SPAN - 1, &[0.0; 1]));
        assert!(!skippable(0.5, &xb, 0, 3 * SPAN, &[0.0; 1]));
    }

    /// The shipped impulse responses are `synth_ir` output, bit for bit.
    /// Regenerate: `MORPHRT_BLESS=1 cargo test --release --lib impulse_responses`.
    #[test]
    fn shipped_impulse_responses_are_reproducible() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("resources");
        for (name, secs, rt60, seed, channels) in [
            ("hall.wav", 2.0, 1.8, HALL_SEED, 2),
            ("room.wav", 0.3, 0.25, ROOM_SEED, 2),
            ("bench-ir.wav", 2.0, 1.8, BENCH_IR_SEED, 1),
        ] {
            let ir = synth_ir(secs, rt60, seed, channels, SR);
            let path = root.join(name);
            if std::env::var_os("MORPHRT_BLESS").is_some() {
                if cfg!(debug_assertions) {
                    panic!("bless in a release build");
                }
                let spec = hound::WavSpec {
                    channels: channels as u16,
                    sample_rate: 48000,
                    bits_per_sample: 32,
                    sample_format: hound::SampleFormat::Float,
                };
                let mut w = hound::WavWriter::create(&path, spec).unwrap();
                for i in 0..ir[0].len() {
                    for c in &ir {
                        w.write_sample(c[i] as f32).unwrap();
                    }
                }
                w.finalize().unwrap();
            }
            let file = AudioData::load(&path).unwrap();
            assert_eq!(file.sample_rate, 48000);
            assert_eq!(file.channels.len(), channels, "{name}");
            for (c, (got, want)) in file.channels.iter().zip(&ir).enumerate() {
                assert_eq!(got.len(), want.len(), "{name}");
                for (i, (g, w)) in got.iter().zip(want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        (*w as f32 as f64).to_bits(),
                        "{name} ch {c} frame {i}"
                    );
                }
            }
        }
        let _ = Precision::F32;
    }
}
