//! Mixing: how a node's incoming edges are summed into its input and
//! modulation buffers (the plan's fixed summing order, precision
//! conversion, latency-alignment delays, feedback lines read ahead of their
//! source), and how the main bus gathers its sources after each chunk.

use super::{Core, Engine, Ring, Slot};
use crate::dsp::{Precision, Sample};
use crate::graph::SourceRef;

/// An incoming edge as the engine runs it.
#[derive(Clone, Copy, Debug)]
pub(super) struct EdgeIn {
    pub(super) src: SourceRef,
    /// Index into the destination's `rings`, or `NO_RING`.
    pub(super) ring: usize,
    /// The source is a voice's sound node that holds the whole block at
    /// block offsets while the voices run their own chunks (`split.rs`):
    /// a chunk reads it at its offset in the block.
    pub(super) staged: bool,
}

pub(super) const NO_RING: usize = usize::MAX;

/// The nodes scheduled before the one being gathered, which its
/// (non-feedback) edges read: a slice on the engine's own thread, or the
/// engine's slots seen from a worker, where only the node's sources, which
/// no thread writes while it runs, are ever read (`parallel.rs`).
#[derive(Clone, Copy)]
pub(super) struct Sources<'a> {
    base: *const Slot,
    len: usize,
    _slots: std::marker::PhantomData<&'a [Slot]>,
}

impl<'a> Sources<'a> {
    /// The slots of `before`.
    #[inline]
    pub(super) fn of(before: &'a [Slot]) -> Sources<'a> {
        Sources {
            base: before.as_ptr(),
            len: before.len(),
            _slots: std::marker::PhantomData,
        }
    }

    /// The first `len` slots from `base`, as a worker sees them.
    ///
    /// # Safety
    /// Every slot [`get`](Self::get) is asked for must stay valid and
    /// unwritten for `'a`: the sources of a node running in a level are in
    /// earlier levels, which no thread writes while the level runs.
    #[inline]
    pub(super) unsafe fn from_raw(base: *const Slot, len: usize) -> Sources<'a> {
        Sources {
            base,
            len,
            _slots: std::marker::PhantomData,
        }
    }

    /// Slot `i` (`i` below the count given).
    #[inline]
    pub(super) fn get(&self, i: usize) -> &'a Slot {
        assert!(i < self.len, "a source is scheduled before its reader");
        // SAFETY: `i` is in bounds; the constructors' contracts say the
        // slot is valid and unwritten for `'a`.
        unsafe { &*self.base.add(i) }
    }
}

impl Engine {
    /// Writes the `n` frames just run of each main-bus source into its
    /// channel at `offset` (the bus converts precision and aligns); a
    /// staged source is read at [`Engine::stage_at`].
    pub(super) fn gather_main(&mut self, offset: usize, n: usize) {
        for (c, src) in self.main.iter().enumerate() {
            let s = &self.slots[src.node];
            let at = if self.split.main_staged(c) {
                self.stage_at
            } else {
                0
            };
            match &s.core {
                Core::F32(t) => self.bus.write(c, offset, &t.outs[src.port][at..at + n]),
                Core::F64(t) => self.bus.write(c, offset, &t.outs[src.port][at..at + n]),
            }
        }
    }
}

/// Copies (first source) or adds (the rest) each source into `dst`,
/// converting precision and applying alignment delays. The order is the
/// plan's fixed summing order: `dst = ((s0 + s1) + s2) + …` per sample.
/// Consecutive undelayed sources at `dst`'s precision are added
/// [`FAN`] per pass over the block (the same sums in the same order, with
/// one load and store of `dst` per group instead of per source). A staged
/// source ([`EdgeIn::staged`]) is read from offset `at` of its outputs,
/// any other from 0.
#[inline]
pub(super) fn gather<S: Sample>(
    dst: &mut [S],
    edges: &[EdgeIn],
    before: Sources<'_>,
    rings: &mut [Ring<S>],
    tmp: &mut [S],
    at: usize,
) {
    let n = dst.len();
    let mut k = 0;
    while k < edges.len() {
        let mut group: [&[S]; FAN] = [&[]; FAN];
        let mut len = 0;
        while len < FAN && k + len < edges.len() {
            match same_precision_source::<S>(&edges[k + len], before, n, at) {
                Some(src) => group[len] = src,
                None => break,
            }
            len += 1;
        }
        if len > 1 {
            add_group(dst, &group[..len], k == 0);
            k += len;
            continue;
        }
        let e = edges[k];
        let src = e.src;
        let from = if e.staged { at } else { 0 };
        let span = from..from + n;
        if src.is_feedback() {
            // The source may run later: read its past from the line.
            let tmp = &mut tmp[..n];
            rings[e.ring].read(tmp);
            add_into(dst, tmp, k == 0);
        } else if e.ring == NO_RING {
            match &before.get(src.node).core {
                Core::F32(t) => add_into(dst, &t.outs[src.port][span], k == 0),
                Core::F64(t) => add_into(dst, &t.outs[src.port][span], k == 0),
            }
        } else {
            let tmp = &mut tmp[..n];
            match &before.get(src.node).core {
                Core::F32(t) => add_into(tmp, &t.outs[src.port][span], true),
                Core::F64(t) => add_into(tmp, &t.outs[src.port][span], true),
            }
            rings[e.ring].process(tmp);
            add_into(dst, tmp, k == 0);
        }
        k += 1;
    }
}

