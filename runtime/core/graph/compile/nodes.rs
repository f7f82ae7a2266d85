//! Passes 1–3, the session and the nodes: the session's profile, rate,
//! block size and seed; each node's operator, profile and params
//! (resources loaded once per file); and the lints on the params a node
//! accepts but that will not do what they say.

use super::{did_you_mean, CompileOptions, Ctx, Decl, Resolved, Session};
use crate::dsp::fft::FftProvider;
use crate::dsp::resample::{Method, Polyphase, RateConverter, RateError};
use crate::ops::{
    self, default_value, resolve_param, AudioData, OpSpec, ParamError, ParamKind, Value,
};
use crate::profile::{NodeProfile, Profile, MAX_BLOCK_SIZE};
use crate::scene::{capped_list, resource, Diagnostic, Loc, NodeDecl};
use std::collections::HashMap;
use std::sync::Arc;

/// Pass 1, the session (the resolution rules of [`crate::profile`]): the
/// profile is `--profile`, else the scene's, else repro; the sample rate is
/// the scene's unless the device forces another; the block size is
/// `--block-size`, else the scene's `profile_config.block_size`, else the
/// profile's default, and must lie in 1 … [`MAX_BLOCK_SIZE`]. `--seed`
/// replaces the scene's seed.
pub(super) fn session_settings(cx: &mut Ctx<'_>, opts: &CompileOptions) -> Session {
    let scene = cx.scene;
    let profile = opts
        .profile
        .or(scene.profile)
        .or(scene.config.overrides.profile)
        .unwrap_or(Profile::Repro);
    let sample_rate = opts.sample_rate.unwrap_or(scene.sample_rate);
    let block_size = opts
        .block_size
        .or(scene.config.block_size)
        .unwrap_or(profile.default_block_size());
    if block_size == 0 || block_size > MAX_BLOCK_SIZE {
        let (loc, what) = match opts.block_size {
            Some(_) => (None, "--block-size"),
            None => (Some(Loc::path("profile_config.block_size")), "block_size"),
        };
        cx.errors.push(
            Diagnostic::error(
                &scene.file,
                loc,
                format!("{what} {block_size} is out of range"),
            )
            .with_help(format!("valid: 1 … {MAX_BLOCK_SIZE}")),
        );
    }
    if let Some(resolver) = &opts.resolver {
        for (problem, help) in resolver.problems() {
            cx.errors
                .push(Diagnostic::error(&scene.file, None, problem).with_help(help));
        }
    }
    Session {
        profile,
        sample_rate,
        block_size,
        seed_given: opts.seed.or(scene.seed),
        tempo: scene.tempo,
    }
}

/// Passes 2 and 3, node by node in declaration order (so each node's
/// problems are reported together): its operator, its profile, its params.
/// `None` for a node that cannot take part (unknown operator, a missing
/// resource); its errors are already recorded.
pub(super) fn declare_nodes(
    cx: &mut Ctx<'_>,
    opts: &CompileOptions,
    session: &Session,
) -> Vec<Option<Decl>> {
    let scene = cx.scene;
    let mut decls: Vec<Option<Decl>> = Vec::with_capacity(scene.nodes.len());
    let mut audio_cache: HashMap<String, Arc<AudioData>> = HashMap::new();
    for node in &scene.nodes {
        let Some(op) = ops::lookup(&node.op) else {
            let names: Vec<&str> = ops::registry().iter().map(|s| s.name).collect();
            cx.error(
                &node.op_loc,
                Some(&node.id),
                format!("unknown operator `{}`", node.op),
                Some(format!(
                    "{}; `morphrt ops` lists every operator",
                    did_you_mean(&node.op, names.iter().copied())
                )),
            );
            decls.push(None);
            continue;
        };
        let np = resolve_profile(cx, node, op, session.profile);
        let values = resolve_params(cx, node, op, &np, opts, session, &mut audio_cache);
        if let Some(v) = &values {
            lint_params(cx, node, op, v, session.sample_rate);
        }
        decls.push(values.map(|values| {
            let n_inputs = if op.variadic_inputs {
                op.params
                    .iter()
                    .zip(&values)
                    .find_map(|(s, v)| match (s.kind, v) {
                        (ParamKind::Gains, Value::Gains(g)) => Some(g.len()),
                        _ => None,
                    })
                    .unwrap_or(0)
            } else {
                op.inputs.len()
            };
            Decl {
                op,
                profile: np,
                values,
                n_inputs,
                audio_in: Vec::new(),
                param_in: vec![Vec::new(); op.params.len()],
            }
        }));
    }
    decls
}

