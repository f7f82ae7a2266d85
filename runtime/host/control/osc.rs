//! OSC, decoded: a UDP packet (a message or a bundle) becomes the
//! [`Decoded`] messages a session acts on, resolved against the scene's
//! `controls` and the engine playing ([`Mapping`]). Pure: the socket and
//! its thread live with `run` (`host/live/osc_in.rs`).
//!
//! Addresses (README.md, *Driving a session over OSC*):
//! - an address a scene's `controls` entry names: the first argument (a
//!   float, int or double) is a position 0…1 of the control's range, or
//!   with `"raw": true` a value in the param's unit;
//! - an address a control with `module` names: NOTE VELOCITY, NOTE a MIDI
//!   note number (a whole number 0…127), VELOCITY a number 0…1 (0: the
//!   note's note-off), a note for the voice module;
//! - `/morphrt/param NODE PARAM VALUE [RAMP]`: VALUE a number in the
//!   param's canonical unit or a string with a unit (`"900Hz"`), an enum
//!   by name or index, a bool as `T`/`F`, 0/1 or `"true"`/`"false"`; RAMP
//!   a number of seconds or a time string (`"20ms"`);
//! - `/morphrt/profile strict|repro|live`, `/morphrt/snapshot`,
//!   `/morphrt/stop`;
//! - `/morphrt/panic`: all notes off on every voice module (each voice
//!   released, held by the pedal too); `/morphrt/panic sound`: all sound
//!   off (every voice silent at once, without its release).
//!
//! A bundle whose timetag is "immediately" (1) or past lands at the next
//! block; one ahead lands at the sample its time maps to. What cannot be
//! decoded or resolved is an `Err` command with the reason, never a panic.

use super::{param_spec, Change, Command, Mapping, Note, When};
use crate::graph::{ControlValue, NoteAction};
use crate::ops::{ParamKind, ParamSpec, Value};
use crate::profile::Profile;
use crate::scene::RawValue;
use rosc::{OscBundle, OscMessage, OscPacket, OscTime, OscType};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The address every reply is sent on: `/morphrt/reply ok "…"` or
/// `/morphrt/reply error "…"`.
pub const REPLY_ADDRESS: &str = "/morphrt/reply";

/// How deep bundles may nest inside a packet; deeper is refused unread.
pub const MAX_BUNDLE_DEPTH: usize = 8;

/// One OSC message of a packet, decoded.
#[derive(Debug)]
pub struct Decoded {
    /// What it asks, or why it cannot be done.
    pub command: Result<Command, String>,
    pub when: When,
    /// The message in words: `osc 127.0.0.1:50000 /filter/cutoff 0.5`.
    pub from: String,
}

/// Decodes the UDP packet `bytes` that `sender` (an address in words)
/// sent: one [`Decoded`] per message it holds, or one error for a packet
/// that is not OSC.
pub fn decode(bytes: &[u8], sender: &str, mapping: &Mapping) -> Vec<Decoded> {
    let refuse = |why: String| {
        vec![Decoded {
            command: Err(why),
            when: When::Now,
            from: format!("osc {sender} ({} bytes)", bytes.len()),
        }]
    };
    if bundle_depth(bytes) > MAX_BUNDLE_DEPTH {
        return refuse(format!(
            "malformed OSC packet: bundles nested deeper than {MAX_BUNDLE_DEPTH}"
        ));
    }
    match rosc::decoder::decode_udp(bytes) {
        Ok((_, packet)) => {
            let mut out = Vec::new();
            walk(&packet, When::Now, sender, mapping, &mut out);
            if out.is_empty() {
                return refuse("an empty bundle: it holds no message".to_string());
            }
            out
        }
        Err(e) => refuse(format!("malformed OSC packet: {e}")),
    }
}

