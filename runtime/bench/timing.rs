//! Timing an engine offline: the real-time factor of whole runs, the time
//! of every block against its deadline, and where the time goes per node.
//!
//! Blocks are timed one by one because an audio thread fails on its worst
//! block, not its average. Per-node times come from a separate run with the
//! engine's node timers on, so the timers' own cost never enters the
//! real-time factor or the block percentiles.

use crate::engine::Engine;
use serde::Serialize;
use std::time::{Duration, Instant};

/// Runs `engine` for `frames` frames in whole blocks (the last may be
/// short), recording each `process_block`'s wall time in nanoseconds into
/// `times` (appended). Returns the wall time of the whole run.
pub fn time_blocks(engine: &mut Engine, frames: u64, times: &mut Vec<u64>) -> Duration {
    let block = engine.block_size() as u64;
    times.reserve(frames.div_ceil(block) as usize);
    let mut sink = 0.0;
    let start = Instant::now();
    let mut done = 0;
    while done < frames {
        let n = block.min(frames - done) as usize;
        let t0 = Instant::now();
        engine.process_block(n);
        times.push(t0.elapsed().as_nanos() as u64);
        // Read the output so the work cannot be skipped.
        sink += engine.bus().get(0, 0);
        done += n as u64;
    }
    let wall = start.elapsed();
    std::hint::black_box(sink);
    wall
}

/// The value at or under which a fraction `q` of `sorted` lies (nearest
/// rank); 0 for an empty slice.
pub fn percentile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The middle of `v` (the mean of the two middle values for an even count).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// Per-block times against the block's real-time deadline, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BlockStats {
    /// `block_size / sample_rate`: the longest a block may take in real time.
    pub deadline_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    /// Blocks timed (all runs together).
    pub blocks: usize,
    /// Blocks that took longer than the deadline.
    pub over_deadline: usize,
}

impl BlockStats {
    /// Summarises block times in nanoseconds (sorted in place).
    pub fn from_times(times: &mut [u64], block_size: usize, sample_rate: u32) -> BlockStats {
        times.sort_unstable();
        let deadline_ns = block_size as f64 * 1e9 / sample_rate as f64;
        let us = |ns: u64| ns as f64 / 1e3;
        BlockStats {
            deadline_us: deadline_ns / 1e3,
            p50_us: us(percentile(times, 0.50)),
            p95_us: us(percentile(times, 0.95)),
            p99_us: us(percentile(times, 0.99)),
            max_us: us(times.last().copied().unwrap_or(0)),
            blocks: times.len(),
            over_deadline: times.iter().filter(|&&t| t as f64 > deadline_ns).count(),
        }
    }

    /// p99 as a fraction of the deadline.
    pub fn p99_load(&self) -> f64 {
        self.p99_us / self.deadline_us
    }
}

/// Real-time factor: seconds of audio rendered per second of wall time
/// (above 1 is faster than real time).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Rtf {
    /// The slowest run.
    pub min: f64,
    pub median: f64,
    /// Every run, in order.
    pub runs: Vec<f64>,
}

/// One node's line of the per-node table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeRow {
    pub id: String,
    pub op: String,
    /// Of the time spent in nodes (0…1); input gathering counts for the
    /// node that reads the inputs.
    pub share: f64,
    pub ns_per_sample: f64,
    /// Iterative-solver steps during the profiling run.
    pub iterations: u64,
}

/// The nodes of one operator together: where a scene with many small
/// nodes spends its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpRow {
    pub op: String,
    /// How many nodes run this operator.
    pub nodes: usize,
    /// Sums over those nodes.
    pub share: f64,
    pub ns_per_sample: f64,
    pub iterations: u64,
}

/// A lane group of the timed engine: nodes of one operator run through one
/// kernel call (their time is split evenly among them).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupRow {
    pub op: String,
    pub nodes: usize,
}

/// Sums `nodes` by operator, most expensive first (ties by name).
pub fn by_op(nodes: &[NodeRow]) -> Vec<OpRow> {
    let mut ops: Vec<OpRow> = Vec::new();
    for n in nodes {
        match ops.iter_mut().find(|o| o.op == n.op) {
            Some(o) => {
                o.nodes += 1;
                o.share += n.share;
                o.ns_per_sample += n.ns_per_sample;
                o.iterations += n.iterations;
            }
            None => ops.push(OpRow {
                op: n.op.clone(),
                nodes: 1,
                share: n.share,
                ns_per_sample: n.ns_per_sample,
                iterations: n.iterations,
            }),
        }
    }
    ops.sort_by(|a, b| b.share.total_cmp(&a.share).then_with(|| a.op.cmp(&b.op)));
    ops
}

