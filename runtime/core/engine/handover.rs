//! Migration: the engine half of the handover (the steps are listed in
//! [`crate::engine::incoming`]).
//!
//! The control thread builds a new engine for an edited scene or another
//! profile, the audio thread copies the running engine's state into a
//! buffer at block boundary N ([`Engine::save_into`]), and
//! [`Engine::migrate`] carries that state into the new engine off the audio
//! thread: nodes match by (id, op), precision converts (f64 → f32 rounds,
//! f32 → f64 is exact), derived state (FFT partitions, oversampler history)
//! is rebuilt under each node's FP mode. Until the swap sample S the new
//! engine keeps the saved param values, so fast-forwarding it from N to
//! S computes what the old one computes; at S each param the edit changed
//! ramps from its running value to the new one.

use super::{Core, Engine, EngineState, Ring, Slot};
use crate::dsp::fpmode::FpGuard;
use crate::graph::{Plan, SourceRef};
use crate::ops::{ParamState, Ramp, StateError, Value};

/// One thing a migration wants the user to know.
#[derive(Clone, Debug, PartialEq)]
pub enum Notice {
    /// The node is new in this scene: it starts fresh.
    Added {
        /// The node's id.
        id: String,
    },
    /// The node is gone from the scene.
    Removed {
        /// The node's id.
        id: String,
    },
    /// Same id, another operator: the node starts fresh.
    OpChanged {
        /// The node's id.
        id: String,
        /// The operator it had.
        from: &'static str,
        /// The operator it has now.
        to: &'static str,
    },
    /// The node's state did not fit (e.g. another delay size or impulse
    /// response): it starts fresh.
    StateNotCarried {
        /// The node's id.
        id: String,
        /// Why the state did not fit.
        error: StateError,
    },
    /// A param the edit changed glides to its new value from the swap sample.
    Ramped {
        /// The node's id.
        id: String,
        /// The param's name.
        param: &'static str,
        /// The value it glides from, in the param's canonical unit.
        from: f64,
        /// The value it glides to, in the param's canonical unit.
        to: f64,
    },
    /// A discrete param (mode, loop, …) the edit changed switches at the swap sample.
    Switched {
        /// The node's id.
        id: String,
        /// The param's name.
        param: &'static str,
    },
    /// The node had panicked (and was silent): it starts fresh, as its
    /// state may be broken.
    Revived {
        /// The node's id.
        id: String,
    },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::Added { id } => write!(f, "node `{id}` added"),
            Notice::Removed { id } => write!(f, "node `{id}` removed"),
            Notice::OpChanged { id, from, to } => {
                write!(
                    f,
                    "node `{id}` changed from `{from}` to `{to}`: it starts fresh"
                )
            }
            Notice::StateNotCarried { id, error } => {
                write!(
                    f,
                    "node `{id}` starts fresh: its state cannot carry over ({error})"
                )
            }
            Notice::Ramped {
                id,
                param,
                from,
                to,
            } => {
                write!(f, "`{id}.{param}` glides {from} → {to}")
            }
            Notice::Switched { id, param } => write!(f, "`{id}.{param}` switches"),
            Notice::Revived { id } => {
                write!(
                    f,
                    "node `{id}` had panicked and was silent: it starts fresh"
                )
            }
        }
    }
}

impl Notice {
    fn id_mut(&mut self) -> &mut String {
        match self {
            Notice::Added { id }
            | Notice::Removed { id }
            | Notice::OpChanged { id, .. }
            | Notice::StateNotCarried { id, .. }
            | Notice::Ramped { id, .. }
            | Notice::Switched { id, .. }
            | Notice::Revived { id } => id,
        }
    }
}

/// `notices` with a voice module's copies of one template node told once:
/// each notice about `osc#3` (voice 3's copy of `osc`, or `pad#r`, a
/// module's second-channel sum) reads as about `osc`, and the same notice
/// for several copies comes once, with how many voice copies it tells of:
/// (notice, copies), in the order they first come; copies is 0 for a node
/// that is no voice's copy.
pub fn fold_voice_copies(notices: &[Notice]) -> Vec<(Notice, usize)> {
    let mut out: Vec<(Notice, usize)> = Vec::with_capacity(notices.len());
    for n in notices {
        let mut n = n.clone();
        let id = n.id_mut();
        let Some(at) = id.find('#') else {
            out.push((n, 0));
            continue;
        };
        let voice = usize::from(id[at + 1..].parse::<usize>().is_ok());
        id.truncate(at);
        match out.iter_mut().find(|(seen, _)| *seen == n) {
            Some((_, copies)) => *copies += voice,
            None => out.push((n, voice)),
        }
    }
    out
}

