//! Pass 0 and the last pass, voice modules (`scenes/README.md`, *Voices*).
//!
//! [`expand`] runs before every other pass: a module with `"voices": N` is
//! a template, and the scene the other passes compile has N copies of its
//! nodes (voice `v` of node `osc` is `osc#v`; `#` is not allowed in a
//! scene's ids, so a copy never meets a node of the scene). An edge inside
//! the template is made once per voice; an edge from outside into it feeds
//! every voice; an event on a template node moves every voice's copy. The
//! module's id becomes a `mix` of its voices' `out` node (the module's
//! last node unless `out` says), summed in voice-index order, and a second
//! `mix`, `id#r`, of that node's second output when it has one: the
//! endpoint `pad` is the first, `pad:out_r` the second.
//!
//! The copies report their problems once: [`fold`] gives every diagnostic
//! about a copy the template node's id and drops the repeats.
//!
//! After the plan is assembled, [`resolve`] finds each voice's nodes by
//! schedule index and [`place_notes`] puts the scene's note events on the
//! sample clock.

use super::{did_you_mean, time_to_samples};
use crate::graph::{NoteAction, Plan, PlanNote, VoicePool};
use crate::ops::{lookup, OpSpec, ParamKind};
use crate::profile::{EventTiming, OffGrid};
use crate::scene::units::{Dimension, Quantity};
use crate::scene::{
    Diagnostic, EdgeDecl, Endpoint, EventDecl, Loc, NodeDecl, NoteKind, NoteTarget, RawValue,
    Scene, TimeSpec,
};
use std::collections::HashMap;

/// A stolen voice fades out over this long unless the module says.
pub const DEFAULT_STEAL_FADE_MS: u64 = 5;
/// A released voice is free once its sound has stayed below −100 dBFS this long.
pub const FREE_AFTER_MS: u64 = 50;
/// The longest `steal_fade`.
const MAX_STEAL_FADE_MS: u64 = 1000;

/// What [`expand`] learnt about each voice module, for [`resolve`].
pub(super) struct Layout {
    pools: Vec<PoolLayout>,
}

struct PoolLayout {
    module: String,
    count: usize,
    template: Vec<String>,
    out: usize,
    pitch: Option<(usize, usize)>,
    gate: Option<(usize, usize)>,
    velocity: Option<(usize, usize)>,
    release_end: Option<usize>,
    steal_fade: TimeSpec,
    reuse_same_note: bool,
}

/// The id of voice `v`'s copy of template node `id`.
pub fn voice_node_id(id: &str, v: usize) -> String {
    format!("{id}#{v}")
}

/// The id of a voice module's second-channel sum.
fn right_id(module: &str) -> String {
    format!("{module}#r")
}

