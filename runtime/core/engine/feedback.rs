//! Feedback edges' write side: after every chunk of the block loop, each
//! feedback edge's source output goes into its destination's delay line,
//! which the destination reads (before its source runs) in later chunks.

use super::{Core, Engine};
use crate::dsp::fpmode::FpGuard;
use crate::graph::SourceRef;

/// A feedback edge's write side: after every chunk, its source's output
/// goes into the delay line `ring` of slot `dst`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Feed {
    pub(super) dst: usize,
    pub(super) ring: usize,
    pub(super) src: SourceRef,
}

impl Engine {
    /// Writes each feedback edge's source output of the chunk just run
    /// into its delay line, for the chunks `delay` samples on. A change of
    /// precision converts under the destination's FP mode, as any edge
    /// into it does. Real-time safe: copies only.
    pub(super) fn feed_back(&mut self, guard: &FpGuard, n: usize) {
        for f in 0..self.feeds.len() {
            let Feed { dst, ring, src } = self.feeds[f];
            if self.slots[dst].voice.is_some() && self.voice_idle(dst) {
                // A voice not running is being cleared or clean: nothing
                // enters its lines until it plays again.
                continue;
            }
            if src.node == dst {
                // A node feeding itself: disjoint fields of one node.
                match &mut self.slots[dst].core {
                    Core::F32(t) => t.rings[ring].write(&t.outs[src.port][..n]),
                    Core::F64(t) => t.rings[ring].write(&t.outs[src.port][..n]),
                }
                continue;
            }
            let (from, to) = if src.node < dst {
                let (lo, hi) = self.slots.split_at_mut(dst);
                (&lo[src.node], &mut hi[0])
            } else {
                let (lo, hi) = self.slots.split_at_mut(src.node);
                (&hi[0], &mut lo[dst])
            };
            let converts = from.precision() != to.precision();
            if converts {
                guard.set_flush(to.flush);
            }
            match (&from.core, &mut to.core) {
                (Core::F32(a), Core::F32(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
                (Core::F32(a), Core::F64(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
                (Core::F64(a), Core::F32(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
                (Core::F64(a), Core::F64(b)) => b.rings[ring].write(&a.outs[src.port][..n]),
            }
        }
    }
}
