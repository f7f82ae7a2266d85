//! Half of a scene rendered ahead on a thread of its own.
//!
//! A block-synchronous pool (`engine/workers.rs`) hands a level to its
//! workers and waits for them every block; at a small block size that
//! handover costs about as much as the level it spreads. An offline render
//! knows everything it will play in advance, so a part of the graph that
//! nothing changes while it renders can run ahead of the rest instead,
//! whole chunks at a time, with nothing to wait for block by block.
//!
//! **The cut.** Of every node input, the first `k` edges (in summing
//! order, below) and everything upstream of them form a candidate part;
//! the one whose estimated cost (`check`'s per-node figures, a member of
//! a steady sum of live sines at a sixth of its figure) is nearest half of
//! the scene's is rendered ahead: half of a wide sum's edges (the 64
//! bandpasses summed in W4), or the head of a chain (a recording's
//! highpass and compressor, ahead of its reverb). That part must feed
//! nothing but those first `k` edges, add no latency, and hold every
//! `input` node of the scene (it then reads the render's input, and the
//! rest none); the scene must have no events, no controls, no voice
//! modules and no feedback edge: then what the part plays is a function
//! of time and the input alone. The part ahead becomes a scene of its own
//! whose main output is a node of unit gain summing those `k` edges; the
//! rest becomes a scene in which an `input` node, fed that output, is the
//! input's first edge, in the place of the `k` it replaces. The search
//! keeps what feeds each node as a bitset (so a chain of thousands of
//! nodes is searched in milliseconds), tries the candidates nearest half
//! first within a bounded amount of work, and does not search a scene of
//! more than 8192 nodes.
//!
//! **Why the bits are the same.** A node's inputs are summed in the order
//! of their sources' ids (`graph/compile/edges.rs`), the first copied and
//! each next one added (`engine/mix.rs`): the part ahead adds the first `k`
//! exactly as the whole scene would, a gain of 1 leaves that sum as it is,
//! it reaches the rest as 64-bit floats (exact for f32 and f64 alike), and
//! the rest adds the remaining inputs to it in order — its `input` node is
//! named `-`, which sorts before any other id, and the cut is dropped
//! unless the compiled rest sums it first. Every node keeps its id, so its
//! random streams are the same (the seed the scene plays with is written
//! into both parts). Both parts compile with the render's options, and the
//! cut is dropped unless every node resolves to the same settings as in
//! the whole scene, the added ones as the sum's node. The part's main bus
//! is not clamped, and it renders whole blocks.
//!
//! **When it is not the same.** The part's partial sum may overflow f32
//! where the whole scene's sum would not have been reached that way; and
//! when both parts, or two nodes of one part, first meet a NaN/Inf in one
//! block, which node the whole scene names depends on the order its engine
//! runs them in (a part's levels are not the whole's). Then the render
//! keeps nothing of that pass ([`Ahead::spoiled`], [`Ahead::keeps`]) and
//! plays the whole scene again on one engine, reading its input again
//! from the start (so an input from standard input is never cut).

use crate::engine::{Engine, EngineStats, InputBlock, InputFeed};
use crate::graph::{node_cost_ns, Plan, SeedSource};
use crate::scene::{Scene, Split};
use fixedbitset::FixedBitSet;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, TrySendError};
use std::sync::Arc;
use std::thread::{JoinHandle, Thread};
use std::time::Duration;

/// The least estimated work (ns per sample) of the smaller part: below it
/// a second thread is not worth starting.
const MIN_PART_NS: f64 = 10.0;

/// How much less than its nominal figure a member of a fused group costs
/// in the group's steady path: W1 under live (256 such sines and a
/// lowpass) renders at about 72 ns per sample of work against 439.8
/// nominal (benches/README.md).
const STEADY_DISCOUNT: f64 = 6.0;

/// The most nodes a scene may have for a part of it to be rendered ahead:
/// the search keeps one bitset of nodes per node (8 MiB at this size).
const MAX_NODES: usize = 8192;

/// How much work (words of the bitsets and nodes visited) the search may
/// spend checking candidate parts, nearest half first, before it gives up
/// (a few milliseconds at most).
const SEARCH_WORK: usize = 1 << 22;

/// How errors name the part rendered ahead.
pub const WHAT: &str = "the part of the scene rendered ahead";

/// Whether `e` is the stop of a render the part ahead spoiled (nothing
/// kept: the whole scene plays again), not one for any other cause.
pub fn spoiled_error(e: &crate::host::HostError) -> bool {
    use crate::host::HostError;
    matches!(e, HostError::Stopped { cause, .. } if matches!(**cause, HostError::Thread { what, .. } if what == WHAT))
}

/// About how many frames of the part ahead are handed over at a time
/// (whole blocks: as many as fit, at least one).
const CHUNK_FRAMES: usize = 4096;

/// Chunks rendered ahead and not yet taken, at most.
const CHUNKS_AHEAD: usize = 8;

/// How long the render keeps asking whether the part ahead compiled to
/// what the whole scene plays before it sleeps (W1's part compiles in
/// half a millisecond): the part's thread is running on another core, and
/// a thread that sleeps can take a millisecond to wake on a virtual
/// machine whose other core has gone idle.
pub const SPIN_FITS: Duration = Duration::from_millis(5);

