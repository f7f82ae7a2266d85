//! The main output bus, at the highest precision among its channels.

use crate::dsp::{Precision, Sample};

/// Owned bus buffers, one per channel.
pub enum Bus {
    F32(Vec<Vec<f32>>),
    F64(Vec<Vec<f64>>),
}

/// A view of the bus after a block.
#[derive(Clone, Copy)]
pub enum BusRef<'a> {
    F32(&'a [Vec<f32>], usize),
    F64(&'a [Vec<f64>], usize),
}

impl Bus {
    pub fn new(p: Precision, channels: usize, block: usize) -> Bus {
        match p {
            Precision::F32 => Bus::F32(vec![vec![0.0; block]; channels]),
            Precision::F64 => Bus::F64(vec![vec![0.0; block]; channels]),
        }
    }

    pub fn precision(&self) -> Precision {
        match self {
            Bus::F32(_) => Precision::F32,
            Bus::F64(_) => Precision::F64,
        }
    }

    #[inline]
    pub fn write<T: Sample>(&mut self, ch: usize, offset: usize, src: &[T]) {
        match self {
            Bus::F32(b) => copy(&mut b[ch][offset..offset + src.len()], src),
            Bus::F64(b) => copy(&mut b[ch][offset..offset + src.len()], src),
        }
    }

    /// Hard limit to ±`limit` (live's main-bus stage).
    pub fn clamp(&mut self, frames: usize, limit: f64) {
        match self {
            Bus::F32(b) => b.iter_mut().for_each(|c| {
                c[..frames]
                    .iter_mut()
                    .for_each(|x| *x = x.clamp(-limit as f32, limit as f32))
            }),
            Bus::F64(b) => b.iter_mut().for_each(|c| {
                c[..frames]
                    .iter_mut()
                    .for_each(|x| *x = x.clamp(-limit, limit))
            }),
        }
    }

    pub fn as_ref(&self, frames: usize) -> BusRef<'_> {
        match self {
            Bus::F32(b) => BusRef::F32(b, frames),
            Bus::F64(b) => BusRef::F64(b, frames),
        }
    }
}

#[inline]
fn copy<S: Sample, T: Sample>(dst: &mut [S], src: &[T]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = super::convert(*s);
    }
}

impl BusRef<'_> {
    pub fn frames(&self) -> usize {
        match self {
            BusRef::F32(_, n) | BusRef::F64(_, n) => *n,
        }
    }

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
