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
    Diagnostic, EdgeDecl, Endpoint, EventDecl, Loc, NodeDecl, NoteEventDecl, NoteKind, NoteTarget,
    RawValue, Scene, TimeSpec,
};
use std::collections::HashMap;

/// A stolen voice fades out over this long unless the module says.
pub(crate) const DEFAULT_STEAL_FADE_MS: u64 = 5;
/// A released voice is free once its sound has stayed below −100 dBFS this long.
pub(crate) const FREE_AFTER_MS: u64 = 50;
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
    legato: bool,
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
pub(super) fn expand(
    scene: &Scene,
    sample_rate: u32,
) -> Result<Option<(Scene, Layout)>, Vec<Diagnostic>> {
    let voice_modules: Vec<usize> = (0..scene.modules.len())
        .filter(|&m| scene.modules[m].voices.is_some())
        .collect();
    let mut errors = Errors {
        file: scene.file.as_str(),
        list: Vec::new(),
    };
    if voice_modules.is_empty() {
        notes_without_voices(scene, &mut errors);
        return if errors.list.is_empty() {
            Ok(None)
        } else {
            Err(errors.list)
        };
    }
    let templates = Templates::lay_out(scene, &voice_modules, sample_rate, &mut errors);
    let mut out = scene.clone();
    out.nodes = templates.copy_nodes();
    let (sums, sum_edges) = templates.voice_sums();
    out.nodes.extend(sums);
    out.edges = templates.copy_edges(&mut errors);
    out.edges.extend(sum_edges);
    templates.retarget_outputs(&mut out.outputs, &mut errors);
    out.events = templates.copy_events();
    templates.check_note_modules(&mut errors);
    if !errors.list.is_empty() {
        let mut all = errors.list;
        all.extend(scene.warnings.iter().cloned());
        return Err(all);
    }
    let pools = templates.pools.into_iter().map(|t| t.layout).collect();
    Ok(Some((out, Layout { pools })))
}

/// The errors [`expand`] finds, in the order it finds them.
struct Errors<'s> {
    file: &'s str,
    list: Vec<Diagnostic>,
}

impl Errors<'_> {
    fn push(&mut self, loc: &Loc, node: Option<&str>, msg: String, help: String) {
        let mut d = Diagnostic::error(self.file, Some(loc.clone()), msg).with_help(help);
        if let Some(n) = node {
            d = d.with_node(n);
        }
        self.list.push(d);
    }
}

/// A scene without voice modules: each note event is an error, as there
/// is nothing to play it.
fn notes_without_voices(scene: &Scene, errors: &mut Errors<'_>) {
    for n in &scene.notes {
        errors.push(
            &n.loc,
            None,
            format!("note event plays module `{}`, but the scene has no voice module", n.module),
            "a note plays a module with `\"voices\": N`; to change one node's param, give `node`, `param` and `value` instead".to_string(),
        );
    }
}

/// One voice module as [`expand`] lays it out.
struct Template {
    /// The module's index in the scene.
    module: usize,
    layout: PoolLayout,
    /// The output ports of its `out` node that its sums read: the first,
    /// and the second (empty when the node has one output); `None` when
    /// the node is unknown.
    ports: Option<(&'static str, &'static str)>,
}

/// A scene's voice modules laid out: their templates, and which module
/// each template node belongs to.
struct Templates<'s> {
    scene: &'s Scene,
    /// The scene's node ids → declaration index.
    node_ids: HashMap<&'s str, usize>,
    /// Template node id → (pool, its place in the template).
    member: HashMap<&'s str, (usize, usize)>,
    /// Module id → pool.
    pool_of: HashMap<&'s str, usize>,
    pools: Vec<Template>,
}

