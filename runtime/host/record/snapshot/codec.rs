//! Engine state ↔ the snapshot's JSON: sample arrays as hex strings of
//! IEEE bit patterns and numbers that keep every bit ([`HexF64`],
//! [`HexF32`], [`Num`]), profiles and precisions by name, and the
//! conversions between [`EngineState`] and the file's records, both ways.

use super::format::{
    DelayRecord, NodeRecord, ParamRecord, RampRecord, SnapshotFile, StateEntry, StateRecord,
    ValueRecord,
};
use super::{display, SnapshotError};
use crate::dsp::Precision;
use crate::engine::{EngineState, NodeSnapshot};
use crate::ops::{
    self, AudioData, NodeState, OpSpec, ParamKind, ParamState, Ramp, StateValue, Value,
};
use crate::profile::Profile;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

/// An f64 that is a JSON number when finite (exact with `float_roundtrip`)
/// and a `0x…` bit-pattern string otherwise, so no value is ever lost.
#[derive(Clone, Copy, Debug)]
pub struct Num(pub f64);

impl PartialEq for Num {
    fn eq(&self, other: &Num) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_str(&format!("0x{:016x}", self.0.to_bits()))
        }
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number, or an f64 bit pattern as \"0x\" and 16 hex digits")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Num, E> {
                let bits = v
                    .strip_prefix("0x")
                    .filter(|h| h.len() == 16)
                    .and_then(|h| u64::from_str_radix(h, 16).ok())
                    .ok_or_else(|| E::custom(format!("`{v}` is not an f64 bit pattern")))?;
                Ok(Num(f64::from_bits(bits)))
            }
        }
        d.deserialize_any(V)
    }
}

/// f64 samples as one string of 16-hex-digit bit patterns.
#[derive(Clone, Debug, Default)]
pub struct HexF64(pub Vec<f64>);

/// f32 samples as one string of 8-hex-digit bit patterns.
#[derive(Clone, Debug, Default)]
pub struct HexF32(pub Vec<f32>);

impl PartialEq for HexF64 {
    fn eq(&self, other: &HexF64) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

impl PartialEq for HexF32 {
    fn eq(&self, other: &HexF32) -> bool {
        self.0.len() == other.0.len()
            && self
                .0
                .iter()
                .zip(&other.0)
                .all(|(a, b)| a.to_bits() == b.to_bits())
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

fn encode_hex(values: impl ExactSizeIterator<Item = u64>, digits: usize) -> String {
    let mut out = Vec::with_capacity(values.len() * digits);
    for v in values {
        for k in (0..digits).rev() {
            out.push(HEX_DIGITS[((v >> (4 * k)) & 15) as usize]);
        }
    }
    String::from_utf8(out).expect("hex digits are ASCII")
}

fn decode_hex(text: &str, digits: usize) -> Result<Vec<u64>, String> {
    let bytes = text.as_bytes();
    if bytes.len() % digits != 0 {
        return Err(format!(
            "a sample array of {} hex digits is not a whole number of {digits}-digit values",
            bytes.len()
        ));
    }
    let mut out = Vec::with_capacity(bytes.len() / digits);
    for (i, chunk) in bytes.chunks_exact(digits).enumerate() {
        let mut v = 0u64;
        for (j, &c) in chunk.iter().enumerate() {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                b'A'..=b'F' => c - b'A' + 10,
                _ => {
                    return Err(format!(
                        "byte 0x{c:02x} at offset {} of a sample array is not a hex digit",
                        i * digits + j
                    ))
                }
            };
            v = v << 4 | d as u64;
        }
        out.push(v);
    }
    Ok(out)
}

impl Serialize for HexF64 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_hex(self.0.iter().map(|x| x.to_bits()), 16))
    }
}

impl Serialize for HexF32 {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode_hex(self.0.iter().map(|x| x.to_bits() as u64), 8))
    }
}

impl<'de> Deserialize<'de> for HexF64 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HexF64, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bits = decode_hex(&s, 16).map_err(serde::de::Error::custom)?;
        Ok(HexF64(bits.into_iter().map(f64::from_bits).collect()))
    }
}

impl<'de> Deserialize<'de> for HexF32 {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<HexF32, D::Error> {
        let s = Cow::<str>::deserialize(d)?;
        let bits = decode_hex(&s, 8).map_err(serde::de::Error::custom)?;
        Ok(HexF32(
            bits.into_iter().map(|b| f32::from_bits(b as u32)).collect(),
        ))
    }
}

pub(super) mod profile_name {
    use crate::profile::Profile;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Profile, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Profile, D::Error> {
        let s = String::deserialize(d)?;
        Profile::parse(&s).ok_or_else(|| {
            D::Error::custom(format!(
                "`{s}` is not a profile (valid: strict, repro, live)"
            ))
        })
    }
}