/// Every message of `packet`, landing `when` unless a bundle says when.
fn walk(packet: &OscPacket, when: When, sender: &str, mapping: &Mapping, out: &mut Vec<Decoded>) {
    match packet {
        OscPacket::Message(m) => out.push(Decoded {
            command: command(m, mapping),
            when,
            from: format!("osc {sender} {}", message_text(m)),
        }),
        OscPacket::Bundle(OscBundle { timetag, content }) => {
            let when = timetag_when(*timetag);
            for p in content {
                walk(p, when, sender, mapping, out);
            }
        }
    }
}

/// Seconds from the OSC epoch (1900-01-01) to the Unix epoch.
const OSC_TO_UNIX: u64 = 2_208_988_800;

/// When a bundle's timetag asks its messages to land: `Now` for
/// "immediately" (0 s and fraction 1) and for a time before 1970 (past in
/// any case), else [`When::At`] that time (the control thread lands a past
/// one at the next block).
pub fn timetag_when(tag: OscTime) -> When {
    if (tag.seconds, tag.fractional) == (0, 1) || (tag.seconds as u64) < OSC_TO_UNIX {
        return When::Now;
    }
    let secs = tag.seconds as u64 - OSC_TO_UNIX;
    let nanos = (tag.fractional as u64 * 1_000_000_000) >> 32;
    When::At(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_nanos(nanos))
}

/// The timetag of `t` (for senders, and tests): whole seconds since 1900
/// and a 32-bit fraction. A time before 1970 is "immediately".
pub fn timetag(t: SystemTime) -> OscTime {
    let Ok(d) = t.duration_since(UNIX_EPOCH) else {
        return OscTime::from((0, 1));
    };
    let fraction = ((d.subsec_nanos() as u64) << 32) / 1_000_000_000;
    OscTime::from(((d.as_secs() + OSC_TO_UNIX) as u32, fraction as u32))
}

/// How deep bundles nest in `bytes` (0: a message), read without decoding
/// (an explicit stack: no recursion on any input). Elements that do not
/// parse end the scan; the decoder reports them.
fn bundle_depth(bytes: &[u8]) -> usize {
    const TAG: &[u8] = b"#bundle\0";
    let mut deepest = 0;
    // (bundle contents, depth)
    let mut stack = vec![(bytes, 0usize)];
    while let Some((b, depth)) = stack.pop() {
        if !b.starts_with(TAG) || b.len() < 16 {
            continue;
        }
        let depth = depth + 1;
        deepest = deepest.max(depth);
        if deepest > MAX_BUNDLE_DEPTH {
            break;
        }
        let mut rest = &b[16..];
        while rest.len() >= 4 {
            let size = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let Some(element) = rest.get(4..4 + size) else {
                break;
            };
            stack.push((element, depth));
            rest = &rest[4 + size..];
        }
    }
    deepest
}

/// What message `m` asks: a namespace command or a mapped address.
fn command(m: &OscMessage, mapping: &Mapping) -> Result<Command, String> {
    match m.addr.as_str() {
        "/morphrt/param" => param_command(&m.args, mapping),
        "/morphrt/profile" => match m.args.first() {
            Some(OscType::String(s)) => Profile::parse(s).map(Command::Profile).ok_or_else(|| {
                format!("/morphrt/profile: unknown profile `{s}`; valid: strict, repro, live")
            }),
            other => Err(format!(
                "/morphrt/profile takes a string (strict, repro or live), not {}",
                arg_kind(other)
            )),
        },
        "/morphrt/snapshot" => Ok(Command::Snapshot),
        "/morphrt/stop" => Ok(Command::Stop),
        "/morphrt/panic" => panic_command(&m.args, mapping),
        addr => mapped_command(addr, &m.args, mapping),
    }
}