/// The next message on `rx`, asked for without sleeping for up to `spin`
/// (giving the core away between asks, to a sender that may be waiting
/// for it), then waited for.
pub fn next<T>(rx: &Receiver<T>, spin: Duration) -> Result<T, mpsc::RecvError> {
    let until = std::time::Instant::now() + spin;
    loop {
        match rx.try_recv() {
            Ok(x) => return Ok(x),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if std::time::Instant::now() >= until {
            return rx.recv();
        }
        std::thread::yield_now();
    }
}

/// Keeps the calling thread off one core until dropped (Linux): a thread
/// just started runs on the core of the thread that started it on some
/// systems (on a 2-core virtual machine the part ahead compiled on the
/// render's core, the render's thread waiting, for a millisecond while the
/// other core idled). Dropped, the thread may run anywhere it could.
struct Elsewhere {
    #[cfg(target_os = "linux")]
    allowed: Option<libc::cpu_set_t>,
}

impl Elsewhere {
    /// The core the calling thread runs on, if the system says.
    fn core() -> Option<usize> {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: no arguments; returns -1 on failure.
            let core = unsafe { libc::sched_getcpu() };
            usize::try_from(core).ok()
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// Moves the calling thread off `core`, when it may run on another.
    fn leave(core: Option<usize>) -> Elsewhere {
        #[cfg(target_os = "linux")]
        {
            let size = std::mem::size_of::<libc::cpu_set_t>();
            let allowed = core.and_then(|core| {
                // SAFETY: a zeroed cpu_set_t is an empty set; the calls
                // read and write only the set given, of the size given.
                unsafe {
                    let mut allowed: libc::cpu_set_t = std::mem::zeroed();
                    if core >= 8 * size
                        || libc::sched_getaffinity(0, size, &mut allowed) != 0
                        || !libc::CPU_ISSET(core, &allowed)
                        || libc::CPU_COUNT(&allowed) < 2
                    {
                        return None;
                    }
                    let mut others = allowed;
                    libc::CPU_CLR(core, &mut others);
                    (libc::sched_setaffinity(0, size, &others) == 0).then_some(allowed)
                }
            });
            Elsewhere { allowed }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = core;
            Elsewhere {}
        }
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(allowed) = &self.allowed {
            // SAFETY: restores the set read in `leave`.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), allowed) };
        }
    }
}

/// Where a scene is cut in two ([`cut`] gives the two scenes: the part
/// rendered ahead, whose main output is the partial sum, and the rest,
/// which reads it through an `input` node).
#[derive(Clone, Debug)]
pub struct Cut {
    /// The summing node's id, and the input of it that sums.
    pub sum: String,
    pub port: usize,
    /// Edges of the sum the part ahead takes, of how many.
    pub taken: usize,
    pub edges: usize,
    /// The ids of the nodes the cut adds: the part ahead's unit gain and
    /// the rest's `input`.
    pub added: (String, String),
    /// The part ahead holds the scene's `input` nodes: it reads the
    /// render's input (the rest reads none).
    pub reads_input: bool,
    /// The estimated cost of the part ahead and of the whole scene, ns
    /// per sample (`check`'s per-node figures, a member of a steady group
    /// at its share), by which the cut was chosen.
    pub part_ns: f64,
    pub total_ns: f64,
}

impl Cut {
    /// The speed-up the estimates promise the cut on two threads: the
    /// whole against the dearer of the two parts.
    pub fn speedup(&self) -> f64 {
        let dearer = self.part_ns.max(self.total_ns - self.part_ns);
        if dearer > 0.0 {
            self.total_ns / dearer
        } else {
            1.0
        }
    }

    /// What renders ahead and what the estimates promise of it, in words.
    pub fn describe(&self) -> String {
        format!(
            "{} (estimated {:.1} of {:.1} ns/sample: {:.2}x on two threads)",
            self.what(),
            self.part_ns,
            self.total_ns,
            self.speedup()
        )
    }

    /// What renders ahead, in words.
    fn what(&self) -> String {
        if self.edges == 1 {
            format!(
                "what feeds `{}` (its input and what feeds that) renders ahead on a thread of its own",
                self.sum
            )
        } else {
            format!(
                "the first {} of the {} inputs of `{}` (and what feeds them) render ahead on a thread of their own",
                self.taken, self.edges, self.sum
            )
        }
    }
}

/// Whether [`cut`] may find a cut in `plan` at all: no events, controls
/// or latency, and not too many nodes to search (a cheap test, made before
/// anything is prepared for the search).
pub fn may_cut(plan: &Plan) -> bool {
    plan.events.is_empty()
        && plan.controls.is_empty()
        && plan.latency == 0
        && plan.nodes.len() <= MAX_NODES
}

/// Why nothing of `plan` renders ahead when [`cut`] gave nothing (or was
/// not tried), as `render -v` and `check --threads` say it.
pub fn not_cut_because(plan: &Plan) -> &'static str {
    if may_cut(plan) {
        "no part of the scene is cut off as GUIDE.md (Threads) says, or none pays"
    } else {
        "the scene has events, controls or latency, or more than 8192 nodes"
    }
}

/// `plan`, compiled from `scene`, cut in two as the module docs say, or
/// `None` when it cannot be (or is not worth it).
pub fn cut(plan: &Plan, scene: &Scene) -> Option<(Cut, Split)> {
    if !may_cut(plan) || !scene.only_nodes_and_edges() {
        return None;
    }
    // The scene's nodes are the plan's, one for one (no module's).
    let index: HashMap<&str, usize> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    if scene.node_ids().count() != plan.nodes.len()
        || scene.node_ids().any(|id| !index.contains_key(id))
    {
        return None;
    }
    let refs = || {
        plan.nodes.iter().enumerate().flat_map(|(i, n)| {
            n.inputs
                .iter()
                .chain(&n.param_inputs)
                .flatten()
                .map(move |r| (i, r))
        })
    };
    if refs().any(|(_, r)| r.delay > 0 || r.is_feedback()) || plan.main.iter().any(|r| r.delay > 0)
    {
        return None;
    }
    // Who reads each node (its consumers), for the closure check.
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); plan.nodes.len()];
    for (i, r) in refs() {
        readers[r.node].push(i);
    }
    // Each node's estimated cost; a node that runs in a fused group's
    // steady path (many live sines summed into one port, `SteadyLanes`)
    // at a fraction of its nominal figure.
    // (Asked of a group of one: whether a node may run steady does not
    // depend on how many it sums with, and a group's state grows with it.)
    let may_run_steady: Vec<bool> = plan
        .nodes
        .iter()
        .map(|n| match &n.node {
            Some(crate::ops::AnyNode::F32(x)) => x.steady_lanes(1).is_some(),
            Some(crate::ops::AnyNode::F64(x)) => x.steady_lanes(1).is_some(),
            None => false,
        })
        .collect();
    let mut steady = vec![false; plan.nodes.len()];
    for n in &plan.nodes {
        for edges in n.inputs.iter().filter(|e| e.len() > 1) {
            for r in edges {
                steady[r.node] |= may_run_steady[r.node];
            }
        }
    }
    let cost: Vec<f64> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let nominal = node_cost_ns(n);
            if steady[i] {
                nominal / STEADY_DISCOUNT
            } else {
                nominal
            }
        })
        .collect();
    let total: f64 = cost.iter().sum();
    let inputs: Vec<usize> = (0..plan.nodes.len())
        .filter(|&n| plan.nodes[n].op.name == "input")
        .collect();
    let closures = Closures::of(plan)?;
    // Of every node input, the first `taken` edges whose part costs
    // nearest half of the whole; the nearest that may be cut wins (ties
    // to the earlier node and port).
    let mut near: Vec<(f64, usize, usize, usize)> = Vec::new();
    for (sum, node) in plan.nodes.iter().enumerate() {
        for (port, edges) in node.inputs.iter().enumerate() {
            let members: Vec<usize> = edges.iter().map(|r| r.node).collect();
            if let Some((taken, part_ns)) = nearest_half(&closures, &members, &cost, total) {
                if part_ns.min(total - part_ns) >= MIN_PART_NS {
                    near.push(((part_ns - total / 2.0).abs(), sum, port, taken));
                }
            }
        }
    }
    near.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut budget = SEARCH_WORK;
    let mut chosen = None;
    for &(_, sum, port, taken) in &near {
        let members = &plan.nodes[sum].inputs[port][..taken];
        budget = budget.checked_sub(closures.words() * (taken + 1))?;
        let part = closures.union(members.iter().map(|r| r.node));
        if !part.contains(sum)
            && fits_cut(
                plan,
                &readers,
                &inputs,
                (sum, port, taken),
                &part,
                &mut budget,
            )?
        {
            chosen = Some((sum, port, taken, part));
            break;
        }
    }
    let (sum, port, taken, part) = chosen?;
    let part_ns: f64 = (0..plan.nodes.len())
        .filter(|&i| part.contains(i))
        .map(|i| cost[i])
        .sum();
    let members = &plan.nodes[sum].inputs[port];
    let in_part = |id: &str| index.get(id).is_some_and(|i| part.contains(*i));
    let fresh = |base: &str| {
        (0..)
            .map(|n| {
                if n == 0 {
                    base.to_string()
                } else {
                    format!("{base}_{n}")
                }
            })
            .find(|id| !index.contains_key(id.as_str()))
            .expect("an unused id")
    };
    // A node's inputs sum in the order of their sources' ids (bytewise,
    // whatever the edges' order): the rest's input must sort before every
    // other source of the sum. `-` is the least byte an id may hold.
    let feed_id = (1..)
        .map(|n| "-".repeat(n))
        .find(|id| !index.contains_key(id.as_str()))
        .expect("an unused id");
    let sum_id = fresh("ahead_sum");
    let seed = match plan.seed {
        SeedSource::Given(s) | SeedSource::Auto(s) => Some(s),
        SeedSource::None => None,
    };
    let split = scene.split(in_part, &sum_id, &feed_id, seed);
    let cut = Cut {
        sum: plan.nodes[sum].id.clone(),
        port,
        taken,
        edges: members.len(),
        added: (sum_id, feed_id),
        reads_input: !inputs.is_empty(),
        part_ns,
        total_ns: total,
    };
    Some((cut, split))
}

