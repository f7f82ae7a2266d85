//! Lane groups: nodes of one concrete processor type (one operator, math
//! and precision) that may run at one position of the schedule, run by one
//! kernel call instead of one engine dispatch each ([`NodeProcessor::lanes`]).
//!
//! **Grouping** (at build, off the audio thread; see [`plan`]). Nodes run
//! in level order within each FP-mode run, and the nodes of one level and
//! lane type form a group: they never read each other. Nodes of a voice
//! module, nodes reading the session input and nodes with a modulated
//! param run alone.
//!
//! **Running.** Per chunk, members whose params are constant over it and
//! that are healthy go to the kernel in batches of at most [`MAX_LANES`];
//! the rest (a ramp in progress, muted, resetting after a NaN, dead) run
//! alone through the usual path, at the same position. Each member keeps
//! its own buffers, state, snapshot, NaN check and recovery, and the
//! kernel writes exactly the bits the member's own `process` would, so
//! whether a node runs in a group never changes what it plays. A hot edit
//! builds a new engine, which groups its nodes afresh; state carries by
//! node as before.
//!
//! **Fused sums.** A group whose members all feed one input, and nothing
//! else reads them, runs in the order of that input's edges and its
//! kernel sums the members into the input ([`LaneSum`]) — the same
//! additions in the same order as the input's own gathering, which is
//! then skipped for that chunk ([`Slot::prefilled`]). A sum whose first
//! edge is not a member's but comes from a node that runs alone earlier
//! in the schedule (a *seed*: the part of a sum rendered ahead on another
//! thread reaches its rest that way) starts from that edge, copied in as
//! the gathering would, and the kernel adds the members onto it
//! ([`Group::seeded`]). A chunk in which
//! some member must run alone, or a member's output was not finite, is
//! gathered as usual. An input fed by one edge from a node nothing else
//! reads swaps the source's output buffer in instead of copying it
//! ([`Slot::steal`]).
//!
//! **Panics.** A kernel that panics leaves each member of its batch as it
//! was at the call or finished ([`LaneKernel`]): a finished member keeps
//! its outputs, and each other runs alone for the chunk, from the inputs
//! already gathered and under its own catch, so only a member that panics
//! alone is dead and no member's state advances twice over a chunk; a
//! fused sum is made again from the members' outputs (a finite group keeps
//! the sum of its earlier batches for this, [`Group::saved`]). A steady
//! path that panics takes back what it ran of the chunk
//! ([`SteadyLanes::undo`]), which then runs the usual way. A kernel that
//! panics when no member does alone, and a steady path that panics, are
//! never run again. Payloads are kept by the engine (`caught.rs`), never
//! freed on the audio thread.

use super::caught::Payload;
use super::mix::{gather, EdgeIn, Sources, NO_RING};
use super::node::{take_inputs, Core, Slot, NO_GROUP};
use super::{Engine, Run};
use crate::dsp::vector::{all_finite_at, fits_f32, SimdLevel};
use crate::dsp::Sample;
use crate::graph::SourceRef;
use crate::ops::{LaneKernel, LaneMember, LaneSum, SteadyLanes, MAX_LANES};
use std::any::TypeId;
use std::collections::HashMap;
use std::mem::MaybeUninit;

/// One step of a run: a node alone, or a lane group at its leader's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Slot(usize),
    Group(usize),
}

/// A lane group's kernel, at the members' precision.
#[derive(Clone, Copy)]
pub(super) enum GroupKernel {
    F32(LaneKernel<f32>),
    F64(LaneKernel<f64>),
}

pub(super) struct Group {
    /// Schedule indices, in the order they run: ascending, or for a fused
    /// group the order of the edges into its sum. The first is the leader.
    pub(super) members: Vec<usize>,
    /// The input every member feeds and nothing else reads of them, as
    /// (node, input): the kernel sums the members into it ([`LaneSum`]).
    pub(super) sum: Option<(usize, usize)>,
    /// The sum's first edge is not a member's but a seed's: a node that
    /// runs before the group, whose output the sum starts from (copied in
    /// as the input's own gathering would, [`Engine::seed_sum`]); the
    /// members are the edges after it.
    pub(super) seeded: bool,
    pub(super) kernel: GroupKernel,
    /// For a fused group whose kernel has one, what it keeps of the
    /// members for steady chunks ([`SteadyLanes`]).
    pub(super) steady: Option<GroupSteady>,
    /// The kept copy holds every member as it is now: the next chunk may
    /// run steady. Cleared by anything that changes a member (an event, a
    /// control, an edit, a restore) and by any chunk that runs otherwise.
    pub(super) is_steady: bool,
    /// The members' outputs are finite by construction
    /// ([`NodeProcessor::always_finite`](crate::ops::NodeProcessor::always_finite)):
    /// no NaN check after the kernel.
    pub(super) finite: bool,
    /// The kernel panicked and no member did when run alone: every member
    /// runs alone from then on (a kernel that panics is never run again).
    pub(super) broken: bool,
    /// The steady path panicked: it is never run again.
    pub(super) steady_failed: bool,
    /// A fused group of finite members in more than one batch: the sum of
    /// the batches before the current one (its kernel leaves the members'
    /// outputs unwritten), to start again from if the kernel panics.
    /// Allocated with the plan (a block long); empty otherwise.
    pub(super) saved: Vec<f64>,
}

/// How one kernel call over a batch went.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ran {
    /// Every member clean.
    Clean,
    /// Some member's output was not finite (scrubbed, reported).
    Dirty,
    /// The kernel panicked; every member then ran alone (under its own
    /// catch, from the inputs already gathered), so only a member that
    /// panics alone is dead. `found`: one did.
    Alone { found: bool },
}

/// A fused group's [`SteadyLanes`], at the members' precision.
pub(super) enum GroupSteady {
    F32(Box<dyn SteadyLanes<f32>>),
    F64(Box<dyn SteadyLanes<f64>>),
}

