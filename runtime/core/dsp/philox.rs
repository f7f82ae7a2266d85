//! Philox4x32-10 (Random123: Salmon, Moraes, Dror and Shaw, "Parallel Random
//! Numbers: As Easy as 1, 2, 3", SC'11) on [`BLOCKS`] consecutive counters at
//! once, for [`NoiseStream::fill`](super::rng::NoiseStream::fill).
//!
//! Block `q` is Philox at counter `[q lo, q hi, u0, u1]` (a noise stream `s`
//! has `[u0, u1] = [s, 0]`, the locked formula of [`super::rng`]): ten rounds of
//! `[hi(M1·c2) ^ c1 ^ k0, lo(M1·c2), hi(M0·c0) ^ c3 ^ k1, lo(M0·c0)]` with the
//! key bumped by the Weyl constants before rounds 1 to 9. The words are those
//! of `rand_philox::philox4x32_10`, bit for bit, at every [`SimdLevel`].
//!
//! The kernel is plain loops over fixed-size arrays, one lane per block, that
//! LLVM vectorises, compiled for AVX-512F, for AVX2 and for the base target
//! and picked by the caller's level. At AVX2 and AVX-512 ([`lanes`]) each
//! 32-bit word is kept in the low half of a `u64` lane: the 32×32→64 multiply
//! is then the vector unit's own (`vpmuludq`, which reads only the low
//! halves), its high half a shift and its low half the product itself, with
//! no packing between rounds. The high halves of the lanes hold bits that
//! never reach a low half (a multiply reads only its operands' low halves, a
//! xor is bitwise), and the output takes the low halves. On the base target
//! (SSE2) that form is slower than `u32` lanes ([`lanes32`]), which it keeps.
//! All sixteen blocks go in one step: with AVX2, fewer `u64` lanes (4 or 8)
//! were left as scalar code by LLVM.

use super::vector::{Isa, SimdLevel};

/// Blocks computed by one [`blocks`] call (a 64-frame block of noise).
pub(crate) const BLOCKS: usize = 16;

const M0: u64 = 0xD251_1F53;
const M1: u64 = 0xCD9E_8D57;
const W0: u64 = 0x9E37_79B9;
const W1: u64 = 0xBB67_AE85;
const LOW: u64 = 0xFFFF_FFFF;

/// Blocks `q0 .. q0 + N` into `out`, one `u64` lane per block.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
#[inline(always)]
fn lanes<const N: usize>(key: [u32; 2], upper: [u32; 2], q0: u64, out: &mut [[u32; 4]; N]) {
    let mut x0 = [0u64; N];
    let mut x1 = [0u64; N];
    for (l, (a, b)) in x0.iter_mut().zip(&mut x1).enumerate() {
        let q = q0.wrapping_add(l as u64);
        // Counter words 0 and 1: q's low half (x0's high half is never read)
        // and its high half, so word 0 carries into word 1 on its own.
        *a = q;
        *b = q >> 32;
    }
    let mut x2 = [upper[0] as u64; N];
    let mut x3 = [upper[1] as u64; N];
    let (mut k0, mut k1) = (key[0] as u64, key[1] as u64);
    for _ in 0..10 {
        for l in 0..N {
            let p0 = (x0[l] & LOW) * M0;
            let p1 = (x2[l] & LOW) * M1;
            x0[l] = (p1 >> 32) ^ x1[l] ^ k0;
            x1[l] = p1;
            x2[l] = (p0 >> 32) ^ x3[l] ^ k1;
            x3[l] = p0;
        }
        // Only the low halves matter, so the u64 sum wraps them like u32s.
        k0 = k0.wrapping_add(W0);
        k1 = k1.wrapping_add(W1);
    }
    for (l, o) in out.iter_mut().enumerate() {
        *o = [x0[l] as u32, x1[l] as u32, x2[l] as u32, x3[l] as u32];
    }
}

