//! An engine's state as bytes and back, exactly: every sample and param
//! as its IEEE bit pattern, every counter as it is. The bytes of a
//! `Processor.snapshot()` are a header (what the processor was activated
//! with and where its host stream stood) and this encoding of the engine
//! state; they are read back by the same build.

use morphrt_core::engine::{
    EngineState, NodeSnapshot, Pending, Phase, PoolState, Recovery, ResetPart, TempoMap, Voice,
};
use morphrt_core::ops::{self, AudioData, NodeState, ParamState, Ramp, StateValue, Value};
use morphrt_core::profile::Profile;
use morphrt_core::scene::Rational;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

/// Little-endian writer.
#[derive(Default)]
pub struct Out(pub Vec<u8>);

impl Out {
    pub fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i128(&mut self, v: i128) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    pub fn bool(&mut self, v: bool) {
        self.u8(v as u8);
    }
    pub fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    pub fn f64s(&mut self, v: &[f64]) {
        self.u64(v.len() as u64);
        for x in v {
            self.f64(*x);
        }
    }
    pub fn f32s(&mut self, v: &[f32]) {
        self.u64(v.len() as u64);
        for x in v {
            self.0.extend_from_slice(&x.to_bits().to_le_bytes());
        }
    }
}

/// Little-endian reader; every error says what was being read.
pub struct In<'a> {
    bytes: &'a [u8],
    at: usize,
}

pub type Read<T> = Result<T, String>;

