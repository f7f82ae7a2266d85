//! Scene → Plan, in passes, each a function below with its own contract.
//! [`compile`] runs them in this order:
//!
//! 1. `session_settings`: session profile, sample rate, block size, seed.
//! 2. `resolve_profile` and 3. `resolve_params`, node by node.
//! 4. `resolve_edges`: endpoints, ports, duplicate edges, feedback delays.
//! 5. `reject_cycles`: every loop needs a feedback edge.
//! 6. `schedule`: topological over ordinary edges, ties by declaration order.
//! 7. `wire_inputs`: sources per input, in summing order.
//! 8. `resolve_casts`: precision set by params, implicit-cast rules.
//! 9. `resolve_outputs`: the `main` bus.
//! 10. `choose_seed`.
//! 11. `place_events`: events on the sample clock.
//! 12. `edit_timing`: duration, edit ramp, crossfade in samples.
//! 13. `propagate_guarantees`.
//! 14. `build_nodes`.
//! 15. `compensate_latency`: after the build, which reports each latency.
//! 16. `assemble`: the plan in schedule order.
//!
//! Passes 1–12 only report problems and go on, so one run names them all;
//! nothing is built unless they found none. Every pass is a loop or a
//! worklist, never a recursion along the graph: a chain of a million nodes
//! compiles on the main thread's stack.

use super::{EventAction, Plan, PlanEvent, PlanNode, SeedSource, SourceRef};
use crate::dsp::fft::FftProvider;
use crate::dsp::Precision;
use crate::ops::{
    self, default_value, resolve_param, AnyNode, AudioData, BuildCtx, OpSpec, ParamError,
    ParamKind, ParamSpec, Value,
};
use crate::profile::{CastRule, EventTiming, NodeProfile, OffGrid, Profile, MAX_BLOCK_SIZE};
use crate::scene::{
    duration_limit_text, max_duration_samples, resource, suggest, Diagnostic, EdgeDecl, Endpoint,
    EventDecl, Loc, NodeDecl, Scene, TimeSpec,
};
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
    /// Per audio input, its sources as (source decl index, source port,
    /// feedback delay in samples; 0 for an ordinary edge).
    audio_in: Vec<Vec<(usize, usize, usize)>>,
    /// Per param, its modulation sources, likewise.
    param_in: Vec<Vec<(usize, usize, usize)>>,
}

impl Decl {
    /// Every node feeding this one, audio and modulation alike, feedback
    /// edges included.
    fn upstream(&self) -> Vec<usize> {
        self.audio_in
            .iter()
            .chain(&self.param_in)
            .flatten()
            .map(|(s, _, _)| *s)
            .collect()
    }

    /// The nodes feeding this one through ordinary edges: those that run
    /// before it in the same block.
    fn forward_upstream(&self) -> Vec<usize> {
        self.audio_in
            .iter()
            .chain(&self.param_in)
            .flatten()
            .filter(|(_, _, fb)| *fb == 0)
            .map(|(s, _, _)| *s)
            .collect()
    }
}

/// A resolved edge destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum DestPort {
    Audio(usize),
    Param(usize),
}

/// An edge whose endpoints and ports exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Edge {
    /// Index in the scene's `edges`.
    index: usize,
    src: usize,
    src_port: usize,
    dst: usize,
    dest: DestPort,
    /// A feedback edge's delay in samples (≥ 1); 0 for an ordinary edge.
    delay: usize,
}

/// What the whole session runs with (DESIGN §4, resolution).
struct Session {
    profile: Profile,
    sample_rate: u32,
    block_size: usize,
    seed_given: Option<u64>,
}

/// The scene's lengths in samples: its default render length, and how long
/// live edits glide and crossfade.
struct EditTiming {
    duration: Option<u64>,
    edit_ramp: u64,
    crossfade: u64,
}

/// Compiles a scene. On failure, every error found (and the warnings).
///
/// The passes run in the order below, each a function of its own. Every
/// problem up to the events is collected before anything is built, so one
/// run reports them all; nodes are built only for a valid graph.
pub fn compile(scene: &Scene, opts: &CompileOptions) -> Result<Plan, Vec<Diagnostic>> {
    let mut cx = Ctx {
        scene,
        errors: Vec::new(),
        warnings: scene.warnings.clone(),
        resources: Vec::new(),
    };
    let Declared {
        session,
        index,
        mut decls,
        edges,
        order,
    } = declare(&mut cx, opts);
    resolve_casts(&mut cx, &mut decls, &edges);
    let main = resolve_outputs(&mut cx, &index, &decls);
    let seed = choose_seed(&mut cx, &decls, session.seed_given);
    let events = place_events(&mut cx, &index, &decls, &session);
    let timing = edit_timing(&mut cx, session.sample_rate);
    if !cx.errors.is_empty() {
        let mut all = cx.errors;
        all.extend(cx.warnings);
        return Err(all);
    }

    let decls: Vec<Decl> = decls
        .into_iter()
        .map(|d| d.expect("no errors, so every node resolved"))
        .collect();
    let upstream: Vec<Vec<usize>> = decls.iter().map(Decl::upstream).collect();
    let forward: Vec<Vec<usize>> = decls.iter().map(Decl::forward_upstream).collect();
    let own: Vec<Profile> = decls.iter().map(|d| d.profile.profile).collect();
    let guarantees = propagate_guarantees(&upstream, &own);
    drop(upstream);
    let built = build_nodes(&mut cx, opts, &session, seed, &order, &decls);
    if !cx.errors.is_empty() {
        return Err(cx.errors);
    }
    let latency: Vec<usize> = built
        .iter()
        .map(|n| n.as_ref().map_or(0, |n| n.latency()))
        .collect();
    let align = compensate_latency(&order, &forward, &latency);
    if let SeedSource::Auto(s) = seed {
        cx.warnings.push(Diagnostic::warning(
            &scene.file,
            None,
            format!("no seed given; live chose seed {s} (pass --seed {s} to hear this again)"),
        ));
    }
    let parts = Parts {
        decls,
        built,
        latency,
        guarantees,
        align,
        order,
        main,
        events,
    };
    Ok(assemble(cx, &session, seed, &timing, parts))
}

/// What passes 1–7 leave for the rest of `compile`.
struct Declared<'a> {
    session: Session,
    index: HashMap<&'a str, usize>,
    decls: Vec<Option<Decl>>,
    edges: Vec<Edge>,
    order: Vec<usize>,
}