/// The nodes a group may take: a lane kernel, no voice, no session input,
/// no modulated param. Returns the node's concrete type and its kernel at
/// `level`.
fn lane_key(s: &Slot, level: SimdLevel) -> Option<(TypeId, GroupKernel)> {
    if s.voice.is_some() || s.feed.is_some() || s.param_inputs.iter().any(|l| !l.is_empty()) {
        return None;
    }
    match &s.core {
        Core::F32(t) => t.node.lanes(level).map(|k| {
            let any: &dyn std::any::Any = t.node.as_ref();
            (any.type_id(), GroupKernel::F32(k))
        }),
        Core::F64(t) => t.node.lanes(level).map(|k| {
            let any: &dyn std::any::Any = t.node.as_ref();
            (any.type_id(), GroupKernel::F64(k))
        }),
    }
}

/// The steps of every run (each run's `steps` range set) and the groups.
///
/// A run's nodes are put in level order: a node's level is one more than
/// the highest level among the nodes of its run it reads (feedback edges
/// aside: they read delay lines), 0 if none, so nodes of one level never
/// read each other and any order of them is a valid schedule. Within a
/// level, nodes of one lane type form a group at the first one's place
/// (schedule order otherwise). A run holding nodes of a voice module keeps
/// the schedule's order and forms no groups (a voice's sound reads nodes of
/// its voice by the schedule's order). Groups of one node are plain steps.
/// The kernels are those of `level`.
pub(super) fn plan(
    slots: &mut [Slot],
    runs: &mut [Run],
    main: &[SourceRef],
    level: SimdLevel,
) -> (Vec<Step>, Vec<Group>) {
    let keys: Vec<Option<(TypeId, GroupKernel)>> =
        slots.iter().map(|s| lane_key(s, level)).collect();
    let mut groups: Vec<Group> = Vec::new();
    let mut steps = Vec::with_capacity(slots.len());
    for run in runs.iter_mut() {
        let first_step = steps.len();
        let range = run.start..run.end;
        if range.clone().any(|i| slots[i].voice.is_some()) {
            steps.extend(range.map(Step::Slot));
            run.steps = (first_step, steps.len());
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
        let mut order: Vec<usize> = range.clone().collect();
        order.sort_by_key(|&i| (level[i - run.start], i));
        let mut k = 0;
        while k < order.len() {
            let lv = level[order[k] - run.start];
            let end = k + order[k..]
                .iter()
                .take_while(|&&i| level[i - run.start] == lv)
                .count();
            // This level's nodes by lane type, in schedule order.
            let mut by_type: HashMap<TypeId, usize> = HashMap::new();
            let mut placed: Vec<Step> = Vec::with_capacity(end - k);
            for &i in &order[k..end] {
                let Some((t, kernel)) = keys[i] else {
                    placed.push(Step::Slot(i));
                    continue;
                };
                match by_type.get(&t) {
                    Some(&g) => groups[g].members.push(i),
                    None => {
                        by_type.insert(t, groups.len());
                        placed.push(Step::Group(groups.len()));
                        let finite = match &slots[i].core {
                            Core::F32(t) => t.node.always_finite(),
                            Core::F64(t) => t.node.always_finite(),
                        };
                        groups.push(Group {
                            members: vec![i],
                            kernel,
                            finite,
                            sum: None,
                            seeded: false,
                            steady: None,
                            is_steady: false,
                            broken: false,
                            steady_failed: false,
                            saved: Vec::new(),
                        });
                    }
                }
            }
            for step in placed {
                match step {
                    Step::Group(g) if groups[g].members.len() == 1 => {
                        steps.push(Step::Slot(groups[g].members[0]));
                    }
                    other => steps.push(other),
                }
            }
            k = end;
        }
        run.steps = (first_step, steps.len());
    }
    // Drop the groups of one node (now plain steps), renumbering the rest.
    let mut renumber = vec![usize::MAX; groups.len()];
    let mut kept = Vec::new();
    for (g, group) in groups.into_iter().enumerate() {
        if group.members.len() > 1 {
            renumber[g] = kept.len();
            kept.push(group);
        }
    }
    for step in &mut steps {
        if let Step::Group(g) = step {
            *g = renumber[*g];
        }
    }
    fuse(slots, runs, main, &mut kept, &steps);
    for s in slots.iter_mut() {
        s.lane_group = NO_GROUP;
    }
    for (g, group) in kept.iter().enumerate() {
        for &i in &group.members {
            slots[i].lane_group = g as u32;
        }
    }
    (steps, kept)
}

/// How many edges and main-bus channels read each node.
fn readers(slots: &[Slot], main: &[SourceRef]) -> Vec<u32> {
    let mut readers = vec![0u32; slots.len()];
    for s in slots {
        for e in s.inputs.iter().chain(&s.param_inputs).flatten() {
            readers[e.src.node] += 1;
        }
    }
    for src in main {
        readers[src.node] += 1;
    }
    readers
}

/// Marks the inputs fed by one undelayed edge from a node of their
/// precision that nothing else reads, neither of them in a voice (whose
/// outputs the engine reads) nor reading the session input: their blocks
/// are swapped in instead of copied ([`Slot::steal`]).
fn mark_steals(slots: &mut [Slot], main: &[SourceRef]) {
    let readers = readers(slots, main);
    for c in 0..slots.len() {
        let mut bits = 0u64;
        for (k, edges) in slots[c].inputs.iter().enumerate().take(64) {
            let [e] = edges.as_slice() else {
                continue;
            };
            let src = &slots[e.src.node];
            if !e.src.is_feedback()
                && e.ring == NO_RING
                && readers[e.src.node] == 1
                && src.voice.is_none()
                && src.precision() == slots[c].precision()
                && slots[c].voice.is_none()
                && slots[c].feed.is_none()
            {
                bits |= 1 << k;
            }
        }
        slots[c].steal = bits;
    }
}

/// Finds the groups whose members all feed one input of one node, and
/// nothing else: their sum can be written by the kernel ([`LaneSum`]).
///
/// A member qualifies when its only output is read by exactly one edge
/// (no other edge, modulation, feedback line or main-bus channel reads
/// it); the input qualifies when every edge into it is such a member's,
/// undelayed, and there is one per member — or, seeded, when its first
/// edge is instead an undelayed one from a node that runs alone before the
/// group (in an earlier step of the schedule) and the others are the
/// members'; its node is of the members' precision, plays in no voice and
/// runs in the members' FP-mode run (so the sum is the same additions
/// under the same mode). The members then run in the order of the edges,
/// the plan's summing order.
fn fuse(
    slots: &mut [Slot],
    runs: &[Run],
    main: &[SourceRef],
    groups: &mut [Group],
    steps: &[Step],
) {
    mark_steals(slots, main);
    // How many edges read each node, and the last audio input: (node, input).
    let readers = readers(slots, main);
    let mut reader: Vec<Option<(usize, usize)>> = vec![None; slots.len()];
    for (c, s) in slots.iter().enumerate() {
        for (p, edges) in s.inputs.iter().enumerate() {
            for e in edges {
                reader[e.src.node] = Some((c, p));
            }
        }
    }
    // Where each node that runs alone, and each group, is in the schedule.
    let mut alone_at = vec![usize::MAX; slots.len()];
    let mut group_at = vec![usize::MAX; groups.len()];
    for (k, step) in steps.iter().enumerate() {
        match *step {
            Step::Slot(i) => alone_at[i] = k,
            Step::Group(g) => group_at[g] = k,
        }
    }
    for (gi, g) in groups.iter_mut().enumerate() {
        let single = |i: usize| {
            let outputs = match &slots[i].core {
                Core::F32(t) => t.outs.len(),
                Core::F64(t) => t.outs.len(),
            };
            outputs == 1 && readers[i] == 1
        };
        if !g.members.iter().all(|&i| single(i)) {
            continue;
        }
        let Some((c, p)) = reader[g.members[0]] else {
            continue;
        };
        let edges = &slots[c].inputs[p];
        let leader = g.members[0];
        let run = runs.iter().find(|r| (r.start..r.end).contains(&leader));
        let undelayed = |e: &EdgeIn| !e.src.is_feedback() && e.ring == NO_RING;
        // A seed: the first edge, from a node that runs alone before the
        // group, with every other edge a member's.
        let seeded = edges.len() == g.members.len() + 1
            && edges.first().is_some_and(|e| {
                undelayed(e)
                    && e.src.node < c
                    && !g.members.contains(&e.src.node)
                    && alone_at[e.src.node] < group_at[gi]
            });
        let from = usize::from(seeded);
        let ok = p < 64
            && slots[c].voice.is_none()
            && slots[c].feed.is_none()
            && slots[c].precision() == slots[leader].precision()
            && run.is_some_and(|r| (r.start..r.end).contains(&c))
            && edges.len() == g.members.len() + from
            && edges[from..]
                .iter()
                .all(|e| undelayed(e) && e.src.port == 0 && g.members.contains(&e.src.node));
        if ok {
            g.members = edges[from..].iter().map(|e| e.src.node).collect();
            g.sum = Some((c, p));
            g.seeded = seeded;
            let count = g.members.len();
            if g.finite && count > MAX_LANES {
                let len = match &slots[c].core {
                    Core::F32(t) => t.ins[p].len(),
                    Core::F64(t) => t.ins[p].len(),
                };
                g.saved = vec![0.0; len];
            }
            g.steady = match &slots[leader].core {
                Core::F32(t) => t.node.steady_lanes(count).map(GroupSteady::F32),
                Core::F64(t) => t.node.steady_lanes(count).map(GroupSteady::F64),
            };
        }
    }
}

/// What [`Engine::check_members`] looks at after `kernel` ran `batch`
/// over `start..start + n`.
#[derive(Clone, Copy)]
struct MemberCheck<'a> {
    kernel: GroupKernel,
    /// The kernel's outputs are finite by construction: none is scrubbed.
    finite: bool,
    batch: &'a [usize],
    /// Members (bit j: member j) the kernel knows finite in f32.
    known: u64,
    /// Members to check.
    among: u64,
    start: u64,
    n: usize,
}

