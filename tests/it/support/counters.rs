//! Nodes for the lane-panic tests: counters (a running sum of `step` per
//! sample, so a state advanced twice shows in every later sample) that
//! panic in the chunk holding sample `bomb`, alone, in their lane kernel
//! and in their steady path, placed into a scene of `dc` nodes into one
//! `mix`.

use morphrt::dsp::Sample;
use morphrt::engine::Engine;
use morphrt::ops::{
    serial_lanes, AnyNode, Io, LaneKernel, LaneMember, LaneSum, NodeProcessor, NodeState,
    ParamState, StateError, SteadyLanes,
};
use morphrt::profile::Profile;

/// How a counter group runs.
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    /// Its outputs are said to be finite: a fused kernel may leave them
    /// unwritten, and they are not checked for NaN.
    pub finite: bool,
    /// Its kernel is [`serial_lanes`] (each member run and finished in
    /// turn, so a panic comes after the members before it advanced);
    /// otherwise it checks every member before it advances any.
    pub serial: bool,
    /// A fused group of them has a steady path, which advances members in
    /// turn and panics at the bad one.
    pub steady: bool,
}

/// A running sum of `step` per sample that panics in the chunk holding
/// sample `bomb`.
pub struct Counter<const FINITE: bool, const SERIAL: bool, const STEADY: bool> {
    pub step: f64,
    pub state: f64,
    pub bomb: u64,
}

impl<const F: bool, const SE: bool, const ST: bool> Counter<F, SE, ST> {
    fn check(&self, start: u64, frames: usize, what: &str) {
        assert!(
            start + frames as u64 <= self.bomb,
            "a broken {what} at {start}"
        );
    }

    /// The next `frames` values, through `put(i, value)`.
    fn advance<S: Sample>(&mut self, frames: usize, mut put: impl FnMut(usize, S)) {
        for i in 0..frames {
            self.state += self.step;
            put(i, S::from_f64(self.state));
        }
    }
}