/// Passes 1–7: the session, the nodes, the edges (cycles rejected unless
/// they pass through a feedback edge), the schedule and the wired inputs.
fn declare<'a>(cx: &mut Ctx<'a>, opts: &CompileOptions) -> Declared<'a> {
    let scene = cx.scene;
    let session = session_settings(cx, opts);
    let index: HashMap<&str, usize> = scene
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let mut decls = declare_nodes(cx, opts, &session);
    let (graph, edges) = resolve_edges(cx, &index, &mut decls, session.sample_rate);
    reject_cycles(cx, &graph, &edges);
    let order = schedule(&graph);
    wire_inputs(scene, &mut decls, &edges);
    unused_gains(cx, &decls);
    Declared {
        session,
        index,
        decls,
        edges,
        order,
    }
}

/// Pass 1, the session (DESIGN §4): the profile is `--profile`, else the
/// scene's, else repro; the sample rate is the scene's unless the device
/// forces another; the block size is `--block-size`, else the scene's
/// `profile_config.block_size`, else the profile's default, and must lie in
/// 1 … [`MAX_BLOCK_SIZE`]. `--seed` replaces the scene's seed.
fn session_settings(cx: &mut Ctx<'_>, opts: &CompileOptions) -> Session {
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
    for dir in &opts.resource_dirs {
        let problem = match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => "is a file, not a directory".to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
            Err(e) => format!("cannot be read: {e}"),
        };
        cx.errors.push(
            Diagnostic::error(
                &scene.file,
                None,
                format!("--resources `{}` {problem}", dir.display()),
            )
            .with_help(
                "--resources takes a directory of files that scenes name as \"@resource:NAME\""
                    .to_string(),
            ),
        );
    }
    Session {
        profile,
        sample_rate,
        block_size,
        seed_given: opts.seed.or(scene.seed),
    }
}

/// Passes 2 and 3, node by node in declaration order (so each node's
/// problems are reported together): its operator, its profile, its params.
/// `None` for a node that cannot take part (unknown operator, a missing
/// resource); its errors are already recorded.
fn declare_nodes(cx: &mut Ctx<'_>, opts: &CompileOptions, session: &Session) -> Vec<Option<Decl>> {
    let scene = cx.scene;
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
fn unused_gains(cx: &mut Ctx<'_>, decls: &[Option<Decl>]) {
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
        let list: Vec<String> = unused.iter().map(|k| format!("{k}")).collect();
        let connected = gains.len() - unused.len();
        cx.warn(
            &param.loc,
            Some(&node.id),
            format!(
                "`{}` has {} entries but {connected} of them have an input: entr{} {} (for {}) scale nothing",
                spec.name,
                gains.len(),
                if unused.len() == 1 { "y" } else { "ies" },
                list.join(", "),
                unused.iter().map(|k| format!("in{k}")).collect::<Vec<_>>().join(", ")
            ),
            Some("connect an edge to each input a gain is meant for, or remove the extra gains".to_string()),
        );
    }
}

/// Pass 2, a node's profile (DESIGN §4): its own `profile_overrides` over
/// its module's over the scene's `profile_config` (whose `profile` is the
/// session's, already applied); the profile is the pinned one or the
/// session's. An operator below strict's tier, or an FFT provider that is
/// unknown or not bit-exact, cannot run under strict.
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

/// Pass 3, a node's params (DESIGN §3): each known, in its unit and range
/// (a wrong unit is an error under strict and repro, a warning under live
/// that keeps the default), resources resolved and loaded once per file.
/// Unset params take their defaults; `None` when a resource is missing.
fn resolve_params(
    cx: &mut Ctx<'_>,
    node: &NodeDecl,
    op: &OpSpec,
    np: &NodeProfile,
    opts: &CompileOptions,
    session: &Session,
    audio_cache: &mut HashMap<PathBuf, Arc<AudioData>>,
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
        if matches!(spec.kind, ParamKind::Resource) {
            match load_resource(cx, &p.value, &p.loc, &node.id, opts, audio_cache) {
                Some(a) => values[pi] = Some(Value::Resource(a)),
                None => values[pi] = None,
            }
            continue;
        }
        match resolve_param(spec, &p.value, session.sample_rate) {
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
        return None;
    }
    Some(
        values
            .into_iter()
            .map(|v| v.expect("checked above"))
            .collect(),
    )
}