/// `/morphrt/panic [sound]`: all notes off (all sound off) on every
/// voice module.
fn panic_command(args: &[OscType], mapping: &Mapping) -> Result<Command, String> {
    let action = match args.first() {
        None => NoteAction::AllNotesOff,
        Some(OscType::String(s)) if s == "sound" => NoteAction::AllSoundOff,
        Some(OscType::String(s)) if s == "notes" => NoteAction::AllNotesOff,
        other => {
            return Err(format!(
                "/morphrt/panic takes nothing (all notes off), `notes` or `sound` (all sound off), not {}",
                arg_kind(other)
            ))
        }
    };
    let modules = mapping.table.modules();
    if modules.is_empty() {
        return Err("/morphrt/panic: the scene has no voice module".to_string());
    }
    let notes = modules
        .iter()
        .map(|m| Note {
            module: m.clone(),
            action,
        })
        .collect();
    Ok(Command::Notes {
        notes,
        changes: Vec::new(),
    })
}

/// A mapped address: every `controls` entry on it moves its param.
fn mapped_command(addr: &str, args: &[OscType], mapping: &Mapping) -> Result<Command, String> {
    let maps: Vec<_> = mapping
        .controls
        .iter()
        .filter(|c| c.osc_address() == Some(addr))
        .collect();
    if maps.is_empty() {
        return Err(unknown_address(addr, mapping));
    }
    let Some(x) = args.first().and_then(number) else {
        let what = if maps.iter().any(|c| c.module.is_some()) {
            "a note number 0…127 and a velocity 0…1"
        } else {
            "a number (float, int or double) first"
        };
        return Err(format!(
            "{addr} takes {what}, not {}",
            arg_kind(args.first())
        ));
    };
    let mut changes = Vec::with_capacity(maps.len());
    let mut notes = Vec::new();
    for c in maps {
        if let Some(m) = &c.module {
            notes.push(osc_note(addr, m, x, args.get(1))?);
            continue;
        }
        let Some(t) = &c.target else {
            continue;
        };
        let value = c.osc_value(x).map_err(|e| format!("{addr}: {e}"))?;
        changes.push(Change {
            node: t.node.clone(),
            param: t.param.to_string(),
            value,
            ramp: c.ramp,
        });
    }
    if notes.is_empty() {
        Ok(Command::Changes(changes))
    } else {
        Ok(Command::Notes { notes, changes })
    }
}

/// NOTE VELOCITY for voice module `module`: NOTE a MIDI note number, a
/// whole number 0…127; VELOCITY a number 0…1, 0 being a note-off.
fn osc_note(
    addr: &str,
    module: &str,
    note: f64,
    velocity: Option<&OscType>,
) -> Result<Note, String> {
    if !(note.fract() == 0.0 && (0.0..=127.0).contains(&note)) {
        return Err(format!(
            "{addr}: note {note} is not a MIDI note number (a whole number 0…127)"
        ));
    }
    let Some(v) = velocity.and_then(number) else {
        return Err(format!(
            "{addr} takes a note number and a velocity 0…1 (0: note-off), not {} as the velocity",
            arg_kind(velocity)
        ));
    };
    if !(0.0..=1.0).contains(&v) {
        return Err(format!(
            "{addr}: velocity {v} is outside 0…1 (0 is a note-off)"
        ));
    }
    Ok(if v == 0.0 {
        Note::off(module, note)
    } else {
        Note::on(module, note, v)
    })
}

/// `unknown OSC address /x; the scene maps /a, /b; the namespace: …`.
fn unknown_address(addr: &str, mapping: &Mapping) -> String {
    let mut mapped: Vec<&str> = mapping
        .controls
        .iter()
        .filter_map(|c| c.osc_address())
        .collect();
    mapped.dedup();
    let names = mapped.iter().copied().chain([
        "/morphrt/param",
        "/morphrt/profile",
        "/morphrt/snapshot",
        "/morphrt/stop",
        "/morphrt/panic",
    ]);
    let help = crate::scene::suggest::closest(addr, names)
        .map_or(String::new(), |s| format!(" (did you mean {s}?)"));
    let listed = if mapped.is_empty() {
        "the scene maps no OSC address".to_string()
    } else {
        format!("the scene maps {}", mapped.join(", "))
    };
    format!(
        "unknown OSC address {addr}{help}; {listed}; always there: /morphrt/param NODE PARAM VALUE [RAMP], /morphrt/profile P, /morphrt/snapshot, /morphrt/stop, /morphrt/panic [sound]"
    )
}

