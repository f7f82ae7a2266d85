//! Pass 11b, the scene's `controls`: each target checked like an event's
//! (a known node, a param an event may set), its `min`/`max` resolved in
//! the param's unit and within its range, its curve fitting them (`exp`
//! and `db` need both ends above zero), and its ramp in samples.

use super::{did_you_mean, time_to_samples, Ctx, Decl, Session};
use crate::graph::controls::{
    default_range, ControlMap, ControlSource, ControlTarget, TargetRange, VoiceParam,
    DEFAULT_BEND_SEMITONES,
};
use crate::graph::Plan;
use crate::ops::{resolve_param, ParamError, ParamKind, ParamSpec, Value};
use crate::scene::Diagnostic;
use crate::scene::{ControlDecl, ControlSourceDecl, Curve, MidiSource, RawValue, TargetDecl};
use std::collections::HashMap;

/// Resolves every control; one that fails is reported and left out.
pub(super) fn resolve_controls(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &[Option<Decl>],
    session: &Session,
) -> Vec<ControlMap> {
    let scene = cx.scene;
    let scope = Scope {
        index,
        decls,
        session,
    };
    let mut out = Vec::new();
    let mut osc_seen: HashMap<&str, usize> = HashMap::new();
    for c in &scene.controls {
        if let ControlSourceDecl::Osc(a) = &c.source {
            if let Some(first) = osc_seen.insert(a.as_str(), c.index) {
                cx.warn(
                    &c.loc,
                    None,
                    format!(
                        "`{a}` is also mapped by controls[{first}]: a message to it moves both"
                    ),
                    None,
                );
            }
        }
        if let Some(m) = resolve_one(cx, &scope, c) {
            out.push(m);
        }
    }
    out
}

fn resolve_one(cx: &mut Ctx<'_>, scope: &Scope<'_>, c: &ControlDecl) -> Option<ControlMap> {
    let is_note = matches!(c.source, ControlSourceDecl::Midi(MidiSource::Note { .. }));
    if !is_note && (c.pitch.is_some() || c.velocity.is_some()) {
        cx.error(
            &c.loc,
            None,
            "`pitch` and `velocity` belong to a note control".to_string(),
            Some("use `\"midi\": {\"note\": \"any\"}` as the source".to_string()),
        );
        return None;
    }
    if let Some((m, loc)) = &c.module {
        check_module(cx, c, m, loc, is_note)?;
    } else if c.target.is_none() {
        cx.error(&c.loc, None, "control has no `node`".to_string(), None);
        return None;
    }
    if c.raw && !matches!(c.source, ControlSourceDecl::Osc(_)) {
        cx.error(
            &c.loc,
            None,
            "`raw` belongs to an OSC control".to_string(),
            Some("MIDI values always scale from 0…127 to `min`…`max`".to_string()),
        );
        return None;
    }
    // A note's gate and velocity span 0…1 unless the control says
    // otherwise (a gate param's own range may be far wider).
    let unit = is_note.then_some((0.0, 1.0));
    let target = match &c.target {
        None => None,
        Some(t) => {
            let scaling = Scaling { raw: c.raw, unit };
            Some(resolve_target(cx, scope, t, scaling)?)
        }
    };
    let pitch = match &c.pitch {
        None => None,
        Some(t) => {
            if t.min.is_some() || t.max.is_some() || t.curve.is_some() {
                cx.error(
                    &t.loc,
                    Some(&t.node),
                    "a note's `pitch` takes no range: it is the note's frequency (or number)"
                        .to_string(),
                    Some("remove `min`, `max` and `curve`".to_string()),
                );
                return None;
            }
            let scaling = Scaling {
                raw: true,
                unit: None,
            };
            Some(resolve_target(cx, scope, t, scaling)?)
        }
    };
    let velocity = match &c.velocity {
        None => None,
        Some(t) => {
            let scaling = Scaling { raw: false, unit };
            Some(resolve_target(cx, scope, t, scaling)?)
        }
    };
    let plays_voices = is_note && c.module.is_some();
    let bend = match &c.bend {
        Some((_, loc)) if !plays_voices || !matches!(c.source, ControlSourceDecl::Midi(_)) => {
            cx.error(
                loc,
                None,
                "`bend` (a pitch bend range in semitones) belongs to a MIDI note control that plays a voice module".to_string(),
                Some("move it onto the control with `\"midi\": {\"note\": \"any\"}` and `\"module\"`; to map the bend wheel onto a param, write `\"midi\": {\"bend\": true}`".to_string()),
            );
            return None;
        }
        Some((semitones, _)) => *semitones,
        None if plays_voices && matches!(c.source, ControlSourceDecl::Midi(_)) => {
            DEFAULT_BEND_SEMITONES
        }
        None => 0.0,
    };
    let ramp = match c.ramp {
        None => 0,
        Some(r) => match time_to_samples(r, scope.session.sample_rate) {
            Some(s) => s,
            None => {
                cx.error(
                    &c.loc,
                    None,
                    "control ramp is out of range".to_string(),
                    None,
                );
                return None;
            }
        },
    };
    if ramp > 0 {
        if let Some(t) = &target {
            if !matches!(t.range, TargetRange::Number { .. }) {
                cx.error(
                    &c.loc,
                    Some(&t.node),
                    format!(
                        "param `{}` is not a continuous number, so it cannot ramp",
                        t.param
                    ),
                    Some("remove `ramp`".to_string()),
                );
                return None;
            }
        }
    }
    Some(ControlMap {
        source: match &c.source {
            ControlSourceDecl::Osc(a) => ControlSource::Osc(a.clone()),
            ControlSourceDecl::Midi(m) => ControlSource::Midi(*m),
        },
        target,
        module: c.module.as_ref().map(|(m, _)| m.clone()),
        pitch,
        velocity,
        ramp,
        raw: c.raw,
        bend,
        touch: None,
        index: c.index,
        loc: c.loc.clone(),
    })
}

