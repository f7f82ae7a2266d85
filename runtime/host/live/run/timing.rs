//! The `t` key: per-node timing of the playing engine, off by default
//! (it reads the clock once per node per chunk). The first `t` turns it on
//! through [`Switches::node_timing`], which the callback reads once per
//! block, zeroing the counters as it starts; the second turns it off and
//! prints where the time went meanwhile, from a copy the callback makes
//! into a buffer sent from here ([`TimingLink`]). The final summary shows
//! the table when timing is still on at the end, else how to turn it on.

use crate::engine::NodeTime;
use crate::host::live::player::{Meters, NodeTimes, Switches, TimingLink};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Nodes the `t` table lists, most expensive first.
const TABLE_NODES: usize = 10;

/// The control side of per-node timing.
pub(super) struct NodeTiming {
    controls: Arc<Switches>,
    meters: Arc<Meters>,
    link: TimingLink,
    sample_rate: u32,
    /// While timing is on: the swaps done when it was turned on.
    on_since: Option<u64>,
    /// The swaps done when the times asked for were turned on.
    asked_since: u64,
    /// A buffer for the next request, sized by the last answer.
    spare: Option<Box<NodeTimes>>,
}

impl NodeTiming {
    pub(super) fn new(
        controls: Arc<Switches>,
        meters: Arc<Meters>,
        link: TimingLink,
        sample_rate: u32,
    ) -> NodeTiming {
        NodeTiming {
            controls,
            meters,
            link,
            sample_rate,
            on_since: None,
            asked_since: 0,
            spare: None,
        }
    }

    /// Whether timing is on (as asked; the callback follows within a block).
    pub(super) fn is_on(&self) -> bool {
        self.on_since.is_some()
    }

    /// Whether a swap happened since timing was turned on: the times are
    /// then those of the engine playing since that swap.
    pub(super) fn swapped_since_on(&self) -> bool {
        self.on_since
            .is_some_and(|s| self.meters.swaps.load(Ordering::Relaxed) > s)
    }

    /// `t`: turns timing on, or off and asks for the table.
    pub(super) fn toggle(&mut self, log: &mut dyn Write) {
        let swaps = self.meters.swaps.load(Ordering::Relaxed);
        match self.on_since.take() {
            None => {
                self.controls.node_timing.store(true, Ordering::Relaxed);
                self.on_since = Some(swaps);
                let _ = writeln!(
                    log,
                    "\nper-node timing on; `t` again turns it off and shows where the time went"
                );
            }
            Some(since) => {
                self.controls.node_timing.store(false, Ordering::Relaxed);
                self.asked_since = since;
                let buf = self
                    .spare
                    .take()
                    .unwrap_or_else(|| NodeTimes::with_capacity(64, 1024));
                // A request still in flight answers this one too.
                if let Err(buf) = self.link.request(buf) {
                    self.spare = Some(buf);
                }
            }
        }
    }

    /// Prints the table once the callback has copied it; asks again with
    /// a larger buffer when it did not fit.
    pub(super) fn poll(&mut self, log: &mut dyn Write) {
        let Some(times) = self.link.receive() else {
            return;
        };
        if !times.complete() {
            if let Err(buf) = self.link.request(times.grown()) {
                self.spare = Some(buf);
            }
            return;
        }
        let swapped = self.meters.swaps.load(Ordering::Relaxed) > self.asked_since;
        let _ = writeln!(
            log,
            "\nper-node timing off after {:.2} s of audio{}",
            times.frames() as f64 / self.sample_rate as f64,
            if swapped {
                " (since the last swap)"
            } else {
                ""
            }
        );
        let table = times.table();
        let line = top_nodes_line(&table, TABLE_NODES)
            .unwrap_or_else(|| "no node time was measured".to_string());
        let _ = writeln!(log, "{line}");
        self.spare = Some(times);
    }
}

/// `nodes by time: lp (biquad) 61.2 % (12.0 ns/sample), …`: the `k`
/// most expensive nodes of a table; `None` when nothing was timed.
pub fn top_nodes_line(table: &[NodeTime], k: usize) -> Option<String> {
    if table.iter().all(|t| t.ns == 0) {
        return None;
    }
    let parts: Vec<String> = table
        .iter()
        .take(k)
        .map(|t| {
            format!(
                "{} ({}) {:.1} % ({:.1} ns/sample)",
                t.id,
                t.op,
                t.share * 100.0,
                t.ns_per_sample
            )
        })
        .collect();
    Some(format!("nodes by time: {}", parts.join(", ")))
}
