//! Per-node timing: while it is on, the block loop adds each node's wall
//! time to a counter allocated with the engine; [`NodeTime`] tables say
//! where a block's time went.

use super::lanes::Step;
use super::{Engine, Run};

/// Where one node's time went while per-node timing was on
/// ([`Engine::node_time_table`]).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeTime {
    /// Schedule index.
    pub(crate) index: usize,
    /// The node's id in the scene.
    pub id: String,
    /// The name of its operator.
    pub op: &'static str,
    /// Wall time in the node, its input gathering included.
    pub ns: u64,
    /// `ns` over the time of every node (0…1).
    pub share: f64,
    /// `ns` per frame of the timed blocks.
    pub ns_per_sample: f64,
    /// Iterative-solver steps since the engine was built or reset.
    pub iterations: u64,
}

impl NodeTime {
    /// The table of nodes given by schedule index as (id, op, ns,
    /// iterations), timed over `frames` frames: shares and times per
    /// sample filled in, most expensive first (ties in schedule order).
    pub(crate) fn table<'a>(
        nodes: impl Iterator<Item = (&'a str, &'static str, u64, u64)>,
        frames: u64,
    ) -> Vec<NodeTime> {
        let rows: Vec<(&str, &'static str, u64, u64)> = nodes.collect();
        let total: u64 = rows.iter().map(|r| r.2).sum();
        let per = |ns: u64, of: u64| if of == 0 { 0.0 } else { ns as f64 / of as f64 };
        let mut v: Vec<NodeTime> = rows
            .into_iter()
            .enumerate()
            .map(|(index, (id, op, ns, iterations))| NodeTime {
                index,
                id: id.to_string(),
                op,
                ns,
                share: per(ns, total),
                ns_per_sample: per(ns, frames),
                iterations,
            })
            .collect();
        v.sort_by(|a, b| b.ns.cmp(&a.ns).then(a.index.cmp(&b.index)));
        v
    }
}

impl Engine {
    /// Turns per-node timing on or off. While on, `process_block` adds the
    /// wall time each node takes (gathering its inputs included) to a
    /// counter per node, so a profile can say where a block's time goes;
    /// while off it costs one predictable branch per run of nodes. Real-time
    /// safe: the counters were allocated with the engine.
    pub fn set_node_timing(&mut self, on: bool) {
        self.node_timing = on;
    }
    /// Whether per-node timing is on.
    pub fn node_timing(&self) -> bool {
        self.node_timing
    }
    /// Nanoseconds each node (by schedule index) has spent while timing was
    /// on, since the engine was built or [`clear_node_times`](Self::clear_node_times).
    pub fn node_times_ns(&self) -> &[u64] {
        &self.node_ns
    }
    /// Zeroes the per-node time counters (timing stays as it is).
    pub fn clear_node_times(&mut self) {
        self.node_ns.iter_mut().for_each(|t| *t = 0);
        self.timed_frames = 0;
    }
    /// Frames processed while timing was on, the denominator of
    /// [`NodeTime::ns_per_sample`].
    pub fn timed_frames(&self) -> u64 {
        self.timed_frames
    }

    /// Every node's time while timing was on, most expensive first (ties in
    /// schedule order). Allocates: call it off the audio thread.
    pub fn node_time_table(&self) -> Vec<NodeTime> {
        let nodes = self.node_ns.iter().enumerate().map(|(i, &ns)| {
            (
                self.slots[i].id.as_str(),
                self.slots[i].op,
                ns,
                self.node_iterations(i),
            )
        });
        NodeTime::table(nodes, self.timed_frames)
    }

    /// A run of nodes with each node's wall time added to its counter.
    /// A lane group's time is shared equally among its members.
    #[inline(never)]
    pub(super) fn process_run_timed(&mut self, run: Run, pos: u64, n: usize) {
        let mut t0 = std::time::Instant::now();
        for k in run.steps.0..run.steps.1 {
            self.run_step(k, pos, n);
            // One clock read per step: each step's end is the next one's start.
            let t1 = std::time::Instant::now();
            let ns = t1.duration_since(t0).as_nanos() as u64;
            match self.steps[k] {
                Step::Slot(i) => self.node_ns[i] += ns,
                Step::Group(g) => {
                    let members = &self.groups[g].members;
                    let each = ns / members.len() as u64;
                    for &i in members {
                        self.node_ns[i] += each;
                    }
                }
            }
            t0 = t1;
        }
    }
}
