//! Passes 11 and 12, what lands on the sample clock: the scene's events
//! (each checked against its node and param, then placed by the node's
//! profile), and the scene's lengths in samples — its duration, and how
//! long live edits glide and crossfade.

use super::{did_you_mean, time_to_samples, Ctx, Decl, Session};
use crate::graph::{EventAction, PlanEvent};
use crate::ops::{resolve_param, ParamError, ParamKind, ParamSpec, Value};
use crate::profile::{EventTiming, OffGrid, Profile};
use crate::scene::{duration_limit_text, max_duration_samples, EventDecl, Loc};
use std::collections::HashMap;

/// A live edit of a param glides over this long unless the scene says otherwise.
pub(crate) const DEFAULT_EDIT_RAMP_MS: u64 = 10;
/// Structural edits and profile switches crossfade over this long by default.
pub(crate) const DEFAULT_CROSSFADE_MS: u64 = 20;

/// The scene's lengths in samples: its default render length, and how long
/// live edits glide and crossfade.
pub(super) struct EditTiming {
    pub(super) duration: Option<u64>,
    pub(super) edit_ramp: u64,
    pub(super) crossfade: u64,
}

/// Pass 11, events (`scenes/README.md`, *Events*, and the event rows of
/// [`crate::profile`]): each targets a node and a param an event may set
/// (`ParamSpec::settable_by_events`), with a value in the param's unit and
/// a ramp only on numbers; its exact time lands on the sample clock by the
/// node's profile (off the grid: an error, snapped to the nearest sample,
/// or taken at its block), then block-accurate profiles move it to its
/// block's start. Sorted by sample; ties keep file order. Nodes are
/// declaration indices.
pub(super) fn place_events(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &[Option<Decl>],
    session: &Session,
) -> Vec<PlanEvent> {
    let scene = cx.scene;
    let mut events: Vec<(u64, usize, PlanEvent)> = Vec::new();
    let mut linted = std::collections::HashSet::new();
    for ev in &scene.events {
        let Some((ni, d, pi)) = event_target(cx, index, decls, ev) else {
            continue;
        };
        let Some(action) = event_action(cx, ev, &d.op.params[pi], d.profile.profile, session)
        else {
            continue;
        };
        if let EventAction::Set { value, .. } = action {
            if !linted.contains(&ni) {
                if let Some(lint) = event_lint(d, pi, value, session.sample_rate) {
                    linted.insert(ni);
                    cx.warn(
                        &ev.loc,
                        Some(&ev.node),
                        format!("an event sets {}", lint.message),
                        lint.help,
                    );
                }
            }
        }
        let Some(sample) = event_sample(cx, ev, d.profile.profile, session) else {
            continue;
        };
        events.push((
            sample,
            ev.index,
            PlanEvent {
                sample,
                node: ni,
                param: pi,
                action,
                loc: ev.loc.clone(),
                beat: ev.beat,
                at_block: d.profile.profile.event_timing() == EventTiming::BlockAccurate,
                order: 0,
            },
        ));
    }
    events.sort_by_key(|(s, i, _)| (*s, *i));
    events
        .into_iter()
        .enumerate()
        .map(|(order, (_, _, e))| PlanEvent { order, ..e })
        .collect()
}

/// What the operator's lints say of param `pi` set to `value` by an event
/// (an oscillator's `freq` above Nyquist plays its alias), when its static
/// value draws no such warning already: a node is warned once, at its
/// first such event, never once per event.
fn event_lint(d: &Decl, pi: usize, value: f64, sr: u32) -> Option<crate::ops::Lint> {
    crate::ops::lint_of_setting(d.op, &d.values, pi, value, sr as f64)
}

