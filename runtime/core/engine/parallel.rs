//! Independent nodes side by side: the levels of each FP-mode run, and how
//! a level's nodes, and the voices of a voice module, are spread over the
//! worker pool (`workers.rs`).
//!
//! **Levels.** The lane plan (`lanes.rs`) puts each run's nodes in level
//! order: a node's level is one more than the highest level among the
//! nodes of its run it reads, so the nodes of one level never read each
//! other. Each level's plain nodes may run on any thread in any order; its
//! lane groups run first, each on the engine's thread or split in parts
//! over the workers (`spread_groups.rs`); a group whose sum starts from a
//! plain node of its level (a seed, `lanes.rs`) has that node moved to a
//! level of its own just before. A run holding a voice
//! module's nodes keeps the schedule's order and runs on the engine's
//! thread.
//!
//! **Voices.** In the two-pass loop (`split.rs`) each voice reads only its
//! own nodes; once the first pass has taken the block's changes, the
//! sounding voices run to the block's end one per worker, each voice's
//! nodes in schedule order; what follows a voice's sound (a steal's fade,
//! a release's silence count) is then done on the engine's thread, voice
//! by voice in order, as the one-thread loop does.
//!
//! **Why the bits are the same at any thread count.** A node computes
//! exactly what it computes alone: it reads its own state, params and
//! buffers, and its sources' outputs, which earlier levels finished; it
//! sums its inputs in the plan's fixed order (`mix.rs`), never in the order
//! the sources finished. What running it leaves for the engine (a NaN or a
//! panic to report, a spoilt save, scrubbed input samples) is kept per
//! node ([`Effects`]) and applied on the engine's thread, node by node in
//! schedule order, once the level is done. Which thread ran a node changes
//! nothing it computes: the FP mode is set per run on every thread that
//! runs one of its nodes.
//!
//! **When.** A level's plain nodes are spread only if there are at least
//! two and the estimated cost of all but its dearest node over the chunk
//! (the operators' cost estimates, as `check` prints them) reaches the
//! level's threshold; otherwise the engine's thread runs them alone, as
//! with one thread. The threshold is the pool's [`Workers::min_work_ns`]
//! for a run none of whose levels (or lane groups) would save that much,
//! and an eighth of it in a run with one that does
//! ([`level_threshold_ns`]): the levels of a chain are spread together, and thread `k` takes the same
//! segment of each (`workers.rs`), so a part of one level mostly reads
//! what the same thread wrote in the level before.

use super::lanes::Step;
use super::mix::Sources;
use super::node::{run_one, take_inputs_raw, Ambient, Core, Effects, Slot};
use super::workers::{Job, Workers, MAX_STEPS};
use super::Engine;
use crate::dsp::fpmode::FpGuard;

/// How much less than the pool's threshold a level must save to be spread
/// once another level of its run saves the threshold
/// ([`level_threshold_ns`]).
pub(super) const LEVEL_SHARE: f64 = 8.0;

/// The estimated work (ns over a chunk) a level must save to be spread
/// over the threads, where the level of its run that would save the most
/// saves `most_ns` and the pool's threshold is `min_ns`: once one level
/// of a run is worth spreading, each level of it that saves an eighth of
/// the threshold is spread too, so that the levels of a chain are spread
/// together and each thread's part of a level reads what its part of the
/// level before wrote on the same core (spreading the dearest level alone
/// would have the other thread read all its sources across cores); a run
/// with no such level stays on one thread.
pub(super) fn level_threshold_ns(most_ns: f64, min_ns: f64) -> f64 {
    if most_ns >= min_ns {
        min_ns / LEVEL_SHARE
    } else {
        min_ns
    }
}

/// One level of a run.
#[derive(Clone, Debug, Default)]
pub(super) struct Level {
    /// Its lane groups' steps (indices into `Engine::steps`).
    pub(super) groups: Vec<usize>,
    /// Its plain nodes, in schedule order.
    pub(super) nodes: Vec<usize>,
    /// Estimated ns per sample of all its plain nodes but the dearest:
    /// what spreading it may save.
    pub(super) spread_ns: f64,
    /// Estimated ns per sample of all its nodes.
    pub(super) cost_ns: f64,
}

