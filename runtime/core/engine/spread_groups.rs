//! A lane group's members dealt to the worker pool (`workers.rs`) in
//! parts: each part gathers its members' inputs and runs them through the
//! group's kernel in one call, writing every member's own outputs, on
//! whichever thread claims it.
//!
//! **Why the bits are the same.** A kernel writes each member exactly the
//! bits its own `process` would, whatever the other members of its call
//! ([`LaneKernel`](crate::ops::LaneKernel)), so which part a member is in
//! changes nothing it computes. A fused group's sum is not made by the
//! parts: its node gathers the members' outputs itself, in the order of
//! its edges, the same additions in the same order as the kernel's sum
//! (`lanes.rs`). What a part leaves for the engine — which members'
//! outputs were not finite, a kernel's panic — is kept per part and
//! applied on the engine's thread, part by part in member order, once
//! every part is done, as the one-thread loop applies it batch by batch.
//!
//! **When.** A group is split only when every member may run in the
//! kernel for the chunk ([`Engine::lane_ready`]), the group's kernel has
//! not panicked, it has no steady path (a kept copy that sums the members
//! with no per-member work, cheaper on one thread than any split), and
//! its members' estimated work over the chunk, less the share one thread
//! keeps, reaches its level's threshold (`parallel.rs`).

use super::caught::Payload;
use super::lanes::{
    gather_slot, kernel_at, lend_batch, scrub, GroupKernel, GroupSteady, Ran, Typed, STEADY_BATCH,
};
use super::mix::Sources;
use super::node::{take_inputs_raw, Core, Slot};
use super::workers::{Job, Workers};
use super::Engine;
use crate::dsp::fpmode::FpGuard;
use crate::dsp::vector::SimdLevel;
use crate::dsp::Sample;
use crate::ops::{LaneKernel, SteadyLanes, MAX_LANES};

/// What one part of a split group left for the engine.
#[derive(Default)]
pub(super) enum PartOut {
    /// The kernel ran every member clean.
    #[default]
    Ran,
    /// Some outputs were not finite: bit j for member j.
    Dirty(u64),
    /// The kernel panicked, having finished the members in the mask (the
    /// others are as they were at the call).
    Panicked(Payload, u64),
}

/// What a worker needs to run part `k` of a group (`run_part`).
struct PartJob {
    base: *mut Slot,
    count: usize,
    members: *const usize,
    len: usize,
    per: usize,
    kernel: GroupKernel,
    finite: bool,
    simd: SimdLevel,
    flush: bool,
    stage_at: usize,
    outs: *mut PartOut,
    start: u64,
    n: usize,
}

/// Runs part `k` of the split group `data` (a [`PartJob`]): members
/// `k·per..` (at most `per`), inputs gathered, kernel called, outputs
/// checked.
///
/// # Safety
/// `data` is a live `PartJob` whose pointers are the engine's slots, the
/// group's members and one [`PartOut`] per part; `k` is a part of it, and
/// no two calls run the same `k` at once.
unsafe fn run_part(data: *const (), k: usize) {
    // SAFETY: the contract above.
    let job = unsafe { &*(data as *const PartJob) };
    let from = k * job.per;
    let to = (from + job.per).min(job.len);
    // SAFETY: `from..to` is within the member list.
    let batch = unsafe { std::slice::from_raw_parts(job.members.add(from), to - from) };
    let _mode = FpGuard::new(job.flush);
    #[cfg(test)]
    super::delay::wait(batch[0]);
    for &i in batch {
        // SAFETY: the members of a group are distinct and of one level: slot
        // `i` is this part's alone, its sources are in earlier levels
        // (written by no thread while the level runs), and a stolen
        // input's source is read by member `i` alone.
        unsafe {
            let slot = &mut *job.base.add(i);
            if slot.inputs.is_empty() {
                continue;
            }
            if slot.steal != 0 {
                take_inputs_raw(job.base, i, slot, job.n);
            }
            gather_slot(slot, Sources::from_raw(job.base, i), job.n, job.stage_at);
        }
    }
    let out = match job.kernel {
        // SAFETY: the part's members are its own (as above).
        GroupKernel::F32(f) => unsafe { part_kernel(job, f, batch) },
        // SAFETY: as above.
        GroupKernel::F64(f) => unsafe { part_kernel(job, f, batch) },
    };
    // SAFETY: part `k`'s entry is this call's alone.
    unsafe { *job.outs.add(k) = out };
}