impl Engine {
    /// Turns lane groups on (the default) or off: off, every node runs
    /// alone. What the engine plays is the same bits either way; this is
    /// for measuring what the groups save and for showing that they change
    /// nothing. Allocates: call it off the audio thread, between blocks.
    pub fn set_lanes(&mut self, on: bool) {
        let (steps, groups) = if on {
            plan(&mut self.slots, &mut self.runs, &self.main, self.simd)
        } else {
            self.slots.iter_mut().for_each(|s| {
                s.steal = 0;
                s.lane_group = NO_GROUP;
            });
            let mut steps = Vec::with_capacity(self.slots.len());
            for run in &mut self.runs {
                let first = steps.len();
                steps.extend((run.start..run.end).map(Step::Slot));
                run.steps = (first, steps.len());
            }
            (steps, Vec::new())
        };
        self.steps = steps;
        self.groups = groups;
        // The two-pass loop reads the steps: plan it again over them.
        self.plan_two_passes();
    }

    /// Runs the engine's checks and its lane kernels with the instruction
    /// set of `level` (by default the widest this CPU has,
    /// `SimdLevel::detect`), re-planning the lane groups if they are on:
    /// for tests and benchmarks that compare the levels. What the engine
    /// plays is the same bits at every level. Allocates: call it off the
    /// audio thread, between blocks.
    pub fn set_simd_level(&mut self, level: SimdLevel) {
        self.simd = level;
        if !self.groups.is_empty() {
            self.set_lanes(true);
        }
    }

    /// The lane groups, each as its members' schedule indices (leader
    /// first). Allocates.
    pub fn lane_groups(&self) -> Vec<Vec<usize>> {
        self.groups.iter().map(|g| g.members.clone()).collect()
    }

    /// For each lane group (as in [`lane_groups`](Self::lane_groups)), the
    /// input its kernel sums the members into, as (node, input), if it is
    /// fused. Allocates.
    pub fn lane_sums(&self) -> Vec<Option<(usize, usize)>> {
        self.groups.iter().map(|g| g.sum).collect()
    }

    /// For each lane group (as in [`lane_groups`](Self::lane_groups)),
    /// whether its next chunk may run steady ([`SteadyLanes`]): it has a
    /// kept copy of its members and nothing changed them since. Allocates.
    pub fn lane_steady(&self) -> Vec<bool> {
        self.groups.iter().map(|g| g.is_steady).collect()
    }

    /// For each lane group (as in [`lane_groups`](Self::lane_groups)), the
    /// node whose block its fused sum starts from, if the sum's first edge
    /// is not a member's (a seed, run before the group). Allocates.
    pub fn lane_seeds(&self) -> Vec<Option<usize>> {
        (0..self.groups.len()).map(|g| self.seed_of(g)).collect()
    }