/// The first edges of `members` (a port's sources, in summing order)
/// with what feeds them whose estimated cost is nearest half of `total`:
/// how many, and their part's cost.
fn nearest_half(
    closures: &Closures,
    members: &[usize],
    cost: &[f64],
    total: f64,
) -> Option<(usize, f64)> {
    let mut part = FixedBitSet::with_capacity(closures.rows.len());
    let mut part_ns = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for (k, &m) in members.iter().enumerate() {
        let row = &closures.rows[m];
        part_ns += row.difference(&part).map(|n| cost[n]).sum::<f64>();
        part.union_with(row);
        let off = (part_ns - total / 2.0).abs();
        if best.is_none_or(|b| off < (b.1 - total / 2.0).abs()) {
            best = Some((k + 1, part_ns));
        }
        if part_ns >= total / 2.0 {
            break;
        }
    }
    best
}

/// What feeds each node, the node included: one bitset over schedule
/// indices per node, built once in schedule order (a node's closure is its
/// own bit and its sources' closures), so that the search for the cut
/// costs about `nodes² / 64` word operations, not a walk per candidate.
struct Closures {
    rows: Vec<FixedBitSet>,
}

impl Closures {
    /// `None` for a plan too large to search (see [`MAX_NODES`]) or with
    /// an edge that does not run from an earlier node to a later one.
    fn of(plan: &Plan) -> Option<Closures> {
        let n = plan.nodes.len();
        if n > MAX_NODES {
            return None;
        }
        let mut rows: Vec<FixedBitSet> = Vec::with_capacity(n);
        for (i, node) in plan.nodes.iter().enumerate() {
            let mut row = FixedBitSet::with_capacity(n);
            row.insert(i);
            for r in node.inputs.iter().chain(&node.param_inputs).flatten() {
                row.union_with(rows.get(r.node)?);
            }
            rows.push(row);
        }
        Some(Closures { rows })
    }

    /// Words of 64 bits in a set of nodes.
    fn words(&self) -> usize {
        self.rows.len().div_ceil(64)
    }