/// Poly aftertouch onto a voice module's template node moves only the
/// voice playing the pressed note: each such control learns the node's
/// place in the template and the param's index. A param a note sets
/// (the module's `note.pitch`, `gate`, `velocity`) is an error: the next
/// note would overwrite it.
pub(super) fn voice_touches(plan: &mut Plan) -> Result<(), Vec<Diagnostic>> {
    let mut errors = Vec::new();
    for c in &mut plan.controls {
        let (ControlSource::Midi(MidiSource::PolyAftertouch { .. }), Some(t)) =
            (&c.source, &c.target)
        else {
            continue;
        };
        for pool in &plan.voices {
            let Some(k) = pool.template.iter().position(|id| *id == t.node) else {
                continue;
            };
            let op = plan.nodes[pool.nodes[0][k]].op;
            let Some(pi) = op.param_index(t.param) else {
                continue;
            };
            if [pool.pitch, pool.gate, pool.velocity].contains(&Some((k, pi))) {
                errors.push(
                    Diagnostic::error(
                        &plan.file,
                        Some(c.loc.clone()),
                        format!(
                            "poly aftertouch cannot move `{}.{}`: voice module `{}`'s notes set it",
                            t.node, t.param, pool.module
                        ),
                    )
                    .with_node(t.node.clone())
                    .with_help(
                        "map the pressure onto another param of the voice (a level, a cutoff)",
                    ),
                );
                continue;
            }
            c.touch = Some(VoiceParam {
                module: pool.module.clone(),
                node: k as u32,
                param: pi as u16,
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A control's `module`: a note source (MIDI notes, or an OSC address
/// taking NOTE VELOCITY) playing a module with `voices`, and nothing
/// else: the module's `voices.note` says where a note's pitch, gate and
/// velocity go, so `node`, `param`, `pitch`, `velocity`, `ramp` and `raw`
/// have no meaning beside it.
fn check_module(
    cx: &mut Ctx<'_>,
    c: &ControlDecl,
    module: &str,
    loc: &crate::scene::Loc,
    is_note: bool,
) -> Option<()> {
    let scene = cx.scene;
    if !is_note && !matches!(c.source, ControlSourceDecl::Osc(_)) {
        cx.error(
            &c.loc,
            None,
            "only notes play a voice module".to_string(),
            Some("use `\"midi\": {\"note\": \"any\"}` or an OSC address as the source".to_string()),
        );
        return None;
    }
    let extra = [
        (c.target.is_some(), "`node` and `param`"),
        (c.pitch.is_some(), "`pitch`"),
        (c.velocity.is_some(), "`velocity`"),
        (c.ramp.is_some(), "`ramp`"),
        (c.raw, "`raw`"),
    ];
    if let Some((_, what)) = extra.iter().find(|(given, _)| *given) {
        cx.error(
            &c.loc,
            None,
            format!("a control that plays voice module `{module}` takes no {what}"),
            Some(format!(
                "the module's `voices.note` says where a note's pitch, gate and velocity go; remove {what}, or drop `module` to move a param"
            )),
        );
        return None;
    }
    let voiced = || {
        scene
            .modules
            .iter()
            .filter(|m| m.voices.is_some())
            .map(|m| m.id.as_str())
    };
    match scene.modules.iter().find(|m| m.id == module) {
        Some(m) if m.voices.is_some() => Some(()),
        Some(_) => {
            let help = match voiced().next() {
                None => "give the module `\"voices\": N` to play notes on it".to_string(),
                Some(_) => did_you_mean(module, voiced()),
            };
            cx.error(
                loc,
                None,
                format!("control plays module `{module}`, which has no voices"),
                Some(help),
            );
            None
        }
        None => {
            let help = match voiced().next() {
                None => "the scene has no voice module (a module with `\"voices\": N`)".to_string(),
                Some(_) => did_you_mean(module, voiced()),
            };
            cx.error(
                loc,
                None,
                format!("control plays unknown module `{module}`"),
                Some(help),
            );
            None
        }
    }
}

/// The declaration index of `node`: a node of the scene, or (for a voice
/// module's template node, whose copies are `node#0`, `node#1`, …) its
/// first voice's copy, which every copy shares ops and params with.
fn target_node(index: &HashMap<&str, usize>, node: &str) -> Option<usize> {
    index
        .get(node)
        .or_else(|| index.get(crate::graph::voice_node_id(node, 0).as_str()))
        .copied()
}

/// What a control's targets are resolved against: the scene's nodes by
/// id, their declarations, and the session's rate and tempo.
struct Scope<'a> {
    index: &'a HashMap<&'a str, usize>,
    decls: &'a [Option<Decl>],
    session: &'a Session,
}

/// How a control's values reach its target. `raw`: values come in the
/// param's unit, so `min`/`max` do not apply. `unit`: the default
/// `min`/`max` of a number param instead of its own range, where that
/// range holds them.
#[derive(Clone, Copy)]
struct Scaling {
    raw: bool,
    unit: Option<(f64, f64)>,
}

/// A target's `min` and `max`, resolved in the param's unit.
#[derive(Clone, Copy)]
struct Bounds {
    min: Option<f64>,
    max: Option<f64>,
}

/// The ends and curve of a number target's range, as they are fitted.
struct Span<'r> {
    lo: &'r mut f64,
    hi: &'r mut f64,
    curve: &'r mut Curve,
}

/// A target's node and param (as an event's are checked) and its range,
/// scaled as `scaling` says.
fn resolve_target(
    cx: &mut Ctx<'_>,
    scope: &Scope<'_>,
    t: &TargetDecl,
    scaling: Scaling,
) -> Option<ControlTarget> {
    let ni = known_node(cx, scope.index, t)?;
    let d = scope.decls[ni].as_ref()?;
    let (spec, mut range) = movable_param(cx, d, t)?;
    if scaling.raw && (t.min.is_some() || t.max.is_some()) {
        cx.error(
            &t.loc,
            Some(&t.node),
            "`min` and `max` do not apply with `\"raw\": true`: a raw value is in the param's own unit".to_string(),
            Some("remove `min` and `max`, or `raw` to map a position 0…1 onto them".to_string()),
        );
        return None;
    }
    let bounds = Bounds {
        min: resolve_bound(cx, scope.session, spec, t, &t.min, "min")?,
        max: resolve_bound(cx, scope.session, spec, t, &t.max, "max")?,
    };
    match &mut range {
        TargetRange::Number {
            min: lo,
            max: hi,
            curve,
            ..
        } => fit_number_range(cx, t, spec, Span { lo, hi, curve }, bounds, scaling)?,
        _ if t.curve.is_some() => {
            cx.error(
                &t.loc,
                Some(&t.node),
                format!(
                    "`curve` applies to a number param; `{}` is not one",
                    spec.name
                ),
                None,
            );
            return None;
        }
        _ => {}
    }
    Some(ControlTarget {
        node: t.node.clone(),
        param: spec.name,
        range,
    })
}

/// The declaration index of a target's node, or an error naming the
/// nodes a control may target.
fn known_node(cx: &mut Ctx<'_>, index: &HashMap<&str, usize>, t: &TargetDecl) -> Option<usize> {
    if let Some(ni) = target_node(index, &t.node) {
        return Some(ni);
    }
    // A copy `osc#3` is named by its template node `osc`.
    let ids = cx
        .scene
        .nodes
        .iter()
        .filter_map(|n| match n.id.split_once('#') {
            None => Some(n.id.as_str()),
            Some((t, "0")) => Some(t),
            Some(_) => None,
        });
    let help = did_you_mean(&t.node, ids);
    cx.error(
        &t.loc,
        None,
        format!("control targets unknown node `{}`", t.node),
        Some(help),
    );
    None
}

/// The target's param of the node declared as `d`, and its whole range:
/// an error unless the node has the param and an event may move it.
fn movable_param(
    cx: &mut Ctx<'_>,
    d: &Decl,
    t: &TargetDecl,
) -> Option<(&'static ParamSpec, TargetRange)> {
    let settable = || {
        d.op.params
            .iter()
            .filter(|p| p.settable_by_events && default_range(&p.kind).is_some())
            .map(|p| p.name)
    };
    let Some(pi) = d.op.param_index(&t.param) else {
        cx.error(
            &t.loc,
            Some(&t.node),
            format!(
                "control targets unknown param `{}` of `{}`",
                t.param, d.op.name
            ),
            Some(did_you_mean(&t.param, settable())),
        );
        return None;
    };
    let spec = &d.op.params[pi];
    let Some(range) = default_range(&spec.kind).filter(|_| spec.settable_by_events) else {
        cx.error(
            &t.loc,
            Some(&t.node),
            format!(
                "param `{}` of `{}` cannot be moved by a control: it is fixed when the node is built",
                spec.name, d.op.name
            ),
            Some(did_you_mean(&t.param, settable())),
        );
        return None;
    };
    Some((spec, range))
}

/// A target's `min` or `max` (`which`) in the param's unit: `Some(None)`
/// when not given, `None` (reported) when it is not a number of it.
fn resolve_bound(
    cx: &mut Ctx<'_>,
    session: &Session,
    spec: &ParamSpec,
    t: &TargetDecl,
    given: &Option<(RawValue, crate::scene::Loc)>,
    which: &str,
) -> Option<Option<f64>> {
    let Some((v, loc)) = given else {
        return Some(None);
    };
    if !matches!(spec.kind, ParamKind::Number { .. }) {
        cx.error(
            loc,
            Some(&t.node),
            format!(
                "`{which}` applies to a number param; `{}` is not one",
                spec.name
            ),
            Some("a position 0…1 picks an enum value in order; remove it".to_string()),
        );
        return None;
    }
    match resolve_param(spec, v, session.sample_rate, session.tempo.as_ref()) {
        Ok(Value::Number(x)) => Some(Some(x)),
        Ok(_) => unreachable!("numbers resolve to numbers"),
        Err(ParamError::WrongUnit(e)) => {
            cx.error(loc, Some(&t.node), format!("control `{which}`: {e}"), None);
            None
        }
        Err(ParamError::Invalid { message, help }) => {
            cx.error(
                loc,
                Some(&t.node),
                format!("control `{which}`: {message}"),
                help,
            );
            None
        }
    }
}

/// Fits a number target's range: the param's own, narrowed to the
/// scaling's `unit` where it holds it, then to the given `min` and `max`,
/// with the target's curve. Warns of a control spanning a range so wide
/// that its middle means little, and of equal ends; refuses a range that
/// is not finite (unless raw) and an `exp` or `db` curve that does not
/// lie above zero.
fn fit_number_range(
    cx: &mut Ctx<'_>,
    t: &TargetDecl,
    spec: &ParamSpec,
    span: Span<'_>,
    bounds: Bounds,
    scaling: Scaling,
) -> Option<()> {
    let Span {
        lo: lo_end,
        hi: hi_end,
        curve,
    } = span;
    let Bounds { min, max } = bounds;
    let Scaling { raw, unit } = scaling;
    if let Some((a, b)) = unit.filter(|(a, b)| *lo_end <= *a && *b <= *hi_end) {
        (*lo_end, *hi_end) = (a, b);
    }
    if let Some(m) = min {
        *lo_end = m;
    }
    if let Some(m) = max {
        *hi_end = m;
    }
    *curve = t.curve.unwrap_or_default();
    if !raw
        && unit.is_none()
        && min.is_none()
        && max.is_none()
        && *hi_end > 1000.0 * lo_end.abs().max(1.0)
    {
        cx.warn(
            &t.loc,
            Some(&t.node),
            format!(
                "the control spans `{}`'s whole range, {} … {}: a position of 0.5 is {}",
                spec.name,
                lo_end,
                hi_end,
                *lo_end + 0.5 * (*hi_end - *lo_end)
            ),
            Some("give the control `min` and `max` (and perhaps `\"curve\": \"exp\"`)".to_string()),
        );
    }
    if min.is_some() && min == max {
        cx.warn(
            &t.loc,
            Some(&t.node),
            "`min` and `max` are equal: the control always sets the same value".to_string(),
            None,
        );
    }
    let finite = lo_end.is_finite() && hi_end.is_finite();
    if !raw && !finite {
        cx.error(
            &t.loc,
            Some(&t.node),
            format!("param `{}` has no finite range of its own", spec.name),
            Some("give the control `min` and `max`".to_string()),
        );
        return None;
    }
    if matches!(curve, Curve::Exp | Curve::Db) && !(*lo_end > 0.0 && *hi_end > 0.0) {
        cx.error(
            &t.loc,
            Some(&t.node),
            format!(
                "{} `{}` curve needs `min` and `max` above zero (here {} … {})",
                if *curve == Curve::Exp { "an" } else { "a" },
                curve.name(),
                lo_end,
                hi_end
            ),
            Some(match curve {
                Curve::Db => "silence is −inf dB: start at a level such as \"-60dB\"".to_string(),
                _ => "start at a small positive value, e.g. \"20Hz\"".to_string(),
            }),
        );
        return None;
    }
    Some(())
}
