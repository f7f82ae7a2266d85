//! The engine's state as data: [`EngineState`] and [`NodeSnapshot`], taking
//! them ([`Engine::snapshot`], [`Engine::save_into`]), continuing from
//! them ([`Engine::restore`], by way of migration) and going back to the
//! post-build state ([`Engine::reset`]).

use super::{Core, Engine, Notice, Recovery, Ring};
use crate::ops::{NodeState, ParamState, StateError, Value};
use crate::profile::Profile;

/// A snapshot of the whole engine: the sample clock, every node's state and
/// every param's current value (with any ramp in progress).
#[derive(Clone, Debug, PartialEq)]
pub struct EngineState {
    /// The sample clock: the absolute sample of the next block.
    pub clock: u64,
    /// Index of the next scheduled event not yet applied.
    pub next_event: usize,
    /// Every node's part, in schedule order.
    pub nodes: Vec<NodeSnapshot>,
    /// Main-bus alignment delay lines.
    pub main: Vec<(Vec<f64>, usize)>,
    /// The session profile the state was taken under.
    pub profile: Profile,
    /// The main bus's sources and alignment under the session profile: a
    /// handover that changes it crossfades.
    pub main_sig: u64,
    /// The main bus's sources and alignment alone: its delay lines carry
    /// when this matches, whatever the profile.
    pub main_wiring: u64,
    /// The [`Engine::id`] of the engine saved (0: none, e.g. read from
    /// a snapshot file): the engine migrated from it maps its nodes.
    pub engine: u64,
    /// Each voice module's allocator: which voice plays which note.
    pub voices: Vec<super::PoolState>,
    /// The beat grid the engine played on (none without a tempo, or from
    /// a snapshot file written without one).
    pub tempo_map: Option<super::TempoMap>,
}

/// One node's part of an [`EngineState`].
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSnapshot {
    /// The node's id in the scene.
    pub id: String,
    /// The name of its operator.
    pub op: &'static str,
    /// What its processor carries between blocks.
    pub state: NodeState,
    /// Number params: current value and any ramp in progress.
    pub params: Vec<ParamState>,
    /// Discrete params as changed by events.
    pub discrete: Vec<(usize, Value)>,
    /// Delay lines of incoming edges (contents, position): latency
    /// compensation and feedback edges, in the order of the node's inputs.
    pub edges: Vec<(Vec<f64>, usize)>,
    /// The scene's own values of the node's params (what the file said, not
    /// what events made of them): a handover tells an edit from an event's
    /// change by comparing these with the new scene's.
    pub scene_values: Vec<Value>,
    /// Op, resolved profile, precision and incoming wiring.
    pub sig: u64,
    /// Incoming wiring alone: the edge delay lines carry when it matches.
    pub wiring: u64,
    /// Whether the node is muted or dead after failing, and its backoff.
    pub recovery: Recovery,
}

impl Engine {
    /// Returns every node to its post-build state and the clock to 0.
    pub fn reset(&mut self) {
        self.unsteady_all();
        for s in &mut self.slots {
            s.reset_state();
            s.recovery = Recovery::default();
            s.params.copy_from_slice(&s.initial_params);
            for (i, v) in s.initial_values.iter().enumerate() {
                if s.values[i] != *v {
                    match &mut s.core {
                        Core::F32(t) => t.node.set_discrete(i, v),
                        Core::F64(t) => t.node.set_discrete(i, v),
                    }
                    s.values[i] = v.clone();
                }
            }
        }
        self.bus.reset();
        self.clock = 0;
        self.next_event = 0;
        self.voices.reset();
        self.pending.clear();
    }

    /// Saves the clock, node states and param states. Allocates: on the
    /// audio thread use [`save_into`](Self::save_into) with a buffer
    /// from this method instead.
    pub fn snapshot(&self) -> EngineState {
        let mut st = EngineState {
            clock: 0,
            next_event: 0,
            nodes: Vec::with_capacity(self.slots.len()),
            main: self.bus.save(),
            profile: self.session,
            main_sig: self.main_sig,
            main_wiring: self.main_wiring,
            engine: self.id(),
            voices: self.voices.states(),
            tempo_map: self.tempo_map,
        };
        for s in &self.slots {
            st.nodes.push(NodeSnapshot {
                id: s.id.clone(),
                op: s.op,
                state: NodeState::default(),
                params: s.params.clone(),
                discrete: s
                    .values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| {
                        matches!(
                            v,
                            Value::Enum(_) | Value::Integer(_) | Value::Bool(_) | Value::Span(_)
                        )
                    })
                    .map(|(i, v)| (i, v.clone()))
                    .collect(),
                edges: match &s.core {
                    Core::F32(t) => t.rings.iter().map(Ring::save).collect(),
                    Core::F64(t) => t.rings.iter().map(Ring::save).collect(),
                },
                scene_values: s.initial_values.clone(),
                sig: s.sig,
                wiring: s.wiring,
                recovery: s.recovery,
            });
        }
        self.save_into(&mut st);
        st
    }

    /// Copies the running state into `st`, a buffer that
    /// [`snapshot`](Self::snapshot) of this same engine shaped: copies only,
    /// no allocation or free, so the audio thread can do it at a block
    /// boundary. The scene values and signatures in `st` never change while
    /// an engine runs and are left as they are.
    pub fn save_into(&self, st: &mut EngineState) {
        debug_assert_eq!(st.nodes.len(), self.slots.len());
        st.clock = self.clock;
        st.next_event = self.next_event;
        st.engine = self.id();
        st.tempo_map = self.tempo_map;
        self.voices.save_into(&mut st.voices);
        self.bus.save_into(&mut st.main);
        for (s, snap) in self.slots.iter().zip(st.nodes.iter_mut()) {
            match &s.core {
                Core::F32(t) => t.node.snapshot(&mut snap.state),
                Core::F64(t) => t.node.snapshot(&mut snap.state),
            }
            snap.params.copy_from_slice(&s.params);
            snap.recovery = s.recovery;
            for (i, v) in snap.discrete.iter_mut() {
                // Enum, integer and bool values: no allocation, no free.
                v.clone_from(&s.values[*i]);
            }
            match &s.core {
                Core::F32(t) => t
                    .rings
                    .iter()
                    .zip(snap.edges.iter_mut())
                    .for_each(|(r, e)| r.save_into(e)),
                Core::F64(t) => t
                    .rings
                    .iter()
                    .zip(snap.edges.iter_mut())
                    .for_each(|(r, e)| r.save_into(e)),
            }
        }
    }

    /// Continues from `st` (taken from an engine of the same scene, at any
    /// profile): every node whose id and operator match takes its state,
    /// converting precision. Fails, naming the node, if a matching node's
    /// state does not fit; that node is then left fresh.
    pub fn restore(&mut self, st: &EngineState) -> Result<(), (String, StateError)> {
        let clock = st.clock;
        let m = self.migrate(st, clock);
        match m.notices.into_iter().find_map(|n| match n {
            Notice::StateNotCarried { id, error } => Some((id, error)),
            _ => None,
        }) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