/// [`lanes`] with each word in a `u32` lane (rand_philox's own form): the
/// high product half from the widening multiply, the low half a 32-bit
/// multiply. The faster form on the base target (SSE2).
#[inline(always)]
fn lanes32<const N: usize>(key: [u32; 2], upper: [u32; 2], q0: u64, out: &mut [[u32; 4]; N]) {
    let mut x0 = [0u32; N];
    let mut x1 = [0u32; N];
    for (l, (a, b)) in x0.iter_mut().zip(&mut x1).enumerate() {
        let q = q0.wrapping_add(l as u64);
        *a = q as u32;
        *b = (q >> 32) as u32;
    }
    let mut x2 = [upper[0]; N];
    let mut x3 = [upper[1]; N];
    let (mut k0, mut k1) = (key[0], key[1]);
    for _ in 0..10 {
        let mut n = [[0u32; N]; 4];
        for l in 0..N {
            n[0][l] = ((x2[l] as u64 * M1) >> 32) as u32 ^ x1[l] ^ k0;
            n[1][l] = x2[l].wrapping_mul(M1 as u32);
            n[2][l] = ((x0[l] as u64 * M0) >> 32) as u32 ^ x3[l] ^ k1;
            n[3][l] = x0[l].wrapping_mul(M0 as u32);
        }
        [x0, x1, x2, x3] = n;
        k0 = k0.wrapping_add(W0 as u32);
        k1 = k1.wrapping_add(W1 as u32);
    }
    for (l, o) in out.iter_mut().enumerate() {
        *o = [x0[l], x1[l], x2[l], x3[l]];
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn blocks_avx2(key: [u32; 2], upper: [u32; 2], q0: u64, out: &mut [[u32; 4]; BLOCKS]) {
    lanes(key, upper, q0, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn blocks_avx512(key: [u32; 2], upper: [u32; 2], q0: u64, out: &mut [[u32; 4]; BLOCKS]) {
    lanes(key, upper, q0, out)
}

/// `out[i]` = Philox4x32-10 at counter `[(q0 + i) lo, (q0 + i) hi, upper[0],
/// upper[1]]` with `key`, for `i` in `0..BLOCKS` (`q0 + i` wrapping): the same
/// words at every level.
pub(crate) fn blocks(
    level: SimdLevel,
    key: [u32; 2],
    upper: [u32; 2],
    q0: u64,
    out: &mut [[u32; 4]; BLOCKS],
) {
    #[cfg(target_arch = "x86_64")]
    match level.isa() {
        // SAFETY: a `SimdLevel` is only ever an ISA this CPU has.
        Isa::Avx512 => return unsafe { blocks_avx512(key, upper, q0, out) },
        // SAFETY: as above.
        Isa::Avx2 => return unsafe { blocks_avx2(key, upper, q0, out) },
        Isa::Base => {}
    }
    let _ = level;
    lanes32(key, upper, q0, out)
}

/// Random123's philox4x32-10 known answers (its kat_vectors): (counter,
/// key, output). The kernel below, rand_philox (`dsp::rng`'s tests) and
/// the `lfo` op's independent oracle are each checked against them.
#[cfg(test)]
pub(crate) const RANDOM123_KAT: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
    (
        [0, 0, 0, 0],
        [0, 0],
        [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8],
    ),
    (
        [0xffffffff; 4],
        [0xffffffff; 2],
        [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
    ),
    (
        [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
        [0xa4093822, 0x299f31d0],
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use rand_philox::splitmix64 as mix64;

    fn reference(key: [u32; 2], upper: [u32; 2], q0: u64) -> [[u32; 4]; BLOCKS] {
        let mut want = [[0u32; 4]; BLOCKS];
        for (i, w) in want.iter_mut().enumerate() {
            let q = q0.wrapping_add(i as u64);
            *w = rand_philox::philox4x32_10([q as u32, (q >> 32) as u32, upper[0], upper[1]], key);
        }
        want
    }

    /// The kernel is rand_philox's block function for random keys, counters
    /// and noise streams, and across the counter-word carry (block 2^32 − 1
    /// to 2^32, and 2^64 − 1 to 0), at every level this CPU has.
    #[test]
    fn blocks_equal_rand_philox_at_every_level() {
        let mut z = 11u64;
        let mut starts = vec![0u64, (1 << 32) - 1, (1 << 32) - 7, u64::MAX - 3];
        for _ in 0..300 {
            z = mix64(z.wrapping_add(1));
            starts.push(z);
            starts.push(z | 0xffff_fff0);
        }
        for (i, q0) in starts.into_iter().enumerate() {
            let h = mix64(q0 ^ i as u64);
            let key = [h as u32, (h >> 32) as u32];
            let g = mix64(h);
            let upper = match i % 3 {
                0 => [0, 0],
                1 => [g as u32 & 0xff, 0],
                _ => [g as u32, (g >> 32) as u32],
            };
            let want = reference(key, upper, q0);
            for level in SimdLevel::available() {
                let mut got = [[0u32; 4]; BLOCKS];
                blocks(level, key, upper, q0, &mut got);
                assert_eq!(got, want, "{level:?}, q0 {q0:#x}");
            }
        }
    }

    /// Random123 philox4x32-10 known answers (kat_vectors), each as the
    /// first block of a kernel call, at every level this CPU has.
    #[test]
    fn random123_known_answers_at_every_level() {
        let cases = RANDOM123_KAT;
        for level in SimdLevel::available() {
            for (ctr, key, want) in cases {
                let q0 = ctr[0] as u64 | (ctr[1] as u64) << 32;
                let mut got = [[0u32; 4]; BLOCKS];
                blocks(level, key, [ctr[2], ctr[3]], q0, &mut got);
                assert_eq!(got[0], want, "{level:?}");
            }
        }
    }
}