/// After pass 3: settings the operator accepts but that will not do what
/// they say (its [`OpSpec::lints`]) become warnings at the param.
fn lint_params(cx: &mut Ctx<'_>, node: &NodeDecl, op: &OpSpec, values: &[Value], sr: u32) {
    for lint in (op.lints)(values, sr as f64) {
        let loc = node
            .params
            .iter()
            .find(|p| p.name == lint.param)
            .map_or_else(|| node.loc.clone(), |p| p.loc.clone());
        cx.warn(&loc, Some(&node.id), lint.message, lint.help);
    }
}

/// After pass 7: `gains` entries of a variadic node (`mix`) with no edge
/// into their input are warned, naming the indices.
pub(super) fn unused_gains(cx: &mut Ctx<'_>, decls: &[Option<Decl>]) {
    let scene = cx.scene;
    for (node, d) in scene.nodes.iter().zip(decls) {
        let Some(d) = d.as_ref().filter(|d| d.op.variadic_inputs) else {
            continue;
        };
        let Some((spec, Value::Gains(gains))) =
            d.op.params
                .iter()
                .zip(&d.values)
                .find(|(s, _)| matches!(s.kind, ParamKind::Gains))
        else {
            continue;
        };
        let unused: Vec<usize> = (0..gains.len())
            .filter(|&k| d.audio_in.get(k).is_none_or(|l| l.is_empty()))
            .collect();
        if unused.is_empty() {
            continue;
        }
        let Some(param) = node.params.iter().find(|p| p.name == spec.name) else {
            continue;
        };
        let connected = gains.len() - unused.len();
        cx.warn(
            &param.loc,
            Some(&node.id),
            format!(
                "`{}` has {} entries but {connected} of them have an input: entr{} {} (for {}) scale nothing",
                spec.name,
                gains.len(),
                if unused.len() == 1 { "y" } else { "ies" },
                capped_list(&unused, ", "),
                capped_list(unused.iter().map(|k| format!("in{k}")), ", ")
            ),
            Some("connect an edge to each input a gain is meant for, or remove the extra gains".to_string()),
        );
    }
}

/// Pass 2, a node's profile (see [`crate::profile`]): its own
/// `profile_overrides` over its module's over the scene's `profile_config`
/// (whose `profile` is the session's, already applied); the profile is the
/// pinned one or the session's. An operator below strict's tier, or an FFT
/// provider that is unknown or not bit-exact, cannot run under strict.
fn resolve_profile(
    cx: &mut Ctx<'_>,
    node: &NodeDecl,
    op: &OpSpec,
    session: Profile,
) -> NodeProfile {
    let scene = cx.scene;
    let module = node.module.map(|m| &scene.modules[m].overrides);
    let mut o = node.overrides.clone();
    if let Some(m) = module {
        o = o.over(m);
    }
    let mut scene_level = scene.config.overrides.clone();
    scene_level.profile = None;
    o = o.over(&scene_level);
    let profile = o.profile.unwrap_or(session);
    let np = NodeProfile::resolve(profile, &o, scene.config.flush_to_zero);
    let oloc = node
        .overrides_loc
        .clone()
        .unwrap_or_else(|| node.loc.clone());
    if profile == Profile::Strict && op.tier < Profile::Strict {
        cx.error(
            &oloc,
            Some(&node.id),
            format!(
                "operator `{}` cannot be bit-exact, so it cannot run under strict (its tier is {})",
                op.name, op.tier
            ),
            Some("pin this node or its module to `repro` or `live`".to_string()),
        );
    }
    if let Some(p) = &np.fft_provider {
        match FftProvider::parse(p) {
            None => cx.error(
                &oloc,
                Some(&node.id),
                format!("unknown fft_provider `{p}`"),
                Some("valid: reference, rustfft".to_string()),
            ),
            Some(FftProvider::RustFft) if profile == Profile::Strict => cx.error(
                &oloc,
                Some(&node.id),
                format!("fft_provider `{p}` cannot be bit-exact, so it is not allowed under strict"),
                Some("strict uses the bit-exact `reference` FFT; pin this node to repro or live to use rustfft".to_string()),
            ),
            Some(_) => {}
        }
    }
    np
}

