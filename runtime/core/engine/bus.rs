//! The main output bus, at the highest precision among its channels, with
//! per-channel alignment delays (latency compensation between channels).

use super::Ring;
use crate::dsp::vector::{at_level, SimdLevel};
use crate::dsp::{Precision, Sample};

/// One precision's bus buffers.
pub struct BusT<S> {
    ch: Vec<Vec<S>>,
    rings: Vec<Option<Ring<S>>>,
}

/// Owned bus buffers, one per channel.
pub enum Bus {
    /// Buffers of f32 samples.
    F32(BusT<f32>),
    /// Buffers of f64 samples.
    F64(BusT<f64>),
}

/// A view of the bus after a block.
#[derive(Clone, Copy)]
pub enum BusRef<'a> {
    /// Per-channel f32 buffers and the frame count of the block.
    F32(&'a [Vec<f32>], usize),
    /// Per-channel f64 buffers and the frame count of the block.
    F64(&'a [Vec<f64>], usize),
}

fn new_t<S: Sample>(delays: &[usize], block: usize) -> BusT<S> {
    BusT {
        ch: vec![vec![S::ZERO; block]; delays.len()],
        rings: delays
            .iter()
            .map(|&d| (d > 0).then(|| Ring::new(d)))
            .collect(),
    }
}

impl<S: Sample> BusT<S> {
    #[inline]
    fn write<T: Sample>(&mut self, c: usize, offset: usize, src: &[T]) {
        let dst = &mut self.ch[c][offset..offset + src.len()];
        for (d, s) in dst.iter_mut().zip(src) {
            *d = super::convert(*s);
        }
        if let Some(r) = &mut self.rings[c] {
            r.process(dst);
        }
    }
}

impl Bus {
    /// One channel per entry of `delays` (each channel's alignment delay).
    pub(crate) fn new(p: Precision, delays: &[usize], block: usize) -> Bus {
        match p {
            Precision::F32 => Bus::F32(new_t(delays, block)),
            Precision::F64 => Bus::F64(new_t(delays, block)),
        }
    }

    pub(crate) fn precision(&self) -> Precision {
        match self {
            Bus::F32(_) => Precision::F32,
            Bus::F64(_) => Precision::F64,
        }
    }

    #[inline]
    pub(crate) fn write<T: Sample>(&mut self, ch: usize, offset: usize, src: &[T]) {
        match self {
            Bus::F32(b) => b.write(ch, offset, src),
            Bus::F64(b) => b.write(ch, offset, src),
        }
    }

    /// Hard limit to ±`limit` (live's main-bus stage), with the
    /// instructions of `level` (the same values at every level).
    pub(crate) fn clamp(&mut self, level: SimdLevel, frames: usize, limit: f64) {
        at_level(
            level,
            #[inline(always)]
            || match self {
                Bus::F32(b) => b.ch.iter_mut().for_each(|c| {
                    c[..frames]
                        .iter_mut()
                        .for_each(|x| *x = x.clamp(-limit as f32, limit as f32))
                }),
                Bus::F64(b) => b.ch.iter_mut().for_each(|c| {
                    c[..frames]
                        .iter_mut()
                        .for_each(|x| *x = x.clamp(-limit, limit))
                }),
            },
        )
    }

    pub(crate) fn as_ref(&self, frames: usize) -> BusRef<'_> {
        match self {
            Bus::F32(b) => BusRef::F32(&b.ch, frames),
            Bus::F64(b) => BusRef::F64(&b.ch, frames),
        }
    }

    pub(crate) fn reset(&mut self) {
        match self {
            Bus::F32(b) => b.rings.iter_mut().flatten().for_each(Ring::reset),
            Bus::F64(b) => b.rings.iter_mut().flatten().for_each(Ring::reset),
        }
    }

    pub(crate) fn save(&self) -> Vec<(Vec<f64>, usize)> {
        match self {
            Bus::F32(b) => b.rings.iter().flatten().map(Ring::save).collect(),
            Bus::F64(b) => b.rings.iter().flatten().map(Ring::save).collect(),
        }
    }

    /// Whether `st` has this bus's delay-line shapes.
    pub(crate) fn rings_fit(&self, st: &[(Vec<f64>, usize)]) -> bool {
        fn fit<S: Sample>(b: &BusT<S>, st: &[(Vec<f64>, usize)]) -> bool {
            b.rings.iter().flatten().count() == st.len()
                && b.rings.iter().flatten().zip(st).all(|(r, e)| r.fits(e))
        }
        match self {
            Bus::F32(b) => fit(b, st),
            Bus::F64(b) => fit(b, st),
        }
    }

    /// Copies the delay lines into a buffer shaped by [`save`](Self::save).
    pub(crate) fn save_into(&self, st: &mut [(Vec<f64>, usize)]) {
        match self {
            Bus::F32(b) => b
                .rings
                .iter()
                .flatten()
                .zip(st)
                .for_each(|(r, e)| r.save_into(e)),
            Bus::F64(b) => b
                .rings
                .iter()
                .flatten()
                .zip(st)
                .for_each(|(r, e)| r.save_into(e)),
        }
    }

    /// Copies part `[done, done + budget)` of every delay line into a
    /// buffer shaped by [`save`](Self::save) (see [`Ring::save_part`]);
    /// returns where the copy stands, complete once past the longest line.
    pub(crate) fn save_part(
        &self,
        st: &mut [(Vec<f64>, usize)],
        done: usize,
        budget: usize,
    ) -> (usize, bool) {
        fn part<S: Sample>(
            b: &BusT<S>,
            st: &mut [(Vec<f64>, usize)],
            done: usize,
            budget: usize,
        ) -> (usize, bool) {
            let mut complete = true;
            let mut next = done;
            for (r, e) in b.rings.iter().flatten().zip(st) {
                let n = r.save_part(e, done, budget);
                complete &= n >= e.0.len();
                next = next.max(n);
            }
            (next, complete)
        }
        match self {
            Bus::F32(b) => part(b, st, done, budget),
            Bus::F64(b) => part(b, st, done, budget),
        }
    }

    pub(crate) fn load(&mut self, st: &[(Vec<f64>, usize)]) {
        match self {
            Bus::F32(b) => b
                .rings
                .iter_mut()
                .flatten()
                .zip(st)
                .for_each(|(r, e)| r.load(e)),
            Bus::F64(b) => b
                .rings
                .iter_mut()
                .flatten()
                .zip(st)
                .for_each(|(r, e)| r.load(e)),
        }
    }
}
impl BusRef<'_> {
    /// Frames of the last block.
    pub fn frames(&self) -> usize {
        match self {
            BusRef::F32(_, n) | BusRef::F64(_, n) => *n,
        }
    }

    /// Channels of the main bus.
    pub fn channels(&self) -> usize {
        match self {
            BusRef::F32(b, _) => b.len(),
            BusRef::F64(b, _) => b.len(),
        }
    }

    /// Sample `i` of channel `c` as f64 (exact).
    #[inline]
    pub fn get(&self, c: usize, i: usize) -> f64 {
        match self {
            BusRef::F32(b, _) => b[c][i] as f64,
            BusRef::F64(b, _) => b[c][i],
        }
    }

    /// Appends the interleaved little-endian bytes at bus precision.
    pub fn write_le_interleaved(&self, out: &mut Vec<u8>) {
        let n = self.frames();
        match self {
            BusRef::F32(b, _) => (0..n).for_each(|i| {
                b.iter()
                    .for_each(|c| out.extend_from_slice(&c[i].to_le_bytes()))
            }),
            BusRef::F64(b, _) => (0..n).for_each(|i| {
                b.iter()
                    .for_each(|c| out.extend_from_slice(&c[i].to_le_bytes()))
            }),
        }
    }
}
