//! OSC, decoded: a UDP packet (a message or a bundle) becomes the
//! [`Decoded`] messages a session acts on, resolved against the scene's
//! `controls` and the engine playing ([`Mapping`]). Pure: the socket and
//! its thread live with `run` (`host/live/osc_in.rs`).
//!
//! Addresses (GUIDE.md, *Driving a session over OSC*):
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

use super::{clip, param_spec, Change, Command, Mapping, Note, RemoteError, When};
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
    pub command: Result<Command, RemoteError>,
    pub when: When,
    /// The message in words: `osc 127.0.0.1:50000 /filter/cutoff 0.5`.
    pub from: String,
}

/// Decodes the UDP packet `bytes` that `sender` (an address in words)
/// sent: one [`Decoded`] per message it holds, or one error for a packet
/// that is not OSC. A bundle is read element by element: an element that
/// cannot be read (its size 0, not a multiple of 4 or past the bundle's
/// end, or its bytes no OSC message) is one malformed error of its own,
/// and the elements around it are still read.
pub fn decode(bytes: &[u8], sender: &str, mapping: &Mapping) -> Vec<Decoded> {
    let refuse = |why: RemoteError| {
        vec![Decoded {
            command: Err(why),
            when: When::Now,
            from: format!("osc {sender} ({} bytes)", bytes.len()),
        }]
    };
    if bundle_depth(bytes) > MAX_BUNDLE_DEPTH {
        return refuse(RemoteError::Malformed(format!(
            "malformed OSC packet: bundles nested deeper than {MAX_BUNDLE_DEPTH}"
        )));
    }
    if !bytes.starts_with(BUNDLE_TAG) {
        return match rosc::decoder::decode_udp(bytes) {
            Ok((_, packet)) => {
                let mut out = Vec::new();
                walk(&packet, When::Now, sender, mapping, &mut out);
                out
            }
            Err(e) => refuse(RemoteError::Malformed(format!("malformed OSC packet: {e}"))),
        };
    }
    let mut out = Vec::new();
    bundle(bytes, 0, sender, mapping, &mut out);
    if out.is_empty() {
        return refuse(RemoteError::EmptyBundle);
    }
    out
}

/// How a bundle starts.
const BUNDLE_TAG: &[u8] = b"#bundle\0";

/// Every message of the bundle `bytes` (which start with [`BUNDLE_TAG`]),
/// read element by element; `offset` is where it starts in the packet,
/// for errors. Nesting is bounded by [`bundle_depth`], checked first.
fn bundle(bytes: &[u8], offset: usize, sender: &str, mapping: &Mapping, out: &mut Vec<Decoded>) {
    let malformed = |at: usize, why: String| Decoded {
        command: Err(RemoteError::Malformed(format!(
            "malformed OSC packet: the bundle element at byte {at} {why}"
        ))),
        when: When::Now,
        from: format!("osc {sender} (bundle element at byte {at})"),
    };
    let Some(tag) = bytes.get(8..16) else {
        out.push(Decoded {
            command: Err(RemoteError::Malformed(format!(
                "malformed OSC packet: a bundle of {} bytes has no timetag (16 bytes at least)",
                bytes.len()
            ))),
            when: When::Now,
            from: format!("osc {sender} ({} bytes)", bytes.len()),
        });
        return;
    };
    let seconds = u32::from_be_bytes([tag[0], tag[1], tag[2], tag[3]]);
    let fraction = u32::from_be_bytes([tag[4], tag[5], tag[6], tag[7]]);
    let when = timetag_when(OscTime::from((seconds, fraction)));
    let mut pos = 16;
    while pos < bytes.len() {
        let at = offset + pos;
        let Some(size) = bytes.get(pos..pos + 4) else {
            out.push(malformed(
                at,
                format!(
                    "is {} bytes, too short for its size (4 bytes)",
                    bytes.len() - pos
                ),
            ));
            return;
        };
        let size = u32::from_be_bytes([size[0], size[1], size[2], size[3]]) as usize;
        let start = pos + 4;
        let Some(element) = bytes.get(start..start.saturating_add(size)) else {
            out.push(malformed(
                at,
                format!(
                    "says it holds {size} bytes, past the bundle's end ({} bytes left)",
                    bytes.len() - start
                ),
            ));
            return;
        };
        pos = start + size;
        if size == 0 || !size.is_multiple_of(4) {
            out.push(malformed(
                at,
                format!("says it holds {size} bytes: an element is a positive multiple of 4"),
            ));
            continue;
        }
        if element.starts_with(BUNDLE_TAG) {
            bundle(element, offset + start, sender, mapping, out);
            continue;
        }
        match rosc::decoder::decode_udp(element) {
            Ok((_, p)) => walk(&p, when, sender, mapping, out),
            Err(e) => out.push(malformed(at, format!("is no OSC message: {e}"))),
        }
    }
}

