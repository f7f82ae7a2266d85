//! Randomness: a node's noise is a pure function of (global seed, node id,
//! local seed, stream, sample index). The formula is locked (changing it
//! changes every golden); `scenes/README.md` (*Randomness*) states it with
//! its known answers:
//!
//! - the node's key is [low 32 bits, high 32 bits] of
//!   [`hash64`]`(global_seed, node_id, local_seed)` =
//!   `mix64(mix64(mix64(global_seed) ^ fnv1a64(node_id)) ^ local_seed)`,
//!   with `fnv1a64` FNV-1a 64 over the UTF-8 bytes and [`mix64`] the
//!   SplitMix64 finalizer; `local_seed` is the node's `seed` param;
//! - sample `n` of stream `s` is word `n % 4` of Philox 4×32-10 at counter
//!   [(n/4) low 32, (n/4) high 32, s, 0] ([`NoiseStream`]), so noise is
//!   block-size invariant and seekable, and its state is one integer;
//! - word `u` → sample: f64 `u as f64 * 2^-31 - 1.0`, f32
//!   `(u >> 8) as f32 * 2^-23 - 1.0`, both exact
//!   ([`Sample::from_noise_word`]); not rand_philox's `u32_to_unit_*`
//!   helpers, which map differently.

use super::philox::{self, BLOCKS};
use super::sample::Sample;
use super::vector::{Isa, SimdLevel};

/// FNV-1a 64 over the UTF-8 bytes.
pub(crate) fn fnv1a64(s: &str) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in s.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// The SplitMix64 finalizer (no golden-ratio increment).
#[inline]
pub fn mix64(z: u64) -> u64 {
    rand_philox::splitmix64(z)
}

/// `mix64(mix64(mix64(global_seed) ^ fnv1a64(node_id)) ^ local_seed)`.
pub fn hash64(global_seed: u64, node_id: &str, local_seed: u64) -> u64 {
    mix64(mix64(mix64(global_seed) ^ fnv1a64(node_id)) ^ local_seed)
}

/// A seekable noise stream: sample `n` of stream `s` is word `n % 4` of
/// Philox4x32-10 at counter `[(n/4) lo, (n/4) hi, s, 0]`. Its only state is
/// the sample index, held by the caller.
#[derive(Clone, Debug)]
pub struct NoiseStream {
    key: [u32; 2],
    stream: u32,
    /// The instruction set [`fill`](Self::fill)'s kernel runs with, chosen
    /// when the stream is made (the words are the same at every level).
    level: SimdLevel,
    /// The last computed block and its index, a cache only (not state).
    block: [u32; 4],
    block_index: u64,
}

impl NoiseStream {
    /// Stream `stream` of the key `hash`, filled at the widest [`SimdLevel`]
    /// this CPU runs (made while building a node, not per block).
    pub fn new(hash: u64, stream: u32) -> NoiseStream {
        Self::with_level(hash, stream, SimdLevel::detect())
    }

    /// [`new`](Self::new) with [`fill`](Self::fill) at `level` (the same
    /// words at every level).
    pub(crate) fn with_level(hash: u64, stream: u32, level: SimdLevel) -> NoiseStream {
        let key = [hash as u32, (hash >> 32) as u32];
        let block = Self::compute(key, stream, 0);
        NoiseStream {
            key,
            stream,
            level,
            block,
            block_index: 0,
        }
    }

    #[inline]
    fn compute(key: [u32; 2], stream: u32, block: u64) -> [u32; 4] {
        rand_philox::philox4x32_10([block as u32, (block >> 32) as u32, stream, 0], key)
    }

    /// The raw word for absolute sample `n`.
    #[inline]
    pub(crate) fn word(&mut self, n: u64) -> u32 {
        let b = n / 4;
        if b != self.block_index {
            self.block = Self::compute(self.key, self.stream, b);
            self.block_index = b;
        }
        self.block[(n % 4) as usize]
    }

    /// The sample for absolute sample `n`, uniform in [-1, 1).
    #[inline]
    pub fn sample<S: Sample>(&mut self, n: u64) -> S {
        S::from_noise_word(self.word(n))
    }

    /// Fills `out` with the samples from absolute sample `start` on: the
    /// same values as [`sample`](Self::sample). The words come
    /// [`WORDS`](Self::WORDS) at a time from [`philox::blocks`], which
    /// computes sixteen Philox blocks side by side in vector lanes at the
    /// stream's [`SimdLevel`] (a run of at most [`FEW`](Self::FEW) blocks is
    /// computed block by block), and are mapped in one plain loop. No
    /// allocation.
    pub(crate) fn fill<S: Sample>(&mut self, start: u64, out: &mut [S]) {
        self.fill_at::<S, false>(start, out, S::ONE)
    }

