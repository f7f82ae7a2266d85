//! The FFT engines' tail: uniformly (repro) and non-uniformly (live)
//! partitioned overlap-save segments with frequency-domain delay lines, the
//! partition layouts, and the steps that compute, spread and rebuild each
//! segment's blocks.

use super::{Conv, ConvEngine};
use crate::dsp::fft::{plan_real, Complex, FftNorm, FftProvider, RealFft};
use crate::dsp::Sample;

/// The largest partition of any engine.
pub(super) const MAX_PART: usize = 4096;
/// The live engine's direct head.
const LIVE_HEAD: usize = 128;
/// The live engine's largest partition.
const LIVE_MAX_PART: usize = 4096;
/// How often a spread segment's due steps are looked at (samples).
const STEP_GRID: usize = 64;

/// One uniformly partitioned overlap-save segment: taps
/// `[off, off + count·b)` in partitions of `b`, FFT size `2b`.
pub(super) struct Segment<S: Sample> {
    pub(super) b: usize,
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
    /// The segment `part` of a [`layout`], with the spectra of its
    /// partitions of `chans` (IR channels of `len` frames).
    pub(super) fn new(
        part: SegmentLayout,
        chans: &[&Vec<f64>],
        len: usize,
        provider: FftProvider,
        norm: FftNorm,
    ) -> Segment<S> {
        let SegmentLayout {
            b,
            off,
            count,
            spread,
        } = part;
        debug_assert!(off % b == 0 && off >= b && b <= MAX_PART);
        let n = 2 * b;
        // Partition spectra in f64, scaled so inverse(forward(x)·H) is
        // the linear convolution under any normalisation.
        let mut f64fft = plan_real::<f64>(provider, n, norm);
        let (a, bi) = norm.scales(n);
        let c = 1.0 / (n as f64 * a * a * bi);
        let mut tb = vec![0.0f64; n];
        let mut sp = vec![Complex::new(0.0f64, 0.0); b + 1];
        let h = chans
            .iter()
            .map(|ch| {
                let mut out = Vec::with_capacity(count * (b + 1));
                for j in 0..count {
                    tb.fill(0.0);
                    let lo = off + j * b;
                    let hi = (lo + b).min(len);
                    tb[..hi - lo].copy_from_slice(&ch[lo..hi]);
                    f64fft.forward(&mut tb, &mut sp);
                    out.extend(
                        sp.iter()
                            .map(|z| Complex::new(S::from_f64(z.re * c), S::from_f64(z.im * c))),
                    );
                }
                out
            })
            .collect();
        let ring = off / b + 1;
        let zero = Complex::new(S::ZERO, S::ZERO);
        Segment {
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
        }
    }