/// Pass 0: the scene with every voice module expanded, and what `resolve`
/// needs; `Ok(None)` for a scene without voice modules (compiled as it is).
/// Errors name the module and what would be valid.
pub(super) fn expand(scene: &Scene) -> Result<Option<(Scene, Layout)>, Vec<Diagnostic>> {
    let mut errors: Vec<Diagnostic> = Vec::new();
    let file = scene.file.as_str();
    let mut err = |loc: &Loc, node: Option<&str>, msg: String, help: String| {
        let mut d = Diagnostic::error(file, Some(loc.clone()), msg).with_help(help);
        if let Some(n) = node {
            d = d.with_node(n);
        }
        errors.push(d);
    };
    let voice_modules: Vec<usize> = (0..scene.modules.len())
        .filter(|&m| scene.modules[m].voices.is_some())
        .collect();
    if voice_modules.is_empty() {
        for n in &scene.notes {
            err(
                &n.loc,
                None,
                format!("note event plays module `{}`, but the scene has no voice module", n.module),
                "a note plays a module with `\"voices\": N`; to change one node's param, give `node`, `param` and `value` instead".to_string(),
            );
        }
        return if errors.is_empty() {
            Ok(None)
        } else {
            Err(errors)
        };
    }
    let node_ids: HashMap<&str, usize> = scene
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    // Template node id → (pool, k).
    let mut member: HashMap<&str, (usize, usize)> = HashMap::new();
    // Module id → pool.
    let mut pool_of: HashMap<&str, usize> = HashMap::new();
    let mut pools: Vec<PoolLayout> = Vec::new();
    let mut stereo: Vec<Option<(&'static str, &'static str)>> = Vec::new();
    for &mi in &voice_modules {
        let m = &scene.modules[mi];
        let v = m.voices.as_ref().expect("a voice module");
        let template: Vec<&NodeDecl> = scene
            .nodes
            .iter()
            .filter(|n| n.module == Some(mi))
            .collect();
        let ctx = format!("voice module `{}`", m.id);
        if template.is_empty() {
            err(
                &m.loc,
                None,
                format!("{ctx} has no nodes"),
                "a voice module's nodes are the template each voice plays".to_string(),
            );
            continue;
        }
        if let Some(&i) = node_ids.get(m.id.as_str()) {
            err(
                &scene.nodes[i].loc,
                Some(&m.id),
                format!("node `{}` has the id of voice module `{}`", m.id, m.id),
                "the module's id is the sum of its voices (an endpoint); rename the node or the module".to_string(),
            );
        }
        let ids: Vec<String> = template.iter().map(|n| n.id.clone()).collect();
        let find = |name: &str| ids.iter().position(|i| i == name);
        let pool = pools.len();
        for (k, id) in ids.iter().enumerate() {
            member.insert(scene.nodes[node_ids[id.as_str()]].id.as_str(), (pool, k));
        }
        let mut node_key = |what: &str, key: &Option<(String, Loc)>| -> Option<usize> {
            let (name, loc) = key.as_ref()?;
            match find(name) {
                Some(k) => Some(k),
                None => {
                    err(
                        loc,
                        None,
                        format!("`{what}` of {ctx} names `{name}`, which is not one of its nodes"),
                        did_you_mean(name, ids.iter().map(String::as_str)),
                    );
                    None
                }
            }
        };
        let out = match &v.out {
            Some(_) => node_key("out", &v.out),
            None => Some(ids.len() - 1),
        };
        let release_end = node_key("release_end", &v.release_end);
        let mut target = |what: &str, t: &Option<NoteTarget>| -> Option<(usize, usize)> {
            let t = t.as_ref()?;
            let Some(k) = find(&t.node) else {
                err(
                    &t.loc,
                    None,
                    format!(
                        "`note.{what}` of {ctx} names `{}`, which is not one of its nodes",
                        t.node
                    ),
                    did_you_mean(&t.node, ids.iter().map(String::as_str)),
                );
                return None;
            };
            // An unknown op is reported by the node pass.
            let op = lookup(&template[k].op)?;
            let settable = |p: &&crate::ops::ParamSpec| {
                p.settable_by_events && matches!(p.kind, ParamKind::Number { .. })
            };
            match op.param_index(&t.param) {
                Some(pi) if settable(&&op.params[pi]) => {
                    if what == "pitch" {
                        if let ParamKind::Number { dim, .. } = op.params[pi].kind {
                            if dim != Dimension::Frequency {
                                err(
                                    &t.loc,
                                    Some(&t.node),
                                    format!("`note.pitch` sets `{}.{}`, which is not a frequency", t.node, t.param),
                                    "a note's pitch is in Hz: name a frequency param such as `freq` or `cutoff`".to_string(),
                                );
                                return None;
                            }
                        }
                    }
                    Some((k, pi))
                }
                found => {
                    let why = match found {
                        Some(_) => format!(
                            "param `{}` of `{}` is not a number a note can set",
                            t.param, op.name
                        ),
                        None => format!("`{}` (`{}`) has no param `{}`", t.node, op.name, t.param),
                    };
                    err(
                        &t.loc,
                        Some(&t.node),
                        format!("`note.{what}` of {ctx}: {why}"),
                        did_you_mean(&t.param, op.params.iter().filter(settable).map(|p| p.name)),
                    );
                    None
                }
            }
        };
        let pitch = target("pitch", &v.pitch);
        let gate = target("gate", &v.gate);
        let velocity = target("velocity", &v.velocity);
        let steal_fade = match &v.steal_fade {
            Some((t, loc)) => {
                let ms = t
                    .to_samples(1000)
                    .map(|r| r.to_f64())
                    .unwrap_or(f64::INFINITY);
                if ms > MAX_STEAL_FADE_MS as f64 {
                    err(
                        loc,
                        None,
                        format!("`steal_fade` of {ctx} is longer than {MAX_STEAL_FADE_MS} ms"),
                        "a stolen voice fades out in a few ms; 5ms is the default".to_string(),
                    );
                }
                *t
            }
            None => TimeSpec::parse(&format!("{DEFAULT_STEAL_FADE_MS}ms")).expect("a time"),
        };
        let outs = out
            .and_then(|k| lookup(&template[k].op))
            .map(|op: &OpSpec| op.outputs);
        stereo.push(match outs {
            Some([a, b, ..]) => Some((a, b)),
            Some([a]) => Some((a, "")),
            _ => None,
        });
        pool_of.insert(m.id.as_str(), pool);
        pools.push(PoolLayout {
            module: m.id.clone(),
            count: v.count,
            template: ids,
            out: out.unwrap_or(0),
            pitch,
            gate,
            velocity,
            release_end,
            steal_fade,
            reuse_same_note: v.reuse_same_note,
        });
    }

    // The nodes: each template node N times, then the module's sums.
    let mut out = scene.clone();
    out.nodes.clear();
    for n in &scene.nodes {
        match member.get(n.id.as_str()) {
            None => out.nodes.push(n.clone()),
            Some(&(p, _)) => {
                for v in 0..pools[p].count {
                    let mut c = n.clone();
                    c.id = voice_node_id(&n.id, v);
                    out.nodes.push(c);
                }
            }
        }
    }
    let mut mixes: Vec<NodeDecl> = Vec::new();
    let mut sum_edges: Vec<EdgeDecl> = Vec::new();
    for (p, pool) in pools.iter().enumerate() {
        let mi = voice_modules[p];
        let m = &scene.modules[mi];
        let Some((left, right)) = stereo[p] else {
            continue;
        };
        let tmpl = &scene.nodes[node_ids[pool.template[pool.out].as_str()]];
        let mut sum = |id: String, port: &str| {
            mixes.push(NodeDecl {
                id: id.clone(),
                op: "mix".to_string(),
                params: Vec::new(),
                ramp: None,
                module: Some(mi),
                overrides: Default::default(),
                loc: m.loc.clone(),
                op_loc: m.loc.clone(),
                overrides_loc: None,
            });
            for v in 0..pool.count {
                sum_edges.push(EdgeDecl {
                    from: Endpoint {
                        node: voice_node_id(&tmpl.id, v),
                        port: Some(port.to_string()),
                    },
                    to: Endpoint {
                        node: id.clone(),
                        port: Some(format!("in{v}")),
                    },
                    delay: None,
                    loc: m.loc.clone(),
                    delay_loc: None,
                });
            }
        };
        sum(m.id.clone(), left);
        if !right.is_empty() {
            sum(right_id(&m.id), right);
        }
    }
    out.nodes.extend(mixes);

    // An endpoint as a source: a voice module's id is its sum.
    let module_source =
        |ep: &Endpoint, loc: &Loc, errs: &mut Vec<(Loc, String, String)>| -> Option<Endpoint> {
            let p = *pool_of.get(ep.node.as_str())?;
            let has_right = stereo[p].is_some_and(|(_, r)| !r.is_empty());
            let ports = if has_right {
                "`out` and `out_r`"
            } else {
                "`out`"
            };
            match ep.port.as_deref() {
                None | Some("out") => Some(Endpoint {
                    node: ep.node.clone(),
                    port: None,
                }),
                Some("out_r") if has_right => Some(Endpoint {
                    node: right_id(&ep.node),
                    port: None,
                }),
                Some(other) => {
                    errs.push((
                        loc.clone(),
                        format!("voice module `{}` has no output `{other}`", ep.node),
                        format!("a voice module's outputs are {ports}: the sum of its voices"),
                    ));
                    Some(ep.clone())
                }
            }
        };
    let mut located: Vec<(Loc, String, String)> = Vec::new();
    let inside = |ep: &Endpoint| member.get(ep.node.as_str()).copied();
    out.edges.clear();
    for e in &scene.edges {
        let from_mod = module_source(&e.from, &e.loc, &mut located);
        if pool_of.contains_key(e.to.node.as_str()) {
            located.push((
                e.loc.clone(),
                format!("edge into voice module `{}`", e.to.node),
                "a voice module's id is the sum of its voices, an output; feed one of its nodes instead (e.g. `osc:freq`), which feeds every voice".to_string(),
            ));
            continue;
        }
        match (inside(&e.from), inside(&e.to)) {
            (Some((pf, _)), Some((pt, _))) if pf == pt => {
                for v in 0..pools[pf].count {
                    let mut c = e.clone();
                    c.from.node = voice_node_id(&e.from.node, v);
                    c.to.node = voice_node_id(&e.to.node, v);
                    out.edges.push(c);
                }
            }
            (Some((pf, _)), _) => {
                located.push((
                    e.loc.clone(),
                    format!(
                        "edge from `{}`, a node of voice module `{}`, to outside it",
                        e.from, pools[pf].module
                    ),
                    format!(
                        "a voice module's sound leaves it through the module's id: `{}` (the sum of its voices)",
                        pools[pf].module
                    ),
                ));
            }
            (None, Some((pt, _))) => {
                for v in 0..pools[pt].count {
                    let mut c = e.clone();
                    if let Some(f) = &from_mod {
                        c.from = f.clone();
                    }
                    c.to.node = voice_node_id(&e.to.node, v);
                    out.edges.push(c);
                }
            }
            (None, None) => {
                let mut c = e.clone();
                if let Some(f) = from_mod {
                    c.from = f;
                }
                out.edges.push(c);
            }
        }
    }
    out.edges.extend(sum_edges);
    for bus in &mut out.outputs {
        for (ep, loc) in &mut bus.channels {
            if let Some(&(p, _)) = member.get(ep.node.as_str()) {
                located.push((
                    loc.clone(),
                    format!(
                        "output `{ep}` is a node of voice module `{}`",
                        pools[p].module
                    ),
                    format!(
                        "play the module's id, `{}`: the sum of its voices",
                        pools[p].module
                    ),
                ));
            } else if let Some(m) = module_source(ep, loc, &mut located) {
                *ep = m;
            }
        }
    }
    let mut events: Vec<EventDecl> = Vec::new();
    for ev in &scene.events {
        match member.get(ev.node.as_str()) {
            Some(&(p, _)) => {
                for v in 0..pools[p].count {
                    let mut c = ev.clone();
                    c.node = voice_node_id(&ev.node, v);
                    events.push(c);
                }
            }
            None => events.push(ev.clone()),
        }
    }
    out.events = events;
    for n in &scene.notes {
        if !pool_of.contains_key(n.module.as_str()) {
            let known = scene.modules.iter().any(|m| m.id == n.module);
            let msg = if known {
                format!(
                    "note event plays module `{}`, which has no voices",
                    n.module
                )
            } else {
                format!("note event plays unknown module `{}`", n.module)
            };
            located.push((
                n.loc.clone(),
                msg,
                did_you_mean(&n.module, pools.iter().map(|p| p.module.as_str())),
            ));
        }
    }
    for (loc, msg, help) in located {
        errors.push(Diagnostic::error(file, Some(loc), msg).with_help(help));
    }
    if !errors.is_empty() {
        let mut all = errors;
        all.extend(scene.warnings.iter().cloned());
        return Err(all);
    }
    Ok(Some((out, Layout { pools })))
}