/// `/morphrt/param NODE PARAM VALUE [RAMP]`.
fn param_command(args: &[OscType], mapping: &Mapping) -> Result<Command, String> {
    const USAGE: &str = "/morphrt/param takes NODE PARAM VALUE [RAMP] (two strings, a number or a string with a unit, and seconds or a time string)";
    let (Some(OscType::String(node)), Some(OscType::String(param)), Some(value)) =
        (args.first(), args.get(1), args.get(2))
    else {
        return Err(USAGE.to_string());
    };
    if args.len() > 4 {
        return Err(format!("{USAGE}; it got {} arguments", args.len()));
    }
    let sr = mapping.sample_rate;
    let (_, _, spec) = param_spec(&mapping.table, node, param)?;
    let value =
        param_value(spec, value, sr).map_err(|e| format!("/morphrt/param {node} {param}: {e}"))?;
    let ramp = match args.get(3) {
        None => 0,
        Some(r) => ramp_samples(r, sr).map_err(|e| format!("/morphrt/param ramp: {e}"))?,
    };
    Ok(Command::Changes(vec![Change {
        node: node.clone(),
        param: param.clone(),
        value,
        ramp,
    }]))
}

/// An argument's value for the param `spec` declares.
fn param_value(spec: &ParamSpec, arg: &OscType, sr: u32) -> Result<ControlValue, String> {
    let raw = match (arg, spec.kind) {
        (OscType::Bool(b), _) => RawValue::Bool(*b),
        (OscType::String(s), ParamKind::Bool { .. }) if s == "true" || s == "false" => {
            RawValue::Bool(s == "true")
        }
        (OscType::String(s), _) => RawValue::Text(s.clone()),
        (a, ParamKind::Bool { .. }) => match number(a) {
            Some(0.0) => RawValue::Bool(false),
            Some(1.0) => RawValue::Bool(true),
            _ => return Err(format!("`{}` takes true or false (T/F, 0/1)", spec.name)),
        },
        (a, ParamKind::Enum { choices, .. }) => {
            let Some(x) = number(a) else {
                return Err(format!(
                    "`{}` takes a choice's name or index, not {}",
                    spec.name,
                    arg_kind(Some(a))
                ));
            };
            return if x.fract() == 0.0 && x >= 0.0 && (x as usize) < choices.len() {
                Ok(ControlValue::Enum(x as usize))
            } else {
                Err(format!(
                    "{x} is no index of `{}` (0 … {}: {})",
                    spec.name,
                    choices.len().saturating_sub(1),
                    choices.join(", ")
                ))
            };
        }
        (a, _) => match number(a) {
            Some(x) => RawValue::Number {
                value: x,
                literal: x.to_string(),
            },
            None => return Err(format!("a value cannot be {}", arg_kind(Some(a)))),
        },
    };
    match crate::ops::resolve_param(spec, &raw, sr, None) {
        Ok(Value::Number(x)) => Ok(ControlValue::Number(x)),
        Ok(Value::Integer(i)) => Ok(ControlValue::Integer(i)),
        Ok(Value::Enum(i)) => Ok(ControlValue::Enum(i)),
        Ok(Value::Bool(b)) => Ok(ControlValue::Bool(b)),
        Ok(_) => Err(format!("`{}` cannot be set by a control", spec.name)),
        Err(crate::ops::ParamError::WrongUnit(e)) => Err(e.to_string()),
        Err(crate::ops::ParamError::Invalid { message, help }) => Err(match help {
            Some(h) => format!("{message} ({h})"),
            None => message,
        }),
    }
}