/// What follows a folded notice about `copies` voice copies: nothing for
/// a node that is no voice's copy (0), else ` (1 voice)`, ` (N voices)`.
pub fn voices_suffix(copies: usize) -> String {
    match copies {
        0 => String::new(),
        1 => " (1 voice)".to_string(),
        n => format!(" ({n} voices)"),
    }
}

/// What [`Engine::migrate`] did.
#[derive(Clone, Debug, Default)]
pub struct Migration {
    /// Nodes whose state carried over.
    pub carried: usize,
    /// What the user should know about the migration, node by node.
    pub notices: Vec<Notice>,
    /// True when the new engine does not compute what the old one would
    /// (nodes added, removed, retyped or fresh, other wiring, outputs or
    /// profile): the swap must crossfade. False for a param-only edit,
    /// which swaps without one.
    pub structural: bool,
}

/// A param change waiting for the swap sample.
#[derive(Clone, Debug)]
enum Change {
    Ramp { to: f64, len_samples: u64 },
    Discrete(Value),
}

/// Param changes of an edit, applied when the clock reaches `at`.
#[derive(Debug, Default)]
pub(super) struct Pending {
    at: u64,
    changes: Vec<(usize, usize, Change)>,
    done: bool,
}

impl Pending {
    #[inline]
    pub(super) fn due(&self, clock: u64) -> bool {
        !self.done && !self.changes.is_empty() && clock >= self.at
    }

    pub(super) fn clear(&mut self) {
        self.changes.clear();
        self.done = false;
    }
}

/// FNV-1a 64 over text written to it: a stable fingerprint for structure
/// comparisons (snapshots keep them), taken as the text is formatted,
/// without building it.
struct Fingerprint(u64);

impl Fingerprint {
    fn of(args: std::fmt::Arguments<'_>) -> u64 {
        let mut h = Fingerprint(0xcbf2_9ce4_8422_2325);
        std::fmt::Write::write_fmt(&mut h, args).expect("hashing cannot fail");
        h.0
    }
}

impl std::fmt::Write for Fingerprint {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        for b in text.bytes() {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(())
    }
}

/// Sources by id, port, alignment delay and feedback delay, so reordering
/// the schedule does not change them.
fn named_sources<'a>(
    plan: &'a Plan,
    list: &[Vec<SourceRef>],
) -> Vec<Vec<(&'a str, usize, usize, usize)>> {
    list.iter()
        .map(|l| {
            l.iter()
                .map(|s| (plan.nodes[s.node].id.as_str(), s.port, s.delay, s.feedback))
                .collect()
        })
        .collect()
}

/// A node's incoming wiring: its sources (by id) and their alignment and
/// feedback delays. Equal wiring means the edge delay lines hold the same
/// signals at the same delays, whatever profile or precision the nodes run
/// at, so their contents carry across a profile switch (a feedback edge's
/// line like a `delay` node's buffer).
pub(super) fn node_wiring(plan: &Plan, i: usize) -> u64 {
    let n = &plan.nodes[i];
    Fingerprint::of(format_args!(
        "{}|{:?}|{:?}",
        n.inputs.len(),
        named_sources(plan, &n.inputs),
        named_sources(plan, &n.param_inputs)
    ))
}

/// A node's structure: what must be equal for an engine built from another
/// scene to compute what this node computes, given the same state and
/// params: its operator, resolved profile and wiring (`wiring`, its
/// [`node_wiring`]).
pub(super) fn node_sig(plan: &Plan, i: usize, wiring: u64) -> u64 {
    let n = &plan.nodes[i];
    Fingerprint::of(format_args!("{}|{:?}|{}", n.op.name, n.profile, wiring))
}