/// The checking kernel: every member checked first (it panics before it
/// advances any), then each run as alone and summed in member order.
fn checking_lanes<S: Sample, const F: bool, const SE: bool, const ST: bool>(
    members: &mut [LaneMember<'_, S>],
    frames: usize,
    start: u64,
    mut sum: Option<&mut LaneSum<'_, S>>,
) -> u64 {
    for m in members.iter_mut() {
        let c = m.node.downcast_mut::<Counter<F, SE, ST>>().unwrap();
        c.check(start, frames, "kernel");
    }
    for m in members.iter_mut() {
        let c = m.node.downcast_mut::<Counter<F, SE, ST>>().unwrap();
        let out = &mut m.outputs[0][..frames];
        c.advance(frames, |i, v| out[i] = v);
        if let Some(s) = sum.as_deref_mut() {
            s.add(&m.outputs[0][..frames]);
        }
    }
    0
}

impl<S: Sample, const F: bool, const SE: bool, const ST: bool> NodeProcessor<S>
    for Counter<F, SE, ST>
{
    fn process(&mut self, io: &mut Io<'_, S>) {
        let n = io.frames;
        self.check(io.start, n, "member");
        let out = &mut io.outputs[0][..n];
        self.advance(n, |i, v| out[i] = v);
    }
    fn reset(&mut self) {
        self.state = 0.0;
    }
    fn snapshot(&self, _st: &mut NodeState) {}
    fn restore(&mut self, _st: &NodeState) -> Result<(), StateError> {
        Ok(())
    }
    fn lanes(&self, _: morphrt::dsp::vector::SimdLevel) -> Option<LaneKernel<S>> {
        if SE {
            Some(serial_lanes::<S, Self>)
        } else {
            Some(checking_lanes::<S, F, SE, ST>)
        }
    }
    fn steady_lanes(&self, members: usize) -> Option<Box<dyn SteadyLanes<S>>> {
        ST.then(|| {
            Box::new(SteadyCounters::<F, SE, ST> {
                kept: vec![0.0; members],
                before: vec![0.0; members],
                advanced: 0,
            }) as Box<dyn SteadyLanes<S>>
        })
    }
    fn always_finite(&self) -> bool {
        F
    }
}

/// The counters' steady path: each member's state kept, the members run
/// in turn into the sum (the kernel's bits), the bad one panicking after
/// the ones before it advanced.
struct SteadyCounters<const F: bool, const SE: bool, const ST: bool> {
    kept: Vec<f64>,
    /// Each member's state at the chunk's start.
    before: Vec<f64>,
    /// The members before this one were advanced in this chunk.
    advanced: usize,
}

impl<S: Sample, const F: bool, const SE: bool, const ST: bool> SteadyLanes<S>
    for SteadyCounters<F, SE, ST>
{
    fn load(&mut self, k: usize, node: &mut dyn std::any::Any, _params: &[ParamState]) -> bool {
        let c = node.downcast_mut::<Counter<F, SE, ST>>().unwrap();
        self.kept[k] = c.state;
        true
    }

    fn run(
        &mut self,
        k0: usize,
        nodes: &mut [&mut dyn std::any::Any],
        frames: usize,
        start: u64,
        sum: &mut LaneSum<'_, S>,
    ) -> bool {
        let same = nodes.iter_mut().enumerate().all(|(j, node)| {
            node.downcast_mut::<Counter<F, SE, ST>>()
                .is_some_and(|c| c.state.to_bits() == self.kept[k0 + j].to_bits())
        });
        self.advanced = k0;
        if !same {
            return false;
        }
        for (j, node) in nodes.iter_mut().enumerate() {
            let c = node.downcast_mut::<Counter<F, SE, ST>>().unwrap();
            c.check(start, frames, "steady run");
            self.before[k0 + j] = c.state;
            let (dst, first) = (&mut *sum.dst, sum.first);
            c.advance(frames, |i, v: S| {
                if first {
                    dst[i] = v;
                } else {
                    dst[i] += v;
                }
            });
            sum.first = false;
            self.kept[k0 + j] = c.state;
            self.advanced = k0 + j + 1;
        }
        true
    }

    fn undo(&mut self, k0: usize, nodes: &mut [&mut dyn std::any::Any], _frames: usize) {
        let end = (k0 + nodes.len()).min(self.advanced);
        for (j, node) in nodes.iter_mut().enumerate().take(end.saturating_sub(k0)) {
            let c = node.downcast_mut::<Counter<F, SE, ST>>().unwrap();
            c.state = self.before[k0 + j];
            self.kept[k0 + j] = c.state;
        }
    }
}

/// A counter of `kind` as a boxed processor.
fn counter<S: Sample>(kind: Kind, step: f64, bomb: u64) -> Box<dyn NodeProcessor<S>> {
    macro_rules! make {
        ($($f:literal, $se:literal, $st:literal);*) => {
            match (kind.finite, kind.serial, kind.steady) {
                $(($f, $se, $st) => Box::new(Counter::<$f, $se, $st> {
                    step,
                    state: 0.0,
                    bomb,
                }),)*
            }
        };
    }
    make!(false, false, false; false, false, true; false, true, false; false, true, true;
          true, false, false; true, false, true; true, true, false; true, true, true)
}

/// Counters `c{id}` for each of `ids` (counter `id` steps by
/// [`step`]`(id)`; counter `bad`, if any, bombs at sample 700) into one
/// mix, in the order of `ids`: all into `in0` (fused), or each into an
/// input of its own; blocks of 64.
pub fn counters_with(
    ids: &[usize],
    fused: bool,
    kind: Kind,
    bad: Option<usize>,
    p: Profile,
) -> Engine {
    counters_in(ids, fused, kind, bad, p, false)
}

/// [`counters`] all into `in0`, after a dc of 0.37 whose id (`a`) sorts
/// first: the counters' sum starts from the dc's block (a seeded sum).
pub fn seeded_counters(count: usize, kind: Kind, bad: Option<usize>, p: Profile) -> Engine {
    let ids: Vec<usize> = (0..count).collect();
    counters_in(&ids, true, kind, bad, p, true)
}

fn counters_in(
    ids: &[usize],
    fused: bool,
    kind: Kind,
    bad: Option<usize>,
    p: Profile,
    seeded: bool,
) -> Engine {
    let mut nodes: Vec<String> = ids
        .iter()
        .map(|k| format!(r#"{{"id": "c{k}", "op": "dc", "params": {{"value": 0}}}}"#))
        .collect();
    let mut edges: Vec<String> = ids
        .iter()
        .enumerate()
        .map(|(j, k)| {
            let input = if fused { 0 } else { j };
            format!(r#"{{"from": "c{k}", "to": "m:in{input}"}}"#)
        })
        .collect();
    if seeded {
        nodes.insert(
            0,
            r#"{"id": "a", "op": "dc", "params": {"value": 0.37}}"#.into(),
        );
        edges.insert(0, r#"{"from": "a", "to": "m:in0"}"#.into());
    }
    let text = format!(
        r#"{{"version": "1.0", "nodes": [{}, {{"id": "m", "op": "mix"}}],
           "edges": [{}], "outputs": {{"main": "m"}}}}"#,
        nodes.join(", "),
        edges.join(", ")
    );
    let mut plan = super::plan(&text, Some(p), 64);
    for &k in ids {
        let i = plan
            .nodes
            .iter()
            .position(|n| n.id == format!("c{k}"))
            .unwrap();
        let bomb = if bad == Some(k) { 700 } else { u64::MAX };
        plan.nodes[i].node = Some(match plan.nodes[i].profile.precision {
            morphrt::dsp::Precision::F32 => AnyNode::F32(counter(kind, step(k), bomb)),
            morphrt::dsp::Precision::F64 => AnyNode::F64(counter(kind, step(k), bomb)),
        });
    }
    Engine::new(plan)
}

/// The step of counter `k` of a scene: distinct, so each member shows.
pub fn step(k: usize) -> f64 {
    1e-3 * (k + 1) as f64
}

/// Counters `c0`… `c{count - 1}` ([`counters_with`]), `bad` among them
/// bombing at sample 700.
pub fn counters(count: usize, fused: bool, kind: Kind, bad: usize, p: Profile) -> Engine {
    let ids: Vec<usize> = (0..count).collect();
    counters_with(&ids, fused, kind, Some(bad), p)
}