/// A complete timing.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Timing {
    pub runs: usize,
    pub frames_per_run: u64,
    pub seconds_per_run: f64,
    pub rtf: Rtf,
    pub block: BlockStats,
    /// Every node, most expensive first (from the profiling run).
    pub nodes: Vec<NodeRow>,
    /// The same, summed by operator.
    pub ops: Vec<OpRow>,
    /// The engine's lane groups, in schedule order of their first node.
    pub lane_groups: Vec<GroupRow>,
    /// Of the profiling run's block time, the part outside every node:
    /// events, ramps, FP-mode switches, the main bus.
    pub outside_nodes_share: f64,
    /// Blocks in which a node produced NaN/Inf (replaced by silence), over
    /// every run: a timing of a broken scene is worth a warning.
    pub nan_events: u64,
}

/// Times `engine` over `runs` runs of `frames` frames (each from a reset),
/// then one more run with per-node timers. Progress goes to `log`.
pub fn time_engine(
    engine: &mut Engine,
    frames: u64,
    runs: usize,
    log: &mut dyn std::io::Write,
) -> Timing {
    let sr = engine.sample_rate();
    let block = engine.block_size();
    let seconds = frames as f64 / sr as f64;
    let mut times = Vec::new();
    let mut rtf = Vec::with_capacity(runs);
    let mut nan_events = 0;
    for r in 0..runs {
        engine.reset();
        let wall = time_blocks(engine, frames, &mut times);
        nan_events += engine.stats().nan_events;
        let x = seconds / wall.as_secs_f64().max(1e-12);
        let _ = writeln!(log, "timing: run {}/{runs}: {x:.2}x real time", r + 1);
        rtf.push(x);
    }
    let stats = BlockStats::from_times(&mut times, block, sr);
    // The profiling run: node timers on.
    engine.reset();
    engine.clear_node_times();
    engine.set_node_timing(true);
    let mut profile_times = Vec::new();
    time_blocks(engine, frames, &mut profile_times);
    engine.set_node_timing(false);
    let in_blocks: u64 = profile_times.iter().sum();
    let table = engine.node_time_table();
    let in_nodes: u64 = table.iter().map(|t| t.ns).sum();
    let nodes: Vec<NodeRow> = table
        .into_iter()
        .map(|t| NodeRow {
            id: t.id,
            op: t.op.to_string(),
            share: t.share,
            ns_per_sample: t.ns_per_sample,
            iterations: t.iterations,
        })
        .collect();
    Timing {
        runs,
        frames_per_run: frames,
        seconds_per_run: seconds,
        rtf: Rtf {
            min: rtf.iter().copied().fold(f64::INFINITY, f64::min),
            median: median(&rtf),
            runs: rtf,
        },
        block: stats,
        ops: by_op(&nodes),
        lane_groups: engine
            .lane_groups()
            .iter()
            .map(|g| GroupRow {
                op: engine.node_op(g[0]).to_string(),
                nodes: g.len(),
            })
            .collect(),
        nodes,
        outside_nodes_share: if in_blocks == 0 {
            0.0
        } else {
            in_blocks.saturating_sub(in_nodes) as f64 / in_blocks as f64
        },
        nan_events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 0.5), 50);
        assert_eq!(percentile(&v, 0.99), 99);
        assert_eq!(percentile(&v, 1.0), 100);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[], 0.5), 0);
        assert_eq!(percentile(&[7], 0.99), 7);
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn nodes_sum_by_operator() {
        let row = |id: &str, op: &str, share: f64| NodeRow {
            id: id.to_string(),
            op: op.to_string(),
            share,
            ns_per_sample: share * 10.0,
            iterations: 1,
        };
        let ops = by_op(&[
            row("a", "sine", 0.25),
            row("lp", "biquad", 0.375),
            row("b", "sine", 0.25),
            row("g", "gain", 0.125),
        ]);
        let got: Vec<(&str, usize, f64, u64)> = ops
            .iter()
            .map(|o| (o.op.as_str(), o.nodes, o.share, o.iterations))
            .collect();
        assert_eq!(
            got,
            [
                ("sine", 2, 0.5, 2),
                ("biquad", 1, 0.375, 1),
                ("gain", 1, 0.125, 1)
            ]
        );
        assert_eq!(ops[0].ns_per_sample, 5.0);
    }

    #[test]
    fn block_stats_count_blocks_over_the_deadline() {
        // Block 48 at 48 kHz: a 1 ms deadline.
        let mut t = vec![2_000_000, 100_000, 200_000, 300_000];
        let s = BlockStats::from_times(&mut t, 48, 48000);
        assert_eq!(s.deadline_us, 1000.0);
        assert_eq!(s.blocks, 4);
        assert_eq!(s.over_deadline, 1);
        assert_eq!(s.max_us, 2000.0);
        assert_eq!(s.p50_us, 200.0);
        assert_eq!(s.p99_load(), 2.0);
    }
}