/// The main bus's sources (by id) and alignment: its delay lines carry
/// when this matches.
pub(super) fn main_wiring(plan: &Plan) -> u64 {
    let srcs: Vec<(&str, usize, usize)> = plan
        .main
        .iter()
        .map(|s| (plan.nodes[s.node].id.as_str(), s.port, s.delay))
        .collect();
    Fingerprint::of(format_args!("{srcs:?}"))
}

/// The main bus's structure: its wiring under the session profile.
pub(super) fn main_sig(plan: &Plan) -> u64 {
    Fingerprint::of(format_args!(
        "{:?}|{}",
        plan.session_profile,
        main_wiring(plan)
    ))
}

impl Engine {
    /// Carries `st` (saved from the running engine at its clock N) into
    /// this freshly built engine, which then stands at N. Runs on the
    /// control thread; may allocate.
    ///
    /// Per node, matched by id and operator: the state is restored under
    /// the node's FP mode, or, if it does not fit, the node is reset and
    /// named in a notice (never half-restored). Its failure state carries
    /// with it (a muted node stays muted until its retry), except that a
    /// node that had panicked starts fresh, with a crossfade. Params the scene file did
    /// not change keep their running values (including an event's change
    /// and a ramp in progress); params it changed keep the running value
    /// until `swap_at` and then glide to the new value over the node's edit
    /// ramp (except a voice's pitch, gate and velocity, which its notes
    /// set). Discrete params the file changed switch at `swap_at`. Event
    /// cursors are recomputed from the clock.
    pub fn migrate(&mut self, st: &EngineState, swap_at: u64) -> Migration {
        self.unsteady_all();
        let mut m = Migration {
            structural: st.profile != self.session
                || st.main_sig != self.main_sig
                || st.nodes.len() != self.slots.len(),
            ..Migration::default()
        };
        self.stand_at(st, swap_at);
        self.follow_saved_controls(st);
        self.carry_nodes(st, &mut m);
        let ids: std::collections::HashSet<&str> =
            self.slots.iter().map(|s| s.id.as_str()).collect();
        for snap in &st.nodes {
            if !ids.contains(snap.id.as_str()) {
                m.structural = true;
                m.notices.push(Notice::Removed {
                    id: snap.id.clone(),
                });
            }
        }
        m
    }

    /// Puts this engine where the saved one stands: its clock, event
    /// cursor, voices and beat grid, the edit's changes due at `swap_at`
    /// (never before the clock), and the main bus's delay lines when they
    /// hold the same signals.
    fn stand_at(&mut self, st: &EngineState, swap_at: u64) {
        self.clock = st.clock;
        // The saved params may carry ramps in progress.
        self.ramps_live = true;
        self.next_event = self.events.partition_point(|e| e.sample < st.clock);
        self.voices.seek(st.clock);
        self.voices.load(&st.voices);
        self.pending.clear();
        self.pending.at = swap_at.max(st.clock);
        self.prior_map = st.tempo_map;
        self.retime_beats();
        // The delay lines hold the same signals whatever the profile: they
        // carry when the wiring matches, also across a profile switch.
        if st.main_wiring == self.main_wiring && self.bus.rings_fit(&st.main) {
            self.bus.load(&st.main);
        } else {
            self.bus.reset();
        }
    }

