//! The plan `check --threads N` shows: which nodes may run side by side
//! (the graph's levels), the critical path and the speed-up the operators'
//! cost estimates promise at N threads.

use super::{node_cost_ns, Plan};

/// The levels of a plan and what they promise at some thread count.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadsPlan {
    /// Schedule indices by level: a node's level is one more than the
    /// highest level among the nodes it reads (feedback edges aside, which
    /// read delay lines), so the nodes of a level never read each other.
    pub levels: Vec<Vec<usize>>,
    /// The estimated cost of every node, ns per sample.
    pub total_ns: f64,
    /// The dearest node of each level, added up: no thread count runs a
    /// sample faster.
    pub critical_ns: f64,
    /// Threads the estimate is for.
    pub threads: usize,
    /// Each level's nodes dealt over the threads, dearest first onto the
    /// least loaded: `assigned[level][k]` is the thread of `levels[level][k]`.
    pub assigned: Vec<Vec<usize>>,
    /// Levels whose work over a block, less their dearest node's, is under
    /// the pool's threshold: the engine runs them on one thread (thread 0).
    pub one_thread: Vec<bool>,
    /// The estimated cost per sample at `threads`: each level as long as its
    /// most loaded thread.
    pub spread_ns: f64,
}

impl ThreadsPlan {
    /// `total_ns / spread_ns`: the speed-up the estimates promise (1 for an
    /// empty plan).
    pub fn speedup(&self) -> f64 {
        if self.spread_ns > 0.0 {
            self.total_ns / self.spread_ns
        } else {
            1.0
        }
    }
}

/// How much less than the pool's threshold a level must save to be spread
/// once another level of its run saves the threshold
/// ([`level_threshold_ns`]).
pub const LEVEL_SHARE: f64 = 8.0;

/// The estimated work (ns over a chunk) a level must save to be spread
/// over the threads, where the level of its run that would save the most
/// saves `most_ns` and the pool's threshold is `min_ns`: once one level
/// of a run is worth spreading, each level of it that saves an eighth of
/// the threshold is spread too, so that the levels of a chain are spread
/// together and each thread's part of a level reads what its part of the
/// level before wrote on the same core (spreading the dearest level alone
/// would have the other thread read all its sources across cores); a run
/// with no such level stays on one thread.
pub fn level_threshold_ns(most_ns: f64, min_ns: f64) -> f64 {
    if most_ns >= min_ns {
        min_ns / LEVEL_SHARE
    } else {
        min_ns
    }
}