impl<'a> In<'a> {
    pub fn new(bytes: &'a [u8]) -> In<'a> {
        In { bytes, at: 0 }
    }
    fn take(&mut self, n: usize) -> Read<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| {
            format!(
                "the snapshot ends at byte {} where {n} more bytes were expected (cut short?)",
                self.bytes.len()
            )
        })?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub fn u8(&mut self) -> Read<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u64(&mut self) -> Read<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn i64(&mut self) -> Read<i64> {
        Ok(i64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn i128(&mut self) -> Read<i128> {
        Ok(i128::from_le_bytes(
            self.take(16)?.try_into().expect("16 bytes"),
        ))
    }
    pub fn f64(&mut self) -> Read<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub fn bool(&mut self) -> Read<bool> {
        Ok(self.u8()? != 0)
    }
    /// A count of items each at least `size` bytes: never more than the
    /// bytes left can hold (a damaged count does not allocate).
    pub fn len(&mut self, size: usize) -> Read<usize> {
        let n = self.u64()? as usize;
        if n.saturating_mul(size.max(1)) > self.bytes.len() - self.at {
            return Err(format!("a count of {n} at byte {} is damaged", self.at));
        }
        Ok(n)
    }
    pub fn str(&mut self) -> Read<String> {
        let n = self.len(1)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|e| e.to_string())
    }
    pub fn f64s(&mut self) -> Read<Vec<f64>> {
        let n = self.len(8)?;
        (0..n).map(|_| self.f64()).collect()
    }
    pub fn f32s(&mut self) -> Read<Vec<f32>> {
        let n = self.len(4)?;
        (0..n)
            .map(|_| {
                Ok(f32::from_bits(u32::from_le_bytes(
                    self.take(4)?.try_into().expect("4 bytes"),
                )))
            })
            .collect()
    }
    pub fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}

pub fn profile_code(p: Profile) -> u8 {
    match p {
        Profile::Strict => 0,
        Profile::Repro => 1,
        Profile::Live => 2,
    }
}

pub fn profile_of(code: u8) -> Read<Profile> {
    match code {
        0 => Ok(Profile::Strict),
        1 => Ok(Profile::Repro),
        2 => Ok(Profile::Live),
        c => Err(format!(
            "profile code {c} is not strict (0), repro (1) or live (2)"
        )),
    }
}

fn rational(o: &mut Out, r: Rational) {
    o.i128(r.num);
    o.i128(r.den);
}

fn read_rational(i: &mut In<'_>) -> Read<Rational> {
    let (num, den) = (i.i128()?, i.i128()?);
    Rational::new(num, den).ok_or_else(|| format!("{num}/{den} is not a rational"))
}

fn delay(o: &mut Out, (data, pos): &(Vec<f64>, usize)) {
    o.f64s(data);
    o.u64(*pos as u64);
}

fn read_delay(i: &mut In<'_>) -> Read<(Vec<f64>, usize)> {
    Ok((i.f64s()?, i.u64()? as usize))
}

fn value(o: &mut Out, v: &Value) {
    match v {
        Value::Number(x) => {
            o.u8(0);
            o.f64(*x);
        }
        Value::Integer(x) => {
            o.u8(1);
            o.i64(*x);
        }
        Value::Enum(k) => {
            o.u8(2);
            o.u64(*k as u64);
        }
        Value::Bool(b) => {
            o.u8(3);
            o.bool(*b);
        }
        // The resource itself is the scene's: only its name travels, and
        // the resumed engine keeps its own (as the command line's
        // snapshot files do).
        Value::Resource(a) => {
            o.u8(4);
            o.str(&a.path.to_string_lossy());
        }
        Value::Gains(g) => {
            o.u8(5);
            o.f64s(g);
        }
        Value::Span(r) => {
            o.u8(6);
            rational(o, *r);
        }
    }
}

fn read_value(i: &mut In<'_>) -> Read<Value> {
    Ok(match i.u8()? {
        0 => Value::Number(i.f64()?),
        1 => Value::Integer(i.i64()?),
        2 => Value::Enum(i.u64()? as usize),
        3 => Value::Bool(i.bool()?),
        4 => Value::Resource(Arc::new(AudioData {
            path: PathBuf::from(i.str()?),
            sample_rate: 0,
            channels: Vec::new(),
        })),
        5 => Value::Gains(i.f64s()?),
        6 => Value::Span(read_rational(i)?),
        t => return Err(format!("value tag {t} is unknown")),
    })
}

fn state_value(o: &mut Out, v: &StateValue) {
    match v {
        StateValue::F32(x) => {
            o.u8(0);
            o.f32s(x);
        }
        StateValue::F64(x) => {
            o.u8(1);
            o.f64s(x);
        }
        StateValue::U64(x) => {
            o.u8(2);
            o.u64(*x);
        }
        StateValue::I64(x) => {
            o.u8(3);
            o.i64(*x);
        }
        StateValue::Bool(x) => {
            o.u8(4);
            o.bool(*x);
        }
    }
}

fn read_state_value(i: &mut In<'_>) -> Read<StateValue> {
    Ok(match i.u8()? {
        0 => StateValue::F32(i.f32s()?),
        1 => StateValue::F64(i.f64s()?),
        2 => StateValue::U64(i.u64()?),
        3 => StateValue::I64(i.i64()?),
        4 => StateValue::Bool(i.bool()?),
        t => return Err(format!("state tag {t} is unknown")),
    })
}

fn node(o: &mut Out, n: &NodeSnapshot) {
    o.str(&n.id);
    o.str(n.op);
    o.u64(n.state.entries.len() as u64);
    for (name, v) in &n.state.entries {
        o.str(name);
        state_value(o, v);
    }
    o.u64(n.params.len() as u64);
    for p in &n.params {
        o.f64(p.value);
        match p.ramp {
            Some(r) => {
                o.u8(1);
                o.f64(r.from);
                o.u64(r.start);
                o.u64(r.len);
            }
            None => o.u8(0),
        }
    }
    o.u64(n.discrete.len() as u64);
    for (k, v) in &n.discrete {
        o.u64(*k as u64);
        value(o, v);
    }
    o.u64(n.edges.len() as u64);
    for e in &n.edges {
        delay(o, e);
    }
    o.u64(n.scene_values.len() as u64);
    for v in &n.scene_values {
        value(o, v);
    }
    o.u64(n.sig);
    o.u64(n.wiring);
    let r = &n.recovery;
    o.u64(r.muted_until);
    o.u64(r.wait);
    o.u64(r.clear_at);
    o.bool(r.dead);
    match r.resetting {
        None => o.u8(0),
        Some(ResetPart::Node(k)) => {
            o.u8(1);
            o.u64(k);
        }
        Some(ResetPart::Lines(k)) => {
            o.u8(2);
            o.u64(k);
        }
    }
}

fn read_node(i: &mut In<'_>) -> Read<NodeSnapshot> {
    let id = i.str()?;
    let op_name = i.str()?;
    let op = ops::lookup(&op_name)
        .ok_or_else(|| format!("node `{id}`: this build has no operator `{op_name}`"))?
        .name;
    let n = i.len(10)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let name = i.str()?;
        entries.push((Cow::Owned(name), read_state_value(i)?));
    }
    let n = i.len(9)?;
    let mut params = Vec::with_capacity(n);
    for _ in 0..n {
        let value = i.f64()?;
        let ramp = match i.u8()? {
            0 => None,
            _ => Some(Ramp {
                from: i.f64()?,
                start: i.u64()?,
                len: i.u64()?,
            }),
        };
        params.push(ParamState { value, ramp });
    }
    let n = i.len(9)?;
    let mut discrete = Vec::with_capacity(n);
    for _ in 0..n {
        discrete.push((i.u64()? as usize, read_value(i)?));
    }
    let n = i.len(16)?;
    let edges = (0..n).map(|_| read_delay(i)).collect::<Read<_>>()?;
    let n = i.len(2)?;
    let scene_values = (0..n).map(|_| read_value(i)).collect::<Read<_>>()?;
    let (sig, wiring) = (i.u64()?, i.u64()?);
    let recovery = Recovery {
        muted_until: i.u64()?,
        wait: i.u64()?,
        clear_at: i.u64()?,
        dead: i.bool()?,
        resetting: match i.u8()? {
            0 => None,
            1 => Some(ResetPart::Node(i.u64()?)),
            _ => Some(ResetPart::Lines(i.u64()?)),
        },
    };
    Ok(NodeSnapshot {
        id,
        op,
        state: NodeState { entries },
        params,
        discrete,
        edges,
        scene_values,
        sig,
        wiring,
        recovery,
    })
}

