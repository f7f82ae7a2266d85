//! Scene → Plan, in passes, each a function with its own contract.
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
//! 11. `place_events`: events on the sample clock; `resolve_controls`:
//!     the `controls`, checked against their targets.
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
//!
//! This file holds [`compile`] and the driver of passes 1–7 it shares with
//! the tests, and what every pass uses: the options, the diagnostics
//! context, the per-node declarations. The passes live in `nodes` (1–3 and
//! the param lints), `edges` (4–8), `gates` and `steps` (lints after 7), `outputs`
//! (9 and 10), `events` (11 and 12) and `build` (13–16).

mod build;
mod controls;
mod edges;
mod events;
mod gates;
mod nodes;
mod outputs;
pub use outputs::auto_seed;
mod steps;
mod voices;

use super::{Plan, SeedSource};
use crate::ops::{AudioData, OpSpec, Value};
use crate::profile::{NodeProfile, Profile};
use crate::scene::{capped_list, suggest, Diagnostic, Endpoint, Loc, Scene, TimeSpec};
use build::{assemble, build_nodes, compensate_latency, propagate_guarantees, Parts};
use controls::resolve_controls;
use edges::{reject_cycles, resolve_casts, resolve_edges, schedule, wire_inputs, Edge};
use events::{edit_timing, place_events};
use gates::dead_gates;
use nodes::{declare_nodes, session_settings, unused_gains};
use outputs::{choose_seed, resolve_outputs};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use steps::step_lints;
pub use voices::{midi_note_hz, voice_node_id};

/// Settings from the command line that override the scene.
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// `--profile`: the session profile.
    pub profile: Option<Profile>,
    /// `--block-size`.
    pub block_size: Option<usize>,
    /// `--seed`: replaces the scene's seed.
    pub seed: Option<u64>,
    /// Where `@resource:NAME` files come from; without one, a scene that
    /// names a resource does not compile.
    pub resolver: Option<Arc<dyn Resolver>>,
    /// Build the nodes (false for `check`, which only validates and reports).
    pub skip_build: bool,
    /// Run at this sample rate instead of the scene's (a device that cannot
    /// play the scene's rate). Operators are rate-parametric.
    pub sample_rate: Option<u32>,
    /// The seed live picks for a scene that draws noise and gives none
    /// (a live session fixes one for all its engines, and its journal
    /// keeps it); `None`: one from the clock.
    pub auto_seed: Option<u64>,
}

/// Finds and reads the files a scene names as `@resource:NAME`. The host
/// supplies it (the command line searches folders and reads WAV files; a
/// plugin reads its bundle), so the engine reads no file format itself.
pub trait Resolver: Send + Sync + std::fmt::Debug {
    /// The file `reference` (the whole `@resource:NAME` string) names for a
    /// scene in `scene_dir`, and its audio; the error is shown at the node.
    fn resolve(&self, reference: &str, scene_dir: Option<&Path>) -> Result<Resolved, String>;