pub(super) mod precision_name {
    use crate::dsp::Precision;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Precision, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Precision, D::Error> {
        let s = String::deserialize(d)?;
        Precision::parse(&s)
            .ok_or_else(|| D::Error::custom(format!("`{s}` is not a precision (valid: f32, f64)")))
    }
}

pub(super) fn delay_record((data, pos): &(Vec<f64>, usize)) -> DelayRecord {
    DelayRecord {
        pos: *pos,
        samples: HexF64(data.clone()),
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
    })
}

impl SnapshotFile {
    /// The engine state the file holds, ready for [`Engine::migrate`].
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
        if names != want {
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
                if !matches!(v, Value::Enum(_) | Value::Integer(_) | Value::Bool(_)) {
                    return Err(bad(format!(
                        "`{}`: only enum, integer and bool params have a `current` value",
                        p.name
                    )));
                }
                discrete.push((i, v));
            }
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
        })
    }

    fn value(&self, spec: &OpSpec, i: usize, v: &ValueRecord) -> Result<Value, String> {
        let p = &spec.params[i];
        Ok(match v {
            ValueRecord::Number(x) => Value::Number(x.0),
            ValueRecord::Integer(x) => Value::Integer(*x),
            ValueRecord::Bool(b) => Value::Bool(*b),
            ValueRecord::Gains(g) => Value::Gains(g.iter().map(|x| x.0).collect()),
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
                if !self.resources.iter().any(|r| r.path == *path) {
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

#[cfg(test)]
mod tests {
    use super::super::fixture::build;
    use super::super::SnapshotContext;
    use super::*;
    use crate::engine::Engine;

    #[test]
    fn sample_arrays_keep_every_bit() {
        let f64s = vec![
            0.0,
            -0.0,
            1.0,
            f64::MIN_POSITIVE / 3.0,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::from_bits(0x7ff8_0000_dead_beef),
            0.1 + 0.2,
        ];
        let json = serde_json::to_string(&HexF64(f64s.clone())).unwrap();
        assert!(json.starts_with("\"0000000000000000"));
        let back: HexF64 = serde_json::from_str(&json).unwrap();
        assert_eq!(back, HexF64(f64s.clone()));
        let f32s: Vec<f32> = vec![0.1, -0.0, 1e-40, f32::NAN, 16_777_217.0];
        let back: HexF32 =
            serde_json::from_str(&serde_json::to_string(&HexF32(f32s.clone())).unwrap()).unwrap();
        assert_eq!(back, HexF32(f32s));
        assert!(serde_json::from_str::<HexF64>("\"3ff00000000000\"").is_err());
        assert!(serde_json::from_str::<HexF32>("\"3f80000g\"").is_err());
        for x in f64s {
            let back: Num = serde_json::from_str(&serde_json::to_string(&Num(x)).unwrap()).unwrap();
            assert_eq!(back, Num(x), "{x:e}");
        }
    }

    #[test]
    fn state_round_trips_through_the_file_exactly() {
        let (plan, text) = build(Profile::Repro);
        let cx = SnapshotContext::new(&plan, &text).unwrap();
        let mut e = Engine::new(plan);
        crate::engine::render_to_vec(&mut e, 1500);
        let st = e.snapshot();
        // What the scene exercises is really in the state.
        let osc = &st.nodes.iter().find(|n| n.id == "osc").unwrap().params[0];
        assert!(osc.ramp.is_some(), "the freq ramp is in progress");
        let lp = st.nodes.iter().find(|n| n.id == "lp").unwrap();
        assert_eq!(
            lp.discrete[0],
            (0, Value::Enum(1)),
            "the event set highpass"
        );
        let file = cx.file(&st).unwrap();
        assert_eq!(file.resources.len(), 1);
        let bytes = file.to_bytes();
        let back = SnapshotFile::from_bytes(&bytes, "t.snap").unwrap();
        assert_eq!(back.to_bytes(), bytes, "read and written again: same bytes");
        let mut got = back.state().unwrap();
        // Cursors are recomputed on restore; resources come back as placeholders.
        got.next_event = st.next_event;
        for (g, s) in got.nodes.iter_mut().zip(&st.nodes) {
            for (gv, sv) in g.scene_values.iter_mut().zip(&s.scene_values) {
                if let (Value::Resource(a), Value::Resource(b)) = (&*gv, sv) {
                    assert_eq!(a.path, b.path);
                    *gv = sv.clone();
                }
            }
        }
        assert_eq!(got, st);
    }
}