/// The kernel over `batch` with no sum, then each member's outputs
/// checked (unless finite by construction or known finite).
///
/// # Safety
/// As [`run_part`]'s: the members of `batch` are this call's alone.
unsafe fn part_kernel<S: Typed>(job: &PartJob, f: LaneKernel<S>, batch: &[usize]) -> PartOut {
    // SAFETY: the caller's contract.
    let known = match unsafe { kernel_at(job.base, job.count, f, batch, job.start, job.n, None) } {
        Ok(known) => known,
        Err((payload, done)) => return PartOut::Panicked(payload, done),
    };
    if job.finite {
        return PartOut::Ran;
    }
    let f32_kernel = matches!(job.kernel, GroupKernel::F32(_));
    let mut dirty = 0u64;
    for (j, &i) in batch.iter().enumerate() {
        if f32_kernel && known >> j & 1 != 0 {
            continue;
        }
        // SAFETY: as above.
        let slot = unsafe { &mut *job.base.add(i) };
        let clean = match &mut slot.core {
            Core::F32(t) => scrub(job.simd, &mut t.outs, job.n),
            Core::F64(t) => scrub(job.simd, &mut t.outs, job.n),
        };
        if !clean {
            dirty |= 1 << j;
        }
    }
    if dirty == 0 {
        PartOut::Ran
    } else {
        PartOut::Dirty(dirty)
    }
}

/// A group of `len` members split over `threads` threads: members per
/// part (at most a kernel call's) and parts.
pub(super) fn parts_of(len: usize, threads: usize) -> (usize, usize) {
    let per = len.div_ceil(threads.max(1)).clamp(1, MAX_LANES);
    (per, len.div_ceil(per))
}

/// The spans a steady chunk of `n` frames is cut into over `threads`
/// threads (0: it is not cut), where `parts` part records are kept.
pub(super) fn spans_of(n: usize, threads: usize, parts: usize) -> usize {
    span_bounds(n, threads.min(parts)).1
}

impl Engine {
    /// Whether lane group `g` has a steady path that may still run.
    pub(super) fn has_steady(&self, g: usize) -> bool {
        let group = &self.groups[g];
        group.steady.is_some() && !group.steady_failed
    }

    /// Whether lane group `g` may be split in parts over `threads`
    /// threads (its steady path, if it has one, runs on one thread instead
    /// when the group is not steady).
    pub(super) fn may_split(&self, g: usize, threads: usize) -> bool {
        let group = &self.groups[g];
        threads >= 2 && group.members.len() >= 2 && !group.broken && !self.has_steady(g)
    }

    /// Whether a steady chunk of lane group `g` may be cut into spans: its
    /// sum is fused and not seeded.
    pub(super) fn may_span(&self, g: usize) -> bool {
        let group = &self.groups[g];
        match (group.sum, group.seeded) {
            (Some((c, _)), false) => c < self.slots.len() && self.levels.parts.len() >= 2,
            _ => false,
        }
    }

    /// What spreading lane group `g` over `threads` threads saves over an
    /// `n`-frame chunk, in estimated ns: all but one thread's share of its
    /// members' work.
    pub(super) fn group_saves(&self, g: usize, threads: usize, n: usize) -> f64 {
        let cost = self.levels.group_costs.get(g).copied().unwrap_or(0.0);
        let threads = threads.max(1);
        cost * n as f64 * (threads - 1) as f64 / threads as f64
    }