    /// Change records resolved for the saved engine land on this one:
    /// its nodes by index, mapped onto ours by id and op.
    fn follow_saved_controls(&mut self, st: &EngineState) {
        let ours: std::collections::HashMap<(&str, &str), usize> = self
            .slots
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.id.as_str(), s.op), i))
            .collect();
        let map = st
            .nodes
            .iter()
            .map(|n| {
                ours.get(&(n.id.as_str(), n.op))
                    .map_or(u32::MAX, |&i| i as u32)
            })
            .collect();
        self.changes.follow(st.engine, map);
    }

    /// Carries each node's saved state into its slot, matched by id
    /// ([`carry_state`]), and the params the edit left or changed
    /// ([`carry_discrete`], [`carry_numbers`]); tells `m` of each node
    /// that starts fresh and of each that is new.
    fn carry_nodes(&mut self, st: &EngineState, m: &mut Migration) {
        let guard = FpGuard::new(self.session_flush);
        // By id: a lookup per node, not a scan (scenes may hold many nodes).
        let by_id: std::collections::HashMap<&str, &super::NodeSnapshot> =
            st.nodes.iter().map(|n| (n.id.as_str(), n)).collect();
        for (si, s) in self.slots.iter_mut().enumerate() {
            let Some(&snap) = by_id.get(s.id.as_str()) else {
                m.structural = true;
                m.notices.push(Notice::Added { id: s.id.clone() });
                continue;
            };
            match carry_state(s, snap, &guard) {
                Ok(same) => m.structural |= !same,
                Err(fresh) => {
                    m.structural = true;
                    m.notices.push(fresh);
                    continue;
                }
            }
            m.carried += 1;
            let mut edits = Edits {
                node: si,
                pending: &mut self.pending,
                edited: &mut self.changes.edited[si],
                notices: &mut m.notices,
            };
            carry_discrete(s, snap, &mut edits);
            let (voices, voice) = (&self.voices, s.voice);
            carry_numbers(s, snap, &mut edits, |i| voices.note_param(voice, si, i));
        }
    }

    /// Moves the swap sample later (the audio thread had passed the offered
    /// one); call after fast-forwarding to `at`.
    pub fn set_swap_sample(&mut self, at: u64) {
        let moved = at != self.pending.at;
        self.pending.at = at;
        // Without a tempo change the grid is the saved one whatever S
        // is: the events stay where the migration placed them, and a
        // catch-up's swap costs nothing here (no arithmetic, no sort).
        if moved && self.tempo_changes() {
            self.retime_beats();
        }
    }

    /// Whether this engine's tempo differs from the saved engine's
    /// grid, so that where its events in beats land depends on S.
    fn tempo_changes(&self) -> bool {
        matches!((self.prior_map, self.spb), (Some(old), Some(spb)) if old.spb != spb)
    }

    /// Each event's place in its plan as compiled and the sample it lands
    /// on now (a tempo edit moves those in beats).
    pub fn event_samples(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.events.iter().map(|e| (e.order, e.sample))
    }

    /// Places the events in beats on the beat grid of a handover swapped
    /// at the pending swap sample S (`beats.rs`): beats before the one the
    /// saved engine's map stands at at S stay on that map (they play
    /// before S), later ones land on this engine's tempo re-anchored at S.
    /// An engine migrated from one without a beat grid (or from a snapshot
    /// file without one) keeps its own; a snapshot file's grid is the
    /// saved engine's, swapped at the file's clock. Every event that
    /// already fired is before S on the old map, so re-placing the rest as
    /// S moves later never fires an event twice.
    fn retime_beats(&mut self) {
        let (Some(old), Some(spb)) = (self.prior_map, self.spb) else {
            return;
        };
        let s = self.pending.at;
        let Some(new) = old.edited(s, spb) else {
            return;
        };
        let block = self.block_size as u64;
        for e in &mut self.events {
            let Some(b) = e.beat else { continue };
            if let Some(mut at) = super::beats::beat_sample(&old, &new, b) {
                if e.at_block && block > 0 {
                    at = at / block * block;
                }
                e.sample = at;
            }
        }
        // On the audio thread when a swap moves later: an unstable sort does
        // not allocate, and (sample, place in the plan) is unique, so the
        // order is the scene's wherever two events share a sample.
        self.events.sort_unstable_by_key(|e| (e.sample, e.order));
        self.next_event = self.events.partition_point(|e| e.sample < self.clock);
        self.tempo_map = Some(new);
    }

    /// Runs the engine from its clock to `to` (a later block boundary),
    /// discarding the output: after a migration, this brings the new engine
    /// to the swap sample.
    pub fn fast_forward(&mut self, to: u64) {
        while self.clock < to {
            let n = ((to - self.clock) as usize).min(self.block_size);
            self.process_block(n);
        }
    }

    /// The crossfade length for a structural swap into this engine, in samples.
    pub(crate) fn crossfade_len(&self) -> u64 {
        self.crossfade
    }

    /// Applies the edit's param changes at the swap sample. Real-time safe:
    /// the list was built off the audio thread and is only read here.
    pub(super) fn apply_pending(&mut self) {
        self.unsteady_all();
        let at = self.clock;
        self.ramps_live = true;
        for (si, pi, change) in &self.pending.changes {
            let s = &mut self.slots[*si];
            match change {
                Change::Ramp { to, len_samples } => {
                    let p = &mut s.params[*pi];
                    let from = p.at(at);
                    *p = ParamState {
                        value: *to,
                        ramp: (*len_samples > 0).then_some(Ramp {
                            from,
                            start: at,
                            len: *len_samples,
                        }),
                    };
                }
                Change::Discrete(v) => set_discrete(s, *pi, v),
            }
        }
        self.pending.done = true;
    }
}