/// A diagnostic about a voice's copy of a node, as about the template node:
/// `osc#3` reads `osc`. Repeats (one per voice) are dropped.
pub(super) fn fold(diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let strip = |s: &str| -> String {
        let mut out = String::with_capacity(s.len());
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '#'
                && chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_digit() || *d == 'r')
            {
                while chars
                    .peek()
                    .is_some_and(|d| d.is_ascii_digit() || *d == 'r')
                {
                    chars.next();
                }
                continue;
            }
            out.push(c);
        }
        out
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(diags.len());
    for mut d in diags {
        d.message = strip(&d.message);
        d.help = d.help.as_deref().map(strip);
        d.node = d.node.as_deref().map(strip);
        let key = (
            d.is_error(),
            d.loc.clone().map(|l| (l.path, l.line, l.col)),
            d.node.clone(),
            d.message.clone(),
        );
        if seen.insert(key) {
            out.push(d);
        }
    }
    out
}

/// The last pass: each voice module's nodes by schedule index.
pub(super) fn resolve(layout: &Layout, plan: &Plan) -> Vec<VoicePool> {
    let index: HashMap<&str, usize> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let sr = plan.sample_rate;
    layout
        .pools
        .iter()
        .map(|p| VoicePool {
            module: p.module.clone(),
            template: p.template.clone(),
            nodes: (0..p.count)
                .map(|v| {
                    p.template
                        .iter()
                        .map(|id| index[voice_node_id(id, v).as_str()])
                        .collect()
                })
                .collect(),
            out: p.out,
            pitch: p.pitch,
            gate: p.gate,
            velocity: p.velocity,
            release_end: p.release_end,
            steal_fade: time_to_samples(p.steal_fade, sr).unwrap_or(0),
            free_after: (sr as u64 * FREE_AFTER_MS / 1000).max(1),
            reuse_same_note: p.reuse_same_note,
        })
        .collect()
}

