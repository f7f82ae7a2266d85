//! Engine state ↔ the snapshot's records: the conversions between
//! [`EngineState`] and the file's records, both ways, in the exact number
//! encodings of `numbers.rs`.

use super::format::{
    DelayRecord, NodeRecord, NoteRecord, ParamRecord, PhaseRecord, PoolRecord, RampRecord,
    RecoveryRecord, SnapshotFile, StateEntry, StateRecord, TempoRecord, ValueRecord, VoiceRecord,
};
use super::numbers::{HexF32, HexF64, Num};
use super::{display, SnapshotError};
use crate::dsp::Precision;
use crate::engine::{
    EngineState, NodeSnapshot, Pending, Phase, PoolState, Recovery, ResetPart, TempoMap, Voice,
};
use crate::ops::{
    self, AudioData, NodeState, OpSpec, ParamKind, ParamState, Ramp, StateValue, Value,
};
use crate::profile::Profile;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

pub(super) fn delay_record((data, pos): &(Vec<f64>, usize)) -> DelayRecord {
    DelayRecord {
        pos: *pos,
        samples: HexF64(data.clone()),
    }
}

/// The record of voice module `p`'s allocator.
pub(super) fn pool_record(p: &PoolState) -> PoolRecord {
    PoolRecord {
        module: p.module.clone(),
        sustain: p.sustain,
        seq: p.seq,
        dropped: p.dropped,
        clear_until: p.clear_until,
        bend: (p.bend != 0.0).then_some(Num(p.bend)),
        voices: p.voices.iter().map(voice_record).collect(),
        held: p.held.iter().map(note_record).collect(),
    }
}

/// The record of the beat grid `m`.
pub(super) fn tempo_record(m: &TempoMap) -> TempoRecord {
    TempoRecord {
        sample: m.sample,
        beat: m.beat,
        samples_per_beat: m.spb,
    }
}

fn voice_record(v: &Voice) -> VoiceRecord {
    VoiceRecord {
        phase: match v.phase {
            Phase::Free => PhaseRecord::Free,
            Phase::Held => PhaseRecord::Held,
            Phase::Released => PhaseRecord::Released,
            Phase::Stealing => PhaseRecord::Stealing,
        },
        key: v.key,
        tag: v.tag,
        started: v.started,
        released: v.released,
        sustained: v.sustained,
        quiet: v.quiet,
        restart_at: v.restart_at,
        clean_at: v.clean_at,
        clearing: v.clearing,
        next: note_record(&v.next),
    }
}

fn note_record(n: &Pending) -> NoteRecord {
    NoteRecord {
        key: n.key,
        tag: n.tag,
        pitch_hz: Num(n.pitch_hz),
        velocity: Num(n.velocity),
        cancelled: n.cancelled,
    }
}

/// The record of node state `s`, which ran under `profile` at `precision`.
pub(super) fn node_record(
    s: &NodeSnapshot,
    profile: Profile,
    precision: Precision,
) -> Result<NodeRecord, SnapshotError> {
    let spec = ops::lookup(s.op)
        .ok_or_else(|| SnapshotError::Mismatch(format!("no operator `{}`", s.op)))?;
    let k = spec.params.len();
    if s.params.len() != k || s.scene_values.len() != k {
        return Err(SnapshotError::Mismatch(format!(
            "node `{}` has {} param states and {} scene values for {k} params of `{}`",
            s.id,
            s.params.len(),
            s.scene_values.len(),
            spec.name
        )));
    }
    let mut params = Vec::with_capacity(k);
    for (i, p) in spec.params.iter().enumerate() {
        let current = match s.discrete.iter().find(|(j, _)| *j == i) {
            Some((_, v)) => Some(value_record(spec, i, v, &s.id)?),
            None => None,
        };
        params.push(ParamRecord {
            name: p.name.to_string(),
            scene: value_record(spec, i, &s.scene_values[i], &s.id)?,
            value: Num(s.params[i].value),
            ramp: s.params[i].ramp.map(|r| RampRecord {
                from: Num(r.from),
                start: r.start,
                len: r.len,
            }),
            current,
        });
    }
    Ok(NodeRecord {
        id: s.id.clone(),
        op: s.op.to_string(),
        profile,
        precision,
        sig: s.sig,
        wiring: s.wiring,
        state: s
            .state
            .entries
            .iter()
            .map(|(name, v)| StateEntry {
                name: name.to_string(),
                value: match v {
                    StateValue::F32(x) => StateRecord::F32(HexF32(x.clone())),
                    StateValue::F64(x) => StateRecord::F64(HexF64(x.clone())),
                    StateValue::U64(x) => StateRecord::U64(*x),
                    StateValue::I64(x) => StateRecord::I64(*x),
                    StateValue::Bool(x) => StateRecord::Bool(*x),
                },
            })
            .collect(),
        params,
        edges: s.edges.iter().map(delay_record).collect(),
        recovery: (s.recovery != Recovery::default()).then_some(RecoveryRecord {
            muted_until: s.recovery.muted_until,
            wait: s.recovery.wait,
            clear_at: s.recovery.clear_at,
            dead: s.recovery.dead,
            reset_node: match s.recovery.resetting {
                Some(ResetPart::Node(n)) => Some(n),
                _ => None,
            },
            reset_lines: match s.recovery.resetting {
                Some(ResetPart::Lines(n)) => Some(n),
                _ => None,
            },
        }),
    })
}