fn op_param_name(op: &str, i: usize) -> &'static str {
    crate::ops::lookup(op)
        .and_then(|spec| spec.params.get(i))
        .map_or("?", |p| p.name)
}

pub(super) fn set_discrete(s: &mut Slot, i: usize, v: &Value) {
    match &mut s.core {
        Core::F32(t) => t.node.set_discrete(i, v),
        Core::F64(t) => t.node.set_discrete(i, v),
    }
    s.values[i].clone_from(v);
}

/// Restores one node completely or not at all: on failure the node and its
/// edge delay lines are reset.
fn restore_slot(s: &mut Slot, snap: &super::NodeSnapshot) -> Result<(), StateError> {
    // Discrete values first: a node's state layout may depend on them.
    for (i, v) in &snap.discrete {
        if s.values.get(*i).is_some_and(|cur| cur != v) {
            set_discrete(s, *i, v);
        }
    }
    let r = match &mut s.core {
        Core::F32(t) => t.node.restore(&snap.state),
        Core::F64(t) => t.node.restore(&snap.state),
    };
    if let Err(e) = r {
        reset_slot(s);
        return Err(e);
    }
    let same_wiring = snap.wiring == s.wiring;
    match &mut s.core {
        Core::F32(t) => load_rings(&mut t.rings, &snap.edges, same_wiring),
        Core::F64(t) => load_rings(&mut t.rings, &snap.edges, same_wiring),
    }
    Ok(())
}

/// Restores a node's saved state `snap` into its slot `s` under the
/// node's FP mode (`guard` set to it), its failure state with it: a muted
/// or backing-off node stays so, as the cut changes nothing about when it
/// is retried. Returns whether the node computes what the saved one
/// did: the same structure, and the same arrays and resources built into
/// it. The error is why it starts fresh instead: another operator, a
/// panic (its state may be broken), or a state that does not fit (never
/// half-restored).
fn carry_state(s: &mut Slot, snap: &super::NodeSnapshot, guard: &FpGuard) -> Result<bool, Notice> {
    if snap.op != s.op {
        return Err(Notice::OpChanged {
            id: s.id.clone(),
            from: snap.op,
            to: s.op,
        });
    }
    if snap.recovery.dead {
        return Err(Notice::Revived { id: s.id.clone() });
    }
    let same_structure = snap.sig == s.sig;
    guard.set_flush(s.flush);
    restore_slot(s, snap).map_err(|error| Notice::StateNotCarried {
        id: s.id.clone(),
        error,
    })?;
    s.recovery = snap.recovery;
    Ok(same_structure && !built_in_changed(s, snap))
}

/// Whether an array or resource built into the node changed: then the new
/// engine does not compute what the old one did.
fn built_in_changed(s: &Slot, snap: &super::NodeSnapshot) -> bool {
    snap.scene_values
        .iter()
        .zip(&s.initial_values)
        .any(|(a, b)| match (a, b) {
            // Bit for bit: a sequencer's rests are NaN.
            (Value::Gains(x), Value::Gains(y)) => {
                x.len() != y.len() || x.iter().zip(y).any(|(p, q)| p.to_bits() != q.to_bits())
            }
            (Value::Resource(_), _) => a != b,
            _ => false,
        })
}

/// Where a migration records the params an edit changed on one node: the
/// changes due at the swap sample, the node's mask of edited params (the
/// first 64), and the notices.
struct Edits<'a> {
    /// The node's slot index.
    node: usize,
    pending: &'a mut Pending,
    edited: &'a mut u64,
    notices: &'a mut Vec<Notice>,
}

impl Edits<'_> {
    /// Records param `i` as edited, due to change as `change` says.
    fn push(&mut self, i: usize, notice: Notice, change: Change) {
        if i < 64 {
            *self.edited |= 1 << i;
        }
        self.notices.push(notice);
        self.pending.changes.push((self.node, i, change));
    }
}