    /// [`fill`](Self::fill)'s samples times `amp` (`amp · sample`, the same
    /// bits as filling and then scaling), in one pass.
    pub(crate) fn fill_scaled<S: Sample>(&mut self, start: u64, out: &mut [S], amp: S) {
        self.fill_at::<S, true>(start, out, amp)
    }

    #[inline(always)]
    fn fill_at<S: Sample, const SCALED: bool>(&mut self, start: u64, out: &mut [S], amp: S) {
        let mut blocks = [[0u32; 4]; BLOCKS];
        let mut n = start;
        let mut rest = out;
        while !rest.is_empty() {
            // Whole Philox blocks from the one holding sample n.
            let skip = (n % 4) as usize;
            let take = rest.len().min(Self::WORDS - skip);
            let used = (skip + take).div_ceil(4);
            let q = n / 4;
            if used <= Self::FEW {
                for (i, b) in blocks[..used].iter_mut().enumerate() {
                    *b = Self::compute(self.key, self.stream, q + i as u64);
                }
            } else {
                philox::blocks(self.level, self.key, [self.stream, 0], q, &mut blocks);
            }
            let (head, tail) = rest.split_at_mut(take);
            map_words::<S, SCALED>(self.level, &blocks.as_flattened()[skip..], head, amp);
            rest = tail;
            n += take as u64;
        }
    }

    /// Words per [`philox::blocks`] call in [`fill`](Self::fill) (16 blocks
    /// of four words), so a 64-frame block is one call.
    const WORDS: usize = 4 * BLOCKS;

    /// Up to this many blocks, [`fill`](Self::fill) computes them one by one
    /// rather than sixteen at once (one scalar block costs roughly a fifth of
    /// a sixteen-block AVX-512 step, an eighth of an AVX2 one).
    const FEW: usize = 4;
}