impl Level {
    /// Whether its plain nodes are spread over the workers for an
    /// `n`-frame chunk whose threshold is `min_ns`: at least two and no
    /// more than a level may publish ([`MAX_STEPS`]; a wider level runs
    /// on one thread), and all but the dearest reach it.
    pub(super) fn spreads(&self, n: usize, min_ns: f64) -> bool {
        (2..=MAX_STEPS).contains(&self.nodes.len()) && self.spread_ns * n as f64 >= min_ns
    }
}

/// The levels of every run (a run's are `Levels::runs[r]`, empty for a run
/// that keeps the schedule's order).
#[derive(Default)]
pub(super) struct Levels {
    pub(super) levels: Vec<Level>,
    pub(super) runs: Vec<(usize, usize)>,
    /// What each node left to apply while its level ran spread.
    pub(super) effects: Vec<Effects>,
    /// What each part of a lane group split over the workers left
    /// (`spread_groups.rs`): as many as the largest group has members.
    pub(super) parts: Vec<super::spread_groups::PartOut>,
    /// Levels, voice passes and groups run spread over the workers so far.
    pub(super) spread: u64,
    /// Lane groups run split over the workers so far.
    pub(super) split: u64,
    /// Steady chunks cut into spans summed over the workers so far.
    pub(super) spans: u64,
    /// Each lane group's estimated ns per sample, all members.
    pub(super) group_costs: Vec<f64>,
    /// Per run: its dearest lane group's estimated ns per sample and the
    /// most a level of its plain nodes saves when spread (`spread_ns`),
    /// for [`Engine::level_threshold`].
    pub(super) most: Vec<(f64, f64)>,
}

impl Levels {
    /// The levels of `engine`'s runs, from its steps. Allocates: at build
    /// and whenever the steps change.
    pub(super) fn plan(engine: &Engine) -> Levels {
        let slots = &engine.slots;
        let mut levels = Vec::new();
        let mut runs = Vec::with_capacity(engine.runs.len());
        for run in &engine.runs {
            let first = levels.len();
            let range = run.start..run.end;
            if range.clone().any(|i| slots[i].voice.is_some()) {
                runs.push((first, first));
                continue;
            }
            let mut level = vec![0usize; range.len()];
            for i in range.clone() {
                let srcs = slots[i].inputs.iter().chain(&slots[i].param_inputs);
                level[i - run.start] = srcs
                    .flatten()
                    .filter(|e| !e.src.is_feedback() && range.contains(&e.src.node))
                    .map(|e| level[e.src.node - run.start] + 1)
                    .max()
                    .unwrap_or(0);
            }
            let mut current = usize::MAX;
            for k in run.steps.0..run.steps.1 {
                let (lead, members): (usize, &[usize]) = match &engine.steps[k] {
                    Step::Slot(i) => (*i, std::slice::from_ref(i)),
                    Step::Group(g) => {
                        let m = &engine.groups[*g].members;
                        (m[0], m)
                    }
                };
                let lv = level[lead - run.start];
                if lv != current {
                    current = lv;
                    levels.push(Level::default());
                }
                let l = levels.last_mut().expect("a level was pushed");
                let cost: f64 = members.iter().map(|&i| engine.costs[i]).sum();
                l.cost_ns += cost;
                match engine.steps[k] {
                    Step::Slot(i) => l.nodes.push(i),
                    Step::Group(_) => l.groups.push(k),
                }
            }
            // A level's lane groups run before its plain nodes: a group
            // whose sum starts from a plain node of its own level (a seed,
            // `lanes.rs`) needs that node run first, in a level of its own.
            let mut l = first;
            while l < levels.len() {
                let mut seeds: Vec<usize> = levels[l]
                    .groups
                    .iter()
                    .filter_map(|&k| match engine.steps[k] {
                        Step::Group(g) => engine.seed_of(g),
                        Step::Slot(_) => None,
                    })
                    .filter(|i| levels[l].nodes.contains(i))
                    .collect();
                if seeds.is_empty() {
                    l += 1;
                    continue;
                }
                // One node may seed several groups: it runs once.
                seeds.sort_unstable();
                seeds.dedup();
                let level = &mut levels[l];
                level.nodes.retain(|i| !seeds.contains(i));
                let cost: f64 = seeds.iter().map(|&i| engine.costs[i]).sum();
                level.cost_ns -= cost;
                let before = Level {
                    nodes: seeds,
                    cost_ns: cost,
                    ..Level::default()
                };
                levels.insert(l, before);
                l += 2;
            }
            for l in &mut levels[first..] {
                let (sum, max) = l
                    .nodes
                    .iter()
                    .map(|&i| engine.costs[i])
                    .fold((0.0, 0.0f64), |(s, m), c| (s + c, m.max(c)));
                l.spread_ns = sum - max;
            }
            runs.push((first, levels.len()));
        }
        let group_costs: Vec<f64> = engine
            .groups
            .iter()
            .map(|g| g.members.iter().map(|&i| engine.costs[i]).sum())
            .collect();
        let most = runs
            .iter()
            .map(|&(lo, hi)| {
                levels[lo..hi]
                    .iter()
                    .fold((0.0f64, 0.0f64), |(g, s), l: &Level| {
                        let dearest = l
                            .groups
                            .iter()
                            .map(|&k| match engine.steps[k] {
                                Step::Group(g) => group_costs[g],
                                Step::Slot(_) => 0.0,
                            })
                            .fold(g, f64::max);
                        (dearest, s.max(l.spread_ns))
                    })
            })
            .collect();
        Levels {
            levels,
            runs,
            effects: (0..slots.len()).map(|_| Effects::default()).collect(),
            parts: (0..engine
                .groups
                .iter()
                .map(|g| g.members.len())
                .max()
                .unwrap_or(0))
                .map(|_| Default::default())
                .collect(),
            spread: 0,
            split: 0,
            spans: 0,
            group_costs,
            most,
        }
    }
}