/// An event's node (declaration index, and its declaration) and param
/// (index in its operator's params), which an event must be able to set.
/// `None` after reporting why not, or for a node that did not declare.
fn event_target<'d>(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &'d [Option<Decl>],
    ev: &EventDecl,
) -> Option<(usize, &'d Decl, usize)> {
    let scene = cx.scene;
    let Some(&ni) = index.get(ev.node.as_str()) else {
        let help = did_you_mean(&ev.node, scene.nodes.iter().map(|n| n.id.as_str()));
        cx.error(
            &ev.loc,
            None,
            format!("event targets unknown node `{}`", ev.node),
            Some(help),
        );
        return None;
    };
    let d = decls[ni].as_ref()?;
    let Some(pi) = d.op.param_index(&ev.param) else {
        cx.error(
            &ev.loc,
            Some(&ev.node),
            format!(
                "event targets unknown param `{}` of `{}`",
                ev.param, d.op.name
            ),
            // Only what an event could set: the spec's own flag decides.
            Some(did_you_mean(
                &ev.param,
                d.op.params
                    .iter()
                    .filter(|p| p.settable_by_events)
                    .map(|p| p.name),
            )),
        );
        return None;
    };
    let spec = &d.op.params[pi];
    if !spec.settable_by_events {
        cx.error(
            &ev.loc,
            Some(&ev.node),
            format!(
                "param `{}` of `{}` is fixed when the node is built, so an event cannot change it",
                spec.name, d.op.name
            ),
            Some("set it in the node's params".to_string()),
        );
        return None;
    }
    Some((ni, d, pi))
}

/// What an event does to its param `spec`: a number is set (with its ramp
/// in samples), anything else but a resource or gains changes discretely
/// and cannot ramp. A wrong unit is judged by the node's `profile`. `None`
/// after reporting why not.
fn event_action(
    cx: &mut Ctx<'_>,
    ev: &EventDecl,
    spec: &ParamSpec,
    profile: Profile,
    session: &Session,
) -> Option<EventAction> {
    let sr = session.sample_rate;
    match spec.kind {
        ParamKind::Resource
        | ParamKind::OptionalResource
        | ParamKind::Gains
        | ParamKind::Steps { .. }
        | ParamKind::StepLength { .. } => {
            cx.error(
                &ev.loc,
                Some(&ev.node),
                format!("param `{}` cannot be changed by an event", spec.name),
                None,
            );
            None
        }
        ParamKind::Number { .. } => {
            match resolve_param(spec, &ev.value, sr, session.tempo.as_ref()) {
                Ok(Value::Number(v)) => {
                    let ramp = match ev.ramp {
                        None => 0,
                        Some(r) => match time_to_samples(r, sr) {
                            Some(s) => s,
                            None => {
                                cx.error(
                                    &ev.loc,
                                    Some(&ev.node),
                                    "event ramp is out of range".to_string(),
                                    None,
                                );
                                return None;
                            }
                        },
                    };
                    Some(EventAction::Set { value: v, ramp })
                }
                Ok(_) => unreachable!("numbers resolve to numbers"),
                Err(ParamError::WrongUnit(e)) => {
                    cx.wrong_unit(
                        profile,
                        &ev.loc,
                        &ev.node,
                        format!("event value for `{}`: {e}", ev.param),
                        "event ignored",
                    );
                    None
                }
                Err(ParamError::Invalid { message, help }) => {
                    cx.bad_event_value(&ev.loc, &ev.node, message, help);
                    None
                }
            }
        }
        _ => {
            if ev.ramp.is_some() {
                cx.error(
                    &ev.loc,
                    Some(&ev.node),
                    format!(
                        "param `{}` is not a continuous number, so it cannot ramp",
                        spec.name
                    ),
                    Some("remove `ramp`".to_string()),
                );
                return None;
            }
            match resolve_param(spec, &ev.value, sr, session.tempo.as_ref()) {
                Ok(v) => Some(EventAction::Discrete(v)),
                Err(ParamError::WrongUnit(e)) => {
                    cx.error(&ev.loc, Some(&ev.node), e.to_string(), None);
                    None
                }
                Err(ParamError::Invalid { message, help }) => {
                    cx.bad_event_value(&ev.loc, &ev.node, message, help);
                    None
                }
            }
        }
    }
}