/// The levels of `plan` and their estimate at `threads` threads, with a
/// pool that spreads a level only when its estimated work over a block,
/// less its dearest node's, reaches the threshold for its level
/// ([`level_threshold_ns`] of the level that saves the most and
/// `min_work_ns`), as the engine does.
pub fn threads_plan(plan: &Plan, threads: usize, min_work_ns: u64) -> ThreadsPlan {
    let threads = threads.max(1);
    let n = plan.nodes.len();
    let mut level = vec![0usize; n];
    for i in 0..n {
        let node = &plan.nodes[i];
        level[i] = node
            .inputs
            .iter()
            .chain(&node.param_inputs)
            .flatten()
            .filter(|s| !s.is_feedback() && s.node < i)
            .map(|s| level[s.node] + 1)
            .max()
            .unwrap_or(0);
    }
    let depth = level.iter().max().map_or(0, |m| m + 1);
    let mut levels = vec![Vec::new(); depth];
    for (i, &l) in level.iter().enumerate() {
        levels[l].push(i);
    }
    let cost: Vec<f64> = plan.nodes.iter().map(node_cost_ns).collect();
    let total_ns = cost.iter().sum();
    let mut critical_ns = 0.0;
    let mut spread_ns = 0.0;
    let mut assigned = Vec::with_capacity(depth);
    let mut one_thread = Vec::with_capacity(depth);
    let saves = |nodes: &Vec<usize>| {
        let dearest = nodes.iter().map(|&i| cost[i]).fold(0.0, f64::max);
        let sum: f64 = nodes.iter().map(|&i| cost[i]).sum();
        (sum - dearest) * plan.block_size as f64
    };
    let most = levels.iter().map(saves).fold(0.0, f64::max);
    let min_ns = level_threshold_ns(most, min_work_ns as f64);
    for nodes in &levels {
        let dearest = nodes.iter().map(|&i| cost[i]).fold(0.0, f64::max);
        let sum: f64 = nodes.iter().map(|&i| cost[i]).sum();
        critical_ns += dearest;
        if threads > 1 && saves(nodes) < min_ns {
            spread_ns += sum;
            assigned.push(vec![0; nodes.len()]);
            one_thread.push(true);
            continue;
        }
        one_thread.push(false);
        let mut order: Vec<usize> = (0..nodes.len()).collect();
        order.sort_by(|&a, &b| cost[nodes[b]].total_cmp(&cost[nodes[a]]));
        let mut load = vec![0.0f64; threads];
        let mut to = vec![0usize; nodes.len()];
        for k in order {
            let t = (0..threads)
                .min_by(|&a, &b| load[a].total_cmp(&load[b]))
                .unwrap_or(0);
            load[t] += cost[nodes[k]];
            to[k] = t;
        }
        spread_ns += load.iter().copied().fold(0.0, f64::max);
        assigned.push(to);
    }
    ThreadsPlan {
        levels,
        total_ns,
        critical_ns,
        threads,
        assigned,
        one_thread,
        spread_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{compile, CompileOptions};

    fn plan(text: &str) -> Plan {
        let scene = crate::scene::load_str(text, "t.json", None).unwrap();
        compile(
            &scene,
            &CompileOptions {
                skip_build: true,
                ..CompileOptions::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn two_branches_go_to_two_threads_and_the_critical_path_is_one_branch_and_the_mix() {
        let p = plan(
            r#"{ "version": "1.0", "sample_rate": 48000, "nodes": [
                { "id": "a", "op": "sine", "params": { "freq": 100 } },
                { "id": "b", "op": "sine", "params": { "freq": 200 } },
                { "id": "m", "op": "mix", "params": { "gains": [0.5, 0.5] } }],
              "edges": [{ "from": "a", "to": "m:in0" }, { "from": "b", "to": "m:in1" }],
              "outputs": { "main": ["m"] } }"#,
        );
        let t = threads_plan(&p, 2, 0);
        let id = |i: usize| p.nodes[i].id.as_str();
        let names: Vec<Vec<&str>> = t
            .levels
            .iter()
            .map(|l| l.iter().map(|&i| id(i)).collect())
            .collect();
        assert_eq!(names, vec![vec!["a", "b"], vec!["m"]]);
        // The two sines on two threads; the mix alone.
        assert_ne!(t.assigned[0][0], t.assigned[0][1]);
        let (sine, mix) = (node_cost_ns(&p.nodes[0]), node_cost_ns(&p.nodes[2]));
        assert_eq!(t.total_ns, 2.0 * sine + mix);
        assert_eq!(t.critical_ns, sine + mix);
        assert_eq!(t.spread_ns, sine + mix);
        assert_eq!(threads_plan(&p, 1, 0).speedup(), 1.0);
        assert_eq!(t.one_thread, [false, false]);
        assert!((t.speedup() - (2.0 * sine + mix) / (sine + mix)).abs() < 1e-12);
        // With a threshold over the sines' work at the plan's block size,
        // they stay on one thread and nothing is promised.
        let over = (sine * p.block_size as f64).ceil() as u64 + 1;
        let t = threads_plan(&p, 2, over);
        // (A level of one node is one thread's whatever the threshold.)
        assert_eq!(t.one_thread, [true, true]);
        assert_eq!(t.assigned[0], [0, 0]);
        assert_eq!(t.spread_ns, t.total_ns);
        assert_eq!(t.speedup(), 1.0);
        // Exactly at the threshold it spreads.
        let at = (sine * p.block_size as f64).floor() as u64;
        assert_eq!(threads_plan(&p, 2, at).one_thread, [false, true]);
    }

    /// Two sines, each through its own svf, into a mix: the filters'
    /// level saves more than the sines'. With the threshold at what the
    /// filters save, the sines (over an eighth of it) are spread with
    /// them; just over it, neither level is.
    #[test]
    fn a_level_over_the_threshold_brings_the_other_levels_of_the_chain_with_it() {
        let p = plan(
            r#"{ "version": "1.0", "sample_rate": 48000, "nodes": [
                { "id": "a", "op": "sine", "params": { "freq": 100 } },
                { "id": "b", "op": "sine", "params": { "freq": 200 } },
                { "id": "la", "op": "svf" }, { "id": "lb", "op": "svf" },
                { "id": "m", "op": "mix", "params": { "gains": [0.5, 0.5] } }],
              "edges": [{ "from": "a", "to": "la" }, { "from": "b", "to": "lb" },
                        { "from": "la", "to": "m:in0" }, { "from": "lb", "to": "m:in1" }],
              "outputs": { "main": ["m"] } }"#,
        );
        let block = p.block_size as f64;
        let (sine, svf) = (node_cost_ns(&p.nodes[0]), node_cost_ns(&p.nodes[2]));
        assert!(svf > sine && sine * LEVEL_SHARE >= svf, "{sine} {svf}");
        let at = (svf * block).floor() as u64;
        assert_eq!(threads_plan(&p, 2, at).one_thread, [false, false, true]);
        let over = (svf * block).ceil() as u64 + 1;
        assert_eq!(threads_plan(&p, 2, over).one_thread, [true, true, true]);
        assert_eq!(level_threshold_ns(10.0, 80.0), 80.0);
        assert_eq!(level_threshold_ns(80.0, 80.0), 10.0);
    }
}