fn value_record(
    spec: &OpSpec,
    i: usize,
    v: &Value,
    id: &str,
) -> Result<ValueRecord, SnapshotError> {
    Ok(match v {
        Value::Number(x) => ValueRecord::Number(Num(*x)),
        Value::Integer(x) => ValueRecord::Integer(*x),
        Value::Enum(k) => match spec.params[i].kind {
            ParamKind::Enum { choices, .. } if *k < choices.len() => {
                ValueRecord::Enum(choices[*k].to_string())
            }
            _ => {
                return Err(SnapshotError::Mismatch(format!(
                    "node `{id}`: choice {k} of `{}` does not exist",
                    spec.params[i].name
                )))
            }
        },
        Value::Bool(b) => ValueRecord::Bool(*b),
        Value::Resource(a) => ValueRecord::Resource(display(&a.path)),
        Value::Gains(g) => ValueRecord::Gains(g.iter().map(|x| Num(*x)).collect()),
        Value::Span(r) => ValueRecord::Span(format!("{}/{}", r.num, r.den)),
    })
}

impl SnapshotFile {
    /// The engine state the file holds, ready for [`Engine::migrate`](crate::engine::Engine::migrate).
    /// Resources are placeholders carrying only their path: a resume keeps
    /// the engine's own, and the file's SHA-256 tells whether they changed.
    pub fn state(&self) -> Result<EngineState, SnapshotError> {
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for r in &self.nodes {
            nodes.push(self.node_snapshot(r)?);
        }
        Ok(EngineState {
            clock: self.clock,
            // Event cursors are recomputed from the clock by `migrate`.
            next_event: 0,
            nodes,
            main: self
                .main
                .delays
                .iter()
                .map(|d| (d.samples.0.clone(), d.pos))
                .collect(),
            profile: self.session_profile,
            main_sig: self.main.sig,
            main_wiring: self.main.wiring,
            engine: 0,
            voices: self
                .voices
                .iter()
                .map(|p| self.pool_state(p))
                .collect::<Result<_, _>>()?,
            // The grid the saved engine played on: a resume into the
            // same tempo keeps it, another tempo re-anchors at the clock
            // (`Engine::migrate`). Without one, a resume plays its scene's
            // grid from sample 0.
            tempo_map: self.tempo.map(|t| TempoMap {
                sample: t.sample,
                beat: t.beat,
                spb: t.samples_per_beat,
            }),
        })
    }

