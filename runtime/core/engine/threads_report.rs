//! What the engine would spread over a pool of some size, from its own
//! levels, lane groups and voices and the same tests its block loop makes
//! (`parallel.rs`, `spread_groups.rs`): the plan `check --threads` and
//! `bench --threads` show.
//!
//! It is for a steady block: a chunk of the block size (or of the
//! shortest feedback delay, if that is shorter), every member of a lane
//! group ready for its kernel, every voice sounding. An event, a ramp or
//! a control in a chunk can keep a group on one thread for that chunk,
//! and silent voices are not spread; neither changes what is computed.

use super::lanes::Step;
use super::spread_groups::{parts_of, spans_of};
use super::Engine;

/// How the engine runs a chunk at some thread count.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadsReport {
    /// Threads in all, the caller's included.
    pub threads: usize,
    /// Frames of the chunk the decisions are for.
    pub frames: usize,
    /// The pool's threshold: what spreading must save over a chunk, in
    /// estimated ns, before it is worth waking the workers.
    pub min_work_ns: u64,
    /// The levels, run after run, in the order they run.
    pub levels: Vec<LevelReport>,
    /// The estimated cost of every node, ns per sample.
    pub total_ns: f64,
    /// The dearest node (or voice) of each level, added up: no thread
    /// count runs a sample faster.
    pub critical_ns: f64,
    /// The estimated cost per sample at `threads`: each level as long as
    /// its most loaded thread.
    pub spread_ns: f64,
}

impl ThreadsReport {
    /// Whether anything is spread: a level or a lane group.
    pub fn spreads(&self) -> bool {
        self.levels
            .iter()
            .any(|l| l.spread || l.groups.iter().any(|g| g.how != GroupSpread::OneThread))
    }

    /// `total_ns / spread_ns`: the speed-up the estimates promise (1 when
    /// nothing is spread).
    pub fn speedup(&self) -> f64 {
        if self.spreads() && self.spread_ns > 0.0 {
            self.total_ns / self.spread_ns
        } else {
            1.0
        }
    }
}

/// One level: nodes of one FP-mode run that never read each other, or a
/// run of a voice module.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelReport {
    /// What kind of level it is.
    pub kind: LevelKind,
    /// Its lane groups, run first.
    pub groups: Vec<GroupReport>,
    /// Its other nodes (schedule indices), in schedule order.
    pub nodes: Vec<usize>,
    /// The thread each of `nodes` is dealt to first (a thread done with
    /// its own share takes what is left of the others'); all 0 when the
    /// level is not spread.
    pub threads: Vec<usize>,
    /// Whether `nodes` are spread over the pool.
    pub spread: bool,
    /// What spreading `nodes` saves over a chunk, in estimated ns (for a
    /// voice module: what its voices cost).
    pub saves_ns: f64,
    /// What this level (and each of its groups) must save to be spread,
    /// in estimated ns over a chunk.
    pub threshold_ns: f64,
}

impl LevelReport {
    /// `nodes` run in schedule order on the engine's thread.
    fn schedule(nodes: Vec<usize>, min_work_ns: u64) -> LevelReport {
        LevelReport {
            kind: LevelKind::Schedule,
            groups: Vec::new(),
            threads: vec![0; nodes.len()],
            nodes,
            spread: false,
            saves_ns: 0.0,
            threshold_ns: min_work_ns as f64,
        }
    }
}

/// What a level is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LevelKind {
    /// Nodes that never read each other, run side by side when worth it.
    Level,
    /// The run holding a voice module's nodes, in schedule order on the
    /// engine's thread.
    Schedule,
    /// The voices of the engine's voice modules, one per step, each voice's
    /// nodes in order, when two or more sound; `nodes` are the voices'
    /// nodes, dealt voice by voice.
    Voices,
}

/// One lane group of a level and how it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupReport {
    /// Its members (schedule indices), in the order they run.
    pub members: Vec<usize>,
    /// The node its members are summed into, if the kernel sums them.
    pub sum: Option<usize>,
    /// The members' estimated cost, ns per sample.
    pub cost_ns: f64,
    /// What spreading it saves over a chunk, in estimated ns.
    pub saves_ns: f64,
    /// How it runs.
    pub how: GroupSpread,
    /// The thread each member is dealt to first (its part's); all 0 when
    /// it runs on one thread or is cut in time.
    pub threads: Vec<usize>,
}

/// How a lane group runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupSpread {
    /// On the engine's thread: splitting would save less than the
    /// threshold, or there is one thread.
    OneThread,
    /// Split into parts of `per` members, each one kernel call.
    Parts {
        /// Members per part.
        per: usize,
        /// Parts.
        parts: usize,
    },
    /// In steady chunks (no member changes), cut in time into `spans`
    /// spans of frames, each summing every member; otherwise on one
    /// thread.
    Spans {
        /// Spans of the chunk.
        spans: usize,
    },
}