    /// The union of the closures of `nodes`.
    fn union(&self, nodes: impl Iterator<Item = usize>) -> FixedBitSet {
        let mut part = FixedBitSet::with_capacity(self.rows.len());
        for n in nodes {
            part.union_with(&self.rows[n]);
        }
        part
    }
}

/// Whether `part` may render ahead for the first `taken` edges of node
/// `sum`'s input `port`: it feeds nothing but those edges (no other node,
/// port, param or main-bus channel, and none of the port's later edges
/// comes from it), adds no latency, and holds every `input` node of the
/// scene (the rest's session input is the part's output). `None` once
/// the search's `budget` of work is spent.
fn fits_cut(
    plan: &Plan,
    readers: &[Vec<usize>],
    inputs: &[usize],
    (sum, port, taken): (usize, usize, usize),
    part: &FixedBitSet,
    budget: &mut usize,
) -> Option<bool> {
    let s = &plan.nodes[sum];
    let sum_edges = s
        .inputs
        .iter()
        .chain(&s.param_inputs)
        .map(Vec::len)
        .sum::<usize>();
    *budget = budget.checked_sub(sum_edges + part.len().div_ceil(64))?;
    let from_part_only_there = s.inputs.iter().enumerate().all(|(p, e)| {
        e.iter()
            .enumerate()
            .all(|(j, r)| !part.contains(r.node) || (p == port && j < taken))
    }) && s
        .param_inputs
        .iter()
        .flatten()
        .all(|r| !part.contains(r.node));
    if !from_part_only_there
        || plan.main.iter().any(|r| part.contains(r.node))
        || !inputs.iter().all(|n| part.contains(*n))
    {
        return Some(false);
    }
    for n in part.ones() {
        *budget = budget.checked_sub(1 + readers[n].len())?;
        if plan.nodes[n].latency != 0 || !readers[n].iter().all(|&r| part.contains(r) || r == sum) {
            return Some(false);
        }
    }
    Some(true)
}

/// What every node of the whole scene resolved to, for checking that a
/// part compiled on its own plays its nodes as the whole does.
#[derive(Clone)]
pub struct Settings {
    session: (crate::profile::Profile, u32, usize, Option<u64>),
    /// By id: schedule index, settings, operator, static values.
    nodes: HashMap<String, (usize, Resolved)>,
}

type Resolved = (crate::profile::NodeProfile, usize, Vec<crate::ops::Value>);

fn resolved(n: &crate::graph::PlanNode) -> Resolved {
    (
        n.profile.clone(),
        n.op as *const _ as usize,
        n.values.clone(),
    )
}

impl Settings {
    pub fn of(plan: &Plan) -> Settings {
        Settings {
            session: session(plan),
            nodes: plan
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.id.clone(), (i, resolved(n))))
                .collect(),
        }
    }

    /// Whether `part` runs at the whole's settings, each of its nodes
    /// resolved as in the whole, and the node the cut adds (`added`) at
    /// the settings of the whole's sum (`sum`), where the values it
    /// carries were summed.
    fn fit(&self, part: &Plan, added: &str, sum: &str) -> bool {
        let Some((_, (sum_profile, _, _))) = self.nodes.get(sum) else {
            return false;
        };
        session(part) == self.session
            && part.nodes.iter().all(|n| {
                if n.id == added {
                    return n.profile == *sum_profile;
                }
                self.nodes
                    .get(&n.id)
                    .is_some_and(|(_, r)| *r == resolved(n))
            })
    }

    /// Whether the part ahead of `cut`, compiled, plays as the whole.
    pub fn fits_ahead(&self, cut: &Cut, ahead: &Plan) -> bool {
        self.fit(ahead, &cut.added.0, &cut.sum)
    }

    /// Whether the rest of `cut`, compiled, plays as the whole: its nodes
    /// as the whole's, and the part ahead summed first.
    pub fn fits_rest(&self, cut: &Cut, rest: &Plan) -> bool {
        self.fit(rest, &cut.added.1, &cut.sum) && sums_ahead_first(cut, rest)
    }

    /// Where node `id` runs in the whole's schedule.
    fn order(&self, id: &str) -> usize {
        self.nodes.get(id).map_or(usize::MAX, |(i, _)| *i)
    }
}

/// [`cut`], kept only when both parts, compiled by `compile`, fit the
/// whole ([`Settings::fits_ahead`], [`Settings::fits_rest`]): what
/// `render` would put ahead (for `check`, which does not render).
pub fn checked_cut(
    plan: &Plan,
    scene: &Scene,
    compile: impl Fn(&Scene) -> Option<Plan>,
) -> Option<Cut> {
    let (cut, split) = cut(plan, scene)?;
    let whole = Settings::of(plan);
    let ahead = compile(&split.part)?;
    let rest = compile(&split.rest)?;
    (whole.fits_ahead(&cut, &ahead) && whole.fits_rest(&cut, &rest)).then_some(cut)
}

/// `plan`, compiled from `scene`, cut in two ([`cut`]) and both parts
/// compiled by `compile` with the whole's options: the part ahead started
/// on its thread ([`Ahead::start`], to render the first `frames` frames),
/// the rest's engine built here meanwhile, and the cut. `None` when the
/// scene is not cut, when the part would read the input and `input` is
/// false (or the other way round), or when a part compiles to other
/// settings than the whole's: then the whole scene plays as it is. A part
/// that reads the input waits for it ([`Ahead::read_input`]); the rest
/// reads the part through [`Ahead::feed`].
pub fn start_parts(
    plan: &Plan,
    scene: &Scene,
    compile: impl Fn(&Scene) -> Option<Plan> + Clone + Send + 'static,
    input: bool,
    frames: u64,
) -> Option<std::io::Result<(Ahead, Engine, Cut)>> {
    let (cut, split) = cut(plan, scene)?;
    if cut.reads_input != input {
        return None;
    }
    let whole = Settings::of(plan);
    // The part ahead compiles on its own thread while the rest compiles here.
    let (part, build) = (split.part, compile.clone());
    let (ahead, fits) = match Ahead::start(move || build(&part), whole.clone(), &cut, frames) {
        Ok(started) => started,
        Err(e) => return Some(Err(e)),
    };
    let rest = compile(&split.rest).filter(|p| whole.fits_rest(&cut, p))?;
    // Built while the part ahead compiles and checks itself.
    let rest = Engine::new(rest);
    if !next(&fits, SPIN_FITS).unwrap_or(false) {
        return None;
    }
    Some(Ok((ahead, rest, cut)))
}