    /// A voice module's allocator as the file holds it, checked: a pool of
    /// 1 … 256 voices, once per module, whose waiting notes have a finite
    /// pitch and a velocity within 0 … 1 (what a note event can give).
    fn pool_state(&self, r: &PoolRecord) -> Result<PoolState, SnapshotError> {
        let bad = |m: String| self.invalid(format!("voice module `{}`: {m}", r.module));
        if self.voices.iter().filter(|p| p.module == r.module).count() > 1 {
            return Err(bad("appears twice in `voices`".to_string()));
        }
        let max = crate::scene::MAX_VOICES;
        if r.voices.is_empty() || r.voices.len() > max {
            return Err(bad(format!(
                "has {} voices (a voice module has 1 … {max})",
                r.voices.len()
            )));
        }
        let mut voices = Vec::with_capacity(r.voices.len());
        for (v, x) in r.voices.iter().enumerate() {
            let n = &x.next;
            if !(n.pitch_hz.0.is_finite() && n.pitch_hz.0 >= 0.0) {
                return Err(bad(format!(
                    "voice {v}'s waiting note has pitch {} Hz (a pitch is a finite number of Hz, 0 or more)",
                    n.pitch_hz.0
                )));
            }
            if !(0.0..=1.0).contains(&n.velocity.0) {
                return Err(bad(format!(
                    "voice {v}'s waiting note has velocity {} (a velocity is 0 … 1)",
                    n.velocity.0
                )));
            }
            voices.push(Voice {
                phase: match x.phase {
                    PhaseRecord::Free => Phase::Free,
                    PhaseRecord::Held => Phase::Held,
                    PhaseRecord::Released => Phase::Released,
                    PhaseRecord::Stealing => Phase::Stealing,
                },
                key: x.key,
                tag: x.tag,
                started: x.started,
                released: x.released,
                sustained: x.sustained,
                quiet: x.quiet,
                restart_at: x.restart_at,
                clean_at: x.clean_at,
                clearing: x.clearing,
                next: Pending {
                    key: n.key,
                    tag: n.tag,
                    pitch_hz: n.pitch_hz.0,
                    velocity: n.velocity.0,
                    cancelled: n.cancelled,
                },
            });
        }
        let mut held = Vec::with_capacity(crate::engine::HELD_NOTES);
        for n in r.held.iter().rev().take(crate::engine::HELD_NOTES).rev() {
            if !(n.pitch_hz.0.is_finite() && n.pitch_hz.0 >= 0.0) {
                return Err(bad(format!(
                    "a held note has pitch {} Hz (a pitch is a finite number of Hz, 0 or more)",
                    n.pitch_hz.0
                )));
            }
            held.push(Pending {
                key: n.key,
                tag: n.tag,
                pitch_hz: n.pitch_hz.0,
                velocity: n.velocity.0,
                cancelled: n.cancelled,
            });
        }
        Ok(PoolState {
            module: r.module.clone(),
            voices,
            sustain: r.sustain,
            seq: r.seq,
            dropped: r.dropped,
            clear_until: r.clear_until,
            bend: r.bend.as_ref().map_or(0.0, |b| b.0),
            held,
        })
    }