    /// Runs lane group `g` for the chunk `start..start + n` split over
    /// `workers` (in the FP mode `flush`), when that is worth it (it saves
    /// `min_ns`, its level's threshold) and safe; false (nothing ran)
    /// otherwise.
    pub(super) fn spread_group(
        &mut self,
        workers: &Workers,
        g: usize,
        flush: bool,
        start: u64,
        n: usize,
        min_ns: f64,
    ) -> bool {
        let threads = workers.threads();
        let group = &self.groups[g];
        let len = group.members.len();
        if self.has_steady(g) && group.is_steady && threads >= 2 {
            return self.spread_steady(workers, g, flush, n, min_ns);
        }
        if !self.may_split(g, threads) || self.group_saves(g, threads, n) < min_ns {
            return false;
        }
        if !(0..len).all(|k| self.lane_ready(self.groups[g].members[k], start)) {
            return false;
        }
        let (per, parts) = parts_of(len, threads);
        if self.levels.parts.len() < parts {
            return false;
        }
        let group = &self.groups[g];
        let job = PartJob {
            base: self.slots.as_mut_ptr(),
            count: self.slots.len(),
            members: group.members.as_ptr(),
            len,
            per,
            kernel: group.kernel,
            finite: group.finite,
            simd: self.simd,
            flush,
            stage_at: self.stage_at,
            outs: self.levels.parts.as_mut_ptr(),
            start,
            n,
        };
        // SAFETY: `job` outlives the call (which returns when every part is
        // done); its parts are distinct members of one level and distinct
        // entries of `parts` (`run_part`'s contract), and the engine's
        // thread touches the slots and parts only through `job` until then.
        unsafe {
            workers.run(
                Job {
                    run: run_part,
                    data: &job as *const PartJob as *const (),
                },
                parts,
            );
        }
        self.levels.spread += 1;
        self.levels.split += 1;
        let kernel = self.groups[g].kernel;
        let finite = self.groups[g].finite;
        let end = start + n as u64;
        for k in 0..parts {
            let from = k * per;
            let to = (from + per).min(len);
            let mut batch = [0usize; MAX_LANES];
            batch[..to - from].copy_from_slice(&self.groups[g].members[from..to]);
            let batch = &batch[..to - from];
            match std::mem::take(&mut self.levels.parts[k]) {
                PartOut::Ran => {
                    for &i in batch {
                        self.slots[i].recovery.ran_clean(end);
                    }
                }
                PartOut::Dirty(dirty) => {
                    for (j, &i) in batch.iter().enumerate() {
                        if dirty >> j & 1 != 0 {
                            self.report_nan(i, start, end);
                        } else {
                            self.slots[i].recovery.ran_clean(end);
                        }
                    }
                }
                PartOut::Panicked(payload, done) => {
                    self.caught.keep(payload);
                    if self.after_panic(kernel, finite, batch, done, start, n)
                        == (Ran::Alone { found: false })
                    {
                        self.groups[g].broken = true;
                    }
                }
            }
        }
        true
    }
}

/// The most spans a steady chunk is cut into.
const MAX_SPANS: usize = 16;

/// What a worker needs for step `k` of a steady chunk (`run_span`): to
/// settle members `ranges[k]..ranges[k + 1]` and sum frames
/// `bounds[k]..bounds[k + 1]`.
struct SpanJob<S: Sample> {
    steady: *const dyn SteadyLanes<S>,
    base: *mut Slot,
    members: *const usize,
    count: usize,
    ranges: [usize; MAX_SPANS + 1],
    n: usize,
    dst: *mut S,
    bounds: [usize; MAX_SPANS + 1],
    flush: bool,
    /// Per step: how many of its members it settled.
    settled: *mut usize,
    outs: *mut PartOut,
}