    /// Adds the segment's tail output for the `n` samples from time `pos`
    /// to each channel's `wet`.
    pub(super) fn add_tail(&self, pos: u64, wet: &mut [Vec<S>], n: usize) {
        // z index of the chunk's first output.
        let t = pos as i64 - self.off as i64;
        let rlen = self.ring * self.b;
        // Outputs before the segment's first tap reaches them get nothing.
        let skip = (-t).clamp(0, n as i64) as usize;
        let first = (t + skip as i64) as usize % rlen;
        for (z, w) in self.z.iter().zip(wet.iter_mut()) {
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

    /// Back to silence before sample 0: no input seen, no block in flight.
    /// Zeroes this segment's share of a reset spread over blocks (its
    /// delay line, accumulators and tail ring); [`rewind`](Self::rewind)
    /// completes it.
    pub(super) fn clear_part(&mut self, part: &mut crate::dsp::state::PartClear) {
        let zero = Complex::new(S::ZERO, S::ZERO);
        part.zero(&mut self.fdl, zero);
        for a in self.acc.iter_mut() {
            part.zero(a, zero);
        }
        for z in self.z.iter_mut() {
            part.zero(z, S::ZERO);
        }
    }

    /// Back to the first block, after every buffer was zeroed.
    pub(super) fn rewind(&mut self) {
        self.blk = 0;
        self.start = 0;
        self.done = self.steps();
    }

    /// The sample grid on which this segment's steps and blocks are
    /// checked: its partition, or when its work is spread, every
    /// [`STEP_GRID`] samples (a step is due at an offset inside the period).
    pub(super) fn step_grid(&self) -> usize {
        if self.spread {
            self.b.min(STEP_GRID)
        } else {
            self.b
        }
    }

    fn steps(&self) -> usize {
        self.count + 2
    }

    /// Sample offset into the period at which step `i` becomes due: spread
    /// evenly over the period less its last step grid, so that none is left
    /// for the callback that ends it, where the blocks of the segments that
    /// are not spread are computed.
    fn due(&self, i: usize) -> u64 {
        if self.spread {
            let grid = self.step_grid();
            let span = if self.b > grid { self.b - grid } else { self.b };
            ((span * (2 * i + 1)) / (2 * self.steps())) as u64
        } else {
            0
        }
    }
}

/// The repro engine's partition size for an IR of `len` taps: the power of
/// two in 64…4096 that minimises the estimated work per output sample of a
/// direct head of P taps (one multiply-add per tap) plus a tail of
/// ⌈(len − P)/P⌉ partitions (per sample about one complex multiply-add per
/// partition, and two FFTs of 2P per P samples).
/// It depends on the IR length only, so the output is the same at every
/// block size setting; the tail of each P samples is computed when their
/// input completes, whatever the block size.
pub(super) fn uniform_partition(len: usize) -> usize {
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

/// One segment of a partition layout: `count` partitions of `b` taps
/// from tap `off`, its work spread over the period or done at the
/// boundary.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct SegmentLayout {
    pub(super) b: usize,
    pub(super) off: usize,
    pub(super) count: usize,
    pub(super) spread: bool,
}

/// The partition layout of an engine for an IR of `len` taps: the direct
/// head's length and the segments after it.
pub(super) fn layout(engine: ConvEngine, len: usize) -> (usize, Vec<SegmentLayout>) {
    match engine {
        ConvEngine::Direct => (len, Vec::new()),
        ConvEngine::Uniform => {
            let p = uniform_partition(len);
            if len <= p {
                return (len, Vec::new());
            }
            // The first partition's block is needed as soon as its input
            // completes, so it is computed at the boundary; the rest start
            // at 2P, which leaves a whole period to compute each of their
            // blocks, so their work is spread over it.
            let count = (len - p).div_ceil(p);
            let mut segs = vec![SegmentLayout {
                b: p,
                off: p,
                count: 1,
                spread: false,
            }];
            if count > 1 {
                segs.push(SegmentLayout {
                    b: p,
                    off: 2 * p,
                    count: count - 1,
                    spread: true,
                });
            }
            (p, segs)
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
                segs.push(SegmentLayout {
                    b,
                    off,
                    count,
                    spread: true,
                });
                off += count * b;
                b = (b * 2).min(LIVE_MAX_PART);
            }
            (LIVE_HEAD, segs)
        }
    }
}

impl<S: Sample> Conv<S> {
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
    pub(super) fn advance(&mut self) {
        for si in 0..self.segs.len() {
            loop {
                let s = &self.segs[si];
                if s.done >= s.steps() || s.start + s.due(s.done) > self.pos {
                    break;
                }
                self.step(si);
            }
            let s = &mut self.segs[si];
            if self.pos.is_multiple_of(s.b as u64) {
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

    /// Recomputes every segment's delay line and pending tail blocks from
    /// the history at `self.pos`, with the same transforms in the same order
    /// as `process` ran them.
    pub(super) fn rebuild(&mut self) {
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

#[cfg(test)]
mod tests {
    use super::super::tests::{decaying_ir, ir_f32, oracle, rel_l2, room, runner, tolerance};
    use super::super::HALL_SEED;
    use super::*;
    use crate::ops::conformance::test_signal;
    use crate::profile::Profile;

    #[test]
    fn engines_follow_the_profile() {
        assert_eq!(layout(ConvEngine::Direct, 96000), (96000, vec![]));
        // issue9: repro used partitions of the block size (1500 of them for a
        // 2 s IR at block 64); the partition now follows the IR length.
        assert_eq!(
            layout(ConvEngine::Uniform, 96000),
            (
                1024,
                vec![
                    SegmentLayout {
                        b: 1024,
                        off: 1024,
                        count: 1,
                        spread: false
                    },
                    SegmentLayout {
                        b: 1024,
                        off: 2048,
                        count: 92,
                        spread: true
                    }
                ]
            )
        );
        assert_eq!(layout(ConvEngine::Uniform, 40), (40, vec![]));
        // The live layout: a 128-tap head, pairs of growing partitions, 4096 at the end,
        // every segment starting at ≥ 2 partitions so its work can be spread.
        let (head, segs) = layout(ConvEngine::NonUniform, 96000);
        assert_eq!(head, 128);
        let mut next = head;
        for s in &segs {
            assert_eq!(s.off, next);
            assert!(s.off >= 2 * s.b && s.spread);
            next += s.count * s.b;
        }
        assert!(next >= 96000 && next - 96000 < 4096);
        assert_eq!(segs.last().unwrap().b, 4096);
    }

    // Each partition size the IR length selects under repro matches the
    // direct oracle at blocks 1, 7, 64, 128, 4096, bit-identically across
    // them.
    #[test]
    fn repro_partition_sizes_match_direct_convolution() {
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

    // The FFT engines' accumulators double as inverse-FFT scratch; a restore
    // mid-partition rebuilds the delay lines and tail so the output continues
    // bit for bit.
    #[test]
    fn fft_engines_resume_bit_exactly_from_a_snapshot() {
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

    /// Under live and repro the tail work of a 2 s IR is spread: no 64-sample
    /// block does vastly more work than the mean (counted, not timed).
    /// Repro computed its whole tail at each partition boundary (16× the
    /// mean); only its first partition is computed there now (1.5×).
    #[test]
    fn the_fft_engines_spread_the_tail_work() {
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
        assert!(
            ratios[1] <= 4.0,
            "repro max/mean work per block {}",
            ratios[1]
        );
    }
}