    /// The node a seeded group's sum starts from ([`Group::seeded`]).
    pub(super) fn seed_of(&self, g: usize) -> Option<usize> {
        let group = self.groups.get(g).filter(|g| g.seeded)?;
        let (c, p) = group.sum?;
        Some(self.slots[c].inputs[p].first()?.src.node)
    }

    /// Runs step `k` of the current run for the chunk `start..start+n`.
    #[inline]
    pub(super) fn run_step(&mut self, k: usize, start: u64, n: usize) {
        debug_assert!(!matches!(self.steps[k], Step::Group(g) if g >= self.groups.len()));
        match self.steps[k] {
            Step::Slot(i) => self.process_slot(i, start, n),
            Step::Group(g) => self.run_group(g, start, n),
        }
    }

    /// Whether node `i` may run in its group's kernel for the chunk at
    /// `start`: healthy (not muted, resetting, dead or due a retry) and
    /// every param constant over the chunk.
    pub(super) fn lane_ready(&self, i: usize, start: u64) -> bool {
        let s = &self.slots[i];
        let r = &s.recovery;
        r.muted_until == 0
            && r.resetting.is_none()
            && !r.dead
            && (!self.ramps_live
                || s.params
                    .iter()
                    .all(|p| p.ramp.is_none_or(|r| start >= r.start + r.len)))
    }

    /// Runs lane group `g` for one chunk: ready members through the kernel
    /// in batches, the others alone. A fused group whose members are all
    /// ready writes its sum; otherwise every member writes its own output
    /// and the sum's node gathers them as usual.
    fn run_group(&mut self, g: usize, start: u64, n: usize) {
        let count = self.groups[g].members.len();
        let kernel = self.groups[g].kernel;
        let finite = self.groups[g].finite;
        if self.groups[g].broken {
            for k in 0..count {
                let i = self.groups[g].members[k];
                self.process_slot(i, start, n);
            }
            return;
        }
        if let Some((c, p)) = self.groups[g].sum {
            let seeded = self.groups[g].seeded;
            if self.groups[g].is_steady
                && (!seeded || self.seed_sum(c, p, n))
                && self.run_steady(g, c, p, start, n)
            {
                return;
            }
            self.groups[g].is_steady = false;
            if (0..count).all(|k| self.lane_ready(self.groups[g].members[k], start))
                && (!seeded || self.seed_sum(c, p, n))
            {
                let mut clean = true;
                let mut summed = true;
                // A seeded sum holds its seed already.
                let mut first = !seeded;
                for k in (0..count).step_by(MAX_LANES) {
                    let mut batch = [0usize; MAX_LANES];
                    let len = (count - k).min(MAX_LANES);
                    batch[..len].copy_from_slice(&self.groups[g].members[k..k + len]);
                    let sum = Some(Fused {
                        node: c,
                        input: p,
                        first,
                    });
                    if k > 0 && finite {
                        self.keep_sum(g, c, p, n, true);
                    }
                    match self.run_batch(kernel, finite, &batch[..len], start, n, sum) {
                        Ran::Clean => {}
                        Ran::Dirty => clean = false,
                        Ran::Alone { found } => {
                            clean = false;
                            self.groups[g].broken |= !found;
                            // The kernel's part of the sum is void: the
                            // members' own outputs (just written alone) are
                            // added again to the sum of the batches before
                            // (kept, for a finite group, whose outputs the
                            // kernel leaves unwritten).
                            let before = if k == 0 {
                                !seeded || self.seed_sum(c, p, n)
                            } else {
                                self.keep_sum(g, c, p, n, false)
                            };
                            summed &= before && self.resum(kernel, &batch[..len], c, p, n, first);
                        }
                    }
                    first = false;
                }
                if clean {
                    self.slots[c].prefilled |= 1 << p;
                    self.load_steady(g);
                } else if finite {
                    // Only a panic gets here. The members' outputs were not
                    // all written (a finite group's kernel need not), so the
                    // sum's node must not gather them: the sum holds, or is
                    // silence for this chunk.
                    if summed {
                        self.slots[c].prefilled |= 1 << p;
                    } else {
                        self.silence_input(c, p, n);
                    }
                }
                return;
            }
        }
        let mut k = 0;
        while k < count {
            let mut batch = [0usize; MAX_LANES];
            let mut len = 0;
            while k < count && len < MAX_LANES {
                let i = self.groups[g].members[k];
                k += 1;
                if self.lane_ready(i, start) {
                    batch[len] = i;
                    len += 1;
                } else {
                    self.process_slot(i, start, n);
                }
            }
            if len > 0 {
                let ran = self.run_batch(kernel, finite, &batch[..len], start, n, None);
                if ran == (Ran::Alone { found: false }) {
                    self.groups[g].broken = true;
                }
            }
        }
    }

    /// Marks the group node `i` is in, if any, as changed: its next chunk
    /// runs the usual way (and keeps the members afresh).
    #[inline]
    pub(super) fn unsteady(&mut self, i: usize) {
        let g = self.slots[i].lane_group;
        if let Some(group) = self.groups.get_mut(g as usize) {
            group.is_steady = false;
        }
    }

    /// [`unsteady`](Self::unsteady) for every group: the nodes' state or
    /// params were set from outside (a restore, a reset, an edit).
    pub(super) fn unsteady_all(&mut self) {
        for g in &mut self.groups {
            g.is_steady = false;
        }
    }

    /// After fused group `g` ran a chunk in its kernel, every member clean: keeps each member for steady chunks, if the group has
    /// them and every member may run so (healthy with nothing pending, no
    /// audio input to gather).
    fn load_steady(&mut self, g: usize) {
        let Group {
            steady: Some(steady),
            members,
            steady_failed: false,
            ..
        } = &mut self.groups[g]
        else {
            return;
        };
        let mut ok = true;
        for (k, &i) in members.iter().enumerate() {
            let Slot {
                core,
                params,
                inputs,
                recovery,
                ..
            } = &mut self.slots[i];
            // A member still recovering from a failure must be watched
            // every chunk (`ran_clean`); one with inputs must gather them.
            ok &= recovery.wait == 0 && inputs.iter().all(|e| e.is_empty());
            ok &= match (core, &mut *steady) {
                (Core::F32(t), GroupSteady::F32(st)) => st.load(k, t.node.as_mut(), params),
                (Core::F64(t), GroupSteady::F64(st)) => st.load(k, t.node.as_mut(), params),
                _ => false,
            };
            if !ok {
                break;
            }
        }
        self.groups[g].is_steady = ok && !self.ramps_live;
    }