/// Pass 3, a node's params (`scenes/README.md`, *Values and units*): each
/// known, in its unit and range (a wrong unit is an error under strict and
/// repro, a warning under live that keeps the default), resources resolved
/// and loaded once per file. Unset params take their defaults; `None` when
/// a resource is missing.
fn resolve_params(
    cx: &mut Ctx<'_>,
    node: &NodeDecl,
    op: &OpSpec,
    np: &NodeProfile,
    opts: &CompileOptions,
    session: &Session,
    audio_cache: &mut HashMap<String, Arc<AudioData>>,
) -> Option<Vec<Value>> {
    let mut values: Vec<Option<Value>> = op.params.iter().map(default_value).collect();
    for p in &node.params {
        let Some(pi) = op.param_index(&p.name) else {
            cx.error(
                &p.loc,
                Some(&node.id),
                format!("operator `{}` has no param `{}`", op.name, p.name),
                Some(did_you_mean(&p.name, op.params.iter().map(|s| s.name))),
            );
            continue;
        };
        let spec = &op.params[pi];
        if matches!(spec.kind, ParamKind::Resource | ParamKind::OptionalResource) {
            match load_resource(cx, &p.value, &p.loc, &node.id, opts, audio_cache) {
                Some(a) => values[pi] = Some(Value::Resource(a)),
                None => values[pi] = None,
            }
            continue;
        }
        match resolve_param(spec, &p.value, session.sample_rate, session.tempo.as_ref()) {
            Ok(v) => values[pi] = Some(v),
            Err(ParamError::WrongUnit(e)) => cx.wrong_unit(
                np.profile,
                &p.loc,
                &node.id,
                format!("param `{}`: {e}", p.name),
                "keeping its default",
            ),
            Err(ParamError::Invalid { message, help }) => {
                cx.error(&p.loc, Some(&node.id), message, help)
            }
        }
    }
    // A step length not given is a sixteenth note in a scene with a tempo.
    if let Some(t) = &session.tempo {
        for (i, spec) in op.params.iter().enumerate() {
            if matches!(spec.kind, ParamKind::StepLength { .. })
                && !node.params.iter().any(|p| p.name == spec.name)
            {
                if let Some(secs) =
                    t.beats_to_seconds(crate::scene::Rational::new(1, 4).expect("den > 0"))
                {
                    values[i] = Some(Value::Span(secs));
                }
            }
        }
    }
    let mut missing = false;
    for (i, spec) in op.params.iter().enumerate() {
        if values[i].is_none() && matches!(spec.kind, ParamKind::Resource) {
            if !node.params.iter().any(|p| p.name == spec.name) {
                cx.error(
                    &node.loc,
                    Some(&node.id),
                    format!(
                        "operator `{}` needs param `{}` (an \"@resource:NAME\" audio file)",
                        op.name, spec.name
                    ),
                    None,
                );
            }
            missing = true;
        }
    }
    if missing {
        return None;
    }
    Some(
        values
            .into_iter()
            .map(|v| v.expect("checked above"))
            .collect(),
    )
}