/// Whether `rest` sums the part ahead first into the sum's input, as the
/// whole scene summed the part's edges first.
fn sums_ahead_first(cut: &Cut, rest: &Plan) -> bool {
    let id = |i: usize| rest.nodes.get(i).map(|n| n.id.as_str());
    rest.nodes
        .iter()
        .find(|n| n.id == cut.sum)
        .and_then(|n| n.inputs.get(cut.port)?.first())
        .is_some_and(|r| id(r.node) == Some(cut.added.1.as_str()))
}

fn session(p: &Plan) -> (crate::profile::Profile, u32, usize, Option<u64>) {
    let seed = match p.seed {
        SeedSource::None => None,
        SeedSource::Given(s) | SeedSource::Auto(s) => Some(s),
    };
    (p.session_profile, p.sample_rate, p.block_size, seed)
}

/// The part ahead, rendering on its thread; the rest's engine reads it
/// through [`Ahead::feed`].
pub struct Ahead {
    feed: Option<Feed>,
    stop: Arc<AtomicBool>,
    /// See [`Ahead::spoiled`].
    spoiled: Arc<AtomicBool>,
    /// The first sample of the block in which the part first met a NaN
    /// (`u64::MAX`: none yet).
    first_nan_at: Arc<std::sync::atomic::AtomicU64>,
    thread: Thread,
    handle: Option<JoinHandle<Option<Rendered>>>,
    /// Where the render's input goes to the part, until given
    /// ([`Ahead::read_input`]).
    input: Option<mpsc::Sender<Box<dyn InputFeed>>>,
}

/// The part ahead's engine once stopped, and its count of blocks with a
/// NaN/Inf after each block that changed it (end of block, count).
struct Rendered {
    engine: Engine,
    nan_counts: Vec<(u64, u64)>,
}

/// What the part ahead's engine reports at the end.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Blocks in which a node produced NaN/Inf.
    pub nan_events: u64,
    /// The first node that did (its id) and the sample.
    pub first_nan: Option<(String, u64)>,
}

impl Report {
    /// What the part ahead reported before `end`: it rendered past the
    /// render's end, and what it met there was never heard.
    fn before(r: &Rendered, end: u64) -> Report {
        let s: &EngineStats = r.engine.stats();
        Report {
            nan_events: r
                .nan_counts
                .iter()
                .take_while(|(at, _)| *at <= end)
                .last()
                .map_or(0, |(_, n)| *n),
            first_nan: s
                .first_nan
                .filter(|(_, at)| *at < end)
                .map(|(n, at)| (r.engine.node_id(n).to_string(), at)),
        }
    }
}