/// Discrete params: the running value unless the file changed it, which
/// switches at the swap sample.
fn carry_discrete(s: &mut Slot, snap: &super::NodeSnapshot, edits: &mut Edits<'_>) {
    for (i, v) in &snap.discrete {
        let edited = snap.scene_values.get(*i) != s.initial_values.get(*i);
        if edited {
            let notice = Notice::Switched {
                id: s.id.clone(),
                param: op_param_name(s.op, *i),
            };
            edits.push(*i, notice, Change::Discrete(s.initial_values[*i].clone()));
        }
        if s.values.get(*i).is_some_and(|cur| cur != v) {
            set_discrete(s, *i, v);
        }
    }
}

/// Number params: the running value (with any ramp in progress); one the
/// file changed glides to its new value from the swap sample over the
/// node's edit ramp, unless `note_param` says a voice's notes set it.
fn carry_numbers(
    s: &mut Slot,
    snap: &super::NodeSnapshot,
    edits: &mut Edits<'_>,
    note_param: impl Fn(usize) -> bool,
) {
    if snap.params.len() != s.params.len() {
        return;
    }
    for (i, p) in snap.params.iter().enumerate() {
        let new = s.initial_params[i].value;
        let edited = match (snap.scene_values.get(i), s.initial_values.get(i)) {
            (Some(Value::Number(a)), Some(Value::Number(b))) => a != b,
            _ => false,
        } && !note_param(i);
        s.params[i] = *p;
        if edited {
            let notice = Notice::Ramped {
                id: s.id.clone(),
                param: op_param_name(s.op, i),
                from: p.at(edits.pending.at),
                to: new,
            };
            let change = Change::Ramp {
                to: new,
                len_samples: s.edit_ramp,
            };
            edits.push(i, notice, change);
        }
    }
}

fn load_rings<S: crate::dsp::Sample>(
    rings: &mut [Ring<S>],
    saved: &[(Vec<f64>, usize)],
    same_wiring: bool,
) {
    if same_wiring && rings.len() == saved.len() && rings.iter().zip(saved).all(|(r, e)| r.fits(e))
    {
        rings.iter_mut().zip(saved).for_each(|(r, e)| r.load(e));
    } else {
        rings.iter_mut().for_each(Ring::reset);
    }
}

fn reset_slot(s: &mut Slot) {
    s.reset_state();
    for (i, v) in s.initial_values.clone().iter().enumerate() {
        if s.values[i] != *v {
            set_discrete(s, i, v);
        }
    }
    s.params.copy_from_slice(&s.initial_params);
}

#[cfg(test)]
mod fold_tests {
    use super::*;

    #[test]
    fn a_voice_module_s_copies_are_told_once_with_their_count() {
        let ramp = |id: &str| Notice::Ramped {
            id: id.into(),
            param: "cutoff",
            from: 2200.0,
            to: 900.0,
        };
        let mut notices: Vec<Notice> = (0..6).map(|v| ramp(&format!("lp#{v}"))).collect();
        notices.push(ramp("master"));
        notices.push(Notice::Added { id: "pad#r".into() });
        notices.push(Notice::Added { id: "extra".into() });
        let shown: Vec<String> = fold_voice_copies(&notices)
            .iter()
            .map(|(n, copies)| format!("{n}{}", voices_suffix(*copies)))
            .collect();
        assert_eq!(
            shown,
            [
                "`lp.cutoff` glides 2200 → 900 (6 voices)",
                "`master.cutoff` glides 2200 → 900",
                "node `pad` added",
                "node `extra` added",
            ]
        );
    }

    /// A pool shrunk by one voice removes one copy of each template node:
    /// the notice says so, where it once read like the whole node's removal.
    #[test]
    fn one_voice_copy_removed_says_one_voice() {
        let notices = [
            Notice::Removed {
                id: "tone#3".into(),
            },
            Notice::Removed { id: "solo".into() },
        ];
        let shown: Vec<String> = fold_voice_copies(&notices)
            .iter()
            .map(|(n, copies)| format!("{n}{}", voices_suffix(*copies)))
            .collect();
        assert_eq!(
            shown,
            ["node `tone` removed (1 voice)", "node `solo` removed"]
        );
    }
}

#[cfg(test)]
mod carry_tests {
    use crate::engine::Engine;
    use crate::graph::{compile, CompileOptions};