fn load_resource(
    cx: &mut Ctx<'_>,
    raw: &crate::scene::RawValue,
    loc: &Loc,
    node: &str,
    opts: &CompileOptions,
    cache: &mut HashMap<String, Arc<AudioData>>,
) -> Option<Arc<AudioData>> {
    let crate::scene::RawValue::Text(reference) = raw else {
        cx.error(
            loc,
            Some(node),
            "expected a resource reference".to_string(),
            Some("write \"@resource:NAME.wav\"".to_string()),
        );
        return None;
    };
    if !resource::is_resource(reference) {
        cx.error(
            loc,
            Some(node),
            format!("`{reference}` is not a resource reference"),
            Some("write \"@resource:NAME.wav\"; files are looked up in resources/ next to the scene and in --resources directories".to_string()),
        );
        return None;
    }
    let (path, data) = match cache.get(reference.as_str()) {
        Some(a) => (a.path.clone(), a.clone()),
        None => {
            let Some(resolver) = &opts.resolver else {
                cx.error(
                    loc,
                    Some(node),
                    format!("`{reference}` cannot be read: this host supplies no resources"),
                    None,
                );
                return None;
            };
            match resolver.resolve(reference, cx.scene.dir.as_deref()) {
                Ok(Resolved { path, audio }) => {
                    let a = Arc::new(audio);
                    cache.insert(reference.clone(), a.clone());
                    (path, a)
                }
                Err(e) => {
                    cx.error(loc, Some(node), e, None);
                    return None;
                }
            }
        }
    };
    if !cx.resources.iter().any(|(r, _)| r == reference) {
        cx.resources.push((reference.clone(), path.clone()));
    }
    let rate = opts.sample_rate.unwrap_or(cx.scene.sample_rate);
    let data = if data.sample_rate != rate {
        match convert_resource(&data, rate) {
            Ok(converted) => {
                let converted = Arc::new(converted);
                cache.insert(reference.clone(), converted.clone());
                cx.conversions.push(crate::graph::Conversion {
                    what: format!("resource `{reference}`"),
                    from_hz: data.sample_rate,
                    to_hz: rate,
                    method: Method::Polyphase,
                });
                converted
            }
            Err(e) => {
                cx.error(
                    loc,
                    Some(node),
                    format!(
                        "`{}` is at {} Hz but the scene runs at {} Hz, and {e}",
                        path.display(),
                        data.sample_rate,
                        rate
                    ),
                    Some("resample the file, or set the scene's sample_rate to match".to_string()),
                );
                return None;
            }
        }
    } else {
        data
    };
    if data.frames() == 0 {
        cx.warn(
            loc,
            Some(node),
            format!(
                "`{}` is a WAV file with no audio (0 frames): the node plays silence",
                path.display()
            ),
            Some("check that the file was written completely".to_string()),
        );
    }
    Some(data)
}

/// A resource at another rate than the session's, converted by the strict
/// polyphase converter under every profile: the conversion runs once,
/// here, off the audio thread, so its cost is no concern, and a profile
/// switch keeps the same samples.
fn convert_resource(data: &AudioData, to_hz: u32) -> Result<AudioData, RateError> {
    let frames = data.frames();
    let mut channels = Vec::with_capacity(data.channels.len());
    for ch in &data.channels {
        let mut conv = Polyphase::new(data.sample_rate, to_hz, 1, frames.max(1))?;
        let mut out = vec![0.0; conv.output_frames(frames as u64) as usize];
        let taken = conv.push(ch);
        debug_assert_eq!(taken, frames, "the converter holds the whole channel");
        conv.finish();
        let mut done = 0;
        while done < out.len() {
            let n = conv.pull(&mut out[done..]);
            if n == 0 {
                break;
            }
            done += n;
        }
        channels.push(out);
    }
    Ok(AudioData {
        path: data.path.clone(),
        sample_rate: to_hz,
        channels,
    })
}