    /// A steady chunk of fused group `g` (summing into node `c`'s input
    /// `p`): the kept copy runs every member, with no per-member work here
    /// but handing it the nodes. False, with nothing run, when the copy
    /// found a member changed, or when the copy panicked (the payload is
    /// kept; the steady path is off from then on, and the chunk runs the
    /// usual way, where only a member that panics is muted).
    fn run_steady(&mut self, g: usize, c: usize, p: usize, start: u64, n: usize) -> bool {
        let group = &mut self.groups[g];
        let (Some(steady), true) = (&mut group.steady, c < self.slots.len()) else {
            return false;
        };
        let (before, after) = self.slots.split_at_mut(c);
        let ran = match steady {
            GroupSteady::F32(st) => steady_call(
                &mut **st,
                &group.members,
                before,
                (&mut after[0], p, !group.seeded),
                start,
                n,
            ),
            GroupSteady::F64(st) => steady_call(
                &mut **st,
                &group.members,
                before,
                (&mut after[0], p, !group.seeded),
                start,
                n,
            ),
        };
        self.steady_ran(g, (c, p), ran)
    }

    /// What a steady chunk of group `g` (summing into node `c`'s input
    /// `p`) came to: the sum marked made when it ran; a panic's payload
    /// kept and the steady path off from then on. Whether it ran.
    pub(super) fn steady_ran(
        &mut self,
        g: usize,
        (c, p): (usize, usize),
        ran: Result<bool, Payload>,
    ) -> bool {
        match ran {
            Ok(true) => {
                self.slots[c].prefilled |= 1 << p;
                true
            }
            Ok(false) => false,
            Err(payload) => {
                self.caught.keep(payload);
                let group = &mut self.groups[g];
                group.is_steady = false;
                group.steady_failed = true;
                false
            }
        }
    }

    /// One kernel call over `batch` (schedule indices in the order they
    /// run): inputs gathered per member, the kernel, then each member's
    /// NaN check (unless its outputs are `finite` by construction). True if
    /// every member ran clean (a fused sum then holds only clean outputs).
    fn run_batch(
        &mut self,
        kernel: GroupKernel,
        finite: bool,
        batch: &[usize],
        start: u64,
        n: usize,
        sum: Option<Fused>,
    ) -> Ran {
        // Every member's slot lines the batch reads, on their way to the
        // cache at once rather than one miss after another below.
        #[cfg(target_arch = "x86_64")]
        for &i in batch {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let slot = self.slots.as_ptr().wrapping_add(i).cast::<u8>();
            for line in 0..HOT_SLOT_LINES {
                // SAFETY: a prefetch only hints the cache; it never faults.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(slot.wrapping_add(64 * line).cast()) };
            }
        }
        for &i in batch {
            self.gather_inputs(i, n);
        }
        let ran = match kernel {
            GroupKernel::F32(f) => call_kernel(&mut self.slots, f, batch, start, n, sum, !finite),
            GroupKernel::F64(f) => call_kernel(&mut self.slots, f, batch, start, n, sum, !finite),
        };
        let known = match ran {
            Ok(known) => known,
            Err((payload, done)) => {
                self.caught.keep(payload);
                return self.after_panic(kernel, finite, batch, done, start, n);
            }
        };
        let check = MemberCheck {
            kernel,
            finite,
            batch,
            known,
            among: !0,
            start,
            n,
        };
        if self.check_members(check) {
            Ran::Clean
        } else {
            Ran::Dirty
        }
    }

    /// Each member of `c.batch` in `c.among` (bit j: member j) after the
    /// kernel ran it: its outputs checked for NaN (unless `c.finite`, or
    /// `c.known` finite), its health updated. True if all ran clean.
    fn check_members(&mut self, c: MemberCheck<'_>) -> bool {
        let MemberCheck {
            kernel,
            finite,
            batch,
            known,
            among,
            start,
            n,
        } = c;
        let end = start + n as u64;
        let mut all_clean = true;
        for (j, &i) in batch.iter().enumerate() {
            if among >> j & 1 == 0 {
                continue;
            }
            let level = self.simd;
            // A kernel knows its outputs finite, which in f64 is not yet
            // within f32's range ([`fits_f32`]): f64 members are checked.
            let known = matches!(kernel, GroupKernel::F32(_)) && known >> j & 1 != 0;
            let clean = finite
                || known
                || match &mut self.slots[i].core {
                    Core::F32(t) => scrub(level, &mut t.outs, n),
                    Core::F64(t) => scrub(level, &mut t.outs, n),
                };
            if clean {
                self.slots[i].recovery.ran_clean(end);
            } else {
                all_clean = false;
                self.report_nan(i, start, end);
            }
        }
        all_clean
    }

    /// The kernel over `batch` panicked, having finished the members in
    /// `done` (bit j: member j; the others are as they were at the call):
    /// in member order, a finished one is checked as after a clean call
    /// (its outputs are written, with or without a sum), any other runs
    /// alone, once, so no member's state advances twice over the chunk.
    #[cold]
    #[inline(never)]
    pub(super) fn after_panic(
        &mut self,
        kernel: GroupKernel,
        finite: bool,
        batch: &[usize],
        done: u64,
        start: u64,
        n: usize,
    ) -> Ran {
        for (j, &i) in batch.iter().enumerate() {
            if done >> j & 1 != 0 {
                self.check_members(MemberCheck {
                    kernel,
                    finite,
                    batch,
                    known: 0,
                    among: 1 << j,
                    start,
                    n,
                });
            } else {
                self.rerun_alone(i, start, n);
            }
        }
        let found = batch.iter().any(|&i| self.slots[i].recovery.dead);
        Ran::Alone { found }
    }

    /// Runs member `i` of a batch whose kernel panicked the usual way, from
    /// the inputs the batch gathered (not gathered, nor a buffer swapped
    /// in, again).
    #[cold]
    fn rerun_alone(&mut self, i: usize, start: u64, n: usize) {
        let steal = std::mem::take(&mut self.slots[i].steal);
        self.slots[i].prefilled = u64::MAX;
        self.process_slot(i, start, n);
        self.slots[i].steal = steal;
    }