/// Every message of `packet`, landing `when` unless a bundle says when;
/// an address pattern becomes one message per address it matches.
fn walk(packet: &OscPacket, when: When, sender: &str, mapping: &Mapping, out: &mut Vec<Decoded>) {
    match packet {
        OscPacket::Message(m) => {
            if !is_pattern(&m.addr) {
                out.push(Decoded {
                    command: command(m, mapping),
                    when,
                    from: format!("osc {sender} {}", message_text(m)),
                });
                return;
            }
            let matched = addresses(mapping)
                .into_iter()
                .filter(|a| pattern_matches(&m.addr, a))
                .collect::<Vec<_>>();
            if matched.is_empty() {
                out.push(Decoded {
                    command: Err(unknown_address(&m.addr, mapping)),
                    when,
                    from: format!("osc {sender} {}", message_text(m)),
                });
            }
            for addr in matched {
                let one = OscMessage {
                    addr: addr.to_string(),
                    args: m.args.clone(),
                };
                out.push(Decoded {
                    command: command(&one, mapping),
                    when,
                    from: format!(
                        "osc {sender} {} (pattern {})",
                        message_text(&one),
                        clip(&m.addr)
                    ),
                });
            }
        }
        OscPacket::Bundle(OscBundle { timetag, content }) => {
            let when = timetag_when(*timetag);
            for p in content {
                walk(p, when, sender, mapping, out);
            }
        }
    }
}

/// The namespace's addresses, always there.
const NAMESPACE: [&str; 5] = [
    "/morphrt/param",
    "/morphrt/profile",
    "/morphrt/snapshot",
    "/morphrt/stop",
    "/morphrt/panic",
];

/// Every address a message can be sent to: those the scene maps, then
/// the namespace's; each once.
fn addresses(mapping: &Mapping) -> Vec<&str> {
    let mut all: Vec<&str> = Vec::new();
    for a in mapping
        .controls
        .iter()
        .filter_map(|c| c.osc_address())
        .chain(NAMESPACE)
    {
        if !all.contains(&a) {
            all.push(a);
        }
    }
    all
}

/// Whether `addr` is an OSC address pattern: it holds `*`, `?`, `[` or
/// `{` (OSC 1.0's special characters; no address a scene maps holds one).
fn is_pattern(addr: &str) -> bool {
    addr.contains(['*', '?', '[', '{'])
}

/// Whether the OSC 1.0 address pattern `pattern` matches `addr`: both
/// are split at `/` and each part of the pattern matches the part of the
/// address at its place (`?` one character, `*` any run, `[abc]`, `[a-z]`
/// and `[!…]` one character of a set or outside it, `{foo,bar}` one of
/// the strings).
pub fn pattern_matches(pattern: &str, addr: &str) -> bool {
    let p: Vec<&str> = pattern.split('/').collect();
    let a: Vec<&str> = addr.split('/').collect();
    p.len() == a.len()
        && p.iter().zip(&a).all(|(p, a)| {
            let p: Vec<char> = p.chars().collect();
            let a: Vec<char> = a.chars().collect();
            let mut failed = std::collections::HashSet::new();
            part_matches(&p, 0, &a, 0, &mut failed)
        })
}