/// Step `k` of the steady chunk `data` (a [`SpanJob`]): its range of
/// members settled, then its span summed into its part of the sum.
///
/// # Safety
/// `data` is a live `SpanJob` whose kept copy nothing changes until every
/// step is done, whose members index distinct slots under `base` that
/// nothing else touches meanwhile, whose `dst` holds the chunk's frames,
/// and whose `settled` and `outs` hold one entry per step; `k` is a step
/// of it, and no two calls run the same `k` at once.
unsafe fn run_span<S: Typed>(data: *const (), k: usize) {
    // SAFETY: the contract above.
    let job = unsafe { &*(data as *const SpanJob<S>) };
    let (from, to) = (job.bounds[k], job.bounds[k + 1]);
    let _mode = FpGuard::new(job.flush);
    #[cfg(test)]
    super::delay::wait(k);
    // SAFETY: spans are disjoint frames of `dst`, ranges disjoint members;
    // the kept copy is only read (`span` and `settle` take it shared, and
    // it is `Sync`).
    let (dst, steady, members) = unsafe {
        (
            std::slice::from_raw_parts_mut(job.dst.add(from), to - from),
            &*job.steady,
            std::slice::from_raw_parts(job.members, job.count),
        )
    };
    let (lo, hi) = (job.ranges[k], job.ranges[k + 1]);
    let mut settled = 0;
    let out = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut k0 = lo;
        while k0 < hi && settled == k0 - lo {
            let end = (k0 + STEADY_BATCH).min(hi);
            // SAFETY: members `k0..end` are this step's alone (the contract).
            unsafe {
                lend_batch::<S>(job.base, &members[..end], k0, &mut |nodes| {
                    settled += steady.settle(k0, nodes, job.n);
                    true
                })
            };
            k0 = end;
        }
        steady.span(from, to, dst)
    })) {
        Ok(()) => PartOut::Ran,
        Err(payload) => PartOut::Panicked(payload, 0),
    };
    // SAFETY: step `k`'s entries are this call's alone.
    unsafe {
        *job.settled.add(k) = settled;
        *job.outs.add(k) = out;
    }
}

/// Where the spans of an `n`-frame chunk cut it for `threads` threads: on
/// quarters of the sines' grid (16 frames) where it can, at most
/// [`MAX_SPANS`]; returns the bounds and the span count (0: not worth a
/// cut).
fn span_bounds(n: usize, threads: usize) -> ([usize; MAX_SPANS + 1], usize) {
    const GRAIN: usize = 16;
    let mut bounds = [0usize; MAX_SPANS + 1];
    let want = threads.min(MAX_SPANS).min(n / GRAIN);
    let mut count = 0;
    for k in 1..want {
        let at = n * k / want / GRAIN * GRAIN;
        if at > bounds[count] {
            count += 1;
            bounds[count] = at;
        }
    }
    count += 1;
    bounds[count] = n;
    if count < 2 {
        return (bounds, 0);
    }
    (bounds, count)
}

impl Engine {
    /// A steady chunk of fused group `g` cut into spans of frames summed
    /// side by side over `workers` ([`SteadyLanes::span`]): every member
    /// checked unchanged, the spans summed, every member advanced — the
    /// bits and state of the one-thread steady chunk, since each frame's
    /// sum is the same additions in member order whichever thread makes
    /// it. False (nothing ran) when the group's copy cannot cut a chunk,
    /// its sum starts from a seed (spans are summed afresh), the chunk is
    /// too short or its work under its level's threshold, or a member
    /// changed; the chunk then runs on this thread. A span that
    /// panics turns the steady path off, as a panic in `run` does.
    pub(super) fn spread_steady(
        &mut self,
        workers: &Workers,
        g: usize,
        flush: bool,
        n: usize,
        min_ns: f64,
    ) -> bool {
        let group = &self.groups[g];
        // Spans are summed afresh: a seeded sum runs on this thread.
        let (Some((c, p)), false) = (group.sum, group.seeded) else {
            return false;
        };
        let threads = workers.threads();
        if !self.may_span(g) || self.group_saves(g, threads, n) < min_ns {
            return false;
        }
        let (bounds, spans) = span_bounds(n, threads.min(self.levels.parts.len()));
        if spans == 0 {
            return false;
        }
        let group = &mut self.groups[g];
        let (slots, parts) = (&mut self.slots, &mut self.levels.parts);
        let cut = (bounds, spans);
        let ran = match (&mut group.steady, &group.members) {
            (Some(GroupSteady::F32(st)), members) => spread_spans(
                workers,
                &mut **st,
                members,
                slots,
                (c, p),
                cut,
                flush,
                parts,
            ),
            (Some(GroupSteady::F64(st)), members) => spread_spans(
                workers,
                &mut **st,
                members,
                slots,
                (c, p),
                cut,
                flush,
                parts,
            ),
            (None, _) => Ok(false),
        };
        let ran = self.steady_ran(g, (c, p), ran);
        if ran {
            self.levels.spread += 1;
            self.levels.spans += 1;
        }
        ran
    }
}