    /// What is wrong with the resolver's own settings, as (message, help):
    /// each is an error of any scene compiled with it.
    fn problems(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A resource found by a [`Resolver`]: the file it came from and its audio.
#[derive(Debug)]
pub struct Resolved {
    /// The file, named in messages and kept by a journal.
    pub path: PathBuf,
    /// Its decoded audio.
    pub audio: AudioData,
}

struct Ctx<'a> {
    scene: &'a Scene,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    /// Every resource reference and the file it resolved to.
    resources: Vec<(String, PathBuf)>,
    /// Every resource converted to the session's rate.
    conversions: Vec<super::Conversion>,
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
    /// warning under live (`scenes/README.md`, *Values and units*), with
    /// what happens instead.
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
        Some(s) => format!("did you mean `{s}`? (valid: {})", capped_list(&list, ", ")),
        None if list.is_empty() => "this node has none".to_string(),
        None => format!("valid: {}", capped_list(&list, ", ")),
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

/// What the whole session runs with (the resolution rules of
/// [`crate::profile`]).
struct Session {
    profile: Profile,
    sample_rate: u32,
    block_size: usize,
    seed_given: Option<u64>,
    tempo: Option<crate::scene::Tempo>,
}

/// Compiles a scene. On failure, every error found (and the warnings).
///
/// ```
/// use morphrt_core::graph::{compile, CompileOptions};
///
/// // Two problems in one scene: both are reported, each located.
/// let text = r#"{
///     "version": "1.0",
///     "nodes": [
///         { "id": "a", "op": "sine", "params": { "freq": "1kHz" } },
///         { "id": "b", "op": "gain", "params": { "gain": 0.5 } }
///     ],
///     "edges": [{ "from": "a", "to": "c" }, { "from": "x", "to": "b" }],
///     "outputs": { "main": ["b"] }
/// }"#;
/// let scene = morphrt_core::scene::load_str(text, "two.json", None).expect("it parses");
/// let errors = compile(&scene, &CompileOptions::default()).err().expect("it does not compile");
/// let errors: Vec<_> = errors.iter().filter(|d| d.is_error()).collect();
/// assert_eq!(errors.len(), 2);
/// assert!(errors.iter().all(|d| d.loc.is_some()));
/// ```
///
/// The passes run in the order below, each a function of its own. Every
/// problem up to the events is collected before anything is built, so one
/// run reports them all; nodes are built only for a valid graph.
pub fn compile(scene: &Scene, opts: &CompileOptions) -> Result<Plan, Vec<Diagnostic>> {
    let sample_rate = opts.sample_rate.unwrap_or(scene.sample_rate);
    let Some((expanded, layout)) = voices::expand(scene, sample_rate)? else {
        return compile_expanded(scene, opts);
    };
    let mut plan = compile_expanded(&expanded, opts).map_err(voices::fold)?;
    plan.warnings = voices::fold(std::mem::take(&mut plan.warnings));
    plan.voices = voices::resolve(&layout, &plan);
    controls::voice_touches(&mut plan)?;
    plan.notes = voices::place_notes(scene, &plan)?;
    Ok(plan)
}

/// [`compile`] of a scene whose voice modules are expanded (pass 0).
fn compile_expanded(scene: &Scene, opts: &CompileOptions) -> Result<Plan, Vec<Diagnostic>> {
    let mut cx = Ctx {
        scene,
        errors: Vec::new(),
        warnings: scene.warnings.clone(),
        resources: Vec::new(),
        conversions: Vec::new(),
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
    let seed = choose_seed(&mut cx, &decls, session.seed_given, opts.auto_seed);
    let events = place_events(&mut cx, &index, &decls, &session);
    let controls = resolve_controls(&mut cx, &index, &decls, &session);
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
        controls,
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
    dead_gates(cx, &decls);
    step_lints(cx, &decls, session.sample_rate);
    Declared {
        session,
        index,
        decls,
        edges,
        order,
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

/// A time in whole samples (rounded half to even).
pub(crate) fn time_to_samples(t: TimeSpec, sr: u32) -> Option<u64> {
    u64::try_from(t.to_samples(sr)?.round_half_even()).ok()
}

/// What the passes' tests share: small scenes, a fresh context, and passes
/// 1–7 run as `compile` runs them. Each pass's tests sit beside it.
#[cfg(test)]
mod testing {
    use super::*;
    use crate::scene::load_str;

    pub(super) fn scene(text: &str) -> Scene {
        load_str(text, "t.json", None).expect("the scene loads")
    }

    pub(super) fn ctx(scene: &Scene) -> Ctx<'_> {
        Ctx {
            scene,
            errors: Vec::new(),
            warnings: scene.warnings.clone(),
            resources: Vec::new(),
            conversions: Vec::new(),
        }
    }

    pub(super) fn with_profile(p: Profile) -> CompileOptions {
        CompileOptions {
            profile: Some(p),
            ..CompileOptions::default()
        }
    }

    pub(super) fn errors(cx: &Ctx<'_>) -> Vec<String> {
        cx.errors.iter().map(|d| d.message.clone()).collect()
    }

    /// A scene of `nodes` and `edges` (JSON array bodies) playing `main`.
    pub(super) fn graph_scene(nodes: &str, edges: &str, main: &str) -> Scene {
        scene(&format!(
            r#"{{ "version": "1.0", "seed": 1, "nodes": [ {nodes} ], "edges": [ {edges} ],
                 "outputs": {{ "main": [{main}] }} }}"#
        ))
    }

    /// Passes 1–7 on `scene`, as `compile` runs them.
    pub(super) fn declared<'a>(
        scene: &'a Scene,
        opts: &CompileOptions,
    ) -> (Ctx<'a>, Session, Vec<Option<Decl>>, Vec<Edge>, Vec<usize>) {
        let mut cx = ctx(scene);
        let d = declare(&mut cx, opts);
        (cx, d.session, d.decls, d.edges, d.order)
    }
}