impl Ahead {
    /// Starts the part ahead on a thread of its own: it compiles it
    /// (`build`, there, so that its engine's memory is its thread's own
    /// and shares no cache line with the rest's), says on the channel
    /// returned whether it fits `whole` (see [`Settings::fit`]), and
    /// renders its first `frames` frames, whole blocks at a time, its main
    /// bus unclamped; a part that reads the input first waits for it
    /// ([`read_input`](Self::read_input)).
    pub fn start(
        build: impl FnOnce() -> Option<Plan> + Send + 'static,
        whole: Settings,
        cut: &Cut,
        frames: u64,
    ) -> std::io::Result<(Ahead, Receiver<bool>)> {
        let (give, input) = mpsc::channel::<Box<dyn InputFeed>>();
        let (tx, chunks) = mpsc::sync_channel::<Vec<f64>>(CHUNKS_AHEAD);
        let (spent, spares) = mpsc::channel::<Vec<f64>>();
        let (fits, fitted) = mpsc::channel::<bool>();
        let stop = Arc::new(AtomicBool::new(false));
        let spoiled = Arc::new(AtomicBool::new(false));
        let (stopped, spoiling) = (stop.clone(), spoiled.clone());
        let first_nan_at = Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
        let first_at = first_nan_at.clone();
        let cut = cut.clone();
        let starter = Elsewhere::core();
        let handle = std::thread::Builder::new()
            .name("morphrt-ahead".into())
            .spawn(move || {
                // Off the render's core while both compile; then anywhere.
                let elsewhere = Elsewhere::leave(starter);
                let plan = build().filter(|p| whole.fits_ahead(&cut, p));
                let _ = fits.send(plan.is_some());
                let plan = plan?;
                let partial = plan.nodes.iter().position(|n| n.id == cut.added.0)?;
                let mut engine = Engine::new(plan);
                drop(elsewhere);
                engine.set_main_limit(false);
                if cut.reads_input {
                    engine.set_input_feed(input.recv().ok()?);
                }
                let mut nan_counts = Vec::new();
                let block = engine.block_size();
                let per_chunk = (CHUNK_FRAMES / block).max(1) * block;
                'render: loop {
                    let mut chunk = spares.try_recv().unwrap_or_default();
                    chunk.clear();
                    while chunk.len() < per_chunk {
                        let left = frames.saturating_sub(engine.clock());
                        if stopped.load(Ordering::Acquire) || left == 0 && chunk.is_empty() {
                            break 'render;
                        }
                        if left == 0 {
                            break;
                        }
                        let nans = engine.stats().nan_events;
                        engine.process_block((block as u64).min(left) as usize);
                        if engine.stats().nan_events != nans {
                            nan_counts.push((engine.clock(), engine.stats().nan_events));
                            if let Some((_, at)) = engine.stats().first_nan {
                                first_at.fetch_min(at, Ordering::AcqRel);
                            }
                            // Two nodes first met one in one block: which
                            // one the whole scene names depends on its order.
                            if engine.stats().first_nan_shared {
                                spoiling.store(true, Ordering::Release);
                                break 'render;
                            }
                            // The partial sum overflowed: the whole scene
                            // would have silenced the sum's node, not it.
                            if engine.stats().last_nan.is_some_and(|(n, _)| n == partial) {
                                spoiling.store(true, Ordering::Release);
                                break 'render;
                            }
                        }
                        match engine.bus() {
                            crate::engine::BusRef::F32(ch, n) => {
                                chunk.extend(ch[0][..n].iter().map(|&x| f64::from(x)))
                            }
                            crate::engine::BusRef::F64(ch, n) => {
                                chunk.extend_from_slice(&ch[0][..n])
                            }
                        }
                    }
                    // Full: wait for the rest to take a chunk (it unparks
                    // this thread when it does).
                    loop {
                        if stopped.load(Ordering::Acquire) {
                            break 'render;
                        }
                        match tx.try_send(chunk) {
                            Ok(()) => break,
                            Err(TrySendError::Full(c)) => {
                                chunk = c;
                                std::thread::park_timeout(Duration::from_millis(2));
                            }
                            Err(TrySendError::Disconnected(_)) => break 'render,
                        }
                    }
                }
                Some(Rendered { engine, nan_counts })
            })?;
        let thread = handle.thread().clone();
        let ahead = Ahead {
            feed: Some(Feed {
                chunks,
                spent,
                current: Vec::new(),
                at: 0,
                ahead: thread.clone(),
                spoiled: spoiled.clone(),
            }),
            stop,
            spoiled,
            first_nan_at,
            thread,
            handle: Some(handle),
            input: Some(give),
        };
        Ok((ahead, fitted))
    }

    /// Whether the render of `rest` (every frame played) may be kept: not
    /// when both parts, or two nodes of one part, first met a NaN in the
    /// same block, where which one the whole scene would name depends on
    /// the order its engine runs them in, which neither part knows (a
    /// part's nodes need not run in the whole's order: cut off from what
    /// feeds them, their levels change).
    pub fn keeps(&self, rest: &Engine) -> bool {
        let there = self.first_nan_at.load(Ordering::Acquire);
        let s = rest.stats();
        !s.first_nan_shared && s.first_nan.is_none_or(|(_, here)| here != there)
    }

    /// Raised when what the rest read of the part ahead is not what the
    /// whole scene would have summed (its partial sum overflowed, or it
    /// stopped before the render ended), or when two of its nodes first
    /// met a NaN in one block ([`keeps`](Self::keeps)). The render must then not keep
    /// its output.
    pub fn spoiled(&self) -> Arc<AtomicBool> {
        self.spoiled.clone()
    }

    /// The feed the rest's engine reads the part ahead from (once).
    pub fn feed(&mut self) -> Option<Box<dyn InputFeed>> {
        self.feed.take().map(|f| Box::new(f) as Box<dyn InputFeed>)
    }

    /// Stops the part ahead and gives its engine's report up to `end`
    /// (the render's last frame). A render that was kept checked
    /// [`spoiled`](Self::spoiled) after its last block: whatever the part
    /// met since, it met past `end`, in frames nobody hears.
    pub fn finish(mut self, end: u64) -> Option<Report> {
        let rendered = self.stop_thread();
        rendered.map(|r| Report::before(&r, end))
    }

    /// Gives the part ahead the render's input, which it holds every
    /// `input` node of ([`Cut::reads_input`]): it waits for it before it
    /// renders, so that a cut given up before leaves the input unread.
    pub fn read_input(&mut self, input: Box<dyn InputFeed>) {
        if let Some(give) = self.input.take() {
            let _ = give.send(input);
        }
    }

    fn stop_thread(&mut self) -> Option<Rendered> {
        // A part waiting for the input it will not get stops waiting.
        self.input = None;
        self.stop.store(true, Ordering::Release);
        self.thread.unpark();
        self.handle.take()?.join().ok().flatten()
    }
}