/// Pass 4, edges and ports (DESIGN §3): both endpoints name nodes; a bare
/// source is `out`, a bare destination `in`; a destination may also be a
/// modulatable param, or `inK` of a variadic node (which grows its input
/// count); the same edge twice is an error. A feedback edge's `delay` is a
/// whole number of samples, at least 1 (see [`feedback_delay`]). Returns
/// the graph of ordinary edges (node weights are declaration indices, edge
/// weights scene edge indices; feedback edges are left out, as they do not
/// order the schedule) and every edge that resolved.
fn resolve_edges(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &mut [Option<Decl>],
    sample_rate: u32,
) -> (DiGraph<usize, usize>, Vec<Edge>) {
    let scene = cx.scene;
    let mut graph: DiGraph<usize, usize> = DiGraph::new();
    let gnodes: Vec<NodeIndex> = (0..scene.nodes.len()).map(|i| graph.add_node(i)).collect();
    let mut resolved: Vec<Edge> = Vec::new();
    // (src, port, dst, dest, delay) → position in `resolved`: a hash, so a
    // scene of a million edges is not checked pair by pair.
    let mut seen: HashMap<(usize, usize, usize, DestPort, usize), usize> = HashMap::new();
    for (ei, edge) in scene.edges.iter().enumerate() {
        let src = resolve_node(cx, index, &edge.from, &edge.loc, "from");
        let dst = resolve_node(cx, index, &edge.to, &edge.loc, "to");
        let delay = match edge.delay {
            None => Some(0),
            Some(t) => feedback_delay(cx, edge, t, sample_rate),
        };
        let (Some(src), Some(dst), Some(delay)) = (src, dst, delay) else {
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
        // slip, and silently merging it would hide one. (The same wire at
        // two delays is two taps, as in a comb filter: allowed.)
        if let Some(&first) = seen.get(&(src, src_port, dst, dest, delay)) {
            cx.error(
                &edge.loc,
                Some(&edge.to.node),
                format!(
                    "edge `{} → {}` is written twice (edges[{}] and edges[{ei}])",
                    edge.from, edge.to, resolved[first].index
                ),
                Some("remove one; to make the signal louder, use a `gain` node".to_string()),
            );
            continue;
        }
        seen.insert((src, src_port, dst, dest, delay), resolved.len());
        if delay == 0 {
            graph.add_edge(gnodes[src], gnodes[dst], ei);
        }
        resolved.push(Edge {
            index: ei,
            src,
            src_port,
            dst,
            dest,
            delay,
        });
    }
    (graph, resolved)
}

/// The longest feedback delay, in seconds of audio: a bound on what one
/// edge's delay line may allocate.
pub const MAX_FEEDBACK_DELAY_S: u64 = 60;

/// A feedback edge's `delay` in samples at the session's rate: exact, a
/// whole number, at least 1 (a loop needs one sample to be computable) and
/// at most [`MAX_FEEDBACK_DELAY_S`]. `None` after reporting why not.
fn feedback_delay(cx: &mut Ctx<'_>, edge: &EdgeDecl, t: TimeSpec, sr: u32) -> Option<usize> {
    let loc = edge.delay_loc.as_ref().unwrap_or(&edge.loc);
    let max = MAX_FEEDBACK_DELAY_S * sr as u64;
    let what = format!("feedback edge `{} → {}`", edge.from, edge.to);
    let Some(exact) = t.to_samples(sr) else {
        cx.error(
            loc,
            Some(&edge.to.node),
            format!("{what}: `delay` is out of range"),
            Some(format!(
                "valid: 1 … {max} samples ({MAX_FEEDBACK_DELAY_S} s at {sr} Hz)"
            )),
        );
        return None;
    };
    if !exact.is_integer() {
        let f = exact.floor();
        cx.error(
            loc,
            Some(&edge.to.node),
            format!(
                "{what}: `delay` is {} samples at {sr} Hz, not a whole number of samples",
                exact.num as f64 / exact.den as f64
            ),
            Some(if f < 1 {
                "a feedback delay is whole samples; use \"1samples\"".to_string()
            } else {
                format!(
                    "a feedback delay is whole samples; use \"{f}samples\" or \"{}samples\"",
                    f + 1
                )
            }),
        );
        return None;
    }
    if exact.num < 1 {
        cx.error(
            loc,
            Some(&edge.to.node),
            format!("{what}: `delay` is 0 samples; a feedback edge delays by at least 1 sample"),
            Some(
                "use \"1samples\" or more; an edge without `delay` is not delayed at all"
                    .to_string(),
            ),
        );
        return None;
    }
    match u64::try_from(exact.num) {
        Ok(n) if n <= max => Some(n as usize),
        _ => {
            cx.error(
                loc,
                Some(&edge.to.node),
                format!("{what}: `delay` of {} samples is too long", exact.num),
                Some(format!(
                    "valid: 1 … {max} samples ({MAX_FEEDBACK_DELAY_S} s at {sr} Hz)"
                )),
            );
            None
        }
    }
}

/// Pass 5, cycles (DESIGN §3): every loop must pass through a feedback
/// edge (one with a `delay`), which `graph` leaves out; so each cycle left
/// in `graph` is an error naming its nodes in order, and saying which edge
/// could take the delay. Kosaraju's algorithm, because petgraph's runs on
/// an explicit stack (its Tarjan recurses once per node on a path, which a
/// long chain turns into a stack overflow).
fn reject_cycles(cx: &mut Ctx<'_>, graph: &DiGraph<usize, usize>, edges: &[Edge]) {
    let scene = cx.scene;
    let mut cycles: Vec<Vec<NodeIndex>> = petgraph::algo::kosaraju_scc(graph)
        .into_iter()
        .filter(|scc| scc.len() > 1 || graph.contains_edge(scc[0], scc[0]))
        .map(|scc| cycle_path(graph, &scc))
        .collect();
    // One report per loop, in the order of their first-declared nodes.
    cycles.sort_by_key(|c| graph[c[0]]);
    for cycle in cycles {
        let names: Vec<&str> = cycle
            .iter()
            .map(|&i| scene.nodes[graph[i]].id.as_str())
            .collect();
        let first = graph[cycle[0]];
        // The edge that closes the loop, back into its first node.
        let last = graph[*cycle.last().expect("a cycle has a node")];
        let closing = edges
            .iter()
            .find(|e| e.src == last && e.dst == first && e.delay == 0)
            .map(|e| &scene.edges[e.index]);
        let example = match closing {
            Some(e) => format!(
                "e.g. {{ \"from\": \"{}\", \"to\": \"{}\", \"delay\": \"1samples\" }}",
                e.from, e.to
            ),
            None => "e.g. \"delay\": \"1samples\"".to_string(),
        };
        cx.error(
            &scene.nodes[first].loc,
            Some(&scene.nodes[first].id),
            format!("the graph has a cycle: {} → {}", cycle_text(&names), names[0]),
            Some(format!(
                "a loop needs a feedback edge: add \"delay\" (at least 1 sample) to one edge of the loop, {example}; or remove one of these edges"
            )),
        );
    }
}

/// Pass 6, the schedule: a topological order by Kahn's algorithm, ties
/// broken by declaration order, so the same scene always runs in the same
/// order. Nodes on a cycle are left out (the cycle is already an error).
fn schedule(graph: &DiGraph<usize, usize>) -> Vec<usize> {
    let n = graph.node_count();
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
    order
}

/// Pass 7, wiring: every input (and modulated param) gets its sources, now
/// that each variadic node knows its input count, summed in a fixed order
/// (DESIGN §3): sorted by (source id, source port), whatever the file's
/// edge order.
fn wire_inputs(scene: &Scene, decls: &mut [Option<Decl>], edges: &[Edge]) {
    for d in decls.iter_mut().flatten() {
        d.audio_in = vec![Vec::new(); d.n_inputs];
    }
    for e in edges {
        if let Some(d) = decls[e.dst].as_mut() {
            match e.dest {
                DestPort::Audio(i) => d.audio_in[i].push((e.src, e.src_port, e.delay)),
                DestPort::Param(p) => d.param_in[p].push((e.src, e.src_port, e.delay)),
            }
        }
    }
    for d in decls.iter_mut().flatten() {
        for list in d.audio_in.iter_mut().chain(d.param_in.iter_mut()) {
            list.sort_by(|a, b| {
                (scene.nodes[a.0].id.as_str(), a.1, a.2).cmp(&(
                    scene.nodes[b.0].id.as_str(),
                    b.1,
                    b.2,
                ))
            });
        }
    }
}

/// Pass 8, casts (DESIGN §4): a node whose params set its precision (a
/// `cast`'s `to`, see `OpSpec::precision_param`) runs at it; then every
/// edge between precisions is judged by the consuming node's profile:
/// strict allows none implicitly, repro only widening, live all (narrowing
/// warned). Edges into a precision-setting node are explicit casts.
fn resolve_casts(cx: &mut Ctx<'_>, decls: &mut [Option<Decl>], edges: &[Edge]) {
    for d in decls.iter_mut().flatten() {
        if let Some(p) = d.op.own_precision(&d.values) {
            d.profile.precision = p;
        }
    }
    let scene = cx.scene;
    for e in edges {
        let (Some(s), Some(d)) = (decls[e.src].as_ref(), decls[e.dst].as_ref()) else {
            continue;
        };
        let (sp, dp) = (s.profile.precision, d.profile.precision);
        if sp == dp || d.op.precision_param.is_some() {
            continue;
        }
        let edge = &scene.edges[e.index];
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
}

/// Pass 9, outputs (DESIGN §3): the `main` bus must exist and have
/// channels, each an existing output port. Sources are declaration indices
/// with no delay yet.
fn resolve_outputs(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &[Option<Decl>],
) -> Vec<SourceRef> {
    let scene = cx.scene;
    let top = Loc::path("");
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
                let Some(i) = resolve_node(cx, index, ep, loc, "output") else {
                    continue;
                };
                let Some(d) = decls[i].as_ref() else { continue };
                let port = ep.port.as_deref().unwrap_or("out");
                match d.op.outputs.iter().position(|p| *p == port) {
                    Some(p) => main.push(SourceRef {
                        node: i,
                        port: p,
                        delay: 0,
                        feedback: 0,
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
    main
}

/// Pass 10, the seed (DESIGN §4, RNG): the given one; else, when a node
/// draws noise, strict and repro require one and live picks one from the
/// clock (reported so the session can be heard again).
fn choose_seed(cx: &mut Ctx<'_>, decls: &[Option<Decl>], seed_given: Option<u64>) -> SeedSource {
    let scene = cx.scene;
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
    seed
}

/// Pass 11, events (DESIGN §4, events): each targets a node and a param an
/// event may set (`ParamSpec::settable_by_events`), with a value in the
/// param's unit and a ramp only on numbers; its exact time lands on the
/// sample clock by the node's profile (off the grid: an error, snapped to
/// the nearest sample, or taken at its block), then block-accurate
/// profiles move it to its block's start. Sorted by sample; ties keep file
/// order. Nodes are declaration indices.
fn place_events(
    cx: &mut Ctx<'_>,
    index: &HashMap<&str, usize>,
    decls: &[Option<Decl>],
    session: &Session,
) -> Vec<PlanEvent> {
    let scene = cx.scene;
    let mut events: Vec<(u64, usize, PlanEvent)> = Vec::new();
    for ev in &scene.events {
        let Some((ni, d, pi)) = event_target(cx, index, decls, ev) else {
            continue;
        };
        let Some(action) = event_action(cx, ev, &d.op.params[pi], d.profile.profile, session)
        else {
            continue;
        };
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
            },
        ));
    }
    events.sort_by_key(|(s, i, _)| (*s, *i));
    events.into_iter().map(|(_, _, e)| e).collect()
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
        ParamKind::Resource | ParamKind::Gains => {
            cx.error(
                &ev.loc,
                Some(&ev.node),
                format!("param `{}` cannot be changed by an event", spec.name),
                None,
            );
            None
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
                return None;
            }
            match resolve_param(spec, &ev.value, sr) {
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
fn edit_timing(cx: &mut Ctx<'_>, sr: u32) -> EditTiming {
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

/// Pass 13, guarantees (DESIGN §4): a node's guarantee is the weakest
/// profile among itself and everything upstream of it, feedback edges
/// included (so every node of a loop ends with the loop's weakest).
/// `upstream[i]` lists the nodes feeding node `i`. A worklist: a node whose
/// guarantee weakens passes it on to the nodes it feeds; a guarantee can
/// only weaken twice, so the work is linear in the edges. Indexed like
/// `own`.
fn propagate_guarantees(upstream: &[Vec<usize>], own: &[Profile]) -> Vec<Profile> {
    let mut downstream: Vec<Vec<usize>> = vec![Vec::new(); own.len()];
    for (i, list) in upstream.iter().enumerate() {
        for &s in list {
            downstream[s].push(i);
        }
    }
    let mut guarantees = own.to_vec();
    let mut work: Vec<usize> = (0..own.len()).collect();
    while let Some(s) = work.pop() {
        for &d in &downstream[s] {
            if guarantees[s] < guarantees[d] {
                guarantees[d] = guarantees[s];
                work.push(d);
            }
        }
    }
    guarantees
}

/// Pass 14, build (DESIGN §6): every node prepared at its precision and
/// math policy, in schedule order, with its noise hash from the session
/// seed, its id and its local `seed` param. Skipped for `check` (nothing is
/// built, latencies read 0). Indexed by declaration.
fn build_nodes(
    cx: &mut Ctx<'_>,
    opts: &CompileOptions,
    session: &Session,
    seed: SeedSource,
    order: &[usize],
    decls: &[Decl],
) -> Vec<Option<AnyNode>> {
    let mut built: Vec<Option<AnyNode>> = (0..decls.len()).map(|_| None).collect();
    if opts.skip_build {
        return built;
    }
    let scene = cx.scene;
    for &i in order {
        let d = &decls[i];
        let decl = &scene.nodes[i];
        let local_seed =
            d.op.param_index("seed")
                .and_then(|k| match d.values[k] {
                    Value::Integer(v) => Some(v as u64),
                    _ => None,
                })
                .unwrap_or(0);
        let bcx = BuildCtx {
            node_id: &decl.id,
            sample_rate: session.sample_rate as f64,
            max_block: session.block_size,
            values: &d.values,
            n_inputs: d.n_inputs,
            noise_hash: crate::dsp::rng::hash64(seed.value(), &decl.id, local_seed),
            profile: &d.profile,
        };
        match (d.op.build)(&bcx, d.profile.precision, d.profile.math) {
            Ok(node) => built[i] = Some(node),
            Err(e) => cx.error(
                &decl.loc,
                Some(&decl.id),
                format!("cannot build `{}`: {e}", d.op.name),
                None,
            ),
        }
    }
    built
}

/// Where each node's inputs meet, after latency compensation.
struct Alignment {
    /// Per node, when its inputs arrive: the latest of its sources.
    arrival: Vec<usize>,
    /// Per node, samples from the scene's sources to its output: its
    /// arrival plus its own latency.
    output: Vec<usize>,
}

impl Alignment {
    /// The delay that makes a source `s` of node `i` arrive with the others.
    fn delay(&self, i: usize, s: usize) -> usize {
        self.arrival[i] - self.output[s]
    }
}

/// Pass 15, latency compensation (DESIGN §5): where paths of different
/// latency meet, the shorter ones are delayed so every input of a node
/// arrives as late as its latest. Follows the build, because a node's
/// latency is what the built node reports (an oversampler's filters, an
/// STFT's frame). `upstream` holds ordinary edges only: a feedback edge
/// delays by exactly what the scene says, so a loop's length is its
/// feedback delay plus the latencies of the nodes on it. Indexed like
/// `latency`.
fn compensate_latency(order: &[usize], upstream: &[Vec<usize>], latency: &[usize]) -> Alignment {
    let mut arrival = vec![0usize; latency.len()];
    let mut output = vec![0usize; latency.len()];
    for &i in order {
        arrival[i] = upstream[i].iter().map(|&s| output[s]).max().unwrap_or(0);
        output[i] = arrival[i] + latency[i];
    }
    Alignment { arrival, output }
}

/// What the last pass puts together, indexed by declaration.
struct Parts {
    decls: Vec<Decl>,
    built: Vec<Option<AnyNode>>,
    latency: Vec<usize>,
    guarantees: Vec<Profile>,
    align: Alignment,
    order: Vec<usize>,
    /// Main-bus sources, by declaration.
    main: Vec<SourceRef>,
    /// Events, by declaration.
    events: Vec<PlanEvent>,
}

/// Pass 16, the plan: nodes in schedule order, every source renumbered to
/// its schedule position and given its alignment delay, the main bus
/// aligned to its latest channel.
fn assemble(
    cx: Ctx<'_>,
    session: &Session,
    seed: SeedSource,
    timing: &EditTiming,
    parts: Parts,
) -> Plan {
    let scene = cx.scene;
    let sr = session.sample_rate;
    let Parts {
        decls,
        mut built,
        latency,
        guarantees,
        align,
        order,
        main,
        events,
    } = parts;
    let mut position = vec![usize::MAX; decls.len()];
    for (k, &i) in order.iter().enumerate() {
        position[i] = k;
    }
    let nodes = order
        .iter()
        .map(|&i| {
            let d = &decls[i];
            let decl = &scene.nodes[i];
            let remap = |list: &Vec<(usize, usize, usize)>| -> Vec<SourceRef> {
                list.iter()
                    .map(|&(s, p, feedback)| SourceRef {
                        node: position[s],
                        port: p,
                        delay: if feedback > 0 { 0 } else { align.delay(i, s) },
                        feedback,
                    })
                    .collect()
            };
            PlanNode {
                id: decl.id.clone(),
                op: d.op,
                module: decl.module.map(|m| scene.modules[m].id.clone()),
                profile: d.profile.clone(),
                guarantee: guarantees[i],
                values: d.values.clone(),
                inputs: d.audio_in.iter().map(remap).collect(),
                param_inputs: d.param_in.iter().map(remap).collect(),
                node: built[i].take(),
                latency: latency[i],
                output_latency: align.output[i],
                edit_ramp: decl
                    .ramp
                    .and_then(|t| time_to_samples(t, sr))
                    .unwrap_or(timing.edit_ramp),
            }
        })
        .collect();
    let bus_latency = main.iter().map(|s| align.output[s.node]).max().unwrap_or(0);
    let main = main
        .into_iter()
        .map(|s| SourceRef {
            node: position[s.node],
            port: s.port,
            delay: bus_latency - align.output[s.node],
            feedback: 0,
        })
        .collect();
    let events = events
        .into_iter()
        .map(|mut e| {
            e.node = position[e.node];
            e
        })
        .collect();
    Plan {
        file: scene.file.clone(),
        session_profile: session.profile,
        sample_rate: sr,
        block_size: session.block_size,
        seed,
        duration: timing.duration,
        nodes,
        main,
        latency: bus_latency,
        events,
        crossfade: timing.crossfade,
        resources: cx.resources,
        warnings: cx.warnings,
    }
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

/// A cycle's nodes joined by arrows; a long one keeps its first and last
/// few, saying how many it leaves out.
fn cycle_text(names: &[&str]) -> String {
    const ENDS: usize = 8;
    if names.len() <= 3 * ENDS {
        return names.join(" → ");
    }
    format!(
        "{} → … {} more … → {}",
        names[..ENDS].join(" → "),
        names.len() - 2 * ENDS,
        names[names.len() - ENDS..].join(" → ")
    )
}

/// Walks one cycle inside a strongly connected component: from its
/// first-declared node, always to the first-declared successor inside the
/// component (back to the start as soon as it can), until a node repeats;
/// the walk from that node on is the cycle. Iterative, linear in the walk.
fn cycle_path(graph: &DiGraph<usize, usize>, scc: &[NodeIndex]) -> Vec<NodeIndex> {
    let members: BTreeSet<NodeIndex> = scc.iter().copied().collect();
    let start = *scc.iter().min_by_key(|i| graph[**i]).expect("non-empty");
    let mut path = vec![start];
    let mut at: HashMap<NodeIndex, usize> = HashMap::from([(start, 0)]);
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
        match nexts.iter().find(|n| !at.contains_key(n)) {
            Some(&nx) => {
                at.insert(nx, path.len());
                path.push(nx);
                cur = nx;
            }
            // Every successor is on the walk already: the cycle closes there.
            None => match nexts.first() {
                Some(n) => return path.split_off(at[n]),
                None => return path,
            },
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

/// One test per pass, each driving the passes before it on a small scene.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::load_str;

    fn scene(text: &str) -> Scene {
        load_str(text, "t.json", None).expect("the scene loads")
    }

    fn ctx(scene: &Scene) -> Ctx<'_> {
        Ctx {
            scene,
            errors: Vec::new(),
            warnings: scene.warnings.clone(),
            resources: Vec::new(),
        }
    }

    fn with_profile(p: Profile) -> CompileOptions {
        CompileOptions {
            profile: Some(p),
            ..CompileOptions::default()
        }
    }

    fn errors(cx: &Ctx<'_>) -> Vec<String> {
        cx.errors.iter().map(|d| d.message.clone()).collect()
    }

    /// A scene of `nodes` and `edges` (JSON array bodies) playing `main`.
    fn graph_scene(nodes: &str, edges: &str, main: &str) -> Scene {
        scene(&format!(
            r#"{{ "version": "1.0", "seed": 1, "nodes": [ {nodes} ], "edges": [ {edges} ],
                 "outputs": {{ "main": [{main}] }} }}"#
        ))
    }

    /// Passes 1–7 on `scene`, as `compile` runs them.
    fn declared<'a>(
        scene: &'a Scene,
        opts: &CompileOptions,
    ) -> (Ctx<'a>, Session, Vec<Option<Decl>>, Vec<Edge>, Vec<usize>) {
        let mut cx = ctx(scene);
        let d = declare(&mut cx, opts);
        (cx, d.session, d.decls, d.edges, d.order)
    }

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
    fn edges_resolve_bare_endpoints_params_and_variadic_inputs() {
        let s = graph_scene(
            r#"{ "id": "a", "op": "saw" }, { "id": "l", "op": "sine" },
               { "id": "f", "op": "biquad" }, { "id": "m", "op": "mix" }"#,
            r#"{ "from": "a", "to": "f" }, { "from": "l", "to": "f:cutoff" },
               { "from": "f", "to": "m:in3" }"#,
            r#""m""#,
        );
        let (cx, _, decls, edges, _) = declared(&s, &CompileOptions::default());
        assert!(cx.errors.is_empty(), "{:?}", errors(&cx));
        let dests: Vec<(usize, usize, usize, DestPort)> = edges
            .iter()
            .map(|e| (e.src, e.src_port, e.dst, e.dest))
            .collect();
        let cutoff = ops::lookup("biquad").unwrap().index_of("cutoff");
        assert_eq!(
            dests,
            [
                (0, 0, 2, DestPort::Audio(0)),
                (1, 0, 2, DestPort::Param(cutoff)),
                (2, 0, 3, DestPort::Audio(3))
            ]
        );
        assert_eq!(
            decls[3].as_ref().unwrap().n_inputs,
            4,
            "in3 makes four inputs"
        );

        let twice = graph_scene(
            r#"{ "id": "a", "op": "saw" }, { "id": "g", "op": "gain" }"#,
            r#"{ "from": "a", "to": "g" }, { "from": "a:out", "to": "g:in" }"#,
            r#""g""#,
        );
        let (cx, ..) = declared(&twice, &CompileOptions::default());
        assert_eq!(
            errors(&cx),
            ["edge `a:out → g:in` is written twice (edges[0] and edges[1])"]
        );
    }

    #[test]
    fn a_cycle_is_an_error_naming_its_nodes_in_order() {
        let s = graph_scene(
            r#"{ "id": "src", "op": "saw" }, { "id": "x", "op": "gain" }, { "id": "y", "op": "gain" }"#,
            r#"{ "from": "src", "to": "x" }, { "from": "x", "to": "y" }, { "from": "y", "to": "x:gain" }"#,
            r#""y""#,
        );
        let (cx, ..) = declared(&s, &CompileOptions::default());
        assert_eq!(errors(&cx), ["the graph has a cycle: x → y → x"]);
    }

    #[test]
    fn issue11_a_cycle_without_a_feedback_edge_says_how_to_fix_it() {
        // Before issue 11 the help said feedback could only live inside operators.
        let s = graph_scene(
            r#"{ "id": "src", "op": "saw" }, { "id": "x", "op": "gain" }, { "id": "y", "op": "gain" }"#,
            r#"{ "from": "src", "to": "x" }, { "from": "x", "to": "y" }, { "from": "y", "to": "x:gain" }"#,
            r#""y""#,
        );
        let (cx, ..) = declared(&s, &CompileOptions::default());
        let help = cx.errors[0].help.as_deref().unwrap_or("");
        assert!(
            help.contains(r#"{ "from": "y", "to": "x:gain", "delay": "1samples" }"#),
            "{help}"
        );
        assert_eq!(cx.errors[0].node.as_deref(), Some("x"));
    }

    #[test]
    fn issue11_a_loop_through_a_feedback_edge_compiles_and_schedules_without_it() {
        // Every cycle was an error before issue 11, even one through a delayed edge.
        let s = graph_scene(
            r#"{ "id": "m", "op": "mix" }, { "id": "d", "op": "gain" }, { "id": "src", "op": "impulse" }"#,
            r#"{ "from": "src", "to": "m:in0" }, { "from": "m", "to": "d" },
               { "from": "d", "to": "m:in1", "delay": "2ms" }"#,
            r#""m""#,
        );
        let (cx, _, decls, edges, order) = declared(&s, &CompileOptions::default());
        assert!(cx.errors.is_empty(), "{:?}", errors(&cx));
        assert_eq!(
            order,
            [2, 0, 1],
            "src, then m, then d: the loop's delayed edge does not order"
        );
        assert_eq!(
            edges.iter().map(|e| e.delay).collect::<Vec<_>>(),
            [0, 0, 96]
        );
        assert_eq!(decls[0].as_ref().unwrap().audio_in[1], [(1, 0, 96)]);
        let plan = compile(&s, &with_profile(Profile::Strict)).expect("compiles");
        let m = &plan.nodes[1];
        assert_eq!(m.id, "m");
        assert_eq!(
            m.inputs[1],
            [SourceRef {
                node: 2,
                port: 0,
                delay: 0,
                feedback: 96
            }]
        );
    }

    #[test]
    fn issue11_feedback_delays_are_whole_samples_at_least_one() {
        // A delay must land on the sample grid and be at least 1 sample (issue 11).
        let with_delay = |delay: &str| {
            graph_scene(
                r#"{ "id": "a", "op": "gain" }, { "id": "b", "op": "gain" }"#,
                &format!(
                    r#"{{ "from": "a", "to": "b" }}, {{ "from": "b", "to": "a", "delay": {delay} }}"#
                ),
                r#""b""#,
            )
        };
        for (delay, want, help) in [
            (r#""0samples""#, "`delay` is 0 samples", r#""1samples""#),
            (r#""0ms""#, "`delay` is 0 samples", r#""1samples""#),
            (
                r#""1.01ms""#,
                "`delay` is 48.48 samples at 48000 Hz, not a whole number",
                r#""48samples" or "49samples""#,
            ),
            (
                r#""2.5samples""#,
                "`delay` is 2.5 samples",
                r#""2samples" or "3samples""#,
            ),
            (
                r#""61s""#,
                "`delay` of 2928000 samples is too long",
                "2880000",
            ),
        ] {
            let s = with_delay(delay);
            let (cx, ..) = declared(&s, &CompileOptions::default());
            assert_eq!(cx.errors.len(), 1, "{delay}: {:?}", errors(&cx));
            let e = &cx.errors[0];
            assert!(e.message.contains(want), "{delay}: {}", e.message);
            assert!(
                e.message.starts_with("feedback edge `b → a`"),
                "{}",
                e.message
            );
            assert!(e.help.as_deref().unwrap_or("").contains(help), "{e:?}");
            let loc = e.loc.as_ref().expect("located");
            assert_eq!(loc.path, "edges[1].delay");
            assert!(loc.line > 0);
        }
        // Whole samples in any unit are fine: 1 ms at 48 kHz, a number of seconds.
        for delay in [r#""1ms""#, "0.001", r#""48samples""#, r#""1000us""#] {
            let s = with_delay(delay);
            let (cx, _, _, edges, _) = declared(&s, &CompileOptions::default());
            assert!(cx.errors.is_empty(), "{delay}: {:?}", errors(&cx));
            assert_eq!(edges[1].delay, 48, "{delay}");
        }
    }

    #[test]
    fn issue11_the_same_wire_at_two_delays_is_two_taps() {
        // Only an identical edge (same delay too) is a duplicate.
        let s = graph_scene(
            r#"{ "id": "a", "op": "saw" }, { "id": "m", "op": "mix" }"#,
            r#"{ "from": "a", "to": "m:in0" }, { "from": "a", "to": "m:in0", "delay": "3samples" },
               { "from": "a", "to": "m:in0", "delay": "3samples" }"#,
            r#""m""#,
        );
        let (cx, _, decls, ..) = declared(&s, &CompileOptions::default());
        assert_eq!(
            errors(&cx),
            ["edge `a → m:in0` is written twice (edges[1] and edges[2])"]
        );
        assert_eq!(
            decls[1].as_ref().unwrap().audio_in[0],
            [(0, 0, 0), (0, 0, 3)]
        );
    }

    #[test]
    fn issue11_a_long_cycle_is_named_by_its_ends() {
        // A 100,000-node loop would otherwise name every id in one message.
        let names: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let text = cycle_text(&refs);
        assert!(
            text.starts_with("n0 → n1 → n2 → n3 → n4 → n5 → n6 → n7 → … 84 more … → n92 → "),
            "{text}"
        );
        assert!(text.ends_with("→ n99"), "{text}");
        assert_eq!(cycle_text(&refs[..3]), "n0 → n1 → n2");
    }

    #[test]
    fn issue11_a_cycle_report_names_a_real_cycle_even_past_a_dead_end() {
        // a → b → c → b and c → a: the walk a → b → c may not close at `a` first.
        let mut g: DiGraph<usize, usize> = DiGraph::new();
        let n: Vec<NodeIndex> = (0..3).map(|i| g.add_node(i)).collect();
        g.add_edge(n[0], n[1], 0);
        g.add_edge(n[1], n[2], 1);
        g.add_edge(n[2], n[1], 2);
        let scc = [n[0], n[1], n[2]];
        // Not strongly connected through `a`: the walk ends in the b–c loop.
        assert_eq!(cycle_path(&g, &scc), [n[1], n[2]]);
        g.add_edge(n[2], n[0], 3);
        assert_eq!(cycle_path(&g, &scc), [n[0], n[1], n[2]]);
    }

    #[test]
    fn the_schedule_is_topological_with_ties_in_declaration_order() {
        // 0 ← 2, 0 ← 1, 3 free: 1 and 2 and 3 are ready at once.
        let mut g: DiGraph<usize, usize> = DiGraph::new();
        let n: Vec<NodeIndex> = (0..4).map(|i| g.add_node(i)).collect();
        g.add_edge(n[2], n[0], 0);
        g.add_edge(n[1], n[0], 1);
        assert_eq!(schedule(&g), [1, 2, 0, 3]);
        g.add_edge(n[3], n[1], 2);
        assert_eq!(schedule(&g), [2, 3, 1, 0]);
    }

    #[test]
    fn inputs_sum_in_source_id_order_whatever_the_file_order() {
        let s = graph_scene(
            r#"{ "id": "z", "op": "saw" }, { "id": "a", "op": "sine" }, { "id": "g", "op": "gain" }"#,
            r#"{ "from": "z", "to": "g" }, { "from": "a", "to": "g" }"#,
            r#""g""#,
        );
        let (cx, _, decls, ..) = declared(&s, &CompileOptions::default());
        assert!(cx.errors.is_empty());
        // Declaration indices: z = 0, a = 1; a sorts first.
        assert_eq!(
            decls[2].as_ref().unwrap().audio_in,
            [vec![(1, 0, 0), (0, 0, 0)]]
        );
    }

    #[test]
    fn casts_are_explicit_under_strict_and_a_cast_node_sets_its_precision() {
        let implicit = graph_scene(
            r#"{ "id": "o", "op": "sine" },
               { "id": "g", "op": "gain", "profile_overrides": { "precision": "f32" } }"#,
            r#"{ "from": "o", "to": "g" }"#,
            r#""g""#,
        );
        let (mut cx, _, mut decls, edges, _) = declared(&implicit, &with_profile(Profile::Strict));
        resolve_casts(&mut cx, &mut decls, &edges);
        assert_eq!(
            errors(&cx),
            ["edge o → g changes precision f64 → f32 implicitly, which strict does not allow"]
        );
        let explicit = graph_scene(
            r#"{ "id": "o", "op": "sine" }, { "id": "c", "op": "cast", "params": { "to": "f32" } },
               { "id": "g", "op": "gain", "profile_overrides": { "precision": "f32" } }"#,
            r#"{ "from": "o", "to": "c" }, { "from": "c", "to": "g" }"#,
            r#""g""#,
        );
        let (mut cx, _, mut decls, edges, _) = declared(&explicit, &with_profile(Profile::Strict));
        resolve_casts(&mut cx, &mut decls, &edges);
        assert!(cx.errors.is_empty(), "{:?}", errors(&cx));
        assert_eq!(decls[1].as_ref().unwrap().profile.precision, Precision::F32);
        // Live allows the narrowing, with a warning.
        let (mut cx, _, mut decls, edges, _) = declared(&implicit, &with_profile(Profile::Live));
        decls[0].as_mut().unwrap().profile.precision = Precision::F64;
        resolve_casts(&mut cx, &mut decls, &edges);
        assert!(cx.errors.is_empty());
        assert!(cx.warnings.iter().any(|w| w.message.ends_with("(lossy)")));
    }

    #[test]
    fn the_main_bus_must_exist() {
        // The loader already insists on `main`; compile does not rely on it.
        let mut s = graph_scene(r#"{ "id": "o", "op": "sine" }"#, "", r#""o""#);
        s.outputs[0].name = "aux".to_string();
        let (mut cx, _, decls, ..) = declared(&s, &CompileOptions::default());
        let index = HashMap::from([("o", 0)]);
        assert!(resolve_outputs(&mut cx, &index, &decls).is_empty());
        assert_eq!(errors(&cx), ["the scene has no `main` output bus"]);
        let s = graph_scene(r#"{ "id": "p", "op": "pan" }"#, "", r#""p:right", "p""#);
        let (mut cx, _, decls, ..) = declared(&s, &CompileOptions::default());
        let index = HashMap::from([("p", 0)]);
        let main = resolve_outputs(&mut cx, &index, &decls);
        assert_eq!(main.iter().map(|s| s.port).collect::<Vec<_>>(), [1]);
        assert_eq!(errors(&cx), ["`p`: operator `pan` has no output `out`"]);
    }

    #[test]
    fn noise_needs_a_seed_except_under_live_which_picks_one() {
        let s = scene(
            r#"{ "version": "1.0", "nodes": [ { "id": "n", "op": "noise" } ],
                 "outputs": { "main": ["n"] } }"#,
        );
        let (mut cx, _, decls, ..) = declared(&s, &with_profile(Profile::Repro));
        assert_eq!(choose_seed(&mut cx, &decls, None), SeedSource::None);
        assert_eq!(cx.errors.len(), 1);
        assert_eq!(choose_seed(&mut cx, &decls, Some(7)), SeedSource::Given(7));
        let (mut cx, _, decls, ..) = declared(&s, &with_profile(Profile::Live));
        assert!(matches!(
            choose_seed(&mut cx, &decls, None),
            SeedSource::Auto(_)
        ));
        assert!(cx.errors.is_empty());
    }

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

    // issue 11: a duration past the sample clock fell back to 10 s silently.
    #[test]
    fn issue11_a_duration_over_24_hours_is_a_located_error() {
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

    #[test]
    fn issue11_a_guarantee_goes_around_a_loop() {
        // 0 → 1 → 2 → (feedback) 1, with 2 live: 1 and 2 end live, 0 stays strict.
        let upstream = vec![vec![], vec![0, 2], vec![1]];
        let own = [Profile::Strict, Profile::Strict, Profile::Live];
        let got = propagate_guarantees(&upstream, &own);
        assert_eq!(got, [Profile::Strict, Profile::Live, Profile::Live]);
    }

    #[test]
    fn a_guarantee_is_the_weakest_profile_upstream() {
        // 0 (live) → 2 (strict) ← 1 (strict); 2 → 3 (strict).
        let upstream = vec![vec![], vec![], vec![0, 1], vec![2]];
        let own = [
            Profile::Live,
            Profile::Strict,
            Profile::Strict,
            Profile::Strict,
        ];
        let got = propagate_guarantees(&upstream, &own);
        assert_eq!(
            got,
            [Profile::Live, Profile::Strict, Profile::Live, Profile::Live]
        );
    }

    #[test]
    fn build_is_skipped_for_check_and_reports_each_failure() {
        let s = graph_scene(
            r#"{ "id": "g", "op": "spectral_gate", "params": { "fft_size": 256, "hop": 96 } }"#,
            "",
            r#""g""#,
        );
        let opts = CompileOptions::default();
        let (mut cx, session, decls, _, order) = declared(&s, &opts);
        let decls: Vec<Decl> = decls.into_iter().map(Option::unwrap).collect();
        let built = build_nodes(&mut cx, &opts, &session, SeedSource::None, &order, &decls);
        assert!(built[0].is_none());
        assert_eq!(
            errors(&cx),
            ["cannot build `spectral_gate`: hop 96 must divide fft_size 256 and be at most 128"]
        );
        let skip = CompileOptions {
            skip_build: true,
            ..CompileOptions::default()
        };
        let mut cx = ctx(&s);
        assert!(
            build_nodes(&mut cx, &skip, &session, SeedSource::None, &order, &decls)[0].is_none()
        );
        assert!(cx.errors.is_empty());
    }

    #[test]
    fn shorter_paths_are_delayed_to_meet_the_latest() {
        // 0 → 1 (latency 45) → 3; 0 → 2 (latency 0) → 3; 3 adds 256.
        let upstream = vec![vec![], vec![0], vec![0], vec![1, 2]];
        let a = compensate_latency(&[0, 1, 2, 3], &upstream, &[0, 45, 0, 256]);
        assert_eq!(a.output, [0, 45, 0, 301]);
        assert_eq!((a.delay(3, 1), a.delay(3, 2)), (0, 45));
    }

    #[test]
    fn the_plan_is_in_schedule_order_with_aligned_sources() {
        // The dry path meets the saturator's 45 samples at `m`.
        let s = graph_scene(
            r#"{ "id": "m", "op": "mix" }, { "id": "o", "op": "sine" }, { "id": "sat", "op": "saturator" }"#,
            r#"{ "from": "o", "to": "sat" }, { "from": "sat", "to": "m:in0" }, { "from": "o", "to": "m:in1" },
               { "from": "o", "to": "m:in2" }"#,
            r#""m", "o""#,
        );
        let plan = compile(&s, &with_profile(Profile::Strict)).expect("compiles");
        let ids: Vec<&str> = plan.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["o", "sat", "m"]);
        let m = &plan.nodes[2];
        let delays: Vec<(usize, usize)> =
            m.inputs.iter().map(|l| (l[0].node, l[0].delay)).collect();
        assert_eq!(delays, [(1, 0), (0, 45), (0, 45)]);
        assert_eq!(plan.latency, 45);
        assert_eq!(
            plan.main,
            [
                SourceRef {
                    node: 2,
                    port: 0,
                    delay: 0,
                    feedback: 0
                },
                SourceRef {
                    node: 0,
                    port: 0,
                    delay: 45,
                    feedback: 0
                }
            ]
        );
    }
}