/// The sample an event lands on: its exact time on the sample clock, off
/// the grid as the node's `profile` says (an error, snapped to the nearest
/// sample, or taken at its block), then moved to its block's start under
/// a block-accurate profile. `None` after reporting why not.
fn event_sample(
    cx: &mut Ctx<'_>,
    ev: &EventDecl,
    profile: Profile,
    session: &Session,
) -> Option<u64> {
    let sr = session.sample_rate;
    let block_size = session.block_size;
    let Some(exact) = ev.time.to_samples(sr) else {
        cx.error(
            &ev.loc,
            Some(&ev.node),
            "event time is out of range".to_string(),
            None,
        );
        return None;
    };
    let sample = if exact.is_integer() {
        exact.num
    } else if ev.beat.is_some() {
        // A time in beats is on the beat grid, which is rarely on the
        // sample grid: it rounds half to even under every profile.
        exact.round_half_even()
    } else {
        match profile.off_grid() {
            OffGrid::Error => {
                let f = exact.floor();
                cx.error(
                    &ev.loc,
                    Some(&ev.node),
                    format!(
                        "event time is between samples {f} and {} at {sr} Hz, which {} does not allow",
                        f + 1,
                        profile
                    ),
                    Some(format!("use a time on the sample grid, e.g. \"{f}samples\"")),
                );
                return None;
            }
            OffGrid::SnapNearest => exact.round_half_even(),
            OffGrid::AtBlock => exact.floor(),
        }
    };
    let Ok(mut sample) = u64::try_from(sample) else {
        cx.error(
            &ev.loc,
            Some(&ev.node),
            "event time is out of range".to_string(),
            None,
        );
        return None;
    };
    if profile.event_timing() == EventTiming::BlockAccurate && block_size > 0 {
        sample = sample / block_size as u64 * block_size as u64;
    }
    Some(sample)
}

/// Pass 12, the scene's lengths in samples (exact decimals, rounded half to
/// even): its `duration`, and how long live edits glide (a node's own
/// `ramp` wins, see `build_nodes`) and crossfade.
/// A `duration` that does not fit in the sample clock, or is longer than
/// [`crate::scene::MAX_DURATION_S`], is an error stating the limit.
pub(super) fn edit_timing(cx: &mut Ctx<'_>, sr: u32) -> EditTiming {
    let scene = cx.scene;
    let duration = scene.duration.and_then(|t| {
        let samples = t.to_samples(sr).map(|r| r.round_half_even());
        match samples {
            Some(n) if n <= max_duration_samples(sr) as i128 => u64::try_from(n).ok(),
            _ => {
                let loc = Loc::path("duration");
                let loc = scene
                    .duration_loc
                    .clone()
                    .unwrap_or(loc);
                cx.error(
                    &loc,
                    None,
                    format!("`duration` is longer than {}", duration_limit_text(sr)),
                    Some("give a shorter duration; render longer pieces in parts (render --snapshot-at, --resume)".to_string()),
                );
                None
            }
        }
    });
    EditTiming {
        duration,
        edit_ramp: scene
            .edit
            .ramp
            .and_then(|t| time_to_samples(t, sr))
            .unwrap_or(sr as u64 * DEFAULT_EDIT_RAMP_MS / 1000),
        crossfade: scene
            .edit
            .crossfade
            .and_then(|t| time_to_samples(t, sr))
            .unwrap_or(sr as u64 * DEFAULT_CROSSFADE_MS / 1000),
    }
}