/// A ramp argument in samples: a number of seconds or a time string.
fn ramp_samples(arg: &OscType, sr: u32) -> Result<u64, String> {
    let samples = match arg {
        OscType::String(s) => crate::scene::TimeSpec::parse(s)
            .map_err(|e| e.to_string())?
            .to_samples(sr)
            .map(|r| r.round_half_even())
            .ok_or_else(|| format!("`{s}` is out of range"))?,
        a => match number(a) {
            Some(x) if x.is_finite() && (0.0..=86_400.0).contains(&x) => {
                (x * sr as f64).round() as i128
            }
            Some(x) => return Err(format!("{x} s is not a ramp (0 … 86400 s)")),
            None => return Err(format!("a ramp cannot be {}", arg_kind(Some(a)))),
        },
    };
    u64::try_from(samples).map_err(|_| "a ramp cannot be negative".to_string())
}

/// A numeric argument as f64.
fn number(a: &OscType) -> Option<f64> {
    match a {
        OscType::Float(x) => Some(*x as f64),
        OscType::Double(x) => Some(*x),
        OscType::Int(i) => Some(*i as f64),
        OscType::Long(i) => Some(*i as f64),
        _ => None,
    }
}

/// An argument's type in words, for errors.
fn arg_kind(a: Option<&OscType>) -> String {
    match a {
        None => "nothing".to_string(),
        Some(OscType::String(s)) => format!("the string \"{s}\""),
        Some(OscType::Bool(b)) => format!("the bool {b}"),
        Some(OscType::Blob(b)) => format!("a blob of {} bytes", b.len()),
        Some(OscType::Nil) => "nil".to_string(),
        Some(OscType::Inf) => "infinitum".to_string(),
        Some(other) => format!("{other:?}"),
    }
}

/// `/filter/cutoff 0.5 "x"`: a message in words (at most 8 arguments).
fn message_text(m: &OscMessage) -> String {
    let mut s = m.addr.clone();
    for a in m.args.iter().take(8) {
        s.push(' ');
        match a {
            OscType::String(t) => s.push_str(&format!("{t:?}")),
            a => match number(a) {
                Some(x) => s.push_str(&x.to_string()),
                None => s.push_str(&arg_kind(Some(a))),
            },
        }
    }
    if m.args.len() > 8 {
        s.push_str(" …");
    }
    s
}