impl Drop for Ahead {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

/// The first NaN/Inf of a render, as one thread would report it: the node
/// (its id), the block's first sample, and the blocks it happened in. With
/// a part rendered ahead (`ahead`, `whole` the whole scene's settings),
/// the earlier of the two parts' first, the one earlier in the whole's
/// schedule when they fell in one block.
pub fn first_nan(rest: &Engine, ahead: Option<(&Report, &Settings)>) -> Option<(String, u64, u64)> {
    let s = rest.stats();
    let here = s.first_nan.map(|(n, at)| (rest.node_id(n).to_string(), at));
    let Some((report, whole)) = ahead else {
        return here.map(|(id, at)| (id, at, s.nan_events));
    };
    let blocks = s.nan_events + report.nan_events;
    let first = match (here, report.first_nan.clone()) {
        (Some(h), Some(t)) => {
            let key = |(id, at): &(String, u64)| (*at, whole.order(id));
            Some(if key(&t) < key(&h) { t } else { h })
        }
        (h, t) => h.or(t),
    };
    first.map(|(id, at)| (id, at, blocks))
}

/// The rest's side: the part ahead's output as input channel 0.
struct Feed {
    chunks: Receiver<Vec<f64>>,
    spent: mpsc::Sender<Vec<f64>>,
    current: Vec<f64>,
    at: usize,
    ahead: Thread,
    spoiled: Arc<AtomicBool>,
}

impl InputFeed for Feed {
    fn read(&mut self, _start: u64, block: &mut InputBlock<'_>) {
        let frames = block.frames();
        let mut done = 0;
        while done < frames {
            if self.at == self.current.len() {
                let Ok(next) = self.chunks.recv() else {
                    self.spoiled.store(true, Ordering::Release);
                    break;
                };
                let old = std::mem::replace(&mut self.current, next);
                let _ = self.spent.send(old);
                self.ahead.unpark();
                self.at = 0;
            }
            let take = (frames - done).min(self.current.len() - self.at);
            block.channel_mut(0)[done..done + take]
                .copy_from_slice(&self.current[self.at..self.at + take]);
            done += take;
            self.at += take;
        }
        block.channel_mut(0)[done..].fill(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeSet;

    /// A scene of `n` nodes: sines, and gains each summing one to four
    /// earlier nodes (picked by a fixed linear congruential sequence).
    fn random_dag(n: usize, state: &mut u64) -> Plan {
        let mut next = |m: usize| {
            *state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (*state >> 33) as usize % m
        };
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for i in 0..n {
            let id = format!("n{i:04}");
            if i < 3 || next(4) == 0 {
                nodes.push(json!({ "id": id, "op": "sine", "params": { "freq": 100 + i } }));
            } else {
                nodes.push(json!({ "id": id, "op": "gain", "params": { "gain": 0.5 } }));
                let from: BTreeSet<usize> = (0..1 + next(4)).map(|_| next(i)).collect();
                for f in from {
                    edges.push(json!({ "from": format!("n{f:04}"), "to": id }));
                }
            }
        }
        let text = json!({
            "version": "1.0", "nodes": nodes, "edges": edges,
            "outputs": { "main": [format!("n{:04}", n - 1)] }
        })
        .to_string();
        let scene = crate::scene::load_str(&text, "<dag>", None).expect("a valid scene");
        crate::graph::compile(&scene, &Default::default()).expect("a scene that compiles")
    }

    /// What feeds `from`, walked one node at a time.
    fn walked(plan: &Plan, from: &[usize]) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut stack = from.to_vec();
        while let Some(n) = stack.pop() {
            if seen.insert(n) {
                let node = &plan.nodes[n];
                stack.extend(
                    node.inputs
                        .iter()
                        .chain(&node.param_inputs)
                        .flatten()
                        .map(|r| r.node),
                );
            }
        }
        seen
    }

    #[test]
    fn the_bitset_closures_hold_what_a_walk_of_the_graph_finds_and_cost_what_it_sums() {
        let mut state = 7;
        for n in [1, 2, 63, 64, 65, 200] {
            let plan = random_dag(n, &mut state);
            let closures = Closures::of(&plan).expect("a plan in schedule order");
            let cost: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64 * 0.25).collect();
            let total: f64 = cost.iter().sum();
            for (i, node) in plan.nodes.iter().enumerate() {
                let row: BTreeSet<usize> = closures.union(std::iter::once(i)).ones().collect();
                assert_eq!(row, walked(&plan, &[i]), "node {i} of {n}");
                for edges in &node.inputs {
                    let members: Vec<usize> = edges.iter().map(|r| r.node).collect();
                    // The walk's answer: each prefix's part and cost, the
                    // nearest half kept (the first of equals), stopping once
                    // half is reached.
                    let mut want = None::<(usize, f64)>;
                    for k in 1..=members.len() {
                        let part = walked(&plan, &members[..k]);
                        let ns: f64 = part.iter().map(|&m| cost[m]).sum();
                        let off = (ns - total / 2.0).abs();
                        if want.is_none_or(|w| off < (w.1 - total / 2.0).abs() - 1e-9) {
                            want = Some((k, ns));
                        }
                        if ns >= total / 2.0 {
                            break;
                        }
                    }
                    let got = nearest_half(&closures, &members, &cost, total).expect("a part");
                    let want = want.expect("a part");
                    assert_eq!(got.0, want.0, "node {i} of {n}: {members:?}");
                    assert!(
                        (got.1 - want.1).abs() < 1e-9,
                        "node {i} of {n}: {got:?} {want:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_part_that_fits_is_found_behind_hundreds_nearer_half_that_do_not() {
        // A chain of 1000 gains, each also read by `mix` (no part of it
        // fits), and beside it a chain of 680 read by `mix` at its end.
        let mut nodes = vec![json!({ "id": "mix", "op": "gain" })];
        let mut edges = Vec::new();
        for (chain, len, tapped) in [("t", 1000, true), ("c", 680, false)] {
            nodes.push(json!({ "id": format!("{chain}src"), "op": "saw" }));
            for i in 0..len {
                let (id, from) = (format!("{chain}{i:04}"), format!("{chain}{:04}", i - 1));
                nodes.push(json!({ "id": id, "op": "gain" }));
                let from = if i == 0 { format!("{chain}src") } else { from };
                edges.push(json!({ "from": from, "to": id }));
                if tapped || i == len - 1 {
                    edges.push(json!({ "from": id, "to": "mix" }));
                }
            }
        }
        let text = json!({ "version": "1.0", "nodes": nodes, "edges": edges,
            "outputs": { "main": ["mix"] } })
        .to_string();
        let scene = crate::scene::load_str(&text, "<taps>", None).expect("a valid scene");
        let plan = crate::graph::compile(&scene, &Default::default()).expect("compiles");
        let (cut, split) = cut(&plan, &scene).expect("the chain beside the taps is cut");
        let ahead: Vec<&str> = split.part.node_ids().collect();
        assert!(
            ahead.contains(&"c0678") && !ahead.contains(&"t0000"),
            "{}",
            cut.describe()
        );
    }

    #[test]
    fn next_gets_a_message_sent_during_or_after_its_spin_and_sees_a_closed_channel() {
        for after in [Duration::ZERO, Duration::from_millis(20)] {
            let (tx, rx) = mpsc::channel();
            let sender = std::thread::spawn(move || {
                std::thread::sleep(after);
                tx.send(7).expect("the receiver waits");
            });
            assert_eq!(next(&rx, Duration::from_millis(2)), Ok(7));
            sender.join().expect("sent");
            assert_eq!(next(&rx, Duration::from_millis(2)), Err(mpsc::RecvError));
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_kept_elsewhere_runs_off_that_core_and_anywhere_after() {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let allowed = move || {
            // SAFETY: reads the calling thread's set into a zeroed one.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
                set
            }
        };
        std::thread::spawn(move || {
            let before = allowed();
            let core = Elsewhere::core().expect("Linux says which core");
            let away = Elsewhere::leave(Some(core));
            // SAFETY: both are plain sets.
            if unsafe { libc::CPU_COUNT(&before) } < 2 {
                assert!(away.allowed.is_none(), "one core: nowhere else to go");
                return;
            }
            if away.allowed.is_none() {
                // Only a system that refuses the change (a sandbox may) leaves
                // the thread where it was: the render then runs where the
                // system puts it.
                // SAFETY: sets the set the thread already has.
                let refused = unsafe { libc::sched_setaffinity(0, size, &before) } != 0;
                assert!(refused, "the system allows the change, and it was not made");
                return;
            }
            assert_ne!(Elsewhere::core(), Some(core), "moved off core {core}");
            assert!(!unsafe { libc::CPU_ISSET(core, &allowed()) });
            drop(away);
            let after = allowed();
            assert!((0..8 * size)
                .all(|c| unsafe { libc::CPU_ISSET(c, &after) == libc::CPU_ISSET(c, &before) }));
        })
        .join()
        .expect("the thread's checks pass");
    }

    /// `sines` sines summed into one gain, and the scene.
    fn wide(sines: usize) -> (Plan, Scene) {
        let mut nodes: Vec<_> = (0..sines)
            .map(|i| json!({ "id": format!("s{i}"), "op": "sine" }))
            .collect();
        nodes.push(json!({ "id": "sum", "op": "gain" }));
        let edges: Vec<_> = (0..sines)
            .map(|i| json!({ "from": format!("s{i}"), "to": "sum" }))
            .collect();
        let text = json!({ "version": "1.0", "nodes": nodes, "edges": edges,
            "outputs": { "main": ["sum"] } })
        .to_string();
        let scene = crate::scene::load_str(&text, "<wide>", None).expect("a valid scene");
        let plan = crate::graph::compile(&scene, &Default::default()).expect("compiles");
        (plan, scene)
    }

    /// An input that counts the frames read from it (silence).
    struct Counted(Arc<std::sync::atomic::AtomicU64>);

    impl InputFeed for Counted {
        fn read(&mut self, _start: u64, block: &mut InputBlock<'_>) {
            self.0.fetch_add(block.frames() as u64, Ordering::Relaxed);
        }
    }

    /// `ahead` dropped on a thread of its own: whether the drop returned
    /// within ten seconds (a part left waiting would hang it).
    fn dropped_in_time(ahead: Ahead) -> bool {
        let (done, returned) = mpsc::channel();
        std::thread::spawn(move || {
            drop(ahead);
            let _ = done.send(());
        });
        returned.recv_timeout(Duration::from_secs(10)).is_ok()
    }

    #[test]
    fn a_part_reading_the_input_waits_for_it_reads_every_frame_and_stops_when_given_none() {
        let text = json!({
            "version": "1.0",
            "nodes": [
                { "id": "mic", "op": "input" },
                { "id": "hp", "op": "biquad", "params": { "mode": "highpass", "cutoff": "80Hz" } },
                { "id": "comp", "op": "compressor" },
                { "id": "room", "op": "reverb" }
            ],
            "edges": [
                { "from": "mic", "to": "hp" }, { "from": "hp", "to": "comp" },
                { "from": "comp", "to": "room" }
            ],
            "outputs": { "main": ["room:out", "room:out_r"] }
        })
        .to_string();
        let scene = crate::scene::load_str(&text, "<chain>", None).expect("a valid scene");
        let plan = crate::graph::compile(&scene, &Default::default()).expect("compiles");
        let (cut, split) = cut(&plan, &scene).expect("a chain is cut");
        assert!(cut.reads_input, "the part holds the input node");
        let whole = Settings::of(&plan);
        let frames = 10_000;
        let start = || {
            let part = split.part.clone();
            let build = move || crate::graph::compile(&part, &Default::default()).ok();
            let (ahead, fits) = Ahead::start(build, whole.clone(), &cut, frames).expect("a thread");
            assert_eq!(next(&fits, SPIN_FITS), Ok(true), "the part fits");
            ahead
        };
        // A cut given up before the input was given: the part, waiting
        // for it, stops, and the drop returns.
        assert!(dropped_in_time(start()), "the part went on waiting");
        // Given the input, the part renders every frame from it, and
        // finishes with its report.
        let mut ahead = start();
        let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
        ahead.read_input(Box::new(Counted(read.clone())));
        let mut feed = ahead.feed().expect("the rest's feed");
        let mut buf = vec![0.0; 64];
        for at in (0..frames).step_by(64) {
            let n = 64.min(frames - at) as usize;
            feed.read(at, &mut InputBlock::new(&mut buf, 64, n));
        }
        assert!(!ahead.spoiled().load(Ordering::Acquire));
        let report = ahead.finish(frames).expect("the part's report");
        assert_eq!(report.nan_events, 0);
        assert_eq!(
            read.load(Ordering::Relaxed),
            frames,
            "frames read from the input"
        );
        // Given the input and dropped before the rest read anything: it
        // stops too.
        let mut ahead = start();
        ahead.read_input(Box::new(Counted(Arc::default())));
        assert!(dropped_in_time(ahead), "the part went on rendering");
    }

    #[test]
    fn a_plan_too_large_to_search_is_not_cut() {
        let (plan, scene) = wide(MAX_NODES - 1);
        assert!(cut(&plan, &scene).is_some(), "the largest plan searched");
        let (plan, scene) = wide(MAX_NODES);
        assert!(Closures::of(&plan).is_none());
        assert!(cut(&plan, &scene).is_none());
    }
}