/// Sources summed per pass over the block in [`gather`].
const FAN: usize = 8;

/// An undelayed edge's source block when it is at precision `S` (a staged
/// source's from offset `at`).
#[inline]
fn same_precision_source<'a, S: Sample>(
    e: &EdgeIn,
    before: Sources<'a>,
    n: usize,
    at: usize,
) -> Option<&'a [S]> {
    if e.ring != NO_RING || e.src.is_feedback() {
        return None;
    }
    let out: &dyn std::any::Any = match &before.get(e.src.node).core {
        Core::F32(t) => &t.outs[e.src.port],
        Core::F64(t) => &t.outs[e.src.port],
    };
    let from = if e.staged { at } else { 0 };
    out.downcast_ref::<Vec<S>>().map(|v| &v[from..from + n])
}

/// `dst = dst + s0 + s1 + …` left to right per sample (`first`: `dst` is
/// not read, `dst = s0 + s1 + …`), four sources per pass.
#[inline]
fn add_group<S: Sample>(dst: &mut [S], srcs: &[&[S]], first: bool) {
    let n = dst.len();
    let rest = if first {
        dst.copy_from_slice(&srcs[0][..n]);
        &srcs[1..]
    } else {
        srcs
    };
    for quad in rest.chunks(4) {
        if let [a, b, c, e] = quad {
            let sums = dst
                .iter_mut()
                .zip(&a[..n])
                .zip(&b[..n])
                .zip(&c[..n])
                .zip(&e[..n]);
            for ((((d, a), b), c), e) in sums {
                *d = (((*d + *a) + *b) + *c) + *e;
            }
        } else {
            for src in quad {
                for (d, x) in dst.iter_mut().zip(&src[..n]) {
                    *d += *x;
                }
            }
        }
    }
}

#[inline]
fn add_into<S: Sample, T: Sample>(dst: &mut [S], src: &[T], first: bool) {
    if first {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = convert(*s);
        }
    } else {
        for (d, s) in dst.iter_mut().zip(src) {
            *d += convert::<S, T>(*s);
        }
    }
}

/// Precision conversion: exact widening, round-to-nearest narrowing that
/// saturates at ±f32::MAX (a finite f64 beyond f32's range must not become
/// an infinity inside the next node's state).
#[inline(always)]
pub(crate) fn convert<S: Sample, T: Sample>(x: T) -> S {
    match (T::PRECISION, S::PRECISION) {
        (Precision::F32, _) => S::from_f32(x.to_f32()),
        (Precision::F64, Precision::F64) => S::from_f64(x.to_f64()),
        (Precision::F64, Precision::F32) => {
            let max = f32::MAX as f64;
            S::from_f64(x.to_f64().clamp(-max, max))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn convert_widens_exactly_and_narrows_saturating() {
        let x = 0.1f32;
        assert_eq!(convert::<f64, f32>(x), x as f64);
        assert_eq!(convert::<f32, f64>(0.1), 0.1f32);
        assert_eq!(convert::<f32, f64>(1e300), f32::MAX);
        assert_eq!(convert::<f32, f64>(-1e300), -f32::MAX);
        assert_eq!(convert::<f32, f64>(f64::INFINITY), f32::MAX);
        assert!(convert::<f32, f64>(f64::NAN).is_nan());
        assert_eq!(convert::<f64, f64>(1e300), 1e300);
    }

    #[test]
    fn add_group_sums_in_the_plans_order() {
        // Values whose sums round differently in another order.
        let srcs: Vec<Vec<f64>> = (0..FAN)
            .map(|k| {
                (0..7)
                    .map(|i| {
                        [1.0, 1e16, 1e32][k % 3]
                            * (0.1 + i as f64)
                            * if k % 2 == 0 { 1.0 } else { -1.0 }
                    })
                    .collect()
            })
            .collect();
        for len in 2..=FAN {
            let group: Vec<&[f64]> = srcs[..len].iter().map(|v| &v[..]).collect();
            for first in [true, false] {
                let start: Vec<f64> = (0..7).map(|i| 0.3 * i as f64).collect();
                let mut want = start.clone();
                for (k, src) in group.iter().enumerate() {
                    add_into(&mut want, src, first && k == 0);
                }
                let mut got = start;
                add_group(&mut got, &group, first);
                assert_eq!(
                    got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    "{len} sources, first: {first}"
                );
            }
        }
    }
}