/// The reply packet for `result`: `/morphrt/reply ok "…"` or
/// `/morphrt/reply error "…"`.
pub fn reply_packet(result: &Result<String, String>) -> Vec<u8> {
    let (status, text) = match result {
        Ok(t) => ("ok", t),
        Err(e) => ("error", e),
    };
    let packet = OscPacket::Message(OscMessage {
        addr: REPLY_ADDRESS.to_string(),
        args: vec![
            OscType::String(status.to_string()),
            OscType::String(text.clone()),
        ],
    });
    rosc::encoder::encode(&packet).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn mapping() -> Mapping {
        let text = r#"{"version": "1.0", "sample_rate": 48000,
          "nodes": [{"id": "lp", "op": "biquad", "params": {"mode": "lowpass", "cutoff": "1kHz"}},
                    {"id": "d", "op": "dc"}],
          "edges": [{"from": "d", "to": "lp"}],
          "outputs": {"main": ["lp"]},
          "controls": [{"osc": "/cut", "node": "lp", "param": "cutoff", "min": "200Hz", "max": "800Hz"}]}"#;
        let scene = crate::scene::load_str(text, "t.json", None).unwrap();
        let mut plan = crate::graph::compile(&scene, &Default::default()).unwrap();
        let controls = Arc::new(std::mem::take(&mut plan.controls));
        let engine = crate::engine::Engine::new(plan);
        Mapping {
            controls,
            table: Arc::new(engine.control_table()),
            sample_rate: 48_000,
        }
    }

    fn one(packet: OscPacket) -> Decoded {
        let bytes = rosc::encoder::encode(&packet).unwrap();
        let mut v = decode(&bytes, "127.0.0.1:1", &mapping());
        assert_eq!(v.len(), 1);
        v.remove(0)
    }

    fn message(addr: &str, args: Vec<OscType>) -> OscPacket {
        OscPacket::Message(OscMessage {
            addr: addr.to_string(),
            args,
        })
    }

    fn changes(d: &Decoded) -> Vec<Change> {
        match &d.command {
            Ok(Command::Changes(v)) => v.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mapped_and_namespace_messages_resolve_to_changes() {
        let d = one(message("/cut", vec![OscType::Float(0.5)]));
        assert_eq!(changes(&d)[0].value, ControlValue::Number(500.0));
        assert_eq!(d.from, "osc 127.0.0.1:1 /cut 0.5");
        let s = |t: &str| OscType::String(t.to_string());
        let d = one(message(
            "/morphrt/param",
            vec![s("lp"), s("cutoff"), s("2kHz"), s("10ms")],
        ));
        let c = &changes(&d)[0];
        assert_eq!((c.value, c.ramp), (ControlValue::Number(2000.0), 480));
        let d = one(message(
            "/morphrt/param",
            vec![s("lp"), s("mode"), s("highpass")],
        ));
        assert!(matches!(changes(&d)[0].value, ControlValue::Enum(_)));
        let d = one(message(
            "/morphrt/param",
            vec![s("lp"), s("mode"), OscType::Int(99)],
        ));
        assert!(d.command.unwrap_err().contains("no index of `mode`"));
        let d = one(message(
            "/morphrt/param",
            vec![s("lq"), s("cutoff"), OscType::Int(1)],
        ));
        assert!(d.command.unwrap_err().contains("did you mean `lp`?"));
        let d = one(message("/morphrt/profile", vec![s("live")]));
        assert!(matches!(d.command, Ok(Command::Profile(Profile::Live))));
    }

    #[test]
    fn bad_messages_say_why() {
        let d = one(message("/cutt", vec![OscType::Float(0.5)]));
        assert!(d.command.unwrap_err().contains("did you mean /cut?"));
        let d = one(message("/cut", vec![OscType::Blob(vec![1])]));
        assert!(d.command.unwrap_err().contains("takes a number"));
        let d = decode(b"\xff\x00", "h", &mapping()).remove(0);
        assert!(d.command.unwrap_err().starts_with("malformed OSC packet"));
        // A position outside 0…1 is refused, not clamped.
        let d = one(message("/cut", vec![OscType::Float(1.5)]));
        assert!(d.command.unwrap_err().contains("1.5 is outside 0…1"));
        // An empty bundle is answered: it holds nothing to do.
        let empty = OscPacket::Bundle(OscBundle {
            timetag: OscTime::from((0, 1)),
            content: vec![],
        });
        let d = decode(&rosc::encoder::encode(&empty).unwrap(), "h", &mapping()).remove(0);
        let e = d.command.unwrap_err();
        assert!(
            e.contains("an empty bundle") && !super::super::is_malformed(&e),
            "{e}"
        );
    }

    #[test]
    fn timetags_map_to_wall_clock_time() {
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let When::At(back) = timetag_when(timetag(t)) else {
            panic!("a time ahead");
        };
        let off = back.duration_since(t).unwrap_or_else(|e| e.duration());
        assert!(off < Duration::from_micros(1), "{off:?}");
        assert_eq!(timetag_when(OscTime::from((0, 1))), When::Now);
        assert_eq!(timetag_when(OscTime::from((5, 0))), When::Now);
    }

    #[test]
    fn deep_bundles_are_refused_unread() {
        let mut p = message("/cut", vec![OscType::Float(0.5)]);
        for _ in 0..MAX_BUNDLE_DEPTH + 1 {
            p = OscPacket::Bundle(OscBundle {
                timetag: OscTime::from((0, 1)),
                content: vec![p],
            });
        }
        let bytes = rosc::encoder::encode(&p).unwrap();
        let d = decode(&bytes, "h", &mapping()).remove(0);
        assert!(d.command.unwrap_err().contains("nested deeper"));
    }
}
