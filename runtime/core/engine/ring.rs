//! The delay line ([`Ring`]) behind every delayed signal in the engine: the
//! latency-compensation and feedback lines of a node's incoming edges and
//! the main bus's per-channel alignment.

use super::convert;
use crate::dsp::Sample;

/// A fixed delay line of `buf.len()` samples.
pub(crate) struct Ring<S> {
    buf: Vec<S>,
    pos: usize,
}

impl<S: Sample> Ring<S> {
    pub(crate) fn new(len: usize) -> Ring<S> {
        Ring {
            buf: vec![S::ZERO; len.max(1)],
            pos: 0,
        }
    }

    /// Delays `x` in place.
    #[inline]
    pub(crate) fn process(&mut self, x: &mut [S]) {
        for v in x {
            std::mem::swap(&mut self.buf[self.pos], v);
            self.pos += 1;
            if self.pos == self.buf.len() {
                self.pos = 0;
            }
        }
    }

    /// The next `out.len()` (at most the line's length) delayed samples,
    /// without moving on: a feedback edge's destination reads them before
    /// its source has run, and [`write`](Self::write) then replaces them.
    #[inline]
    pub(crate) fn read(&self, out: &mut [S]) {
        let len = self.buf.len();
        debug_assert!(out.len() <= len);
        let first = (len - self.pos).min(out.len());
        out[..first].copy_from_slice(&self.buf[self.pos..self.pos + first]);
        let rest = out.len() - first;
        out[first..].copy_from_slice(&self.buf[..rest]);
    }

    /// Stores `x` (at most the line's length) where [`read`](Self::read)
    /// just read and moves on; `read` then `write` is
    /// [`process`](Self::process) split in two.
    #[inline]
    pub(crate) fn write<T: Sample>(&mut self, x: &[T]) {
        let len = self.buf.len();
        debug_assert!(x.len() <= len);
        for v in x {
            self.buf[self.pos] = convert(*v);
            self.pos += 1;
            if self.pos == len {
                self.pos = 0;
            }
        }
    }

    /// Samples in the line.
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn reset(&mut self) {
        self.buf.iter_mut().for_each(|x| *x = S::ZERO);
        self.pos = 0;
    }

    /// Zeroes this line's share of a reset spread over blocks;
    /// [`rewind`](Self::rewind) completes it.
    pub(crate) fn clear_part(&mut self, part: &mut crate::dsp::state::PartClear) {
        part.zero(&mut self.buf, S::ZERO);
    }

    /// Back to the start, after the line was zeroed.
    pub(crate) fn rewind(&mut self) {
        self.pos = 0;
    }

    pub(crate) fn save(&self) -> (Vec<f64>, usize) {
        (self.buf.iter().map(|x| x.to_f64()).collect(), self.pos)
    }

    /// Copies into a buffer shaped by [`save`](Self::save); no allocation.
    pub(crate) fn save_into(&self, (data, pos): &mut (Vec<f64>, usize)) {
        for (d, x) in data.iter_mut().zip(&self.buf) {
            *d = x.to_f64();
        }
        *pos = self.pos;
    }

    /// Copies the part `[done, done + budget)` of the line, oldest sample
    /// first, into a buffer shaped by [`save`](Self::save), at the same
    /// indices; the first part (`done` = 0) also records the position.
    /// Returns where the copy stands (≥ the line's length: complete). The
    /// line moves one sample per frame from that position, so copying at
    /// least as many samples per part as frames run between parts gives
    /// the line as it was at the first part (see `Engine::begin_save`).
    pub(crate) fn save_part(
        &self,
        (data, pos): &mut (Vec<f64>, usize),
        done: usize,
        budget: usize,
    ) -> usize {
        let len = self.buf.len();
        if data.len() != len {
            return len;
        }
        if done == 0 {
            *pos = self.pos;
        }
        let (ranges, next) = crate::dsp::state::ring_part(len, *pos, done, budget);
        for r in ranges {
            for (d, x) in data[r.clone()].iter_mut().zip(&self.buf[r]) {
                *d = x.to_f64();
            }
        }
        next
    }

    pub(crate) fn fits(&self, (data, pos): &(Vec<f64>, usize)) -> bool {
        data.len() == self.buf.len() && *pos < self.buf.len()
    }

    pub(crate) fn load(&mut self, (data, pos): &(Vec<f64>, usize)) {
        if data.len() == self.buf.len() && *pos < self.buf.len() {
            for (b, x) in self.buf.iter_mut().zip(data) {
                *b = S::from_f64(*x);
            }
            self.pos = *pos;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_delays_by_the_line_length() {
        let mut r = Ring::<f64>::new(3);
        let mut x = [1.0, 2.0, 3.0, 4.0, 5.0];
        r.process(&mut x);
        assert_eq!(x, [0.0, 0.0, 0.0, 1.0, 2.0]);
        let mut y = [6.0, 7.0];
        r.process(&mut y);
        assert_eq!(y, [3.0, 4.0]);
        // A zero delay still gets a line of one sample.
        assert_eq!(Ring::<f32>::new(0).save().0.len(), 1);
    }

    #[test]
    fn read_then_write_is_process_split_in_two() {
        let mut whole = Ring::<f64>::new(5);
        let mut split = Ring::<f64>::new(5);
        let mut k = 0.0;
        // Chunks of every length up to the line's, wrapping around it.
        for n in [1, 2, 3, 4, 5, 3, 5, 2] {
            let x: Vec<f64> = (0..n).map(|i| k + i as f64).collect();
            k += n as f64;
            let mut a = x.clone();
            whole.process(&mut a);
            let mut b = vec![0.0; n];
            split.read(&mut b);
            split.write(&x);
            assert_eq!(a, b);
        }
        assert_eq!(whole.save(), split.save());
    }

    #[test]
    fn write_narrows_as_an_edge_converts() {
        let mut r = Ring::<f32>::new(2);
        r.write(&[1e300f64, -0.1]);
        let mut out = [0.0f32; 2];
        r.read(&mut out);
        assert_eq!(out, [f32::MAX, -0.1f32]);
    }

    #[test]
    fn save_and_load_carry_contents_and_position_when_the_shape_fits() {
        let mut r = Ring::<f64>::new(3);
        r.process(&mut [1.0, 2.0, 3.0, 4.0]);
        let saved = r.save();
        let mut into = (vec![0.0; 3], 0);
        r.save_into(&mut into);
        assert_eq!(into, saved);

        let mut s = Ring::<f32>::new(3);
        assert!(s.fits(&saved));
        s.load(&saved);
        assert_eq!(s.save(), saved);

        // Another length or an out-of-range position leaves the line as is.
        let mut t = Ring::<f64>::new(4);
        assert!(!t.fits(&saved));
        t.load(&saved);
        assert_eq!(t.save(), (vec![0.0; 4], 0));
        assert!(!s.fits(&(vec![0.0; 3], 3)));

        s.reset();
        assert_eq!(s.save(), (vec![0.0; 3], 0));
    }
}