/// MIDI note `note`'s pitch in Hz: equal temperament, A4 = 440 Hz on
/// note 69 (fractions are microtones). Pinned `libm`: the same bits on
/// every build.
pub fn midi_note_hz(note: f64) -> f64 {
    440.0 * libm::pow(2.0, (note - 69.0) / 12.0)
}

/// A note's pitch in Hz: a MIDI note number 0…127 ([`midi_note_hz`];
/// fractions are microtones) or a frequency with its unit (`"440Hz"`).
pub fn note_hz(pitch: &RawValue, sample_rate: u32) -> Result<f64, String> {
    let hz = match pitch {
        RawValue::Number { value, .. } => {
            if !(0.0..=127.0).contains(value) {
                return Err(format!("note {value} is outside the MIDI range 0…127"));
            }
            midi_note_hz(*value)
        }
        RawValue::Text(t) => Quantity::parse(t)
            .and_then(|q| q.to_canonical(Dimension::Frequency, sample_rate))
            .map_err(|e| format!("`{t}` is not a note: {e}"))?,
        _ => return Err("a note is a number or a frequency".to_string()),
    };
    if hz.is_finite() && hz > 0.0 {
        Ok(hz)
    } else {
        Err(format!("note frequency {hz} Hz is not above 0"))
    }
}