impl<'s> Templates<'s> {
    /// Lays out each of `voice_modules` (indices into the scene's
    /// modules); one whose template is empty is reported and left out.
    fn lay_out(
        scene: &'s Scene,
        voice_modules: &[usize],
        sample_rate: u32,
        errors: &mut Errors<'_>,
    ) -> Self {
        let node_ids: HashMap<&str, usize> = scene
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect();
        let mut member = HashMap::new();
        let mut pool_of = HashMap::new();
        let mut pools = Vec::new();
        for &mi in voice_modules {
            let Some(t) = lay_out_module(scene, mi, &node_ids, sample_rate, errors) else {
                continue;
            };
            let pool = pools.len();
            for (k, id) in t.layout.template.iter().enumerate() {
                member.insert(scene.nodes[node_ids[id.as_str()]].id.as_str(), (pool, k));
            }
            pool_of.insert(scene.modules[mi].id.as_str(), pool);
            pools.push(t);
        }
        Templates {
            scene,
            node_ids,
            member,
            pool_of,
            pools,
        }
    }

    /// The nodes: each template node once per voice, in the scene's order.
    fn copy_nodes(&self) -> Vec<NodeDecl> {
        let mut nodes = Vec::new();
        for n in &self.scene.nodes {
            match self.member.get(n.id.as_str()) {
                None => nodes.push(n.clone()),
                Some(&(p, _)) => {
                    for v in 0..self.pools[p].layout.count {
                        let mut c = n.clone();
                        c.id = voice_node_id(&n.id, v);
                        nodes.push(c);
                    }
                }
            }
        }
        nodes
    }