fn phase_code(p: Phase) -> u8 {
    match p {
        Phase::Free => 0,
        Phase::Held => 1,
        Phase::Released => 2,
        Phase::Stealing => 3,
    }
}

fn pool(o: &mut Out, p: &PoolState) {
    o.str(&p.module);
    o.u64(p.voices.len() as u64);
    for v in &p.voices {
        o.u8(phase_code(v.phase));
        for x in [
            v.key,
            v.tag,
            v.started,
            v.released,
            v.quiet,
            v.restart_at,
            v.clean_at,
        ] {
            o.u64(x);
        }
        o.bool(v.sustained);
        o.bool(v.clearing);
        o.u64(v.next.key);
        o.u64(v.next.tag);
        o.f64(v.next.pitch_hz);
        o.f64(v.next.velocity);
        o.bool(v.next.cancelled);
    }
    o.bool(p.sustain);
    o.u64(p.seq);
    o.u64(p.dropped);
    o.u64(p.clear_until);
    o.f64(p.bend);
}

fn read_pool(i: &mut In<'_>) -> Read<PoolState> {
    let module = i.str()?;
    let n = i.len(90)?;
    let mut voices = Vec::with_capacity(n);
    for _ in 0..n {
        let phase = match i.u8()? {
            0 => Phase::Free,
            1 => Phase::Held,
            2 => Phase::Released,
            _ => Phase::Stealing,
        };
        let mut w = [0u64; 7];
        for x in &mut w {
            *x = i.u64()?;
        }
        let [key, tag, started, released, quiet, restart_at, clean_at] = w;
        let sustained = i.bool()?;
        let clearing = i.bool()?;
        let next = Pending {
            key: i.u64()?,
            tag: i.u64()?,
            pitch_hz: i.f64()?,
            velocity: i.f64()?,
            cancelled: i.bool()?,
        };
        voices.push(Voice {
            phase,
            key,
            tag,
            started,
            released,
            sustained,
            quiet,
            restart_at,
            next,
            clean_at,
            clearing,
        });
    }
    Ok(PoolState {
        module,
        voices,
        sustain: i.bool()?,
        seq: i.u64()?,
        dropped: i.u64()?,
        clear_until: i.u64()?,
        bend: i.f64()?,
    })
}

/// Appends `st` to `o`.
pub fn write_state(o: &mut Out, st: &EngineState) {
    o.u64(st.clock);
    o.u64(st.next_event as u64);
    o.u64(st.nodes.len() as u64);
    for n in &st.nodes {
        node(o, n);
    }
    o.u64(st.main.len() as u64);
    for d in &st.main {
        delay(o, d);
    }
    o.u8(profile_code(st.profile));
    o.u64(st.main_sig);
    o.u64(st.main_wiring);
    o.u64(st.voices.len() as u64);
    for p in &st.voices {
        pool(o, p);
    }
    match &st.tempo_map {
        None => o.u8(0),
        Some(m) => {
            o.u8(1);
            o.u64(m.sample);
            rational(o, m.beat);
            rational(o, m.spb);
        }
    }
}

/// Reads what [`write_state`] wrote.
pub fn read_state(i: &mut In<'_>) -> Read<EngineState> {
    let clock = i.u64()?;
    let next_event = i.u64()? as usize;
    let n = i.len(40)?;
    let nodes = (0..n).map(|_| read_node(i)).collect::<Read<_>>()?;
    let n = i.len(16)?;
    let main = (0..n).map(|_| read_delay(i)).collect::<Read<_>>()?;
    let profile = profile_of(i.u8()?)?;
    let (main_sig, main_wiring) = (i.u64()?, i.u64()?);
    let n = i.len(40)?;
    let voices = (0..n).map(|_| read_pool(i)).collect::<Read<_>>()?;
    let tempo_map = match i.u8()? {
        0 => None,
        _ => Some(TempoMap {
            sample: i.u64()?,
            beat: read_rational(i)?,
            spb: read_rational(i)?,
        }),
    };
    Ok(EngineState {
        clock,
        next_event,
        nodes,
        main,
        profile,
        main_sig,
        main_wiring,
        // Not the engine it came from: a restore maps nodes by id.
        engine: 0,
        voices,
        tempo_map,
    })
}