    /// Sums the outputs 0 of `batch` into node `c`'s input `p`, in member
    /// order, as a fused kernel does (`first`: nothing in it yet): false if
    /// the slots are not of the kernel's precision.
    #[cold]
    fn resum(
        &mut self,
        kernel: GroupKernel,
        batch: &[usize],
        c: usize,
        p: usize,
        n: usize,
        first: bool,
    ) -> bool {
        match kernel {
            GroupKernel::F32(_) => resum::<f32>(&mut self.slots, batch, c, p, n, first),
            GroupKernel::F64(_) => resum::<f64>(&mut self.slots, batch, c, p, n, first),
        }
    }

    /// Copies node `c`'s input `p` into group `g`'s [`Group::saved`]
    /// (`save`), or back: false when the group keeps none.
    fn keep_sum(&mut self, g: usize, c: usize, p: usize, n: usize, save: bool) -> bool {
        let saved = &mut self.groups[g].saved;
        let Some(saved) = saved.get_mut(..n) else {
            return false;
        };
        let Some(slot) = self.slots.get_mut(c) else {
            return false;
        };
        // f32 goes through f64 and back exactly.
        match &mut slot.core {
            Core::F32(t) => match t.ins.get_mut(p).and_then(|x| x.get_mut(..n)) {
                Some(x) if save => saved.iter_mut().zip(x).for_each(|(s, v)| *s = *v as f64),
                Some(x) => x.iter_mut().zip(saved).for_each(|(v, s)| *v = *s as f32),
                None => return false,
            },
            Core::F64(t) => match t.ins.get_mut(p).and_then(|x| x.get_mut(..n)) {
                Some(x) if save => saved.copy_from_slice(x),
                Some(x) => x.copy_from_slice(saved),
                None => return false,
            },
        }
        true
    }

    /// A seeded sum's start (its first edge, [`Group::seeded`]) gathered
    /// into node `c`'s input `p`, as the input's own gathering does: false
    /// when `c` has no such input.
    fn seed_sum(&mut self, c: usize, p: usize, n: usize) -> bool {
        let at = self.stage_at;
        let (before, rest) = self.slots.split_at_mut(c);
        let Some(slot) = rest.first_mut() else {
            return false;
        };
        let Some(edges) = slot.inputs.get(p).and_then(|e| e.get(..1)) else {
            return false;
        };
        let before = Sources::of(before);
        match &mut slot.core {
            Core::F32(t) => match t.ins.get_mut(p) {
                Some(buf) => gather(&mut buf[..n], edges, before, &mut t.rings, &mut t.tmp, at),
                None => return false,
            },
            Core::F64(t) => match t.ins.get_mut(p) {
                Some(buf) => gather(&mut buf[..n], edges, before, &mut t.rings, &mut t.tmp, at),
                None => return false,
            },
        }
        true
    }

    /// Node `c`'s input `p` as silence for the chunk, already summed.
    #[cold]
    fn silence_input(&mut self, c: usize, p: usize, n: usize) {
        match &mut self.slots[c].core {
            Core::F32(t) => t.ins[p][..n].fill(0.0),
            Core::F64(t) => t.ins[p][..n].fill(0.0),
        }
        self.slots[c].prefilled |= 1 << p;
    }

    /// Sums node `i`'s audio inputs into its input buffers, as a node run
    /// alone does.
    fn gather_inputs(&mut self, i: usize, n: usize) {
        if self.slots[i].inputs.is_empty() {
            return;
        }
        let at = self.stage_at;
        let (before, rest) = self.slots.split_at_mut(i);
        if rest[0].steal != 0 {
            take_inputs(before, &mut rest[0], n);
        }
        gather_slot(&mut rest[0], Sources::of(before), n, at);
    }
}

/// Sums `slot`'s audio inputs (those not prefilled) from its sources in
/// `before` into its input buffers, as a node run alone does.
pub(super) fn gather_slot(slot: &mut Slot, before: Sources<'_>, n: usize, at: usize) {
    {
        let Slot {
            core,
            inputs,
            prefilled,
            ..
        } = slot;
        let done = std::mem::take(prefilled);
        let skip = |k: usize| k < 64 && done >> k & 1 != 0;
        match core {
            Core::F32(t) => {
                for (k, (buf, srcs)) in t.ins.iter_mut().zip(inputs.iter()).enumerate() {
                    if !srcs.is_empty() && !skip(k) {
                        gather(&mut buf[..n], srcs, before, &mut t.rings, &mut t.tmp, at);
                    }
                }
            }
            Core::F64(t) => {
                for (k, (buf, srcs)) in t.ins.iter_mut().zip(inputs.iter()).enumerate() {
                    if !srcs.is_empty() && !skip(k) {
                        gather(&mut buf[..n], srcs, before, &mut t.rings, &mut t.tmp, at);
                    }
                }
            }
        }
    }
}

/// The cache lines at the start of a [`Slot`] that hold what a batch reads
/// of each member (see its layout).
const HOT_SLOT_LINES: usize = std::mem::offset_of!(Slot, id).div_ceil(64);

/// A precision's view of a slot's processor and buffers, for the kernel.
pub(super) trait Typed: Sample {
    fn member<'a>(s: &'a mut Slot) -> Option<LaneMember<'a, Self>>;
    /// The slot's processor, if it is at this precision.
    fn node(s: &mut Slot) -> Option<&mut dyn std::any::Any>;
    /// Input `p` of the slot, if it is at this precision.
    fn input(s: &mut Slot, p: usize) -> Option<&mut Vec<Self>>;
}

macro_rules! typed {
    ($s:ty, $v:ident) => {
        impl Typed for $s {
            fn member<'a>(s: &'a mut Slot) -> Option<LaneMember<'a, $s>> {
                let Slot { core, params, .. } = s;
                match core {
                    Core::$v(t) => {
                        // The node itself, as every `lanes` returns it:
                        // no call to ask for it again.
                        let node: &mut dyn std::any::Any = t.node.as_mut();
                        Some(LaneMember {
                            node,
                            params,
                            inputs: &t.ins,
                            outputs: &mut t.outs,
                            done: false,
                        })
                    }
                    _ => None,
                }
            }
            fn node(s: &mut Slot) -> Option<&mut dyn std::any::Any> {
                match &mut s.core {
                    Core::$v(t) => Some(t.node.as_mut()),
                    _ => None,
                }
            }
            fn input(s: &mut Slot, p: usize) -> Option<&mut Vec<$s>> {
                match &mut s.core {
                    Core::$v(t) => t.ins.get_mut(p),
                    _ => None,
                }
            }
        }
    };
}