    /// Each module's sums: a `mix` of its voices' `out` node named by the
    /// module's id, and `id#r` of that node's second output when it has
    /// one, with the edges that feed them (voice `v` into `in{v}`).
    fn voice_sums(&self) -> (Vec<NodeDecl>, Vec<EdgeDecl>) {
        let mut mixes: Vec<NodeDecl> = Vec::new();
        let mut edges: Vec<EdgeDecl> = Vec::new();
        for t in &self.pools {
            let m = &self.scene.modules[t.module];
            let pool = &t.layout;
            let Some((left, right)) = t.ports else {
                continue;
            };
            let tmpl = &self.scene.nodes[self.node_ids[pool.template[pool.out].as_str()]];
            let mut sum = |id: String, port: &str| {
                mixes.push(NodeDecl {
                    id: id.clone(),
                    op: "mix".to_string(),
                    params: Vec::new(),
                    ramp: None,
                    module: Some(t.module),
                    overrides: Default::default(),
                    loc: m.loc.clone(),
                    op_loc: m.loc.clone(),
                    overrides_loc: None,
                });
                for v in 0..pool.count {
                    edges.push(EdgeDecl {
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
        (mixes, edges)
    }

    /// An endpoint as a source: a voice module's id is its sum (`out`, and
    /// `out_r` for the second channel when it has one); `None` for an
    /// endpoint that is no module's. An unknown port is an error, and the
    /// endpoint stays as it is.
    fn module_source(&self, ep: &Endpoint, loc: &Loc, errors: &mut Errors<'_>) -> Option<Endpoint> {
        let p = *self.pool_of.get(ep.node.as_str())?;
        let has_right = self.pools[p].ports.is_some_and(|(_, r)| !r.is_empty());
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
                errors.push(
                    loc,
                    None,
                    format!("voice module `{}` has no output `{other}`", ep.node),
                    format!("a voice module's outputs are {ports}: the sum of its voices"),
                );
                Some(ep.clone())
            }
        }
    }

    /// The edges: one inside a template once per voice, one from outside
    /// into a template into every voice, one from a module's id from its
    /// sum. An edge into a module's id, or from a template node to outside
    /// its module, is an error.
    fn copy_edges(&self, errors: &mut Errors<'_>) -> Vec<EdgeDecl> {
        let inside = |ep: &Endpoint| self.member.get(ep.node.as_str()).copied();
        let module = |p: usize| self.pools[p].layout.module.as_str();
        let count = |p: usize| self.pools[p].layout.count;
        let mut edges = Vec::new();
        for e in &self.scene.edges {
            let from_mod = self.module_source(&e.from, &e.loc, errors);
            if self.pool_of.contains_key(e.to.node.as_str()) {
                errors.push(
                    &e.loc,
                    None,
                    format!("edge into voice module `{}`", e.to.node),
                    "a voice module's id is the sum of its voices, an output; feed one of its nodes instead (e.g. `osc:freq`), which feeds every voice".to_string(),
                );
                continue;
            }
            match (inside(&e.from), inside(&e.to)) {
                (Some((pf, _)), Some((pt, _))) if pf == pt => {
                    for v in 0..count(pf) {
                        let mut c = e.clone();
                        c.from.node = voice_node_id(&e.from.node, v);
                        c.to.node = voice_node_id(&e.to.node, v);
                        edges.push(c);
                    }
                }
                (Some((pf, _)), _) => {
                    errors.push(
                        &e.loc,
                        None,
                        format!(
                            "edge from `{}`, a node of voice module `{}`, to outside it",
                            e.from,
                            module(pf)
                        ),
                        format!(
                            "a voice module's sound leaves it through the module's id: `{}` (the sum of its voices)",
                            module(pf)
                        ),
                    );
                }
                (None, Some((pt, _))) => {
                    for v in 0..count(pt) {
                        let mut c = e.clone();
                        if let Some(f) = &from_mod {
                            c.from = f.clone();
                        }
                        c.to.node = voice_node_id(&e.to.node, v);
                        edges.push(c);
                    }
                }
                (None, None) => {
                    let mut c = e.clone();
                    if let Some(f) = from_mod {
                        c.from = f;
                    }
                    edges.push(c);
                }
            }
        }
        edges
    }

    /// The output buses: a module's id plays its sum; a template node is
    /// an error (the module's id plays its voices).
    fn retarget_outputs(&self, outputs: &mut [crate::scene::OutputBus], errors: &mut Errors<'_>) {
        for bus in outputs {
            for (ep, loc) in &mut bus.channels {
                if let Some(&(p, _)) = self.member.get(ep.node.as_str()) {
                    let module = &self.pools[p].layout.module;
                    errors.push(
                        loc,
                        None,
                        format!("output `{ep}` is a node of voice module `{module}`"),
                        format!("play the module's id, `{module}`: the sum of its voices"),
                    );
                } else if let Some(m) = self.module_source(ep, loc, errors) {
                    *ep = m;
                }
            }
        }
    }

    /// The events: one on a template node moves every voice's copy.
    fn copy_events(&self) -> Vec<EventDecl> {
        let mut events = Vec::new();
        for ev in &self.scene.events {
            match self.member.get(ev.node.as_str()) {
                Some(&(p, _)) => {
                    for v in 0..self.pools[p].layout.count {
                        let mut c = ev.clone();
                        c.node = voice_node_id(&ev.node, v);
                        events.push(c);
                    }
                }
                None => events.push(ev.clone()),
            }
        }
        events
    }

    /// A note event must play a voice module.
    fn check_note_modules(&self, errors: &mut Errors<'_>) {
        let scene = self.scene;
        for n in &scene.notes {
            if self.pool_of.contains_key(n.module.as_str()) {
                continue;
            }
            let known = scene.modules.iter().any(|m| m.id == n.module);
            let msg = if known {
                format!(
                    "note event plays module `{}`, which has no voices",
                    n.module
                )
            } else {
                format!("note event plays unknown module `{}`", n.module)
            };
            let modules = self.pools.iter().map(|p| p.layout.module.as_str());
            errors.push(&n.loc, None, msg, did_you_mean(&n.module, modules));
        }
    }
}

/// Voice module `mi` laid out: its template (the nodes it holds, in the
/// scene's order), its `out` and `release_end` nodes, where a note's
/// pitch, gate and velocity go, and its steal fade. `None` when it holds
/// no nodes; every other problem is reported and the module still laid
/// out, so that the passes after find theirs too.
fn lay_out_module(
    scene: &Scene,
    mi: usize,
    node_ids: &HashMap<&str, usize>,
    sample_rate: u32,
    errors: &mut Errors<'_>,
) -> Option<Template> {
    let m = &scene.modules[mi];
    let v = m.voices.as_ref().expect("a voice module");
    let template: Vec<&NodeDecl> = scene
        .nodes
        .iter()
        .filter(|n| n.module == Some(mi))
        .collect();
    let ctx = format!("voice module `{}`", m.id);
    if template.is_empty() {
        errors.push(
            &m.loc,
            None,
            format!("{ctx} has no nodes"),
            "a voice module's nodes are the template each voice plays".to_string(),
        );
        return None;
    }
    if let Some(&i) = node_ids.get(m.id.as_str()) {
        errors.push(
            &scene.nodes[i].loc,
            Some(&m.id),
            format!("node `{}` has the id of voice module `{}`", m.id, m.id),
            "the module's id is the sum of its voices (an endpoint); rename the node or the module"
                .to_string(),
        );
    }
    let ids: Vec<String> = template.iter().map(|n| n.id.clone()).collect();
    let out = match &v.out {
        Some(_) => template_node(&ids, &ctx, "out", &v.out, errors),
        None => Some(ids.len() - 1),
    };
    let release_end = template_node(&ids, &ctx, "release_end", &v.release_end, errors);
    let pitch = note_target(&template, &ctx, "pitch", &v.pitch, errors);
    let gate = note_target(&template, &ctx, "gate", &v.gate, errors);
    let velocity = note_target(&template, &ctx, "velocity", &v.velocity, errors);
    let steal_fade = steal_fade(&ctx, &v.steal_fade, sample_rate, errors);
    let outs = out
        .and_then(|k| lookup(&template[k].op))
        .map(|op: &OpSpec| op.outputs);
    let ports = match outs {
        Some([a, b, ..]) => Some((*a, *b)),
        Some([a]) => Some((*a, "")),
        _ => None,
    };
    Some(Template {
        module: mi,
        layout: PoolLayout {
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
            legato: v.legato,
        },
        ports,
    })
}

/// The place in the template `ids` of the node a module's `what` names
/// (`out`, `release_end`); `None` when not given or, reported, not one of
/// the template's nodes.
fn template_node(
    ids: &[String],
    ctx: &str,
    what: &str,
    key: &Option<(String, Loc)>,
    errors: &mut Errors<'_>,
) -> Option<usize> {
    let (name, loc) = key.as_ref()?;
    let found = ids.iter().position(|i| i == name);
    if found.is_none() {
        errors.push(
            loc,
            None,
            format!("`{what}` of {ctx} names `{name}`, which is not one of its nodes"),
            did_you_mean(name, ids.iter().map(String::as_str)),
        );
    }
    found
}

/// Where a module's `note.{what}` goes: (place in the template, param
/// index) of a number param that events may set, and for `pitch` one in
/// Hz; `None` when not given or, reported, not such a param.
fn note_target(
    template: &[&NodeDecl],
    ctx: &str,
    what: &str,
    t: &Option<NoteTarget>,
    errors: &mut Errors<'_>,
) -> Option<(usize, usize)> {
    let t = t.as_ref()?;
    let Some(k) = template.iter().position(|n| n.id == t.node) else {
        errors.push(
            &t.loc,
            None,
            format!(
                "`note.{what}` of {ctx} names `{}`, which is not one of its nodes",
                t.node
            ),
            did_you_mean(&t.node, template.iter().map(|n| n.id.as_str())),
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
                        errors.push(
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
            errors.push(
                &t.loc,
                Some(&t.node),
                format!("`note.{what}` of {ctx}: {why}"),
                did_you_mean(&t.param, op.params.iter().filter(settable).map(|p| p.name)),
            );
            None
        }
    }
}

/// A module's `steal_fade`: the one given (an error past
/// [`MAX_STEAL_FADE_MS`]), else [`DEFAULT_STEAL_FADE_MS`].
fn steal_fade(
    ctx: &str,
    given: &Option<(TimeSpec, Loc)>,
    sample_rate: u32,
    errors: &mut Errors<'_>,
) -> TimeSpec {
    let Some((t, loc)) = given else {
        return TimeSpec::parse(&format!("{DEFAULT_STEAL_FADE_MS}ms")).expect("a time");
    };
    // Longer than the most at the session's rate (a time in samples is
    // taken as it is): samples · 1000 > ms · rate, exactly.
    let most = i128::from(MAX_STEAL_FADE_MS) * i128::from(sample_rate);
    let longer = t.to_samples(sample_rate).is_none_or(|n| {
        match (n.num.checked_mul(1000), most.checked_mul(n.den)) {
            (Some(fade), Some(most)) => fade > most,
            _ => true,
        }
    });
    if longer {
        errors.push(
            loc,
            None,
            format!("`steal_fade` of {ctx} is longer than {MAX_STEAL_FADE_MS} ms"),
            "a stolen voice fades out in a few ms; 5ms is the default".to_string(),
        );
    }
    *t
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
            legato: p.legato,
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
pub(crate) fn note_hz(pitch: &RawValue, sample_rate: u32) -> Result<f64, String> {
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
    let pool_of: HashMap<&str, usize> = plan
        .voices
        .iter()
        .enumerate()
        .map(|(i, p)| (p.module.as_str(), i))
        .collect();
    let mut errors = Vec::new();
    let mut notes: Vec<(usize, PlanNote)> = Vec::new();
    for n in &scene.notes {
        let Some(&pool) = pool_of.get(n.module.as_str()) else {
            continue;
        };
        match place_note(n, pool, plan) {
            Ok(placed) => notes.extend(placed.into_iter().map(|p| (n.index, p))),
            Err(e) => errors.push(Diagnostic::error(
                &scene.file,
                Some(n.loc.clone()),
                format!("note event: {e}"),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    notes.sort_by_key(|(i, n)| (n.sample, n.action.rank(), *i));
    Ok(notes.into_iter().map(|(_, n)| n).collect())
}

/// Note event `n`, which plays voice pool `pool`, on the sample clock: a
/// pedal change, a note-off, or a note-on followed by its note-off when
/// it has a `duration` (the pair tagged with the event's place in the
/// file, so that the note-off ends that note only). The error says what
/// is wrong with it.
fn place_note(n: &NoteEventDecl, pool: usize, plan: &Plan) -> Result<Vec<PlanNote>, String> {
    let vp = &plan.voices[pool];
    let clock = NoteClock {
        profile: plan.nodes[vp.nodes[0][vp.out]].profile.profile,
        sample_rate: plan.sample_rate,
        block: plan.block_size as u64,
    };
    let sample = clock.place(n.time)?;
    let note = |sample, action| PlanNote {
        sample,
        pool,
        action,
    };
    let key_of = |pitch: &RawValue| note_hz(pitch, clock.sample_rate).map(|hz| (hz.to_bits(), hz));
    match &n.kind {
        NoteKind::Sustain(on) => Ok(vec![note(sample, NoteAction::Sustain(*on))]),
        NoteKind::Off { pitch } => {
            let (key, _) = key_of(pitch)?;
            Ok(vec![note(sample, NoteAction::Off { key, tag: 0 })])
        }
        NoteKind::On {
            pitch,
            velocity,
            duration,
        } => {
            let (key, pitch_hz) = key_of(pitch)?;
            let end = match duration {
                None => None,
                Some(d) => Some(clock.end(n.time, *d, sample)?),
            };
            let tag = if end.is_some() { n.index as u64 + 1 } else { 0 };
            let on = NoteAction::On {
                key,
                tag,
                pitch_hz,
                velocity: *velocity,
            };
            let mut placed = vec![note(sample, on)];
            if let Some(end) = end {
                placed.push(note(end, NoteAction::Off { key, tag }));
            }
            Ok(placed)
        }
    }
}

/// How the notes of one voice module land on the sample clock: by the
/// profile of the module's `out` node, at the session's rate and block.
struct NoteClock {
    profile: crate::profile::Profile,
    sample_rate: u32,
    block: u64,
}

impl NoteClock {
    /// Whether a note lands on the start of its block.
    fn block_accurate(&self) -> bool {
        self.profile.event_timing() == EventTiming::BlockAccurate && self.block > 0
    }

    /// The sample a note at `t` lands on: a time between two samples as
    /// the profile treats one off the grid (an error, the nearest sample,
    /// or the one before), then the start of its block under a
    /// block-accurate profile.
    fn place(&self, t: TimeSpec) -> Result<u64, String> {
        let (sr, profile) = (self.sample_rate, self.profile);
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
        Ok(if self.block_accurate() {
            s / self.block * self.block
        } else {
            s
        })
    }

    /// The note-off of a note at `time` lasting `duration`, which landed
    /// on `sample`: the duration rounded to the nearest sample (at least
    /// one) after it; under a block-accurate profile the start of its
    /// block, and never before the block after the note-on's.
    fn end(&self, time: TimeSpec, duration: TimeSpec, sample: u64) -> Result<u64, String> {
        let len = time
            .to_samples(self.sample_rate)
            .zip(duration.to_samples(self.sample_rate))
            .map(|(_, len)| len.round_half_even())
            .and_then(|len| u64::try_from(len).ok())
            .ok_or("`duration` is out of range")?;
        let end = sample.saturating_add(len.max(1));
        Ok(if self.block_accurate() {
            (end / self.block * self.block).max(sample + self.block)
        } else {
            end
        })
    }
}

#[cfg(test)]
mod tests {
    use super::midi_note_hz;
    use crate::graph::{compile, CompileOptions, NoteAction};
    use crate::profile::Profile;

    /// The notes of a voice module `pad` playing `events` (the events
    /// array's inside), compiled under `profile` at 48 kHz in blocks of 64:
    /// (sample, action) in the plan's order.
    fn placed(profile: Profile, events: &str) -> Vec<(u64, NoteAction)> {
        let text = format!(
            r#"{{ "version": "1.0", "sample_rate": 48000,
  "modules": [ {{ "id": "pad", "voices": 2, "note": {{ "pitch": "osc.freq", "gate": "env.gate" }},
      "nodes": [ {{ "id": "osc", "op": "sine" }}, {{ "id": "env", "op": "adsr" }},
                 {{ "id": "vca", "op": "multiply" }} ] }} ],
  "edges": [ {{ "from": "osc", "to": "vca:a" }}, {{ "from": "env", "to": "vca:b" }} ],
  "outputs": {{ "main": ["pad"] }},
  "events": [ {events} ] }}"#
        );
        let scene = crate::scene::load_str(&text, "t.json", None).expect("the scene loads");
        let opts = CompileOptions {
            profile: Some(profile),
            block_size: Some(64),
            ..CompileOptions::default()
        };
        let plan = compile(&scene, &opts).expect("it compiles");
        plan.notes.iter().map(|n| (n.sample, n.action)).collect()
    }

    /// A note-on of MIDI note 60 at full velocity, tagged `tag`.
    fn on(tag: u64) -> NoteAction {
        let hz = midi_note_hz(60.0);
        NoteAction::On {
            key: hz.to_bits(),
            tag,
            pitch_hz: hz,
            velocity: 1.0,
        }
    }

    fn off(tag: u64) -> NoteAction {
        NoteAction::Off {
            key: midi_note_hz(60.0).to_bits(),
            tag,
        }
    }

    // A note at 2 ms (sample 96) lasting 0.2 ms (9.6 samples, 10 once
    // rounded): a sample-accurate profile plays both where they fall; a
    // block-accurate one starts the note at its block (64), and its
    // note-off, which falls in that same block, comes a block later (128)
    // rather than with the note-on. The note-off carries the note's tag,
    // its place in the events plus one.
    #[test]
    fn a_timed_note_ends_after_its_duration_and_never_in_its_own_block() {
        let events = r#"{ "time": "2ms", "module": "pad", "note": 60, "duration": "0.2ms" }"#;
        let (at, len, block) = (96u64, 10u64, 64u64);
        assert_eq!(
            placed(Profile::Repro, events),
            vec![(at, on(1)), (at + len, off(1))]
        );
        let start = at / block * block;
        assert_eq!(
            placed(Profile::Live, events),
            vec![(start, on(1)), (start + block, off(1))]
        );
    }

    // On one sample, note-offs come first, then the pedal, then note-ons,
    // whatever their order in the file; a note without a duration is
    // untagged.
    #[test]
    fn notes_on_one_sample_play_offs_then_the_pedal_then_ons() {
        let events = r#"{ "time": "1ms", "module": "pad", "note": 60 },
            { "time": "1ms", "module": "pad", "sustain": true },
            { "time": "1ms", "module": "pad", "note": 60, "off": true }"#;
        assert_eq!(
            placed(Profile::Repro, events),
            vec![(48, off(0)), (48, NoteAction::Sustain(true)), (48, on(0)),]
        );
    }
}
