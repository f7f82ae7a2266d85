//! Scene → Plan.

use super::{EventAction, Plan, PlanEvent, PlanNode, SeedSource, SourceRef};
use crate::dsp::Precision;
use crate::ops::{
    self, default_value, resolve_param, AudioData, BuildCtx, OpSpec, ParamError, ParamKind, Value,
};
use crate::profile::{CastRule, EventTiming, NodeProfile, OffGrid, Profile, MAX_BLOCK_SIZE};
use crate::scene::{resource, suggest, Diagnostic, Endpoint, Loc, Scene, TimeSpec};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

/// Settings from the command line that override the scene.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// `--profile`: the session profile.
    pub profile: Option<Profile>,
    /// `--block-size`.
    pub block_size: Option<usize>,
    /// `--seed`: replaces the scene's seed.
    pub seed: Option<u64>,
    /// `--resources` directories, searched after the scene's `resources/`.
    pub resource_dirs: Vec<PathBuf>,
    /// Build the nodes (false for `check`, which only validates and reports).
    pub skip_build: bool,
    /// Run at this sample rate instead of the scene's (a device that cannot
    /// play the scene's rate). Operators are rate-parametric.
    pub sample_rate: Option<u32>,
    /// Resource references (`@resource:NAME`) bound to exact files, before
    /// any lookup: a replay reads the copies its journal kept.
    pub pinned_resources: Vec<(String, PathBuf)>,
}

/// A live edit of a param glides over this long unless the scene says otherwise.
pub const DEFAULT_EDIT_RAMP_MS: u64 = 10;
/// Structural edits and profile switches crossfade over this long by default.
pub const DEFAULT_CROSSFADE_MS: u64 = 20;

/// Upper bound for variadic inputs (`mix`).
const MAX_VARIADIC: usize = 256;

struct Ctx<'a> {
    scene: &'a Scene,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    /// Every resource reference and the file it resolved to.
    resources: Vec<(String, PathBuf)>,
}

impl Ctx<'_> {
    fn error(&mut self, loc: &Loc, node: Option<&str>, msg: String, help: Option<String>) {
        let mut d = Diagnostic::error(&self.scene.file, Some(loc.clone()), msg);
        if let Some(n) = node {
            d = d.with_node(n);
        }
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.errors.push(d);
    }

    /// A unit of the wrong dimension: an error under strict and repro, a
    /// warning under live (DESIGN §3), with what happens instead.
    fn wrong_unit(&mut self, profile: Profile, loc: &Loc, node: &str, msg: String, instead: &str) {
        if profile.unit_errors() {
            self.error(loc, Some(node), msg, None);
        } else {
            self.warn(loc, Some(node), format!("{msg}; {instead}"), None);
        }
    }

    fn bad_event_value(&mut self, loc: &Loc, node: &str, message: String, help: Option<String>) {
        self.error(loc, Some(node), format!("event value: {message}"), help);
    }

    fn warn(&mut self, loc: &Loc, node: Option<&str>, msg: String, help: Option<String>) {
        let mut d = Diagnostic::warning(&self.scene.file, Some(loc.clone()), msg);
        if let Some(n) = node {
            d = d.with_node(n);
        }
        if let Some(h) = help {
            d = d.with_help(h);
        }
        self.warnings.push(d);
    }
}

fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str> + Clone) -> String {
    let list: Vec<&str> = candidates.clone().into_iter().collect();
    match suggest::closest(name, candidates) {
        Some(s) => format!("did you mean `{s}`? (valid: {})", list.join(", ")),
        None if list.is_empty() => "this node has none".to_string(),
        None => format!("valid: {}", list.join(", ")),
    }
}

/// Per-node facts gathered before the schedule exists (declaration order).
struct Decl {
    op: &'static OpSpec,
    profile: NodeProfile,
    values: Vec<Value>,
    n_inputs: usize,
    /// (dest port kind, source decl index, source port, edge index)
    audio_in: Vec<Vec<(usize, usize)>>,
    param_in: Vec<Vec<(usize, usize)>>,
}

/// A resolved edge destination.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DestPort {
    Audio(usize),
    Param(usize),
}