/// A fused group's sum for one batch: node `node`'s input `input`, and
/// whether nothing is in it yet.
#[derive(Clone, Copy)]
struct Fused {
    node: usize,
    input: usize,
    first: bool,
}
typed!(f32, F32);
typed!(f64, F64);

/// [`Engine::resum`] at one precision.
fn resum<S: Typed>(
    slots: &mut [Slot],
    batch: &[usize],
    c: usize,
    p: usize,
    n: usize,
    first: bool,
) -> bool {
    if c >= slots.len() || batch.iter().any(|&i| i >= c) {
        return false;
    }
    let (before, after) = slots.split_at_mut(c);
    let Some(dst) = S::input(&mut after[0], p) else {
        return false;
    };
    let mut sum = LaneSum {
        dst: &mut dst[..n],
        first,
        outputs: false,
    };
    for &i in batch {
        let Some(out) = S::member(&mut before[i]).and_then(|m| m.outputs.first()) else {
            return false;
        };
        sum.add(&out[..n]);
    }
    true
}

/// Calls `f` on the members `batch` (schedule indices in the order they
/// run, at most [`MAX_LANES`]), with the fused `sum` if any (whose node
/// comes after every member); `outputs`: the members' outputs must be
/// written even with a sum. The kernel's mask of members known finite, or
/// the payload of its panic with the mask of the members it had finished
/// ([`LaneMember::done`]; the others are as they were, and their outputs
/// and the sum are void).
fn call_kernel<S: Typed>(
    slots: &mut [Slot],
    f: LaneKernel<S>,
    batch: &[usize],
    start: u64,
    n: usize,
    sum: Option<Fused>,
    outputs: bool,
) -> Result<u64, (Payload, u64)> {
    let (before, after) = match sum {
        Some(s) => slots.split_at_mut(s.node),
        None => (slots, &mut [][..]),
    };
    let mut lane_sum = match (sum, after.first_mut()) {
        (Some(s), Some(slot)) => S::input(slot, s.input).map(|dst| LaneSum {
            dst: &mut dst[..n],
            first: s.first,
            outputs,
        }),
        _ => None,
    };
    // SAFETY: `before` is borrowed for the call and the batch's indices
    // are distinct (a node is in one group, once).
    unsafe {
        kernel_at(
            before.as_mut_ptr(),
            before.len(),
            f,
            batch,
            start,
            n,
            lane_sum.as_mut(),
        )
    }
}

/// [`call_kernel`] over the first `count` slots from `base`, with `sum`.
///
/// # Safety
/// The slots of `batch` below `count` are valid, distinct, and touched by
/// no other code until the call returns.
pub(super) unsafe fn kernel_at<S: Typed>(
    base: *mut Slot,
    count: usize,
    f: LaneKernel<S>,
    batch: &[usize],
    start: u64,
    n: usize,
    sum: Option<&mut LaneSum<'_, S>>,
) -> Result<u64, (Payload, u64)> {
    let mut buf: [MaybeUninit<LaneMember<'_, S>>; MAX_LANES] =
        [const { MaybeUninit::uninit() }; MAX_LANES];
    let mut len = 0;
    for &i in batch.iter().take(MAX_LANES) {
        if i >= count {
            break;
        }
        // SAFETY: `i` is in bounds, and the indices of a batch are
        // distinct, so each slot is borrowed once, through `base`; the
        // borrows end with `members`, below (the contract above).
        let slot: &mut Slot = unsafe { &mut *base.add(i) };
        if let Some(m) = S::member(slot) {
            buf[len].write(m);
            len += 1;
        }
    }
    // SAFETY: the first `len` entries were written just above, and
    // `LaneMember` holds only references (nothing to drop).
    let members: &mut [LaneMember<'_, S>] =
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), len) };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f(&mut *members, n, start, sum)
    }))
    .map_err(|payload| {
        let done = members
            .iter()
            .enumerate()
            .fold(0u64, |d, (k, m)| d | (u64::from(m.done) << k));
        (payload, done)
    })
}

/// Runs a steady chunk through `st` for `members` (schedule indices, all
/// before the sum's node `consumer`, whose input `p` the members sum
/// into, onto what it holds unless `first`), in batches of [`STEADY_BATCH`] nodes lent from the stack (a
/// batch that finds a change takes the ones before back: nothing runs
/// unless all can): whether it ran, or the payload of its panic (every
/// node then taken back to the chunk's start, [`SteadyLanes::undo`]).
fn steady_call<S: Typed>(
    st: &mut dyn SteadyLanes<S>,
    members: &[usize],
    before: &mut [Slot],
    (consumer, p, first): (&mut Slot, usize, bool),
    start: u64,
    n: usize,
) -> Result<bool, Payload> {
    let Some(dst) = S::input(consumer, p) else {
        return Ok(false);
    };
    let mut sum = LaneSum {
        dst: &mut dst[..n],
        first,
        outputs: false,
    };
    let (base, count) = (before.as_mut_ptr(), before.len());
    if members.iter().any(|&i| i >= count) {
        return Ok(false);
    }
    // SAFETY: every member is in bounds (checked above) and the members
    // are distinct (a node is in one group, once); `before` is not used
    // while a batch is lent.
    let lend = |k0: usize, f: &mut dyn FnMut(&mut [&mut dyn std::any::Any]) -> bool| unsafe {
        lend_batch::<S>(base, members, k0, f)
    };
    // The batch running: the ones before it ran whole.
    let mut at = 0;
    let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for k0 in (0..members.len()).step_by(STEADY_BATCH) {
            at = k0;
            if !lend(k0, &mut |nodes| st.run(k0, nodes, n, start, &mut sum)) {
                // A change the engine was not told of: the batches before
                // are taken back and the chunk runs the usual way (which
                // writes the sum afresh).
                for back in (0..k0).step_by(STEADY_BATCH) {
                    lend(back, &mut |nodes| {
                        st.undo(back, nodes, n);
                        true
                    });
                }
                return false;
            }
        }
        true
    }));
    if ran.is_err() {
        // Every node as it was at the chunk's start (the batch that
        // panicked takes back what it had done), so that the usual way
        // runs each member once. An undo that panics too leaves its payload
        // with the engine's others: leaked, never freed here.
        let undone = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for back in (0..=at).step_by(STEADY_BATCH) {
                lend(back, &mut |nodes| {
                    st.undo(back, nodes, n);
                    true
                });
            }
        }));
        if let Err(p) = undone {
            std::mem::forget(p);
        }
    }
    ran
}