/// The scene's note events on the sample clock: a note's time by its
/// module's profile (as events are), a `duration` adding its note-off.
/// Sorted by sample, then [`NoteAction::rank`], then file order.
pub(super) fn place_notes(scene: &Scene, plan: &Plan) -> Result<Vec<PlanNote>, Vec<Diagnostic>> {
    let sr = plan.sample_rate;
    let block = plan.block_size as u64;
    let mut errors = Vec::new();
    let mut notes: Vec<(u64, u8, usize, PlanNote)> = Vec::new();
    let pool_of: HashMap<&str, usize> = plan
        .voices
        .iter()
        .enumerate()
        .map(|(i, p)| (p.module.as_str(), i))
        .collect();
    let mut err = |loc: &Loc, msg: String, help: Option<String>| {
        let mut d = Diagnostic::error(&scene.file, Some(loc.clone()), msg);
        if let Some(h) = help {
            d = d.with_help(h);
        }
        errors.push(d);
    };
    for n in &scene.notes {
        let Some(&pool) = pool_of.get(n.module.as_str()) else {
            continue;
        };
        let vp = &plan.voices[pool];
        let profile = plan.nodes[vp.nodes[0][vp.out]].profile.profile;
        let place = |t: TimeSpec| -> Result<u64, String> {
            let exact = t.to_samples(sr).ok_or("the time is out of range")?;
            let s = if exact.is_integer() {
                exact.num
            } else {
                match profile.off_grid() {
                    OffGrid::Error => {
                        let f = exact.floor();
                        return Err(format!(
                            "the time is between samples {f} and {} at {sr} Hz, which {profile} does not allow",
                            f + 1
                        ));
                    }
                    OffGrid::SnapNearest => exact.round_half_even(),
                    OffGrid::AtBlock => exact.floor(),
                }
            };
            let s = u64::try_from(s).map_err(|_| "the time is out of range")?;
            Ok(
                if profile.event_timing() == EventTiming::BlockAccurate && block > 0 {
                    s / block * block
                } else {
                    s
                },
            )
        };
        let sample = match place(n.time) {
            Ok(s) => s,
            Err(e) => {
                err(&n.loc, format!("note event: {e}"), None);
                continue;
            }
        };
        let tag = n.index as u64 + 1;
        let key_of = |pitch: &RawValue| note_hz(pitch, sr).map(|hz| (hz.to_bits(), hz));
        match &n.kind {
            NoteKind::Sustain(on) => notes.push((
                sample,
                1,
                n.index,
                PlanNote {
                    sample,
                    pool,
                    action: NoteAction::Sustain(*on),
                },
            )),
            NoteKind::Off { pitch } => match key_of(pitch) {
                Ok((key, _)) => notes.push((
                    sample,
                    0,
                    n.index,
                    PlanNote {
                        sample,
                        pool,
                        action: NoteAction::Off { key, tag: 0 },
                    },
                )),
                Err(e) => err(&n.loc, format!("note event: {e}"), None),
            },
            NoteKind::On {
                pitch,
                velocity,
                duration,
            } => {
                let (key, pitch_hz) = match key_of(pitch) {
                    Ok(k) => k,
                    Err(e) => {
                        err(&n.loc, format!("note event: {e}"), None);
                        continue;
                    }
                };
                let end = match duration {
                    None => None,
                    Some(d) => match n
                        .time
                        .to_samples(sr)
                        .zip(d.to_samples(sr))
                        .map(|(_, len)| len.round_half_even())
                        .and_then(|len| u64::try_from(len).ok())
                    {
                        Some(len) => Some(sample.saturating_add(len.max(1))),
                        None => {
                            err(
                                &n.loc,
                                "note event: `duration` is out of range".to_string(),
                                None,
                            );
                            continue;
                        }
                    },
                };
                let tag = if end.is_some() { tag } else { 0 };
                notes.push((
                    sample,
                    2,
                    n.index,
                    PlanNote {
                        sample,
                        pool,
                        action: NoteAction::On {
                            key,
                            tag,
                            pitch_hz,
                            velocity: *velocity,
                        },
                    },
                ));
                if let Some(end) = end {
                    let end = if profile.event_timing() == EventTiming::BlockAccurate && block > 0 {
                        (end / block * block).max(sample + block)
                    } else {
                        end
                    };
                    notes.push((
                        end,
                        0,
                        n.index,
                        PlanNote {
                            sample: end,
                            pool,
                            action: NoteAction::Off { key, tag },
                        },
                    ));
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    notes.sort_by_key(|(s, r, i, _)| (*s, *r, *i));
    Ok(notes.into_iter().map(|(_, _, _, n)| n).collect())
}