/// Compiles a scene. On failure, every error found (and the warnings).
pub fn compile(scene: &Scene, opts: &CompileOptions) -> Result<Plan, Vec<Diagnostic>> {
    let mut cx = Ctx {
        scene,
        errors: Vec::new(),
        warnings: scene.warnings.clone(),
        resources: Vec::new(),
    };
    let top = Loc::path("");
    let session = opts
        .profile
        .or(scene.profile)
        .or(scene.config.overrides.profile)
        .unwrap_or(Profile::Repro);
    let sr = opts.sample_rate.unwrap_or(scene.sample_rate);
    let block_size = opts
        .block_size
        .or(scene.config.block_size)
        .unwrap_or(session.default_block_size());
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
    let seed_given = opts.seed.or(scene.seed);

    // --- nodes: op, profile, params -------------------------------------
    let index: HashMap<&str, usize> = scene
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let mut decls: Vec<Option<Decl>> = Vec::with_capacity(scene.nodes.len());
    let mut audio_cache: HashMap<PathBuf, Arc<AudioData>> = HashMap::new();
    for node in &scene.nodes {
        let Some(op) = ops::lookup(&node.op) else {
            let names: Vec<&str> = ops::registry().iter().map(|s| s.name).collect();
            cx.error(
                &node.op_loc,
                Some(&node.id),
                format!("unknown operator `{}`", node.op),
                Some(did_you_mean(&node.op, names.iter().copied())),
            );
            decls.push(None);
            continue;
        };
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
                format!("operator `{}` cannot be bit-exact, so it cannot run under strict (its tier is {})", op.name, op.tier),
                Some("pin this node or its module to `repro` or `live`".to_string()),
            );
        }
        if let Some(p) = &np.fft_provider {
            match crate::dsp::fft::FftProvider::parse(p) {
                None => cx.error(
                    &oloc,
                    Some(&node.id),
                    format!("unknown fft_provider `{p}`"),
                    Some("valid: reference, rustfft".to_string()),
                ),
                Some(crate::dsp::fft::FftProvider::RustFft) if profile == Profile::Strict => cx.error(
                    &oloc,
                    Some(&node.id),
                    format!("fft_provider `{p}` cannot be bit-exact, so it is not allowed under strict"),
                    Some("strict uses the bit-exact `reference` FFT; pin this node to repro or live to use rustfft".to_string()),
                ),
                Some(_) => {}
            }
        }
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
            if matches!(spec.kind, ParamKind::Resource) {
                match load_resource(&mut cx, &p.value, &p.loc, &node.id, opts, &mut audio_cache) {
                    Some(a) => values[pi] = Some(Value::Resource(a)),
                    None => values[pi] = None,
                }
                continue;
            }
            match resolve_param(spec, &p.value, sr) {
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
            decls.push(None);
            continue;
        }
        let values: Vec<Value> = values
            .into_iter()
            .map(|v| v.expect("checked above"))
            .collect();
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
        decls.push(Some(Decl {
            op,
            profile: np,
            values,
            n_inputs,
            audio_in: Vec::new(),
            param_in: vec![Vec::new(); op.params.len()],
        }));
    }

    // --- edges --------------------------------------------------------------
    let mut graph: DiGraph<usize, usize> = DiGraph::new();
    let gnodes: Vec<NodeIndex> = (0..scene.nodes.len()).map(|i| graph.add_node(i)).collect();
    let mut resolved_edges: Vec<(usize, usize, usize, DestPort)> = Vec::new(); // (edge, src, src port, dest)
    for (ei, edge) in scene.edges.iter().enumerate() {
        let src = resolve_node(&mut cx, &index, &edge.from, &edge.loc, "from");
        let dst = resolve_node(&mut cx, &index, &edge.to, &edge.loc, "to");
        let (Some(src), Some(dst)) = (src, dst) else {
            continue;
        };
        let loc = edge.loc.clone();
        let Some(src_port) = decls[src].as_ref().and_then(|d| {
            let port = edge.from.port.as_deref().unwrap_or("out");
            let found = d.op.outputs.iter().position(|p| *p == port);
            if found.is_none() {
                let help = did_you_mean(port, d.op.outputs.iter().copied());
                cx.error(
                    &loc,
                    Some(&edge.from.node),
                    format!(
                        "edge source `{}`: operator `{}` has no output `{port}`",
                        edge.from, d.op.name
                    ),
                    Some(help),
                );
            }
            found
        }) else {
            continue;
        };
        let Some(dest) = decls[dst].as_mut().and_then(|d| {
            let port = edge.to.port.as_deref().unwrap_or("in");
            if d.op.variadic_inputs {
                if let Some(k) = port.strip_prefix("in").and_then(|k| k.parse::<usize>().ok()) {
                    if k < MAX_VARIADIC && (port == format!("in{k}")) {
                        d.n_inputs = d.n_inputs.max(k + 1);
                        return Some(DestPort::Audio(k));
                    }
                }
            } else if let Some(i) = d.op.inputs.iter().position(|p| *p == port) {
                return Some(DestPort::Audio(i));
            }
            if let Some(pi) = d.op.param_index(port) {
                if d.op.params[pi].is_port() {
                    return Some(DestPort::Param(pi));
                }
                cx.error(
                    &loc,
                    Some(&edge.to.node),
                    format!("param `{port}` of `{}` cannot be modulated (it is not a continuous number)", d.op.name),
                    None,
                );
                return None;
            }
            let mut valid: Vec<String> = if d.op.variadic_inputs {
                vec!["in0".to_string(), "in1".to_string(), "…".to_string()]
            } else {
                d.op.inputs.iter().map(|s| s.to_string()).collect()
            };
            valid.extend(d.op.params.iter().filter(|p| p.is_port()).map(|p| p.name.to_string()));
            let what = if edge.to.port.is_none() {
                format!("operator `{}` has no `in` input", d.op.name)
            } else {
                format!("operator `{}` has no input `{port}`", d.op.name)
            };
            let help = match suggest::closest(port, valid.iter().map(|s| s.as_str())) {
                Some(s) => format!("did you mean `{}:{s}`? (inputs: {})", edge.to.node, valid.join(", ")),
                None if valid.is_empty() => "it has no inputs".to_string(),
                None => format!("inputs: {}", valid.join(", ")),
            };
            cx.error(&loc, Some(&edge.to.node), format!("edge destination `{}`: {what}", edge.to), Some(help));
            None
        }) else {
            continue;
        };
        // The same edge twice would double the signal: almost surely a
        // slip, and silently merging it would hide one.
        if let Some((first, ..)) = resolved_edges.iter().find(|(e, s, p, d)| {
            *s == src && *p == src_port && *d == dest && resolve_dst(scene, &index, *e) == &dst
        }) {
            let edge = &scene.edges[ei];
            cx.error(
                &edge.loc,
                Some(&edge.to.node),
                format!(
                    "edge `{} → {}` is written twice (edges[{first}] and edges[{ei}])",
                    edge.from, edge.to
                ),
                Some("remove one; to make the signal louder, use a `gain` node".to_string()),
            );
            continue;
        }
        graph.add_edge(gnodes[src], gnodes[dst], ei);
        resolved_edges.push((ei, src, src_port, dest));
    }

    // --- cycles ---------------------------------------------------------------
    for scc in petgraph::algo::tarjan_scc(&graph) {
        let self_loop = scc.len() == 1 && graph.contains_edge(scc[0], scc[0]);
        if scc.len() > 1 || self_loop {
            let cycle = cycle_path(&graph, &scc);
            let names: Vec<&str> = cycle
                .iter()
                .map(|&i| scene.nodes[graph[i]].id.as_str())
                .collect();
            let first = graph[cycle[0]];
            cx.error(
                &scene.nodes[first].loc,
                Some(&scene.nodes[first].id),
                format!("the graph has a cycle: {} → {}", names.join(" → "), names[0]),
                Some("feedback lives inside operators (e.g. `delay` has a `feedback` param); remove one of these edges".to_string()),
            );
        }
    }

    // --- schedule (Kahn, ties by declaration order) --------------------------
    let n = scene.nodes.len();
    let mut indeg = vec![0usize; n];
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in graph.edge_indices() {
        let (a, b) = graph.edge_endpoints(e).expect("edge exists");
        succ[graph[a]].push(graph[b]);
        indeg[graph[b]] += 1;
    }
    let mut ready: BTreeSet<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(i) = ready.pop_first() {
        order.push(i);
        for &j in &succ[i] {
            indeg[j] -= 1;
            if indeg[j] == 0 {
                ready.insert(j);
            }
        }
    }
    let mut position = vec![usize::MAX; n];
    for (k, &i) in order.iter().enumerate() {
        position[i] = k;
    }

    // Wire inputs now that every variadic node knows its input count.
    for d in decls.iter_mut().flatten() {
        d.audio_in = vec![Vec::new(); d.n_inputs];
    }
    for (ei, src, src_port, dest) in &resolved_edges {
        if let Some(d) = decls[*resolve_dst(scene, &index, *ei)].as_mut() {
            match dest {
                DestPort::Audio(i) => d.audio_in[*i].push((*src, *src_port)),
                DestPort::Param(p) => d.param_in[*p].push((*src, *src_port)),
            }
        }
    }
    // Summing order: sorted by (source id, source port).
    for d in decls.iter_mut().flatten() {
        for list in d.audio_in.iter_mut().chain(d.param_in.iter_mut()) {
            list.sort_by(|a, b| {
                (scene.nodes[a.0].id.as_str(), a.1).cmp(&(scene.nodes[b.0].id.as_str(), b.1))
            });
        }
    }

    // A node whose params set its precision (a cast's `to`).
    for d in decls.iter_mut().flatten() {
        if let Some(p) = d.op.own_precision(&d.values) {
            d.profile.precision = p;
        }
    }

    // --- cast rules (judged by the consuming node's profile) -----------------
    for (ei, src, _, _) in &resolved_edges {
        let dst = *resolve_dst(scene, &index, *ei);
        let (Some(s), Some(d)) = (decls[*src].as_ref(), decls[dst].as_ref()) else {
            continue;
        };
        let (sp, dp) = (s.profile.precision, d.profile.precision);
        if sp == dp || d.op.precision_param.is_some() {
            continue;
        }
        let edge = &scene.edges[*ei];
        let narrowing = sp == Precision::F64 && dp == Precision::F32;
        let msg = format!(
            "edge {} → {} changes precision {} → {} implicitly",
            edge.from,
            edge.to,
            sp.name(),
            dp.name()
        );
        let help = format!(
            "insert a cast node: {{ \"id\": \"to_{}\", \"op\": \"cast\", \"params\": {{ \"to\": \"{}\" }} }}",
            dp.name(),
            dp.name()
        );
        match d.profile.profile.cast_rule() {
            CastRule::ExplicitOnly => cx.error(
                &edge.loc,
                Some(&edge.to.node),
                format!("{msg}, which {} does not allow", d.profile.profile),
                Some(help),
            ),
            CastRule::WidenOnly if narrowing => cx.error(
                &edge.loc,
                Some(&edge.to.node),
                format!(
                    "{msg}; {} only widens implicitly (f32 → f64)",
                    d.profile.profile
                ),
                Some(help),
            ),
            CastRule::All if narrowing => cx.warn(
                &edge.loc,
                Some(&edge.to.node),
                format!("{msg} (lossy)"),
                None,
            ),
            _ => {}
        }
    }

    // --- outputs ---------------------------------------------------------------
    let mut main = Vec::new();
    match scene.outputs.iter().find(|b| b.name == "main") {
        None => {
            let names: Vec<&str> = scene.outputs.iter().map(|b| b.name.as_str()).collect();
            cx.error(
                scene.outputs_loc.as_ref().unwrap_or(&top),
                None,
                "the scene has no `main` output bus".to_string(),
                Some(if names.is_empty() {
                    "add \"outputs\": { \"main\": [\"node:out\"] }".to_string()
                } else {
                    format!(
                        "buses present: {}; `main` is what is played and rendered",
                        names.join(", ")
                    )
                }),
            );
        }
        Some(bus) if bus.channels.is_empty() => {
            cx.error(
                &bus.loc,
                None,
                "the `main` bus has no channels".to_string(),
                None,
            );
        }
        Some(bus) => {
            for (ep, loc) in &bus.channels {
                let Some(i) = resolve_node(&mut cx, &index, ep, loc, "output") else {
                    continue;
                };
                let Some(d) = decls[i].as_ref() else { continue };
                let port = ep.port.as_deref().unwrap_or("out");
                match d.op.outputs.iter().position(|p| *p == port) {
                    Some(p) => main.push(SourceRef {
                        node: i,
                        port: p,
                        delay: 0,
                    }),
                    None => {
                        let help = did_you_mean(port, d.op.outputs.iter().copied());
                        cx.error(
                            loc,
                            Some(&ep.node),
                            format!("`{ep}`: operator `{}` has no output `{port}`", d.op.name),
                            Some(help),
                        )
                    }
                }
            }
        }
    }

    // --- seed -------------------------------------------------------------------
    let mut seed = match seed_given {
        Some(s) => SeedSource::Given(s),
        None => SeedSource::None,
    };
    for (i, d) in decls.iter().enumerate() {
        let Some(d) = d else { continue };
        if !d.op.uses_rng || seed_given.is_some() {
            continue;
        }
        if d.profile.profile.requires_seed() {
            cx.error(
                &scene.nodes[i].loc,
                Some(&scene.nodes[i].id),
                format!(
                    "node `{}` ({}) uses randomness, and {} needs an explicit seed",
                    scene.nodes[i].id, d.op.name, d.profile.profile
                ),
                Some("add \"seed\": 42 at the top of the scene, or pass --seed N".to_string()),
            );
        } else if seed == SeedSource::None {
            seed = SeedSource::Auto(auto_seed());
        }
    }

    // --- events -----------------------------------------------------------------
    let mut events: Vec<(u64, usize, PlanEvent)> = Vec::new();
    for ev in &scene.events {
        let Some(&ni) = index.get(ev.node.as_str()) else {
            let help = did_you_mean(&ev.node, scene.nodes.iter().map(|n| n.id.as_str()));
            cx.error(
                &ev.loc,
                None,
                format!("event targets unknown node `{}`", ev.node),
                Some(help),
            );
            continue;
        };
        let Some(d) = decls[ni].as_ref() else {
            continue;
        };
        let Some(pi) = d.op.param_index(&ev.param) else {
            cx.error(
                &ev.loc,
                Some(&ev.node),
                format!(
                    "event targets unknown param `{}` of `{}`",
                    ev.param, d.op.name
                ),
                Some(did_you_mean(&ev.param, d.op.params.iter().map(|p| p.name))),
            );
            continue;
        };
        let spec = &d.op.params[pi];
        if !spec.settable_by_events {
            cx.error(
                &ev.loc,
                Some(&ev.node),
                format!("param `{}` of `{}` is fixed when the node is built, so an event cannot change it", spec.name, d.op.name),
                Some("set it in the node's params".to_string()),
            );
            continue;
        }
        let action = match spec.kind {
            ParamKind::Resource | ParamKind::Gains => {
                cx.error(
                    &ev.loc,
                    Some(&ev.node),
                    format!("param `{}` cannot be changed by an event", spec.name),
                    None,
                );
                continue;
            }
            ParamKind::Number { .. } => match resolve_param(spec, &ev.value, sr) {
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
                                continue;
                            }
                        },
                    };
                    EventAction::Set { value: v, ramp }
                }
                Ok(_) => unreachable!("numbers resolve to numbers"),
                Err(ParamError::WrongUnit(e)) => {
                    cx.wrong_unit(
                        d.profile.profile,
                        &ev.loc,
                        &ev.node,
                        format!("event value for `{}`: {e}", ev.param),
                        "event ignored",
                    );
                    continue;
                }
                Err(ParamError::Invalid { message, help }) => {
                    cx.bad_event_value(&ev.loc, &ev.node, message, help);
                    continue;
                }
            },
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
                    continue;
                }
                match resolve_param(spec, &ev.value, sr) {
                    Ok(v) => EventAction::Discrete(v),
                    Err(ParamError::WrongUnit(e)) => {
                        cx.error(&ev.loc, Some(&ev.node), e.to_string(), None);
                        continue;
                    }
                    Err(ParamError::Invalid { message, help }) => {
                        cx.bad_event_value(&ev.loc, &ev.node, message, help);
                        continue;
                    }
                }
            }
        };
        let Some(exact) = ev.time.to_samples(sr) else {
            cx.error(
                &ev.loc,
                Some(&ev.node),
                "event time is out of range".to_string(),
                None,
            );
            continue;
        };
        let np = &d.profile;
        let sample = if exact.is_integer() {
            exact.num
        } else {
            match np.profile.off_grid() {
                OffGrid::Error => {
                    let f = exact.floor();
                    cx.error(
                        &ev.loc,
                        Some(&ev.node),
                        format!(
                            "event time is between samples {f} and {} at {sr} Hz, which {} does not allow",
                            f + 1,
                            np.profile
                        ),
                        Some(format!("use a time on the sample grid, e.g. \"{f}samples\"")),
                    );
                    continue;
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
            continue;
        };
        if np.profile.event_timing() == EventTiming::BlockAccurate && block_size > 0 {
            sample = sample / block_size as u64 * block_size as u64;
        }
        events.push((
            sample,
            ev.index,
            PlanEvent {
                sample,
                node: ni,
                param: pi,
                action,
            },
        ));
    }
    events.sort_by_key(|(s, i, _)| (*s, *i));

    let duration = scene.duration.and_then(|t| time_to_samples(t, sr));
    let edit_ramp = scene
        .edit
        .ramp
        .and_then(|t| time_to_samples(t, sr))
        .unwrap_or(sr as u64 * DEFAULT_EDIT_RAMP_MS / 1000);
    let crossfade = scene
        .edit
        .crossfade
        .and_then(|t| time_to_samples(t, sr))
        .unwrap_or(sr as u64 * DEFAULT_CROSSFADE_MS / 1000);

    if !cx.errors.is_empty() {
        let mut all = cx.errors;
        all.extend(cx.warnings);
        return Err(all);
    }

    // --- build, in schedule order -----------------------------------------------
    let seed_value = seed.value();
    let mut nodes = Vec::with_capacity(n);
    let mut guarantees = vec![Profile::Strict; n];
    let mut out_latency = vec![0usize; n];
    for &i in &order {
        let d = decls[i].take().expect("no errors, so every node resolved");
        let decl = &scene.nodes[i];
        let mut g = d.profile.profile;
        for list in d.audio_in.iter().chain(&d.param_in) {
            for (s, _) in list {
                g = g.min(guarantees[*s]);
            }
        }
        guarantees[i] = g;
        let local_seed =
            d.op.param_index("seed")
                .and_then(|k| match d.values[k] {
                    Value::Integer(v) => Some(v as u64),
                    _ => None,
                })
                .unwrap_or(0);
        let node = if opts.skip_build {
            None
        } else {
            let bcx = BuildCtx {
                node_id: &decl.id,
                sample_rate: sr as f64,
                max_block: block_size,
                values: &d.values,
                n_inputs: d.n_inputs,
                noise_hash: crate::dsp::rng::hash64(seed_value, &decl.id, local_seed),
                profile: &d.profile,
            };
            match (d.op.build)(&bcx, d.profile.precision, d.profile.math) {
                Ok(node) => Some(node),
                Err(e) => {
                    cx.error(
                        &decl.loc,
                        Some(&decl.id),
                        format!("cannot build `{}`: {e}", d.op.name),
                        None,
                    );
                    None
                }
            }
        };
        let latency = node.as_ref().map_or(0, |n| n.latency());
        // Latency compensation: every input arrives as late as the latest one.
        let arrival = d
            .audio_in
            .iter()
            .chain(&d.param_in)
            .flatten()
            .map(|(s, _)| out_latency[*s])
            .max()
            .unwrap_or(0);
        out_latency[i] = arrival + latency;
        let remap = |list: &Vec<(usize, usize)>| -> Vec<SourceRef> {
            list.iter()
                .map(|(s, p)| SourceRef {
                    node: position[*s],
                    port: *p,
                    delay: arrival - out_latency[*s],
                })
                .collect()
        };
        nodes.push(PlanNode {
            id: decl.id.clone(),
            op: d.op,
            module: decl.module.map(|m| scene.modules[m].id.clone()),
            profile: d.profile.clone(),
            guarantee: g,
            values: d.values.clone(),
            inputs: d.audio_in.iter().map(remap).collect(),
            param_inputs: d.param_in.iter().map(remap).collect(),
            node,
            latency,
            output_latency: out_latency[i],
            edit_ramp: decl
                .ramp
                .and_then(|t| time_to_samples(t, sr))
                .unwrap_or(edit_ramp),
        });
    }
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let latency = main.iter().map(|s| out_latency[s.node]).max().unwrap_or(0);
    let main = main
        .into_iter()
        .map(|s| SourceRef {
            node: position[s.node],
            port: s.port,
            delay: latency - out_latency[s.node],
        })
        .collect();
    let events = events
        .into_iter()
        .map(|(_, _, mut e)| {
            e.node = position[e.node];
            e
        })
        .collect();
    if let SeedSource::Auto(s) = seed {
        cx.warnings.push(Diagnostic::warning(
            &scene.file,
            None,
            format!("no seed given; live chose seed {s} (pass --seed {s} to hear this again)"),
        ));
    }
    Ok(Plan {
        file: scene.file.clone(),
        session_profile: session,
        sample_rate: sr,
        block_size,
        seed,
        duration,
        nodes,
        main,
        latency,
        events,
        crossfade,
        resources: cx.resources,
        warnings: cx.warnings,
    })
}