    /// An engine of a sequencer playing `steps` (a JSON array) with gate
    /// `gate`.
    fn sequencer(steps: &str, gate: f64) -> Engine {
        let text = format!(
            r#"{{ "version": "1.0", "sample_rate": 48000,
  "nodes": [ {{ "id": "seq", "op": "sequencer",
                "params": {{ "steps": {steps}, "rate": "10ms", "gate": {gate} }} }} ],
  "outputs": {{ "main": ["seq:value"] }} }}"#
        );
        let scene = crate::scene::load_str(&text, "t.json", None).expect("the scene loads");
        Engine::new(compile(&scene, &CompileOptions::default()).expect("it compiles"))
    }

    // The steps are built into the node: an edit that changes one changes
    // what the node computes, so the swap crossfades; one that keeps them,
    // rests and all (a rest is NaN, equal to nothing, itself included),
    // and moves only the gate, swaps without one.
    #[test]
    fn an_edit_of_built_in_steps_crossfades_and_one_that_keeps_them_does_not() {
        let mut old = sequencer("[60, null, 64]", 0.5);
        old.process_block(64);
        let st = old.snapshot();
        let mut gate_only = sequencer("[60, null, 64]", 0.25);
        let m = gate_only.migrate(&st, st.clock);
        assert!(!m.structural, "{:?}", m.notices);
        assert_eq!(m.carried, 1);
        let mut new_step = sequencer("[60, null, 65]", 0.5);
        let m = new_step.migrate(&st, st.clock);
        assert!(m.structural, "{:?}", m.notices);
        assert_eq!(m.carried, 1);
    }
}

#[cfg(test)]
mod fingerprint_tests {
    use super::*;

    /// FNV-1a 64 over a built text: how the fingerprints were first taken.
    fn fnv(text: &str) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for b in text.bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    }

    fn owned_sources(
        plan: &Plan,
        list: &[Vec<SourceRef>],
    ) -> Vec<Vec<(String, usize, usize, usize)>> {
        list.iter()
            .map(|l| {
                l.iter()
                    .map(|s| (plan.nodes[s.node].id.clone(), s.port, s.delay, s.feedback))
                    .collect()
            })
            .collect()
    }

    /// Snapshots keep these fingerprints: taken as the text is written,
    /// they are the values the built texts gave, on every shipped scene
    /// that compiles without resource files (feedback edges, param inputs,
    /// voice modules, stereo buses). Scene ids hold no character that
    /// `Debug` escapes; `&str` and `String` format alike either way.
    #[test]
    fn fingerprints_taken_while_formatting_equal_those_of_the_built_text() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenes");
        let mut nodes = 0;
        for entry in std::fs::read_dir(&dir).expect("scenes/") {
            let path = entry.expect("an entry").path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let scene = crate::scene::load_file(&path).expect("a shipped scene loads");
            // (Scenes that read resource files need a host that supplies them.)
            let Ok(plan) = crate::graph::compile(&scene, &Default::default()) else {
                continue;
            };
            for (i, n) in plan.nodes.iter().enumerate() {
                let wiring = fnv(&format!(
                    "{}|{:?}|{:?}",
                    n.inputs.len(),
                    owned_sources(&plan, &n.inputs),
                    owned_sources(&plan, &n.param_inputs)
                ));
                assert_eq!(
                    node_wiring(&plan, i),
                    wiring,
                    "{}: {}",
                    path.display(),
                    n.id
                );
                let sig = fnv(&format!("{}|{:?}|{}", n.op.name, n.profile, wiring));
                assert_eq!(
                    node_sig(&plan, i, wiring),
                    sig,
                    "{}: {}",
                    path.display(),
                    n.id
                );
                nodes += 1;
            }
            let srcs: Vec<(String, usize, usize)> = plan
                .main
                .iter()
                .map(|s| (plan.nodes[s.node].id.clone(), s.port, s.delay))
                .collect();
            let wiring = fnv(&format!("{srcs:?}"));
            assert_eq!(main_wiring(&plan), wiring, "{}", path.display());
            let sig = fnv(&format!("{:?}|{}", plan.session_profile, wiring));
            assert_eq!(main_sig(&plan), sig, "{}", path.display());
        }
        assert!(nodes > 100, "{nodes} nodes compared");
    }
}