/// One test per pass, each driving the passes before it on a small scene.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::Precision;
    use crate::graph::compile::testing::{ctx, declared, errors, graph_scene, scene, with_profile};

    #[test]
    fn session_block_size_comes_from_the_flag_then_the_scene_then_the_profile() {
        let s = scene(
            r#"{ "version": "1.0", "profile": "live", "profile_config": { "block_size": 256 },
                 "nodes": [ { "id": "o", "op": "sine" } ], "outputs": { "main": ["o"] } }"#,
        );
        let mut cx = ctx(&s);
        let got = session_settings(&mut cx, &CompileOptions::default());
        assert_eq!((got.profile, got.block_size), (Profile::Live, 256));
        let opts = CompileOptions {
            block_size: Some(32),
            profile: Some(Profile::Strict),
            ..CompileOptions::default()
        };
        let got = session_settings(&mut cx, &opts);
        assert_eq!((got.profile, got.block_size), (Profile::Strict, 32));
        let bare = graph_scene(r#"{ "id": "o", "op": "sine" }"#, "", r#""o""#);
        let mut cx = ctx(&bare);
        let got = session_settings(&mut cx, &CompileOptions::default());
        assert_eq!((got.profile, got.block_size), (Profile::Repro, 128));
        assert!(cx.errors.is_empty());
        let opts = CompileOptions {
            block_size: Some(MAX_BLOCK_SIZE + 1),
            ..CompileOptions::default()
        };
        session_settings(&mut cx, &opts);
        assert_eq!(errors(&cx), ["--block-size 8193 is out of range"]);
    }

    #[test]
    fn a_node_pin_wins_over_its_module_which_wins_over_the_session() {
        let s = scene(
            r#"{ "version": "1.0", "profile": "live",
                 "nodes": [ { "id": "free", "op": "sine" },
                            { "id": "wide", "op": "sine", "profile_overrides": { "precision": "f64" } } ],
                 "modules": [ { "id": "m", "profile": "strict", "nodes": [
                     { "id": "pinned", "op": "sine" },
                     { "id": "back", "op": "sine", "profile_overrides": { "profile": "repro" } } ] } ],
                 "outputs": { "main": ["free"] } }"#,
        );
        let (cx, _, decls, _, _) = declared(&s, &CompileOptions::default());
        assert!(cx.errors.is_empty(), "{:?}", errors(&cx));
        let get = |id: &str| {
            let i = s.nodes.iter().position(|n| n.id == id).unwrap();
            let p = &decls[i].as_ref().unwrap().profile;
            (p.profile, p.precision)
        };
        assert_eq!(get("free"), (Profile::Live, Precision::F32));
        assert_eq!(get("wide"), (Profile::Live, Precision::F64));
        assert_eq!(get("pinned"), (Profile::Strict, Precision::F64));
        assert_eq!(get("back"), (Profile::Repro, Precision::F32));
    }

    #[test]
    fn strict_rejects_a_provider_that_is_not_bit_exact() {
        let s = graph_scene(
            r#"{ "id": "g", "op": "spectral_gate", "profile_overrides": { "fft_provider": "rustfft" } }"#,
            "",
            r#""g""#,
        );
        let (cx, ..) = declared(&s, &with_profile(Profile::Strict));
        assert_eq!(
            errors(&cx),
            ["fft_provider `rustfft` cannot be bit-exact, so it is not allowed under strict"]
        );
        let (cx, ..) = declared(&s, &with_profile(Profile::Repro));
        assert!(cx.errors.is_empty());
    }

    #[test]
    fn a_wrong_unit_is_an_error_except_under_live_where_the_default_stays() {
        let s = graph_scene(
            r#"{ "id": "o", "op": "sine", "params": { "freq": "3s" } }"#,
            "",
            r#""o""#,
        );
        let (cx, _, decls, ..) = declared(&s, &with_profile(Profile::Repro));
        assert_eq!(cx.errors.len(), 1, "{:?}", errors(&cx));
        let (cx, _, decls_live, ..) = declared(&s, &with_profile(Profile::Live));
        assert!(cx.errors.is_empty());
        assert_eq!(cx.warnings.len(), 1);
        assert!(cx.warnings[0].message.ends_with("keeping its default"));
        assert_eq!(
            decls_live[0].as_ref().unwrap().values[0],
            Value::Number(440.0)
        );
        assert!(decls[0].is_some(), "a wrong unit still declares the node");
    }

    #[test]
    fn params_in_beats_read_the_tempo() {
        let text = |tempo: &str| {
            format!(
                r#"{{ "version": "1.0" {tempo}, "nodes": [
                  {{ "id": "o", "op": "sine", "params": {{ "freq": "1/4beat" }} }},
                  {{ "id": "d", "op": "delay", "params": {{ "time": "3/4beat", "mix": "1beat" }} }} ],
                 "edges": [{{ "from": "o", "to": "d" }}], "outputs": {{ "main": ["d"] }} }}"#
            )
        };
        // 120 bpm: a quarter beat lasts 1/8 s, so 8 Hz; 3/4 beat is 0.375 s;
        // a mix is no time.
        let s = scene(&text(r#", "tempo": "120bpm""#));
        let (cx, ..) = declared(&s, &with_profile(Profile::Strict));
        assert_eq!(cx.errors.len(), 1, "{:?}", errors(&cx));
        assert!(
            cx.errors[0]
                .message
                .contains("`1beat` is in beats, a time, but this param is a plain number"),
            "{:?}",
            errors(&cx)
        );
        let s = scene(&text(r#", "tempo": "120bpm""#).replace(r#", "mix": "1beat""#, ""));
        let (cx, _, decls, ..) = declared(&s, &with_profile(Profile::Strict));
        assert!(cx.errors.is_empty(), "{:?}", errors(&cx));
        assert_eq!(decls[0].as_ref().unwrap().values[0], Value::Number(8.0));
        assert_eq!(decls[1].as_ref().unwrap().values[0], Value::Number(0.375));
        // Without a tempo: an error at each value, saying what to add.
        let s = scene(&text("").replace(r#", "mix": "1beat""#, ""));
        let (cx, ..) = declared(&s, &with_profile(Profile::Strict));
        assert_eq!(cx.errors.len(), 2, "{:?}", errors(&cx));
        for e in &cx.errors {
            assert!(e.message.contains("but the scene has no `tempo`"), "{e}");
            assert!(e
                .help
                .as_ref()
                .unwrap()
                .contains(r#"add `"tempo": "120bpm"`"#));
            assert!(e.loc.as_ref().unwrap().path.starts_with("nodes["));
        }
    }

    #[test]
    fn sequencer_steps_and_rate_errors_are_located() {
        let with = |tempo: &str, params: &str| {
            scene(&format!(
                r#"{{ "version": "1.0" {tempo}, "nodes": [
                  {{ "id": "seq", "op": "sequencer", "params": {{ {params} }} }} ],
                 "outputs": {{ "main": ["seq:value"] }} }}"#
            ))
        };
        let one = |s: &crate::scene::Scene, needle: &str| {
            let (cx, ..) = declared(s, &with_profile(Profile::Strict));
            assert_eq!(cx.errors.len(), 1, "{:?}", errors(&cx));
            let e = &cx.errors[0];
            assert!(e.message.contains(needle), "`{needle}` not in {e}");
            assert_eq!(e.node.as_deref(), Some("seq"));
            assert!(
                e.loc.as_ref().unwrap().path.starts_with("nodes[0].params."),
                "{e}"
            );
            e.clone()
        };
        let huge = vec!["60"; 100_000].join(", ");
        let e = one(
            &with("", &format!(r#""steps": [{huge}], "rate": "125ms""#)),
            "`steps` has 100000 steps; at most 4096 are allowed",
        );
        assert!(e.help.unwrap().contains("1 … 4096"));
        one(
            &with("", r#""steps": [60, "x"], "rate": "125ms""#),
            "`steps[1]`",
        );
        one(
            &with("", r#""steps": 60, "rate": "125ms""#),
            "takes an array of step values",
        );
        let e = one(&with("", r#""steps": [60], "rate": "1/16""#), "no `tempo`");
        assert!(e.help.unwrap().contains(r#"add `"tempo": "120bpm"`"#));
        one(
            &with("", r#""steps": [60], "rate": "2beats""#),
            "no `tempo`",
        );
        one(
            &with(r#", "tempo": "120bpm""#, r#""steps": [60], "rate": "0ms""#),
            "out of range",
        );
        one(
            &with(r#", "tempo": "120bpm""#, r#""steps": [60], "rate": "fast""#),
            "`rate`",
        );
        // A tempo: a note value, beats and the default all read it.
        for (rate, want) in [
            ("\"1/16\"", (1, 8)),
            ("\"1/2beat\"", (1, 4)),
            ("\"1/8\"", (1, 4)),
            ("0.2", (1, 5)),
        ] {
            let s = with(
                r#", "tempo": "120bpm""#,
                &format!(r#""steps": [60], "rate": {rate}"#),
            );
            let (cx, _, decls, ..) = declared(&s, &with_profile(Profile::Strict));
            assert!(cx.errors.is_empty(), "{:?}", errors(&cx));
            let r = crate::scene::Rational::new(want.0, want.1).unwrap();
            assert_eq!(
                decls[0].as_ref().unwrap().values[1],
                Value::Span(r),
                "{rate}"
            );
        }
        let s = with(r#", "tempo": "97bpm""#, r#""steps": [60]"#);
        let (_, _, decls, ..) = declared(&s, &with_profile(Profile::Strict));
        let r = crate::scene::Rational::new(15, 97).unwrap();
        assert_eq!(
            decls[0].as_ref().unwrap().values[1],
            Value::Span(r),
            "a sixteenth by default"
        );
    }
}