/// The nodes of `members[k0..]` (at most [`STEADY_BATCH`] of them) lent
/// to `f` for one call, from the stack; false, without calling it, when
/// one of them is not at precision `S`.
///
/// # Safety
/// Every member indexes a slot under `base`, the members are distinct, and
/// nothing else borrows their slots during the call.
pub(super) unsafe fn lend_batch<S: Typed>(
    base: *mut Slot,
    members: &[usize],
    k0: usize,
    f: &mut dyn FnMut(&mut [&mut dyn std::any::Any]) -> bool,
) -> bool {
    let mut nodes: [MaybeUninit<&mut dyn std::any::Any>; STEADY_BATCH] =
        [const { MaybeUninit::uninit() }; STEADY_BATCH];
    let batch = &members[k0..(k0 + STEADY_BATCH).min(members.len())];
    for (k, &i) in batch.iter().enumerate() {
        // SAFETY: the contract above: each slot is borrowed once, through
        // `base`, and the borrows end with the call below.
        let slot: &mut Slot = unsafe { &mut *base.add(i) };
        let Some(node) = S::node(slot) else {
            return false;
        };
        nodes[k].write(node);
    }
    // SAFETY: the first `batch.len()` entries were written just above;
    // they are references (nothing to drop).
    let lent = unsafe {
        std::slice::from_raw_parts_mut(
            nodes.as_mut_ptr().cast::<&mut dyn std::any::Any>(),
            batch.len(),
        )
    };
    f(lent)
}

/// Members whose nodes a steady chunk lends its kept copy at once (from
/// the stack: 16 bytes each).
pub(super) const STEADY_BATCH: usize = 256;

/// Replaces non-finite output samples by silence, as for a node run
/// alone; false if there were any.
pub(super) fn scrub<S: Sample>(level: SimdLevel, outs: &mut [Vec<S>], n: usize) -> bool {
    let mut clean = true;
    for out in outs.iter_mut() {
        if !all_finite_at(level, &out[..n]) {
            for x in out[..n].iter_mut() {
                if !fits_f32(*x) {
                    *x = S::ZERO;
                }
            }
            clean = false;
        }
    }
    clean
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::engine::render_to_vec;
    use crate::graph::{compile, CompileOptions};
    use crate::profile::Profile;

    fn engine(text: &str) -> Engine {
        let scene = crate::scene::load_str(text, "t.json", None).unwrap();
        let plan = compile(
            &scene,
            &CompileOptions {
                profile: Some(Profile::Live),
                block_size: Some(64),
                ..CompileOptions::default()
            },
        )
        .unwrap();
        Engine::new(plan)
    }

    /// `count` live sines summed into one lowpass (a fused group with a
    /// steady path): sine `k` at `freq(k)` Hz and amplitude 0.01, with the
    /// further params `extra(k)` (JSON members, each after a comma), the
    /// scene's events the JSON array `events`.
    pub(in crate::engine) fn sines_into_lowpass(
        count: usize,
        freq: impl Fn(usize) -> f64,
        extra: impl Fn(usize) -> &'static str,
        events: &str,
    ) -> String {
        let nodes: Vec<String> = (0..count)
            .map(|k| {
                format!(
                    r#"{{ "id": "s{k}", "op": "sine", "params": {{ "freq": {}, "amp": 0.01{} }} }}"#,
                    freq(k),
                    extra(k)
                )
            })
            .collect();
        let edges: Vec<String> = (0..count)
            .map(|k| format!(r#"{{ "from": "s{k}", "to": "lp" }}"#))
            .collect();
        format!(
            r#"{{ "version": "1.0", "sample_rate": 48000, "nodes": [{},
            {{ "id": "lp", "op": "biquad", "params": {{ "mode": "lowpass", "cutoff": 2000 }} }}],
            "edges": [{}], "outputs": {{ "main": ["lp"] }}, "events": {events} }}"#,
            nodes.join(", "),
            edges.join(", ")
        )
    }

    /// `count` live sines summed into one lowpass.
    fn sines(count: usize) -> String {
        sines_into_lowpass(count, |k| (50 + 37 * k) as f64, |_| "", "[]")
    }

    /// A member's state changed behind the engine's back (here its node
    /// reset directly, which no engine path does without telling the
    /// group), in the first batch or a later one: the steady chunk finds
    /// it, takes back the batches that ran, and the chunk runs the usual
    /// way — the same bits as the same change with lanes off.
    #[test]
    fn a_change_the_group_was_not_told_of_runs_the_chunk_as_usual() {
        let count = 2 * STEADY_BATCH + 10;
        let text = sines(count);
        // By position in the group: in the first batch, the second, the last.
        for pos in [3, STEADY_BATCH + 7, count - 1] {
            let mut on = engine(&text);
            let mut off = engine(&text);
            off.set_lanes(false);
            let (a, b) = (render_to_vec(&mut on, 1024), render_to_vec(&mut off, 1024));
            assert_eq!(a, b);
            assert_eq!(on.lane_steady(), vec![true]);
            let changed = on.node_id(on.lane_groups()[0][pos]).to_string();
            for e in [&mut on, &mut off] {
                let i = e.node_index(&changed).unwrap();
                match &mut e.slots[i].core {
                    Core::F32(t) => t.node.reset(),
                    Core::F64(t) => t.node.reset(),
                }
            }
            let (a, b) = (render_to_vec(&mut on, 1024), render_to_vec(&mut off, 1024));
            let same = a
                .iter()
                .zip(&b)
                .all(|(x, y)| x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits()));
            assert!(same, "member {changed}, at {pos} of {count}");
            assert_eq!(on.lane_steady(), vec![true]);
        }
    }
}