/// Whether `p[pi..]` matches `a[ai..]`; `failed` remembers positions that
/// do not, so a pattern of many `*` takes time in proportion to the
/// product of the lengths, never more.
fn part_matches(
    p: &[char],
    pi: usize,
    a: &[char],
    ai: usize,
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> bool {
    if failed.contains(&(pi, ai)) {
        return false;
    }
    let matched = match p.get(pi) {
        None => ai == a.len(),
        Some('*') => (ai..=a.len()).any(|k| part_matches(p, pi + 1, a, k, failed)),
        Some('?') => ai < a.len() && part_matches(p, pi + 1, a, ai + 1, failed),
        Some('[') => match (set_end(p, pi), a.get(ai)) {
            (Some(end), Some(&c)) => {
                in_set(&p[pi + 1..end], c) && part_matches(p, end + 1, a, ai + 1, failed)
            }
            // An unclosed `[` is itself.
            (None, Some('[')) => part_matches(p, pi + 1, a, ai + 1, failed),
            _ => false,
        },
        Some('{') => match p[pi..].iter().position(|&c| c == '}') {
            Some(len) => {
                let end = pi + len;
                p[pi + 1..end].split(|&c| c == ',').any(|word| {
                    a.get(ai..ai + word.len()) == Some(word)
                        && part_matches(p, end + 1, a, ai + word.len(), failed)
                })
            }
            None => a.get(ai) == Some(&'{') && part_matches(p, pi + 1, a, ai + 1, failed),
        },
        Some(&c) => a.get(ai) == Some(&c) && part_matches(p, pi + 1, a, ai + 1, failed),
    };
    if !matched {
        failed.insert((pi, ai));
    }
    matched
}

/// Where the `[` set starting at `p[open]` closes (a `]` right after the
/// `[` or `[!` belongs to the set).
fn set_end(p: &[char], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if p.get(i) == Some(&'!') {
        i += 1;
    }
    if p.get(i) == Some(&']') {
        i += 1;
    }
    p[i.min(p.len())..]
        .iter()
        .position(|&c| c == ']')
        .map(|k| i + k)
}

/// Whether `c` is in the set `set` (a `[…]`'s inside): characters and
/// ranges `a-z`, negated by a leading `!`; a `-` first or last is itself.
fn in_set(set: &[char], c: char) -> bool {
    let (negated, set) = match set.first() {
        Some('!') => (true, &set[1..]),
        _ => (false, set),
    };
    let mut found = false;
    let mut i = 0;
    while i < set.len() {
        if i + 2 < set.len() && set[i + 1] == '-' {
            let (lo, hi) = (set[i].min(set[i + 2]), set[i].max(set[i + 2]));
            found |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            found |= set[i] == c;
            i += 1;
        }
    }
    found != negated
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
fn command(m: &OscMessage, mapping: &Mapping) -> Result<Command, RemoteError> {
    match m.addr.as_str() {
        "/morphrt/param" => param_command(&m.args, mapping),
        "/morphrt/profile" => match m.args.first() {
            Some(OscType::String(s)) => Profile::parse(s).map(Command::Profile).ok_or_else(|| {
                RemoteError::Argument(format!(
                    "/morphrt/profile: unknown profile `{}`; valid: strict, repro, live",
                    clip(s)
                ))
            }),
            other => Err(RemoteError::Argument(format!(
                "/morphrt/profile takes a string (strict, repro or live), not {}",
                arg_kind(other)
            ))),
        },
        "/morphrt/snapshot" => Ok(Command::Snapshot),
        "/morphrt/stop" => Ok(Command::Stop),
        "/morphrt/panic" => panic_command(&m.args, mapping),
        addr => mapped_command(addr, &m.args, mapping),
    }
}

/// `/morphrt/panic [sound]`: all notes off (all sound off) on every
/// voice module.
fn panic_command(args: &[OscType], mapping: &Mapping) -> Result<Command, RemoteError> {
    let action = match args.first() {
        None => NoteAction::AllNotesOff,
        Some(OscType::String(s)) if s == "sound" => NoteAction::AllSoundOff,
        Some(OscType::String(s)) if s == "notes" => NoteAction::AllNotesOff,
        other => {
            return Err(RemoteError::Argument(format!(
                "/morphrt/panic takes nothing (all notes off), `notes` or `sound` (all sound off), not {}",
                arg_kind(other)
            )))
        }
    };
    let modules = mapping.table.modules();
    if modules.is_empty() {
        return Err(RemoteError::NotPlaying(
            "/morphrt/panic: the scene has no voice module".to_string(),
        ));
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
fn mapped_command(addr: &str, args: &[OscType], mapping: &Mapping) -> Result<Command, RemoteError> {
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
        return Err(RemoteError::Argument(format!(
            "{addr} takes {what}, not {}",
            arg_kind(args.first())
        )));
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
        let value = c
            .osc_value(x)
            .map_err(|e| RemoteError::OutOfRange(e).within(addr))?;
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
) -> Result<Note, RemoteError> {
    if !(note.fract() == 0.0 && (0.0..=127.0).contains(&note)) {
        return Err(RemoteError::OutOfRange(format!(
            "note {note} is not a MIDI note number (a whole number 0…127)"
        ))
        .within(addr));
    }
    let Some(v) = velocity.and_then(number) else {
        return Err(RemoteError::Argument(format!(
            "{addr} takes a note number and a velocity 0…1 (0: note-off), not {} as the velocity",
            arg_kind(velocity)
        )));
    };
    if !(0.0..=1.0).contains(&v) {
        return Err(RemoteError::OutOfRange(format!(
            "velocity {v} is outside 0…1 (0 is a note-off)"
        ))
        .within(addr));
    }
    Ok(if v == 0.0 {
        Note::off(module, note)
    } else {
        Note::on(module, note, v)
    })
}

/// `unknown OSC address /x; the scene maps /a, /b; the namespace: …`
/// (an address pattern: `no OSC address matches the pattern /x*; …`).
/// A long address is echoed cut (see [`clip`]).
fn unknown_address(addr: &str, mapping: &Mapping) -> RemoteError {
    let all = addresses(mapping);
    let mapped = &all[..all.len() - NAMESPACE.len()];
    let help = crate::scene::suggest::closest(addr, all.iter().copied())
        .map_or(String::new(), |s| format!(" (did you mean {s}?)"));
    let listed = if mapped.is_empty() {
        "the scene maps no OSC address".to_string()
    } else {
        format!("the scene maps {}", mapped.join(", "))
    };
    let what = if is_pattern(addr) {
        format!("no OSC address matches the pattern {}", clip(addr))
    } else {
        format!("unknown OSC address {}", clip(addr))
    };
    RemoteError::UnknownAddress(format!(
        "{what}{help}; {listed}; always there: /morphrt/param NODE PARAM VALUE [RAMP], /morphrt/profile P, /morphrt/snapshot, /morphrt/stop, /morphrt/panic [sound]"
    ))
}

/// `/morphrt/param NODE PARAM VALUE [RAMP]`.
fn param_command(args: &[OscType], mapping: &Mapping) -> Result<Command, RemoteError> {
    const USAGE: &str = "/morphrt/param takes NODE PARAM VALUE [RAMP] (two strings, a number or a string with a unit, and seconds or a time string)";
    let (Some(OscType::String(node)), Some(OscType::String(param)), Some(value)) =
        (args.first(), args.get(1), args.get(2))
    else {
        return Err(RemoteError::Argument(USAGE.to_string()));
    };
    if args.len() > 4 {
        return Err(RemoteError::Argument(format!(
            "{USAGE}; it got {} arguments",
            args.len()
        )));
    }
    let sr = mapping.sample_rate;
    let (_, _, spec) = param_spec(&mapping.table, node, param)?;
    let value = param_value(spec, value, sr)
        .map_err(|e| e.within(format!("/morphrt/param {node} {param}")))?;
    let ramp = match args.get(3) {
        None => 0,
        Some(r) => ramp_samples(r, sr).map_err(|e| e.within("/morphrt/param ramp"))?,
    };
    Ok(Command::Changes(vec![Change {
        node: node.clone(),
        param: param.clone(),
        value,
        ramp,
    }]))
}

/// An argument's value for the param `spec` declares.
fn param_value(spec: &ParamSpec, arg: &OscType, sr: u32) -> Result<ControlValue, RemoteError> {
    let raw = match (arg, spec.kind) {
        (OscType::Bool(b), _) => RawValue::Bool(*b),
        (OscType::String(s), ParamKind::Bool { .. }) if s == "true" || s == "false" => {
            RawValue::Bool(s == "true")
        }
        (OscType::String(s), _) => RawValue::Text(s.clone()),
        (a, ParamKind::Bool { .. }) => match number(a) {
            Some(0.0) => RawValue::Bool(false),
            Some(1.0) => RawValue::Bool(true),
            _ => {
                return Err(RemoteError::Argument(format!(
                    "`{}` takes true or false (T/F, 0/1)",
                    spec.name
                )))
            }
        },
        (a, ParamKind::Enum { choices, .. }) => {
            let Some(x) = number(a) else {
                return Err(RemoteError::Argument(format!(
                    "`{}` takes a choice's name or index, not {}",
                    spec.name,
                    arg_kind(Some(a))
                )));
            };
            return if x.fract() == 0.0 && x >= 0.0 && (x as usize) < choices.len() {
                Ok(ControlValue::Enum(x as usize))
            } else {
                Err(RemoteError::OutOfRange(format!(
                    "{x} is no index of `{}` (0 … {}: {})",
                    spec.name,
                    choices.len().saturating_sub(1),
                    choices.join(", ")
                )))
            };
        }
        (a, _) => match number(a) {
            Some(x) => RawValue::Number {
                value: x,
                literal: x.to_string(),
            },
            None => {
                return Err(RemoteError::Argument(format!(
                    "a value cannot be {}",
                    arg_kind(Some(a))
                )))
            }
        },
    };
    match crate::ops::resolve_param(spec, &raw, sr, None) {
        Ok(Value::Number(x)) => Ok(ControlValue::Number(x)),
        Ok(Value::Integer(i)) => Ok(ControlValue::Integer(i)),
        Ok(Value::Enum(i)) => Ok(ControlValue::Enum(i)),
        Ok(Value::Bool(b)) => Ok(ControlValue::Bool(b)),
        Ok(_) => Err(RemoteError::Value(format!(
            "`{}` cannot be set by a control",
            spec.name
        ))),
        Err(crate::ops::ParamError::WrongUnit(e)) => Err(RemoteError::Value(e.to_string())),
        Err(crate::ops::ParamError::Invalid { message, help }) => {
            Err(RemoteError::Value(match help {
                Some(h) => format!("{message} ({h})"),
                None => message,
            }))
        }
    }
}

/// The longest ramp, in seconds: a day.
const MAX_RAMP_SECONDS: f64 = 86_400.0;

/// A ramp argument in samples: a number of seconds or a time string,
/// either 0 … [`MAX_RAMP_SECONDS`].
fn ramp_samples(arg: &OscType, sr: u32) -> Result<u64, RemoteError> {
    let out_of_range =
        |what: String| RemoteError::OutOfRange(format!("{what} is not a ramp (0 … 86400 s)"));
    let samples = match arg {
        OscType::String(s) => {
            let samples = crate::scene::TimeSpec::parse(s)
                .map_err(|e| RemoteError::Value(e.to_string()))?
                .to_samples(sr)
                .map(|r| r.round_half_even())
                .ok_or_else(|| out_of_range(format!("`{}`", clip(s))))?;
            if samples as f64 > MAX_RAMP_SECONDS * sr as f64 {
                return Err(out_of_range(format!("`{}`", clip(s))));
            }
            samples
        }
        a => match number(a) {
            Some(x) if x.is_finite() && (0.0..=MAX_RAMP_SECONDS).contains(&x) => {
                (x * sr as f64).round() as i128
            }
            Some(x) => return Err(out_of_range(format!("{x} s"))),
            None => {
                return Err(RemoteError::Argument(format!(
                    "a ramp cannot be {}",
                    arg_kind(Some(a))
                )))
            }
        },
    };
    u64::try_from(samples)
        .map_err(|_| RemoteError::OutOfRange("a ramp cannot be negative".to_string()))
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
        Some(OscType::String(s)) => format!("the string \"{}\"", clip(s)),
        Some(OscType::Bool(b)) => format!("the bool {b}"),
        Some(OscType::Blob(b)) => format!("a blob of {} bytes", b.len()),
        Some(OscType::Nil) => "nil".to_string(),
        Some(OscType::Inf) => "infinitum".to_string(),
        Some(other) => format!("{other:?}"),
    }
}

/// `/filter/cutoff 0.5 "x"`: a message in words (at most 8 arguments).
fn message_text(m: &OscMessage) -> String {
    let mut s = clip(&m.addr).into_owned();
    for a in m.args.iter().take(8) {
        s.push(' ');
        match a {
            OscType::String(t) => s.push_str(&format!("{:?}", clip(t))),
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

/// The most characters a reply's text holds: its packet stays well
/// under the largest UDP datagram (65 507 bytes), whatever it answers.
pub const MAX_REPLY_CHARS: usize = 8_192;

/// The reply packet for `result`: `/morphrt/reply ok "…"` or
/// `/morphrt/reply error "…"`, its text cut to [`MAX_REPLY_CHARS`].
pub fn reply_packet(result: &Result<String, String>) -> Vec<u8> {
    let (status, text) = match result {
        Ok(t) => ("ok", t),
        Err(e) => ("error", e),
    };
    let text = &super::clip_to(text, MAX_REPLY_CHARS).into_owned();
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
            table: Arc::new(engine.node_table()),
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
        assert!(d
            .command
            .unwrap_err()
            .to_string()
            .contains("no index of `mode`"));
        let d = one(message(
            "/morphrt/param",
            vec![s("lq"), s("cutoff"), OscType::Int(1)],
        ));
        assert!(d
            .command
            .unwrap_err()
            .to_string()
            .contains("did you mean `lp`?"));
        let d = one(message("/morphrt/profile", vec![s("live")]));
        assert!(matches!(d.command, Ok(Command::Profile(Profile::Live))));
    }

    #[test]
    fn bad_messages_say_why() {
        let d = one(message("/cutt", vec![OscType::Float(0.5)]));
        assert!(d
            .command
            .unwrap_err()
            .to_string()
            .contains("did you mean /cut?"));
        let d = one(message("/cut", vec![OscType::Blob(vec![1])]));
        assert!(d
            .command
            .unwrap_err()
            .to_string()
            .contains("takes a number"));
        let d = decode(b"\xff\x00", "h", &mapping()).remove(0);
        assert!(d
            .command
            .unwrap_err()
            .to_string()
            .starts_with("malformed OSC packet"));
        // A position outside 0…1 is refused, not clamped.
        let d = one(message("/cut", vec![OscType::Float(1.5)]));
        assert!(d
            .command
            .unwrap_err()
            .to_string()
            .contains("1.5 is outside 0…1"));
        // An empty bundle is answered: it holds nothing to do.
        let empty = OscPacket::Bundle(OscBundle {
            timetag: OscTime::from((0, 1)),
            content: vec![],
        });
        let d = decode(&rosc::encoder::encode(&empty).unwrap(), "h", &mapping()).remove(0);
        let e = d.command.unwrap_err();
        assert!(matches!(e, RemoteError::EmptyBundle), "{e}");
        assert!(
            e.to_string().contains("an empty bundle") && !e.is_malformed(),
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
        assert!(d.command.unwrap_err().to_string().contains("nested deeper"));
    }

    /// A bundle of `elements` (each its size then its bytes) tagged
    /// "immediately".
    fn bundle_of(elements: &[Vec<u8>]) -> Vec<u8> {
        let mut b = b"#bundle\0".to_vec();
        b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
        for e in elements {
            b.extend_from_slice(&(e.len() as u32).to_be_bytes());
            b.extend_from_slice(e);
        }
        b
    }

    fn encoded(addr: &str, x: f32) -> Vec<u8> {
        rosc::encoder::encode(&message(addr, vec![OscType::Float(x)])).unwrap()
    }

    #[test]
    fn a_malformed_bundle_element_is_reported_and_its_neighbours_still_land() {
        // First an element that is no OSC message, then two good ones,
        // then one whose size runs past the bundle's end.
        let mut bytes = bundle_of(&[
            b"\xff\xff\xff\xff".to_vec(),
            encoded("/cut", 0.5),
            encoded("/cut", 1.0),
        ]);
        bytes.extend_from_slice(&64u32.to_be_bytes());
        bytes.extend_from_slice(&encoded("/cut", 0.0)[..8]);
        let got = decode(&bytes, "h", &mapping());
        assert_eq!(got.len(), 4, "{got:?}");
        let e = got[0].command.as_ref().unwrap_err();
        assert!(e.is_malformed(), "{e}");
        let e = e.to_string();
        assert!(
            e.contains("at byte 16") && e.contains("no OSC message"),
            "{e}"
        );
        assert_eq!(changes(&got[1])[0].value, ControlValue::Number(500.0));
        assert_eq!(changes(&got[2])[0].value, ControlValue::Number(800.0));
        let e = got[3].command.as_ref().unwrap_err();
        assert!(e.is_malformed(), "{e}");
        assert!(
            e.to_string().contains("64 bytes, past the bundle's end"),
            "{e}"
        );
    }

    #[test]
    fn bundle_element_sizes_of_zero_three_or_past_the_end_are_malformed_not_empty() {
        for (size, says) in [
            (0u32, "holds 0 bytes"),
            (3, "holds 3 bytes"),
            (1000, "past the bundle's end"),
        ] {
            let mut bytes = bundle_of(&[]);
            bytes.extend_from_slice(&size.to_be_bytes());
            bytes.extend_from_slice(&[0; 4]);
            let got = decode(&bytes, "h", &mapping());
            let errors: Vec<&RemoteError> = got
                .iter()
                .filter_map(|d| d.command.as_ref().err())
                .collect();
            assert!(!errors.is_empty(), "size {size}: {got:?}");
            for e in errors {
                assert!(e.is_malformed() && !e.to_string().contains("empty"), "{e}");
            }
            assert!(
                got[0]
                    .command
                    .as_ref()
                    .unwrap_err()
                    .to_string()
                    .contains(says),
                "{got:?}"
            );
        }
        // A size of 0 is skipped: the element after it still lands.
        let mut bytes = bundle_of(&[]);
        bytes.extend_from_slice(&0u32.to_be_bytes());
        let good = encoded("/cut", 0.5);
        bytes.extend_from_slice(&(good.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&good);
        let got = decode(&bytes, "h", &mapping());
        assert_eq!(got.len(), 2);
        assert_eq!(changes(&got[1])[0].value, ControlValue::Number(500.0));
    }

    #[test]
    fn osc_address_patterns_match_as_osc_1_0_defines_them() {
        for (pattern, addr, matches) in [
            ("/c?t", "/cut", true),
            ("/c?t", "/cuut", false),
            ("/*", "/cut", true),
            ("/*", "/a/b", false),
            ("/*/*", "/a/b", true),
            ("/c*t", "/ct", true),
            ("/c*t", "/cxyzt", true),
            ("/c*t", "/cxyz", false),
            ("/[abc]ut", "/cut", true),
            ("/[a-c]ut", "/cut", true),
            ("/[d-z]ut", "/cut", false),
            ("/[!d-z]ut", "/cut", true),
            ("/[!abc]ut", "/cut", false),
            ("/[-c]ut", "/-ut", true),
            ("/{cut,gain}", "/cut", true),
            ("/{cut,gain}", "/gain", true),
            ("/{cut,gain}", "/cutgain", false),
            ("/{a,b}*{x,y}", "/abbay", true),
            ("/morphrt/s*", "/morphrt/stop", true),
            ("/morphrt/s*", "/morphrt/profile", false),
        ] {
            assert_eq!(
                pattern_matches(pattern, addr),
                matches,
                "{pattern} on {addr}"
            );
        }
        // Many stars against a long part end quickly (remembered failures).
        let p = format!("/{}x", "*".repeat(200));
        assert!(!pattern_matches(&p, &format!("/{}", "a".repeat(2000))));
    }

    #[test]
    fn a_pattern_reaches_every_address_it_matches_and_one_matching_none_is_refused() {
        let d = one(message("/c[t-v]?", vec![OscType::Float(0.5)]));
        assert_eq!(changes(&d)[0].value, ControlValue::Number(500.0));
        assert!(d.from.contains("/cut 0.5 (pattern /c[t-v]?)"), "{}", d.from);
        let bytes = rosc::encoder::encode(&message("/morphrt/{stop,snapshot}", vec![])).unwrap();
        let got: Vec<_> = decode(&bytes, "h", &mapping())
            .into_iter()
            .map(|d| d.command.unwrap())
            .collect();
        assert_eq!(got, [Command::Snapshot, Command::Stop]);
        let e = one(message("/x*", vec![OscType::Float(0.5)]))
            .command
            .unwrap_err();
        assert!(matches!(e, RemoteError::UnknownAddress(_)), "{e}");
        assert!(
            e.to_string()
                .starts_with("no OSC address matches the pattern /x*"),
            "{e}"
        );
        assert!(!e.is_malformed());
    }

    #[test]
    fn a_ramp_given_as_a_string_is_held_to_a_day_as_a_number_is() {
        let s = |t: &str| OscType::String(t.to_string());
        for ramp in ["86401s", "86400001ms", "999999999999s"] {
            let d = one(message(
                "/morphrt/param",
                vec![s("lp"), s("cutoff"), s("2kHz"), s(ramp)],
            ));
            let e = d.command.unwrap_err().to_string();
            assert!(e.contains("is not a ramp (0 … 86400 s)"), "{ramp}: {e}");
        }
        let d = one(message(
            "/morphrt/param",
            vec![s("lp"), s("cutoff"), s("2kHz"), s("86400s")],
        ));
        assert_eq!(changes(&d)[0].ramp, 86_400 * 48_000);
    }

    #[test]
    fn a_huge_address_or_name_is_echoed_cut_and_its_reply_fits_a_datagram() {
        let long = format!("/{}", "x".repeat(65_000));
        let d = one(message(&long, vec![OscType::Float(0.5)]));
        let e = d.command.unwrap_err().to_string();
        assert!(e.len() < 2_000 && e.contains("x…"), "{} chars", e.len());
        assert!(d.from.len() < 400, "{} chars", d.from.len());
        let reply = reply_packet(&Err(e.repeat(100)));
        assert!(reply.len() < 65_507, "{} bytes", reply.len());
        let s = |t: &str| OscType::String(t.to_string());
        let d = one(message(
            "/morphrt/param",
            vec![s("lp"), s(&"p".repeat(65_000)), OscType::Float(1.0)],
        ));
        let e = d.command.unwrap_err().to_string();
        assert!(
            e.len() + d.from.len() < 2_000,
            "{} + {} chars",
            e.len(),
            d.from.len()
        );
    }
}