    fn node_snapshot(&self, r: &NodeRecord) -> Result<NodeSnapshot, SnapshotError> {
        let bad = |m: String| self.invalid(format!("node `{}` (`{}`): {m}", r.id, r.op));
        let spec = ops::lookup(&r.op).ok_or_else(|| {
            bad(format!(
                "this morphrt has no operator `{}` (operators: {})",
                r.op,
                ops::registry()
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let names: Vec<&str> = r.params.iter().map(|p| p.name.as_str()).collect();
        let want: Vec<&str> = spec.params.iter().map(|p| p.name).collect();
        // A snapshot written before an operator gained a param resumes with
        // that param at its default, as the scene without it would play.
        let newer = &spec.params[names.len().min(spec.params.len())..];
        if !want.starts_with(&names) || newer.iter().any(|p| default_value(p).is_none()) {
            return Err(bad(format!(
                "params [{}] do not match this build's `{}` params [{}]",
                names.join(", "),
                spec.name,
                want.join(", ")
            )));
        }
        for (k, e) in r.state.iter().enumerate() {
            if r.state[..k].iter().any(|f| f.name == e.name) {
                return Err(bad(format!("state `{}` appears twice", e.name)));
            }
        }
        let mut params = Vec::with_capacity(r.params.len());
        let mut discrete = Vec::new();
        let mut scene_values = Vec::with_capacity(r.params.len());
        for (i, p) in r.params.iter().enumerate() {
            in_range(&spec.params[i], p.value.0).map_err(&bad)?;
            if let Some(m) = &p.ramp {
                in_range(&spec.params[i], m.from.0).map_err(&bad)?;
            }
            if let Some(m) = p
                .ramp
                .as_ref()
                .filter(|m| m.start.checked_add(m.len).is_none())
            {
                return Err(bad(format!(
                    "`{}`: a ramp from sample {} lasting {} samples ends past the last sample there is ({})",
                    p.name,
                    m.start,
                    m.len,
                    u64::MAX
                )));
            }
            params.push(ParamState {
                value: p.value.0,
                ramp: p.ramp.as_ref().map(|m| Ramp {
                    from: m.from.0,
                    start: m.start,
                    len: m.len,
                }),
            });
            scene_values.push(self.value(spec, i, &p.scene).map_err(&bad)?);
            if let Some(c) = &p.current {
                let v = self.value(spec, i, c).map_err(&bad)?;
                if !matches!(
                    v,
                    Value::Enum(_) | Value::Integer(_) | Value::Bool(_) | Value::Span(_)
                ) {
                    return Err(bad(format!(
                        "`{}`: only enum, integer, bool and step-length params have a `current` value",
                        p.name
                    )));
                }
                discrete.push((i, v));
            }
        }
        for p in newer {
            let Some(value) = default_value(p) else {
                continue;
            };
            params.push(ParamState { value, ramp: None });
            scene_values.push(Value::Number(value));
        }
        Ok(NodeSnapshot {
            id: r.id.clone(),
            op: spec.name,
            state: NodeState {
                entries: r
                    .state
                    .iter()
                    .map(|e| {
                        let v = match &e.value {
                            StateRecord::F32(x) => StateValue::F32(x.0.clone()),
                            StateRecord::F64(x) => StateValue::F64(x.0.clone()),
                            StateRecord::U64(x) => StateValue::U64(*x),
                            StateRecord::I64(x) => StateValue::I64(*x),
                            StateRecord::Bool(x) => StateValue::Bool(*x),
                        };
                        (Cow::Owned(e.name.clone()), v)
                    })
                    .collect(),
            },
            params,
            discrete,
            edges: r
                .edges
                .iter()
                .map(|d| (d.samples.0.clone(), d.pos))
                .collect(),
            scene_values,
            sig: r.sig,
            wiring: r.wiring,
            recovery: r
                .recovery
                .as_ref()
                .map_or_else(Recovery::default, |v| Recovery {
                    muted_until: v.muted_until,
                    wait: v.wait,
                    clear_at: v.clear_at,
                    dead: v.dead,
                    resetting: match (v.reset_node, v.reset_lines) {
                        (Some(n), _) => Some(ResetPart::Node(n)),
                        (None, Some(n)) => Some(ResetPart::Lines(n)),
                        (None, None) => None,
                    },
                }),
        })
    }

    fn value(&self, spec: &OpSpec, i: usize, v: &ValueRecord) -> Result<Value, String> {
        let p = &spec.params[i];
        Ok(match v {
            ValueRecord::Number(x) => Value::Number(x.0),
            ValueRecord::Integer(x) => Value::Integer(*x),
            ValueRecord::Bool(b) => Value::Bool(*b),
            ValueRecord::Gains(g) => Value::Gains(g.iter().map(|x| x.0).collect()),
            ValueRecord::Span(t) => {
                let bad = || format!("`{t}` is not a step length (seconds as num/den)");
                let (a, b) = t.split_once('/').ok_or_else(bad)?;
                let r = crate::scene::Rational::new(
                    a.parse().map_err(|_| bad())?,
                    b.parse().map_err(|_| bad())?,
                )
                .filter(|r| r.num > 0)
                .ok_or_else(bad)?;
                Value::Span(r)
            }
            ValueRecord::Enum(name) => match p.kind {
                ParamKind::Enum { choices, .. } => {
                    Value::Enum(choices.iter().position(|c| c == name).ok_or_else(|| {
                        format!(
                            "`{name}` is not a `{}` (valid: {})",
                            p.name,
                            choices.join(", ")
                        )
                    })?)
                }
                _ => return Err(format!("`{}` is not an enum param", p.name)),
            },
            ValueRecord::Resource(path) => {
                // An empty path: an optional resource the scene does not give.
                if !path.is_empty() && !self.resources.iter().any(|r| r.path == *path) {
                    return Err(format!(
                        "`{}` reads resource `{path}`, which the file's `resources` does not list",
                        p.name
                    ));
                }
                Value::Resource(Arc::new(AudioData {
                    path: PathBuf::from(path),
                    sample_rate: 0,
                    channels: Vec::new(),
                }))
            }
        })
    }
}

/// A number param's value (or a ramp's start) as a snapshot holds it:
/// finite and within the param's range, as every value the engine sets is.
fn in_range(p: &crate::ops::ParamSpec, v: f64) -> Result<(), String> {
    match p.kind {
        ParamKind::Number { min, max, .. } if !(v >= min && v <= max) => Err(format!(
            "`{}` is {v}, outside its range {min} … {max}",
            p.name
        )),
        _ => Ok(()),
    }
}

/// The value a param a snapshot predates resumes with: its default, for a
/// number param (the kind operators gain, such as an oscillator's `phase`).
fn default_value(p: &crate::ops::ParamSpec) -> Option<f64> {
    match p.kind {
        ParamKind::Number { default, .. } => Some(default),
        _ => None,
    }
}