/// The `k`-th of `threads` equal runs of `steps` steps that a step falls
/// in: the thread it is dealt to first (`workers.rs`).
fn dealt(step: usize, steps: usize, threads: usize) -> usize {
    (0..threads)
        .find(|&j| step < steps * (j + 1) / threads)
        .unwrap_or(0)
}

/// The most loaded thread's share when `costs` (one per step) are dealt
/// over `threads` threads as the pool deals them.
fn longest(costs: &[f64], threads: usize) -> f64 {
    let mut load = vec![0.0f64; threads.max(1)];
    for (k, c) in costs.iter().enumerate() {
        load[dealt(k, costs.len(), threads.max(1))] += c;
    }
    load.into_iter().fold(0.0, f64::max)
}

impl Engine {
    /// How this engine would run a steady block on a pool of `threads`
    /// threads whose threshold is `min_work_ns` (see the module docs).
    /// Allocates; reads only the plan.
    pub fn threads_report(&self, threads: usize, min_work_ns: u64) -> ThreadsReport {
        let threads = threads.max(1);
        let n = (self.block_size as u64).min(self.max_chunk).max(1) as usize;
        let cost = |i: usize| self.costs[i];
        let mut levels = Vec::new();
        let (mut critical_ns, mut spread_ns) = (0.0, 0.0);
        if self.split.eligible {
            // Two passes (`split.rs`): the voices, then every other node in
            // schedule order on the engine's thread.
            self.report_voices(threads, min_work_ns, &mut levels);
            let nodes = (0..self.slots.len()).filter(|&i| self.slots[i].voice.is_none());
            levels.push(LevelReport::schedule(nodes.collect(), min_work_ns));
        }
        let runs = if self.split.eligible {
            &[][..]
        } else {
            &self.runs[..]
        };
        for (r, run) in runs.iter().enumerate() {
            let (lo, hi) = self.levels.runs[r];
            if lo == hi {
                let nodes = (run.start..run.end).collect();
                levels.push(LevelReport::schedule(nodes, min_work_ns));
                continue;
            }
            let min_ns = self.threshold_at(threads, min_work_ns, r, n);
            for level in &self.levels.levels[lo..hi] {
                let mut groups = Vec::new();
                for &k in &level.groups {
                    let Step::Group(g) = self.steps[k] else {
                        continue;
                    };
                    let group = &self.groups[g];
                    let len = group.members.len();
                    let saves_ns = self.group_saves(g, threads, n);
                    let worth = threads >= 2 && saves_ns >= min_ns;
                    let spans = spans_of(n, threads, self.levels.parts.len());
                    let how = if worth && self.has_steady(g) && self.may_span(g) && spans > 0 {
                        GroupSpread::Spans { spans }
                    } else if worth && self.may_split(g, threads) {
                        let (per, parts) = parts_of(len, threads);
                        GroupSpread::Parts { per, parts }
                    } else {
                        GroupSpread::OneThread
                    };
                    let threads_of = match how {
                        GroupSpread::Parts { per, parts } => {
                            (0..len).map(|j| dealt(j / per, parts, threads)).collect()
                        }
                        _ => vec![0; len],
                    };
                    groups.push(GroupReport {
                        members: group.members.clone(),
                        sum: group.sum.map(|(c, _)| c),
                        cost_ns: self.levels.group_costs[g],
                        saves_ns,
                        how,
                        threads: threads_of,
                    });
                }
                let spread = threads >= 2 && level.spreads(n, min_ns);
                let count = level.nodes.len();
                let threads_of: Vec<usize> = if spread {
                    (0..count).map(|k| dealt(k, count, threads)).collect()
                } else {
                    vec![0; count]
                };
                levels.push(LevelReport {
                    kind: LevelKind::Level,
                    groups,
                    nodes: level.nodes.clone(),
                    threads: threads_of,
                    spread,
                    saves_ns: level.spread_ns * n as f64,
                    threshold_ns: min_ns,
                });
            }
        }
        for level in &levels {
            let members = level.groups.iter().flat_map(|g| g.members.iter());
            let dearest = match level.kind {
                LevelKind::Voices => self.voice_costs().into_iter().fold(0.0, f64::max),
                LevelKind::Schedule => level.nodes.iter().map(|&i| cost(i)).sum(),
                LevelKind::Level => level
                    .nodes
                    .iter()
                    .chain(members)
                    .map(|&i| cost(i))
                    .fold(0.0, f64::max),
            };
            critical_ns += dearest;
            for g in &level.groups {
                spread_ns += match g.how {
                    GroupSpread::OneThread => g.cost_ns,
                    GroupSpread::Parts { per, parts } => {
                        let part = |p: usize| -> f64 {
                            g.members[p * per..((p + 1) * per).min(g.members.len())]
                                .iter()
                                .map(|&i| cost(i))
                                .sum()
                        };
                        longest(&(0..parts).map(part).collect::<Vec<_>>(), threads)
                    }
                    GroupSpread::Spans { spans } => {
                        g.cost_ns * longest(&vec![1.0; spans], threads) / spans as f64
                    }
                };
            }
            spread_ns += match (level.kind, level.spread) {
                (LevelKind::Voices, true) => longest(&self.voice_costs(), threads),
                (LevelKind::Level, true) => longest(
                    &level.nodes.iter().map(|&i| cost(i)).collect::<Vec<_>>(),
                    threads,
                ),
                _ => level.nodes.iter().map(|&i| cost(i)).sum(),
            };
        }
        ThreadsReport {
            threads,
            frames: n,
            min_work_ns,
            levels,
            total_ns: self.costs.iter().sum(),
            critical_ns,
            spread_ns,
        }
    }