/// [`Engine::spread_steady`] at precision `S`: whether the chunk ran, or
/// the payload of a panic (every member then as at the chunk's start).
#[allow(clippy::too_many_arguments)]
fn spread_spans<S: Typed>(
    workers: &Workers,
    st: &mut (dyn SteadyLanes<S> + 'static),
    members: &[usize],
    slots: &mut [Slot],
    (c, p): (usize, usize),
    (bounds, spans): ([usize; MAX_SPANS + 1], usize),
    flush: bool,
    parts: &mut [PartOut],
) -> Result<bool, Payload> {
    if !st.spans() || members.iter().any(|&i| i >= c) {
        return Ok(false);
    }
    let n = bounds[spans];
    let (before, after) = slots.split_at_mut(c);
    let Some(dst) = S::input(&mut after[0], p) else {
        return Ok(false);
    };
    if dst.len() < n {
        return Ok(false);
    }
    let count = members.len();
    let mut ranges = [0usize; MAX_SPANS + 1];
    for (k, r) in ranges.iter_mut().enumerate().take(spans + 1) {
        *r = count * k / spans;
    }
    let mut settled = [0usize; MAX_SPANS];
    let base = before.as_mut_ptr();
    let job = SpanJob::<S> {
        steady: &*st as *const dyn SteadyLanes<S>,
        base,
        members: members.as_ptr(),
        count,
        ranges,
        n,
        dst: dst.as_mut_ptr(),
        bounds,
        flush,
        settled: settled.as_mut_ptr(),
        outs: parts.as_mut_ptr(),
    };
    // SAFETY: `job` outlives the call, which returns when every step is
    // done; the steps' spans are disjoint frames of the sum and their
    // ranges disjoint members (all below `c`, so under `before`, and
    // distinct: a node is in one group, once), each step with its own
    // entries of `settled` and `parts`; nothing touches the kept copy, the
    // members' slots, the sum or those entries but through `job` until then.
    unsafe {
        workers.run(
            Job {
                run: run_span::<S>,
                data: &job as *const SpanJob<S> as *const (),
            },
            spans,
        );
    }
    let mut failed = None;
    for part in parts.iter_mut().take(spans) {
        if let PartOut::Panicked(payload, _) = std::mem::take(part) {
            match failed {
                None => failed = Some(payload),
                // A second payload is leaked, never freed here.
                Some(_) => std::mem::forget(payload),
            }
        }
    }
    let whole = (0..spans).all(|k| settled[k] == ranges[k + 1] - ranges[k]);
    if whole && failed.is_none() {
        st.settled(n);
        return Ok(true);
    }
    // A member changed, or a step panicked: every member settled is put
    // back, and the chunk runs the usual way.
    for k in 0..spans {
        let (lo, hi) = (ranges[k], ranges[k] + settled[k]);
        for k0 in (lo..hi).step_by(STEADY_BATCH) {
            let end = (k0 + STEADY_BATCH).min(hi);
            // SAFETY: as above; the steps are done.
            unsafe {
                lend_batch::<S>(base, &members[..end], k0, &mut |nodes| {
                    st.unsettle(k0, nodes);
                    true
                })
            };
        }
    }
    match failed {
        Some(payload) => Err(payload),
        None => Ok(false),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::graph::{compile, CompileOptions};
    use crate::profile::Profile;

    /// `count` seeded noises, each through its own bandpass, summed into
    /// one gain: two lane groups, the second fused into the gain's input.
    pub(in crate::engine) fn chains(count: usize) -> String {
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for k in 0..count {
            nodes.push(format!(
                r#"{{ "id": "n{k}", "op": "noise", "params": {{ "amp": 0.25 }} }}"#
            ));
            nodes.push(format!(
                r#"{{ "id": "b{k}", "op": "biquad", "params": {{ "mode": "bandpass", "q": 10, "cutoff": {} }} }}"#,
                200 + 61 * k
            ));
            edges.push(format!(r#"{{ "from": "n{k}", "to": "b{k}" }}"#));
            edges.push(format!(r#"{{ "from": "b{k}", "to": "g" }}"#));
        }
        format!(
            r#"{{ "version": "1.0", "seed": 9, "sample_rate": 48000, "nodes": [{},
            {{ "id": "g", "op": "gain", "params": {{ "gain": 0.125 }} }}],
            "edges": [{}], "outputs": {{ "main": ["g"] }} }}"#,
            nodes.join(", "),
            edges.join(", ")
        )
    }

    pub(in crate::engine) fn engine(
        text: &str,
        profile: Profile,
        block: usize,
        threads: usize,
    ) -> Engine {
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

    fn play(e: &mut Engine, blocks: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for _ in 0..blocks {
            e.process_block(e.block_size());
            let bus = e.bus();
            for k in 0..bus.frames() {
                out.push(bus.get(0, k).to_bits());
            }
        }
        out
    }

    #[test]
    fn groups_split_over_the_workers_play_the_bits_of_one_thread_in_every_profile() {
        let text = chains(40);
        for profile in [Profile::Strict, Profile::Repro, Profile::Live] {
            for block in [1, 64, 300] {
                let mut one = engine(&text, profile, block, 1);
                assert_eq!(one.lane_groups().len(), 2, "noises and bandpasses");
                assert!(
                    one.lane_sums()[1].is_some(),
                    "the bandpasses sum into the gain"
                );
                let blocks = 1200 / block;
                let alone = play(&mut one, blocks);
                assert!(alone.iter().any(|&b| f64::from_bits(b) != 0.0));
                for threads in [2, 3, 8] {
                    let mut e = engine(&text, profile, block, threads);
                    let what = format!("{profile:?}, block {block}, {threads} threads");
                    assert!(play(&mut e, blocks) == alone, "{what}");
                    assert_eq!(
                        e.levels.split,
                        2 * blocks as u64,
                        "{what}: both groups split"
                    );
                }
            }
        }
    }

    /// Of the chains' two groups, the bandpasses save more when split:
    /// with the pool's threshold just at what they save, the noises (which
    /// save less, but more than an eighth of it) are split with them, so
    /// each thread's bandpasses read the noises it made; with the
    /// threshold just over it, neither is. The bits are one thread's.
    #[test]
    fn a_chains_levels_are_split_together_once_one_of_them_is_worth_it() {
        let text = chains(40);
        let (block, blocks) = (256, 6);
        let mut one = engine(&text, Profile::Live, block, 1);
        let alone = play(&mut one, blocks);
        let costs = one.levels.group_costs.clone();
        assert_eq!(costs.len(), 2, "noises and bandpasses");
        let saves = |g: usize| costs[g] * block as f64 / 2.0;
        let (noises, bandpasses) = (saves(0), saves(1));
        assert!(
            bandpasses > noises && noises * 8.0 >= bandpasses,
            "the bandpasses save more ({bandpasses} ns), the noises over an eighth of that ({noises} ns)"
        );
        for (min, split) in [(bandpasses.floor(), 2), (bandpasses.ceil() + 1.0, 0)] {
            let mut e = engine(&text, Profile::Live, block, 2);
            e.workers().unwrap().set_min_work_ns(min as u64);
            assert!(play(&mut e, blocks) == alone, "threshold {min}");
            assert_eq!(
                e.levels.split,
                split * blocks as u64,
                "threshold {min} ns: groups split each block"
            );
        }
    }

    /// `count` live sines at spread frequencies (some with a phase
    /// offset) summed into a lowpass, one of them retuned at `retune_s`:
    /// a fused group with a steady path.
    pub(in crate::engine) fn sines(count: usize, retune_s: f64) -> String {
        let phase = |k| if k % 5 == 1 { r#", "phase": 1.3"# } else { "" };
        let retune = format!(
            r#"[{{ "time": "{retune_s}s", "node": "s3", "param": "freq", "value": 431 }}]"#
        );
        crate::engine::lanes::tests::sines_into_lowpass(
            count,
            |k| 100.0 + 7.3 * k as f64,
            phase,
            &retune,
        )
    }

    #[test]
    fn steady_sines_cut_into_spans_play_the_bits_of_one_thread() {
        let text = sines(150, 0.021);
        for block in [1, 7, 16, 64, 100, 4096] {
            let blocks = 6000usize.div_ceil(block);
            let mut one = engine(&text, Profile::Live, block, 1);
            assert!(
                one.lane_sums()[0].is_some(),
                "the sines sum into the lowpass"
            );
            let alone = play(&mut one, blocks);
            assert!(alone.iter().any(|&b| f64::from_bits(b) != 0.0));
            for threads in [2, 3, 8] {
                let mut e = engine(&text, Profile::Live, block, threads);
                let what = format!("block {block}, {threads} threads");
                assert!(play(&mut e, blocks) == alone, "{what}");
                if block >= 32 {
                    assert!(e.levels.spans > 0, "{what}: steady chunks cut into spans");
                } else {
                    assert_eq!(e.levels.spans, 0, "{what}: chunks too short to cut");
                }
            }
        }
    }

    #[test]
    fn random_delays_in_the_spans_change_no_bit() {
        let text = sines(70, 0.5);
        let mut one = engine(&text, Profile::Live, 64, 1);
        let alone = play(&mut one, 1500);
        let mut e = engine(&text, Profile::Live, 64, 3);
        super::super::delay::SEED.store(0x5eed, std::sync::atomic::Ordering::Relaxed);
        let cut = play(&mut e, 1500);
        super::super::delay::SEED.store(0, std::sync::atomic::Ordering::Relaxed);
        assert!(
            e.levels.spans > 1000,
            "{} steady chunks cut",
            e.levels.spans
        );
        assert!(cut == alone, "the same bits with delays");
    }

    #[test]
    fn spans_cut_chunks_on_quarters() {
        let cut = |n, t| {
            let (b, count) = span_bounds(n, t);
            b[..=count].to_vec()
        };
        assert_eq!(cut(64, 2), [0, 32, 64]);
        assert_eq!(cut(64, 3), [0, 16, 32, 64]);
        assert_eq!(cut(64, 8), [0, 16, 32, 48, 64]);
        assert_eq!(cut(100, 2), [0, 48, 100]);
        assert_eq!(cut(4096, 2), [0, 2048, 4096]);
        assert_eq!(span_bounds(31, 2).1, 0, "too short to cut");
        assert_eq!(span_bounds(64, 1).1, 0, "one thread");
    }

    #[test]
    fn a_group_below_the_threshold_runs_whole_on_the_calling_thread() {
        let text = chains(8);
        let mut e = engine(&text, Profile::Live, 64, 2);
        e.workers().unwrap().set_min_work_ns(u64::MAX);
        play(&mut e, 4);
        assert_eq!(e.levels.split, 0);
    }

    #[test]
    fn random_delays_in_the_parts_change_no_bit() {
        let text = chains(24);
        let mut one = engine(&text, Profile::Live, 16, 1);
        let alone = play(&mut one, 2000);
        let mut e = engine(&text, Profile::Live, 16, 3);
        super::super::delay::SEED.store(0x5eed, std::sync::atomic::Ordering::Relaxed);
        let split = play(&mut e, 2000);
        super::super::delay::SEED.store(0, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(e.levels.split, 4000);
        assert!(split == alone, "the same bits with delays");
    }
}