/// One test per pass, each driving the passes before it on a small scene.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::compile::testing::{ctx, declared, errors, scene};
    use crate::graph::CompileOptions;

    #[test]
    fn events_land_on_the_clock_by_profile_and_keep_file_order_on_ties() {
        let s = scene(
            r#"{ "version": "1.0", "nodes": [ { "id": "v", "op": "dc" } ], "outputs": { "main": ["v"] },
                 "events": [ { "time": "1.01ms", "node": "v", "param": "value", "value": 2 },
                             { "time": "48samples", "node": "v", "param": "value", "value": 1 },
                             { "time": "10samples", "node": "v", "param": "value", "value": 3, "ramp": "1ms" } ] }"#,
        );
        let index = HashMap::from([("v", 0)]);
        let place = |p: Profile, block: usize| {
            let opts = CompileOptions {
                profile: Some(p),
                block_size: Some(block),
                ..CompileOptions::default()
            };
            let (mut cx, session, decls, ..) = declared(&s, &opts);
            let events = place_events(&mut cx, &index, &decls, &session);
            (errors(&cx), events)
        };
        let sample_and_value = |events: &[PlanEvent]| -> Vec<(u64, f64)> {
            events
                .iter()
                .map(|e| match e.action {
                    EventAction::Set { value, .. } => (e.sample, value),
                    EventAction::Discrete(_) => unreachable!(),
                })
                .collect()
        };
        // 1.01 ms is sample 48.48: off the grid.
        let (errs, events) = place(Profile::Strict, 64);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].contains("between samples 48 and 49"));
        assert_eq!(sample_and_value(&events), [(10, 3.0), (48, 1.0)]);
        assert_eq!(
            events[0].action,
            EventAction::Set {
                value: 3.0,
                ramp: 48
            }
        );
        // Repro snaps it to 48, before the event written after it.
        let (errs, events) = place(Profile::Repro, 64);
        assert!(errs.is_empty());
        assert_eq!(sample_and_value(&events), [(10, 3.0), (48, 2.0), (48, 1.0)]);
        // Live takes each at the start of its block.
        let (_, events) = place(Profile::Live, 32);
        assert_eq!(sample_and_value(&events), [(0, 3.0), (32, 2.0), (32, 1.0)]);
    }

    #[test]
    fn edit_timing_defaults_to_10ms_ramps_and_20ms_crossfades() {
        let s = scene(
            r#"{ "version": "1.0", "duration": "1.1s", "nodes": [ { "id": "o", "op": "sine" } ],
                 "outputs": { "main": ["o"] } }"#,
        );
        let t = edit_timing(&mut ctx(&s), 48_000);
        assert_eq!(
            (t.duration, t.edit_ramp, t.crossfade),
            (Some(52_800), 480, 960)
        );
    }

    // A duration past the sample clock's limit is a located error.
    #[test]
    fn a_duration_over_24_hours_is_a_located_error() {
        for (text, ok) in [
            ("\"24h\"", false),
            ("86400", true),
            ("86400.5", false),
            ("\"1e30s\"", false),
        ] {
            let text = text.replace("24h", "86400.001s");
            let s = scene(&format!(
                r#"{{ "version": "1.0", "duration": {text}, "nodes": [ {{ "id": "o", "op": "sine" }} ],
                 "outputs": {{ "main": ["o"] }} }}"#
            ));
            let mut cx = ctx(&s);
            let t = edit_timing(&mut cx, 48_000);
            if ok {
                assert_eq!(t.duration, Some(86_400 * 48_000), "{text}");
                assert!(cx.errors.is_empty(), "{text}");
            } else {
                assert_eq!(t.duration, None, "{text}");
                assert_eq!(cx.errors.len(), 1, "{text}");
                let e = &cx.errors[0];
                assert_eq!(
                    e.loc.as_ref().map(|l| (l.path.as_str(), l.line)),
                    Some(("duration", 1))
                );
                assert!(
                    e.message.contains(
                        "duration limit of 24 h (86400 s, 4147200000 samples at 48000 Hz)"
                    ),
                    "{}",
                    e.message
                );
            }
        }
    }
}