/// `out[i] = from_noise_word(words[i])`, times `amp` when `SCALED`, in
/// the widest lanes `level` has (the same operations at every level).
#[inline(always)]
fn map_words<S: Sample, const SCALED: bool>(
    level: SimdLevel,
    words: &[u32],
    out: &mut [S],
    amp: S,
) {
    #[inline(always)]
    fn body<S: Sample, const SCALED: bool>(words: &[u32], out: &mut [S], amp: S) {
        for (o, w) in out.iter_mut().zip(words) {
            let x = S::from_noise_word(*w);
            *o = if SCALED { amp * x } else { x };
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<S: Sample, const SCALED: bool>(words: &[u32], out: &mut [S], amp: S) {
            body::<S, SCALED>(words, out, amp)
        }
        #[target_feature(enable = "avx2,avx512f")]
        unsafe fn avx512<S: Sample, const SCALED: bool>(words: &[u32], out: &mut [S], amp: S) {
            body::<S, SCALED>(words, out, amp)
        }
        match level.isa() {
            // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
            Isa::Avx2 => return unsafe { avx2::<S, SCALED>(words, out, amp) },
            Isa::Avx512 => return unsafe { avx512::<S, SCALED>(words, out, amp) },
            Isa::Base => {}
        }
    }
    let _ = level;
    body::<S, SCALED>(words, out, amp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `fill` gives exactly `sample`'s values, from any start and length, at
    /// every level this CPU has.
    #[test]
    fn fill_equals_sample_by_sample() {
        for level in SimdLevel::available() {
            fill_equals_sample_by_sample_at(level);
        }
    }

    fn fill_equals_sample_by_sample_at(level: SimdLevel) {
        let mut a = NoiseStream::with_level(0xfa45_fa09_680f_51e2, 0, level);
        let mut b = a.clone();
        // Lengths across several 64-word steps, and a run whose Philox counter
        // word 0 carries into word 1 (block 2^32 − 3 onwards).
        let carry = ((1u64 << 32) - 3) * 4 + 1;
        for (start, len) in [
            (0u64, 64usize),
            (3, 1),
            (5, 17),
            (1_000_001, 130),
            (7, 0),
            (2, 300),
            (carry, 200),
            (carry + 2, 7),
            (carry + 30, 64),
            (4 * 1000, 8),
            (4 * 1000 + 1, 8),
            (4 * 1000 + 3, 9),
            (13, 4096),
        ] {
            let mut got = vec![0f64; len];
            a.fill(start, &mut got);
            let want: Vec<f64> = (0..len as u64).map(|i| b.sample(start + i)).collect();
            assert_eq!(got, want, "{level:?}, start {start}, len {len}");
            let mut got32 = vec![0f32; len];
            a.fill(start, &mut got32);
            let want32: Vec<f32> = (0..len as u64).map(|i| b.sample(start + i)).collect();
            assert_eq!(got32, want32);
        }
    }

    /// Random123 philox4x32-10 known answers (kat_vectors).
    #[test]
    fn random123_known_answers() {
        for (ctr, key, want) in crate::dsp::philox::RANDOM123_KAT {
            assert_eq!(rand_philox::philox4x32_10(ctr, key), want);
        }
    }

    /// The fill before the vectorised kernel: rand_philox's `fill_u32`
    /// (sixteen blocks side by side, compiled for the build's base target).
    fn fill_with_rand_philox(s: &NoiseStream, start: u64, out: &mut [f32]) {
        let mut words = [0u32; NoiseStream::WORDS];
        let mut rng = rand_philox::Philox::new(s.key, 0);
        let mut n = start;
        let mut rest = out;
        while !rest.is_empty() {
            let skip = (n % 4) as usize;
            let take = rest.len().min(NoiseStream::WORDS - skip);
            let len = (skip + take).div_ceil(4) * 4;
            rng.seek(((s.stream as u128) << 64) | (n / 4) as u128);
            rng.fill_u32(&mut words[..len]);
            let (head, tail) = rest.split_at_mut(take);
            for (o, w) in head.iter_mut().zip(&words[skip..]) {
                *o = f32::from_noise_word(*w);
            }
            rest = tail;
            n += take as u64;
        }
    }

    /// ns per word of `fill` (f32) from rand_philox's `fill_u32` and from
    /// the kernel at each level, for 64 and 4096 samples, timed interleaved
    /// (best of several rounds). `cargo test --release --lib
    /// dsp::rng::tests::fill_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn fill_speed() {
        use std::hint::black_box;
        use std::time::Instant;
        let hash = hash64(7, "hiss", 3);
        let levels: Vec<SimdLevel> = SimdLevel::available().collect();
        for len in [64usize, 4096] {
            let reps = 400_000 / len;
            let mut out = vec![0f32; len];
            let mut best = vec![f64::INFINITY; 1 + levels.len()];
            let mut check = 0f32;
            for round in 0..15 {
                let start = 1_000_000 + (round as u64) * 64 * len as u64;
                for (v, b) in best.iter_mut().enumerate() {
                    let mut s = NoiseStream::with_level(hash, 0, levels[v.max(1) - 1]);
                    let t = Instant::now();
                    for r in 0..reps as u64 {
                        let at = black_box(start + r * len as u64);
                        if v == 0 {
                            fill_with_rand_philox(&s, at, &mut out);
                        } else {
                            s.fill(at, &mut out);
                        }
                        black_box(&mut out);
                    }
                    let ns = t.elapsed().as_nanos() as f64 / (reps * len) as f64;
                    *b = b.min(ns);
                    check += out[len - 1];
                }
            }
            let base = best[0];
            println!("fill of {len} samples (f32), ns/word, best of 15 interleaved rounds:");
            println!("  rand_philox fill_u32: {base:.3}");
            for (l, ns) in levels.iter().zip(&best[1..]) {
                println!("  kernel {l:?}: {ns:.3} (x{:.2} faster)", base / ns);
            }
            black_box(check);
        }
    }

    #[test]
    fn mix64_is_the_splitmix_finalizer() {
        // Written out from the formula in `scenes/README.md`, independently
        // of rand_philox.
        fn reference(mut z: u64) -> u64 {
            z ^= z >> 30;
            z = z.wrapping_mul(0xbf58476d1ce4e5b9);
            z ^= z >> 27;
            z = z.wrapping_mul(0x94d049bb133111eb);
            z ^ (z >> 31)
        }
        for z in [0u64, 1, 7, 0xdead_beef, u64::MAX] {
            assert_eq!(mix64(z), reference(z));
        }
    }

    #[test]
    fn fnv1a64_known_values() {
        assert_eq!(fnv1a64(""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64("a"), 0xaf63dc4c8601ec8c);
    }

    /// The whole-mapping vector of `scenes/README.md` (*Randomness*).
    #[test]
    fn design_vector_hiss() {
        let h = hash64(7, "hiss", 3);
        assert_eq!(h, 0xfa45fa09680f51e2);
        let mut s = NoiseStream::new(h, 0);
        let words: Vec<u32> = (0..4).map(|n| s.word(n)).collect();
        assert_eq!(words, [0xd41aca30, 0x35c4046d, 0x81b30441, 0xd2022a3b]);
        let want = [
            0.657067559659481,
            -0.5799555270932615,
            0.013275653589516878,
            0.6406910694204271,
        ];
        for (n, w) in want.iter().enumerate() {
            assert_eq!(s.sample::<f64>(n as u64), *w);
        }
    }

    #[test]
    fn noise_is_seekable() {
        let mut a = NoiseStream::new(hash64(1, "n", 0), 0);
        let fwd: Vec<u32> = (0..100).map(|n| a.word(n)).collect();
        let mut b = NoiseStream::new(hash64(1, "n", 0), 0);
        for n in (0..100).rev() {
            assert_eq!(b.word(n), fwd[n as usize]);
        }
    }
}