/// What a worker needs to run a level's node `k` (`run_node`).
struct LevelJob<'a> {
    base: *mut Slot,
    nodes: *const usize,
    effects: *mut Effects,
    ambient: Ambient<'a>,
    flush: bool,
    start: u64,
    n: usize,
}

/// Runs node `k` of the level described by `data` (a [`LevelJob`]).
///
/// # Safety
/// `data` is a live `LevelJob` whose pointers are the engine's slots and
/// effects and the level's node list, `k` is below the list's length, and
/// no two calls run the same `k` at once.
unsafe fn run_node(data: *const (), k: usize) {
    // SAFETY: the contract above.
    let job = unsafe { &*(data as *const LevelJob<'_>) };
    // SAFETY: `k` is in the node list.
    let i = unsafe { *job.nodes.add(k) };
    let guard = FpGuard::new(job.flush);
    #[cfg(test)]
    super::delay::wait(i);
    // SAFETY: the nodes of a level are distinct, so slot `i` and its
    // effects are this call's alone; the slots below `i` it reads (its
    // sources, in earlier levels) and the stolen inputs' sources (read by
    // node `i` alone) are written by no thread while the level runs.
    unsafe {
        let slot = &mut *job.base.add(i);
        if slot.steal != 0 {
            take_inputs_raw(job.base, i, slot, job.n);
        }
        let fx = run_one(
            slot,
            Sources::from_raw(job.base, i),
            &job.ambient,
            job.start,
            job.n,
        );
        *job.effects.add(i) = fx;
    }
    drop(guard);
}

impl Engine {
    /// What a level of run `r` must save over an `n`-frame chunk to be
    /// spread: [`level_threshold_ns`] of the most that spreading one of
    /// its levels would save (a lane group all but one thread's share of
    /// its members' work, a level's plain nodes all but their dearest's)
    /// and the pool's threshold. Two products and a comparison: the
    /// maxima are the plan's ([`Levels::most`]).
    fn level_threshold(&self, workers: &Workers, r: usize, n: usize) -> f64 {
        self.threshold_at(workers.threads(), workers.min_work_ns(), r, n)
    }

    /// [`level_threshold`](Self::level_threshold) for a pool of `threads`
    /// threads whose threshold is `min_work_ns`.
    pub(super) fn threshold_at(&self, threads: usize, min_work_ns: u64, r: usize, n: usize) -> f64 {
        let threads = threads as f64;
        let (group, plain) = self.levels.most.get(r).copied().unwrap_or_default();
        let most = (group * (threads - 1.0) / threads).max(plain);
        level_threshold_ns(most * n as f64, min_work_ns as f64)
    }

    /// Runs the FP-mode run `r`'s steps for the chunk `start..start + n`,
    /// level by level, spreading the levels that are worth it over
    /// `workers`.
    pub(super) fn run_levels(
        &mut self,
        workers: &Workers,
        guard: &FpGuard,
        r: usize,
        start: u64,
        n: usize,
    ) {
        let run = self.runs[r];
        let (lo, hi) = self.levels.runs[r];
        if lo == hi {
            for k in run.steps.0..run.steps.1 {
                self.run_step(k, start, n);
            }
            return;
        }
        let min_ns = self.level_threshold(workers, r, n);
        for l in lo..hi {
            for g in 0..self.levels.levels[l].groups.len() {
                let k = self.levels.levels[l].groups[g];
                let split = match self.steps[k] {
                    Step::Group(group) => {
                        self.spread_group(workers, group, run.flush, start, n, min_ns)
                    }
                    Step::Slot(_) => false,
                };
                if split {
                    guard.set_flush(run.flush);
                } else {
                    self.run_step(k, start, n);
                }
            }
            let level = &self.levels.levels[l];
            let count = level.nodes.len();
            if !level.spreads(n, min_ns) {
                for j in 0..count {
                    let i = self.levels.levels[l].nodes[j];
                    self.process_slot(i, start, n);
                }
                continue;
            }
            let job = LevelJob {
                base: self.slots.as_mut_ptr(),
                nodes: level.nodes.as_ptr(),
                effects: self.levels.effects.as_mut_ptr(),
                ambient: Ambient {
                    clock: self.clock,
                    block_size: self.block_size,
                    simd: self.simd,
                    stage_at: self.stage_at,
                    inputs: &self.inputs,
                },
                flush: run.flush,
                start,
                n,
            };
            // SAFETY: `job` outlives the call (which returns when every
            // node is done); its node list holds distinct nodes of one
            // level (`run_node`'s contract), and the engine's thread
            // touches the slots and effects only through `job` until then.
            unsafe {
                workers.run(
                    Job {
                        run: run_node,
                        data: &job as *const LevelJob<'_> as *const (),
                    },
                    count,
                );
            }
            guard.set_flush(run.flush);
            self.levels.spread += 1;
            for j in 0..count {
                let i = self.levels.levels[l].nodes[j];
                let fx = std::mem::take(&mut self.levels.effects[i]);
                self.apply_effects(i, fx, start, n);
            }
        }
    }
}

/// What a worker needs to run voice `f` of the two-pass loop's first pass
/// up to the block's end (`run_voice`).
struct VoiceJob<'a> {
    base: *mut Slot,
    effects: *mut Effects,
    nodes: &'a [Vec<usize>],
    done: &'a [u64],
    voices: &'a super::voices::Voices,
    ambient: Ambient<'a>,
    to: u64,
}

/// Runs voice `f` of the job `data` (a [`VoiceJob`]) from where it is up
/// to the block's end, as `Engine::settle_voice` does, but leaves what
/// follows its sound, and a staged sound node's unstaging, to the engine's
/// thread ([`Effects::sound`]).
///
/// # Safety
/// `data` is a live `VoiceJob` whose pointers are the engine's slots and
/// effects, `f` is a voice of it, and no two calls run the same `f` at once.
unsafe fn run_voice(data: *const (), f: usize) {
    // SAFETY: the contract above.
    let job = unsafe { &*(data as *const VoiceJob<'_>) };
    let from = job.done[f];
    if from >= job.to {
        return;
    }
    let n = (job.to - from) as usize;
    let at = (from - job.ambient.clock) as usize;
    for &i in &job.nodes[f] {
        #[cfg(test)]
        super::delay::wait(i);
        // SAFETY: a voice's nodes are its own (the two-pass loop runs only
        // graphs whose voices read nothing but their own nodes), so slot
        // `i`, its effects and the slots it reads (earlier nodes of its
        // voice, run just before on this thread) are this call's alone.
        let (slot, fx) = unsafe { (&mut *job.base.add(i), &mut *job.effects.add(i)) };
        let _mode = FpGuard::new(slot.flush);
        let tag = slot.voice;
        let out = tag.is_some_and(|t| t.out);
        if at > 0 && out {
            match &mut slot.core {
                Core::F32(t) => std::mem::swap(&mut t.outs, &mut t.spare),
                Core::F64(t) => std::mem::swap(&mut t.outs, &mut t.spare),
            }
        }
        if job.voices.idle(tag) {
            if out {
                match &mut slot.core {
                    Core::F32(t) => t.outs.iter_mut().for_each(|o| o[..n].fill(0.0)),
                    Core::F64(t) => t.outs.iter_mut().for_each(|o| o[..n].fill(0.0)),
                }
            }
            continue;
        }
        // SAFETY: as above; a stolen input's source is read by node `i`
        // alone.
        unsafe {
            if slot.steal != 0 {
                take_inputs_raw(job.base, i, slot, n);
            }
            *fx = run_one(slot, Sources::from_raw(job.base, i), &job.ambient, from, n);
        }
        fx.sound = out;
    }
}

impl Engine {
    /// The two-pass loop's voices, each from where it is to `end`, spread
    /// over `workers`; false (nothing ran) when fewer than two voices sound
    /// or their estimated work is under the pool's threshold.
    pub(super) fn spread_voices(&mut self, workers: &Workers, end: u64) -> bool {
        let count = self.split.nodes.len();
        let mut sounding = 0;
        let mut work = 0.0;
        for f in 0..count {
            let Some(&lead) = self.split.nodes[f].first() else {
                continue;
            };
            let from = self.split.done[f];
            if from < end && !self.voices.idle(self.slots[lead].voice) {
                sounding += 1;
                let cost: f64 = self.split.nodes[f].iter().map(|&i| self.costs[i]).sum();
                work += cost * (end - from) as f64;
            }
        }
        if sounding < 2 || work < workers.min_work_ns() as f64 || count > MAX_STEPS {
            return false;
        }
        let job = VoiceJob {
            base: self.slots.as_mut_ptr(),
            effects: self.levels.effects.as_mut_ptr(),
            nodes: &self.split.nodes,
            done: &self.split.done,
            voices: &self.voices,
            ambient: Ambient {
                clock: self.clock,
                block_size: self.block_size,
                simd: self.simd,
                stage_at: self.stage_at,
                inputs: &self.inputs,
            },
            to: end,
        };
        // SAFETY: `job` outlives the call; each voice is one step, and the
        // engine's thread touches the slots and effects only through `job`
        // until it returns.
        unsafe {
            workers.run(
                Job {
                    run: run_voice,
                    data: &job as *const VoiceJob<'_> as *const (),
                },
                count,
            );
        }
        self.levels.spread += 1;
        // In voice order, node by node, as `settle_voice` would have.
        for f in 0..count {
            let from = self.split.done[f];
            if from >= end {
                continue;
            }
            let n = (end - from) as usize;
            let at = (from - self.clock) as usize;
            for k in 0..self.split.nodes[f].len() {
                let i = self.split.nodes[f][k];
                let fx = std::mem::take(&mut self.levels.effects[i]);
                let sound = fx.sound;
                self.apply_effects(i, fx, from, n);
                if sound {
                    self.voice_sound(i, from, n);
                }
                if at > 0 && self.slots[i].voice.is_some_and(|t| t.out) {
                    match &mut self.slots[i].core {
                        Core::F32(t) => super::split::unstage(t, at, n),
                        Core::F64(t) => super::split::unstage(t, at, n),
                    }
                }
            }
            self.split.done[f] = end;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{compile, CompileOptions};
    use crate::profile::Profile;

    const DUB: &str = include_str!("../../../scenes/dub-chain.json");
    const PAD: &str = include_str!("../../../scenes/poly-pad.json");

    fn engine(profile: Profile, block: usize, threads: usize) -> Engine {
        engine_of(DUB, profile, block, threads)
    }

    fn engine_of(text: &str, profile: Profile, block: usize, threads: usize) -> Engine {
        let scene = crate::scene::load_str(text, "scene.json", None).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(profile),
                block_size: Some(block),
                ..CompileOptions::default()
            },
        )
        .unwrap();
        let mut e = Engine::new(plan);
        if threads > 1 {
            let w = Workers::new(threads);
            w.set_min_work_ns(0);
            e.set_workers(Some(w));
        }
        e
    }

    /// Every sample of `blocks` blocks, as bits.
    fn play(e: &mut Engine, blocks: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for _ in 0..blocks {
            e.process_block(e.block_size());
            let bus = e.bus();
            for c in 0..bus.channels() {
                for k in 0..bus.frames() {
                    out.push(bus.get(c, k).to_bits());
                }
            }
        }
        out
    }

    #[test]
    fn spread_levels_play_the_bits_of_one_thread_in_every_profile() {
        for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
            let mut one = engine(profile, 64, 1);
            let alone = play(&mut one, 60);
            assert!(alone.iter().any(|&b| f64::from_bits(b) != 0.0));
            for threads in [2, 3, 8] {
                let mut e = engine(profile, 64, threads);
                assert_eq!(play(&mut e, 60), alone, "{profile:?} at {threads} threads");
                assert!(e.levels.spread > 0, "some level ran spread");
            }
        }
    }

    #[test]
    fn voices_spread_over_the_workers_play_the_bits_of_one_thread() {
        for profile in [Profile::Strict, Profile::Live] {
            let mut one = engine_of(PAD, profile, 256, 1);
            assert!(one.split.eligible, "the voices run in their own chunks");
            let alone = play(&mut one, 120);
            for threads in [2, 3] {
                let mut e = engine_of(PAD, profile, 256, threads);
                assert_eq!(play(&mut e, 120), alone, "{profile:?} at {threads} threads");
                assert!(e.levels.spread > 0, "some voices ran spread");
            }
        }
    }

    #[test]
    fn a_level_is_held_to_an_eighth_of_the_threshold_once_one_of_its_run_reaches_it() {
        assert_eq!(level_threshold_ns(10.0, 80.0), 80.0);
        assert_eq!(level_threshold_ns(80.0, 80.0), 10.0);
        assert_eq!(level_threshold_ns(0.0, 0.0), 0.0);
    }

    #[test]
    fn a_level_wider_than_a_pool_publishes_runs_on_one_thread() {
        let level = |count: usize| Level {
            nodes: (0..count).collect(),
            spread_ns: 1.0,
            ..Level::default()
        };
        assert!(level(MAX_STEPS).spreads(64, 0.0));
        assert!(!level(MAX_STEPS + 1).spreads(64, 0.0));
        assert!(!level(1).spreads(64, 0.0));
    }

    #[test]
    fn a_level_below_the_threshold_runs_on_the_calling_thread() {
        let mut e = engine(Profile::Repro, 64, 2);
        e.workers().unwrap().set_min_work_ns(u64::MAX);
        play(&mut e, 4);
        assert_eq!(e.levels.spread, 0);
    }

    #[test]
    fn random_delays_in_the_workers_change_no_bit_over_ten_thousand_blocks() {
        let mut one = engine(Profile::Strict, 4, 1);
        let alone = play(&mut one, 10_000);
        let mut e = engine(Profile::Strict, 4, 3);
        super::super::delay::SEED.store(0x5eed, std::sync::atomic::Ordering::Relaxed);
        let spread = play(&mut e, 10_000);
        super::super::delay::SEED.store(0, std::sync::atomic::Ordering::Relaxed);
        assert!(e.levels.spread >= 10_000);
        assert!(spread == alone, "the same bits with delays");
    }

    /// Plays blocks of `e`, each with a deadline `deadline_ms` after its
    /// start, until worker `k` has run a step in `blocks` of them (at most
    /// 20 s): each worker's xruns. The bits are those of `one`, the same
    /// engine on one thread.
    fn xruns_after(
        e: &mut Engine,
        one: &mut Engine,
        deadline_ms: u64,
        k: usize,
        blocks: u64,
    ) -> Vec<u64> {
        let w = e.workers().unwrap().clone();
        let (mut with_steps, mut last) = (0, w.steps_run(k));
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while with_steps < blocks && std::time::Instant::now() < give_up {
            w.set_deadline_after(deadline_ms * 1_000_000);
            assert!(play(e, 1) == play(one, 1), "the bits of one thread");
            if w.steps_run(k) > last {
                with_steps += 1;
                last = w.steps_run(k);
            }
        }
        assert_eq!(
            with_steps, blocks,
            "worker {k} ran steps in {blocks} blocks"
        );
        (1..w.threads()).map(|k| w.xruns(k)).collect()
    }

    #[test]
    fn a_worker_that_finishes_after_the_deadline_counts_an_xrun_of_its_own() {
        let mut e = engine(Profile::Strict, 64, 3);
        let mut one = engine(Profile::Strict, 64, 1);
        // Generous deadlines and no delay: no worker is late.
        assert_eq!(xruns_after(&mut e, &mut one, 2_000, 1, 3), vec![0, 0]);
        // Worker 2 sleeps 300 ms after each claim; the deadline is 100 ms.
        // Worker 1, running the block's later levels after the deadline,
        // made no one wait: no xrun of its own.
        let w = e.workers().unwrap().clone();
        w.delay_worker(2, 300_000_000);
        let xruns = xruns_after(&mut e, &mut one, 100, 2, 2);
        assert_eq!(xruns, vec![0, 2], "one xrun per late block, on worker 2");
        w.set_deadline_after(0);
        w.delay_worker(0, 0);
    }
}