fn resolve_dst<'a>(scene: &Scene, index: &'a HashMap<&str, usize>, edge: usize) -> &'a usize {
    &index[scene.edges[edge].to.node.as_str()]
}

fn resolve_node(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    ep: &Endpoint,
    loc: &Loc,
    role: &str,
) -> Option<usize> {
    match index.get(ep.node.as_str()) {
        Some(&i) => Some(i),
        None => {
            let help = did_you_mean(&ep.node, cx.scene.nodes.iter().map(|n| n.id.as_str()));
            cx.error(
                loc,
                None,
                format!("{role} endpoint `{ep}` names no node `{}`", ep.node),
                Some(help),
            );
            None
        }
    }
}

fn load_resource(
    cx: &mut Ctx<'_>,
    raw: &crate::scene::RawValue,
    loc: &Loc,
    node: &str,
    opts: &CompileOptions,
    cache: &mut HashMap<PathBuf, Arc<AudioData>>,
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
    let pinned = opts
        .pinned_resources
        .iter()
        .find(|(r, _)| r == reference)
        .map(|(_, p)| p.clone());
    let path = match pinned.map_or_else(
        || resource::resolve(reference, cx.scene.dir.as_deref(), &opts.resource_dirs),
        Ok,
    ) {
        Ok(p) => p,
        Err(e) => {
            cx.error(loc, Some(node), e, None);
            return None;
        }
    };
    if !cx.resources.iter().any(|(r, _)| r == reference) {
        cx.resources.push((reference.clone(), path.clone()));
    }
    let data = match cache.get(&path) {
        Some(a) => a.clone(),
        None => match AudioData::load(&path) {
            Ok(a) => {
                let a = Arc::new(a);
                cache.insert(path.clone(), a.clone());
                a
            }
            Err(e) => {
                cx.error(loc, Some(node), e, None);
                return None;
            }
        },
    };
    let rate = opts.sample_rate.unwrap_or(cx.scene.sample_rate);
    if data.sample_rate != rate {
        cx.error(
            loc,
            Some(node),
            format!(
                "`{}` is at {} Hz but the scene runs at {} Hz",
                path.display(),
                data.sample_rate,
                rate
            ),
            Some("resample the file, or set the scene's sample_rate to match".to_string()),
        );
        return None;
    }
    Some(data)
}

/// A time in whole samples (rounded half to even).
pub(crate) fn time_to_samples(t: TimeSpec, sr: u32) -> Option<u64> {
    u64::try_from(t.to_samples(sr)?.round_half_even()).ok()
}

/// Walks one cycle inside a strongly connected component.
fn cycle_path(graph: &DiGraph<usize, usize>, scc: &[NodeIndex]) -> Vec<NodeIndex> {
    let members: BTreeSet<NodeIndex> = scc.iter().copied().collect();
    let start = *scc.iter().min_by_key(|i| graph[**i]).expect("non-empty");
    let mut path = vec![start];
    let mut seen = BTreeSet::from([start]);
    let mut cur = start;
    loop {
        let mut nexts: Vec<NodeIndex> = graph
            .neighbors(cur)
            .filter(|n| members.contains(n))
            .collect();
        nexts.sort_by_key(|n| graph[*n]);
        if nexts.contains(&start) {
            return path;
        }
        match nexts.into_iter().find(|n| !seen.contains(n)) {
            Some(nx) => {
                path.push(nx);
                seen.insert(nx);
                cur = nx;
            }
            None => return path,
        }
    }
}

fn auto_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    crate::dsp::rng::mix64(nanos) >> 16
}