    /// Each voice's estimated cost, ns per sample (two-pass engines).
    fn voice_costs(&self) -> Vec<f64> {
        self.split
            .nodes
            .iter()
            .map(|v| v.iter().map(|&i| self.costs[i]).sum())
            .collect()
    }

    /// The voices of a two-pass engine as one level: spread, one voice
    /// per step, when every voice sounding is worth it
    /// (`Engine::spread_voices`).
    fn report_voices(&self, threads: usize, min_work_ns: u64, levels: &mut Vec<LevelReport>) {
        let voices = &self.split.nodes;
        let costs = self.voice_costs();
        let work: f64 = costs.iter().sum::<f64>() * self.block_size as f64;
        let spread = threads >= 2 && voices.len() >= 2 && work >= min_work_ns as f64;
        let (mut nodes, mut threads_of) = (Vec::new(), Vec::new());
        for (f, voice) in voices.iter().enumerate() {
            let t = if spread {
                dealt(f, voices.len(), threads)
            } else {
                0
            };
            nodes.extend_from_slice(voice);
            threads_of.extend(std::iter::repeat_n(t, voice.len()));
        }
        levels.push(LevelReport {
            kind: LevelKind::Voices,
            groups: Vec::new(),
            nodes,
            threads: threads_of,
            spread,
            saves_ns: work,
            threshold_ns: min_work_ns as f64,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::spread_groups::tests::{chains, engine, sines};
    use crate::profile::Profile;

    /// Plays `warm` blocks of `e`, then `blocks` more, and checks that in
    /// those the engine spread exactly what its report at its pool's size
    /// and threshold says, block after block: the levels, the groups split
    /// in parts and the steady groups cut into spans.
    fn runs_as_reported(e: &mut Engine, warm: usize, blocks: u64) -> ThreadsReport {
        let w = e.workers().expect("a pool").clone();
        let report = e.threads_report(w.threads(), w.min_work_ns());
        for _ in 0..warm {
            e.process_block(e.block_size());
        }
        let before = (e.levels.spread, e.levels.split, e.levels.spans);
        for _ in 0..blocks {
            e.process_block(e.block_size());
        }
        let ran = (
            e.levels.spread - before.0,
            e.levels.split - before.1,
            e.levels.spans - before.2,
        );
        let groups = |how: fn(&GroupSpread) -> bool| {
            let count = report
                .levels
                .iter()
                .flat_map(|l| &l.groups)
                .filter(|g| how(&g.how))
                .count();
            count as u64 * blocks
        };
        let split = groups(|h| matches!(h, GroupSpread::Parts { .. }));
        let spans = groups(|h| matches!(h, GroupSpread::Spans { .. }));
        let levels = report.levels.iter().filter(|l| l.spread).count() as u64 * blocks;
        assert_eq!(ran, (levels + split + spans, split, spans), "{report:#?}");
        report
    }

    /// The report at a threshold, for the chains of `chains(40)` at block
    /// 256 on two threads.
    fn chains_at(min_work_ns: u64) -> (Engine, ThreadsReport) {
        let mut e = engine(&chains(40), Profile::Live, 256, 2);
        e.workers().unwrap().set_min_work_ns(min_work_ns);
        let r = runs_as_reported(&mut e, 2, 5);
        (e, r)
    }

    fn hows(r: &ThreadsReport) -> Vec<GroupSpread> {
        r.levels
            .iter()
            .flat_map(|l| &l.groups)
            .map(|g| g.how)
            .collect()
    }

    #[test]
    fn lane_groups_are_split_exactly_where_the_report_says() {
        let (e, r) = chains_at(0);
        let parts = GroupSpread::Parts { per: 20, parts: 2 };
        assert_eq!(hows(&r), [parts, parts]);
        assert_eq!(r.levels[0].groups[0].threads, [[0; 20], [1; 20]].concat());
        // What the bandpasses save split in two: half their work.
        let bandpasses = r.levels[1].groups[0].saves_ns;
        assert_eq!(bandpasses, e.levels.group_costs[1] * 256.0 / 2.0);
        // Just over it, neither group is split; the report promises nothing.
        let (_, r) = chains_at(bandpasses.ceil() as u64 + 1);
        assert_eq!(hows(&r), [GroupSpread::OneThread; 2]);
        assert_eq!(r.speedup(), 1.0);
        assert!(r.levels.iter().all(|l| !l.spread));
        // All but the dearest bandpass is over such a threshold: a plan
        // that counted that as the saving would promise a split the
        // engine does not make.
        let (_, r) = chains_at((bandpasses * 1.5) as u64);
        assert_eq!(hows(&r), [GroupSpread::OneThread; 2]);
        let (_, r) = chains_at(bandpasses.floor() as u64);
        assert_eq!(hows(&r), [parts, parts]);
        assert!(r.speedup() > 1.5, "{}", r.speedup());
    }

    #[test]
    fn steady_groups_are_cut_in_time_where_the_report_says() {
        // The retune lands in the first block; the group is steady after.
        let mut e = engine(&sines(150, 0.001), Profile::Live, 64, 2);
        e.workers().unwrap().set_min_work_ns(0);
        let r = runs_as_reported(&mut e, 4, 20);
        assert_eq!(hows(&r), [GroupSpread::Spans { spans: 2 }]);
        let mut e = engine(&sines(150, 0.001), Profile::Live, 64, 2);
        e.workers().unwrap().set_min_work_ns(u64::MAX);
        let r = runs_as_reported(&mut e, 4, 20);
        assert_eq!(hows(&r), [GroupSpread::OneThread]);
        assert_eq!(r.speedup(), 1.0);
    }

    #[test]
    fn levels_of_plain_nodes_are_spread_where_the_report_says() {
        let text = include_str!("../../../scenes/dub-chain.json");
        for (min, spread) in [(0, true), (crate::engine::MIN_WORK_NS, false)] {
            let mut e = engine(text, Profile::Repro, 64, 3);
            e.workers().unwrap().set_min_work_ns(min);
            let r = runs_as_reported(&mut e, 2, 10);
            assert_eq!(r.levels.iter().any(|l| l.spread), spread, "threshold {min}");
            // Every node is in the report once.
            let mut seen: Vec<usize> = r
                .levels
                .iter()
                .flat_map(|l| {
                    l.nodes
                        .iter()
                        .chain(l.groups.iter().flat_map(|g| &g.members))
                })
                .copied()
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..e.slots.len()).collect::<Vec<_>>());
            assert!(r.critical_ns < r.total_ns && r.spread_ns <= r.total_ns);
        }
    }

    #[test]
    fn voices_are_one_level_spread_when_their_work_reaches_the_threshold() {
        let text = include_str!("../../../scenes/poly-pad.json");
        let mut e = engine(text, Profile::Live, 256, 2);
        e.workers().unwrap().set_min_work_ns(0);
        let r = e.threads_report(2, 0);
        assert_eq!(r.levels[0].kind, LevelKind::Voices);
        assert!(r.levels[0].spread);
        assert_eq!(r.levels[1].kind, LevelKind::Schedule);
        let voices = e.split.nodes.len();
        let dealt = |t| {
            e.split
                .nodes
                .iter()
                .enumerate()
                .filter(|(f, _)| dealt(*f, voices, 2) == t)
                .count()
        };
        assert_eq!((dealt(0), dealt(1)), (voices / 2, voices - voices / 2));
        for _ in 0..40 {
            e.process_block(256);
        }
        assert!(e.levels.spread > 0, "the voices ran spread");
        let r = e.threads_report(2, u64::MAX);
        assert!(
            !r.levels[0].spread && r.speedup() == 1.0,
            "{} {} {}",
            r.levels[0].spread,
            r.total_ns,
            r.spread_ns
        );
    }

    #[test]
    fn steps_are_dealt_in_equal_runs_as_the_pool_deals_them() {
        let to: Vec<usize> = (0..7).map(|k| dealt(k, 7, 3)).collect();
        assert_eq!(to, [0, 0, 1, 1, 2, 2, 2]);
        assert_eq!(longest(&[1.0, 2.0, 3.0, 4.0], 2), 7.0);
        assert_eq!(longest(&[5.0], 4), 5.0);
    }
}
