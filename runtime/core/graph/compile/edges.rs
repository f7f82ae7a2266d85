//! Passes 4–8, the edges: endpoints and ports resolved, feedback delays in
//! whole samples, every cycle without a feedback edge rejected, the
//! schedule, each input's sources in summing order, and the cast rules on
//! edges between precisions.

use super::{did_you_mean, resolve_node, Ctx, Decl};
use crate::dsp::Precision;
use crate::profile::CastRule;
use crate::scene::{capped_list, suggest, EdgeDecl, Scene, TimeSpec};
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::{BTreeSet, HashMap};

/// Upper bound for variadic inputs (`mix`).
const MAX_VARIADIC: usize = 256;

/// A resolved edge destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum DestPort {
    Audio(usize),
    Param(usize),
}

/// An edge whose endpoints and ports exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Edge {
    /// Index in the scene's `edges`.
    index: usize,
    src: usize,
    src_port: usize,
    dst: usize,
    dest: DestPort,
    /// A feedback edge's delay in samples (≥ 1); 0 for an ordinary edge.
    delay: usize,
}

/// Pass 4, edges and ports (`scenes/README.md`, *Wiring*): both endpoints
/// name nodes; a bare source is `out`, a bare destination `in`; a
/// destination may also be a modulatable param, or `inK` of a variadic node
/// (which grows its input count); the same edge twice is an error. A
/// feedback edge's `delay` is a whole number of samples, at least 1 (see
/// [`feedback_delay`]). Returns the graph of ordinary edges (node weights
/// are declaration indices, edge weights scene edge indices; feedback edges
/// are left out, as they do not order the schedule) and every edge that
/// resolved.
pub(super) fn resolve_edges(
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
                Some(s) => format!("did you mean `{}:{s}`? (inputs: {})", edge.to.node, capped_list(&valid, ", ")),
                None if valid.is_empty() => "it has no inputs".to_string(),
                None => format!("inputs: {}", capped_list(&valid, ", ")),
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
pub(crate) const MAX_FEEDBACK_DELAY_S: u64 = 60;

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

/// Pass 5, cycles (`scenes/README.md`, *Feedback edges*): every loop must
/// pass through a feedback edge (one with a `delay`), which `graph` leaves
/// out; so each cycle left in `graph` is an error naming its nodes in
/// order, and saying which edge could take the delay. Kosaraju's algorithm,
/// because petgraph's runs on an explicit stack (its Tarjan recurses once
/// per node on a path, which a long chain turns into a stack overflow).
pub(super) fn reject_cycles(cx: &mut Ctx<'_>, graph: &DiGraph<usize, usize>, edges: &[Edge]) {
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

/// Pass 6, the schedule: a topological order by Kahn's algorithm, ties
/// broken by declaration order, so the same scene always runs in the same
/// order. Nodes on a cycle are left out (the cycle is already an error).
pub(super) fn schedule(graph: &DiGraph<usize, usize>) -> Vec<usize> {
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
/// (`scenes/README.md`, *Wiring*): sorted by (source id, source port),
/// whatever the file's edge order.
pub(super) fn wire_inputs(scene: &Scene, decls: &mut [Option<Decl>], edges: &[Edge]) {
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

/// Pass 8, casts (the cast rules of [`crate::profile`]): a node whose
/// params set its precision (a `cast`'s `to`, see
/// `OpSpec::precision_param`) runs at it; then every edge between
/// precisions is judged by the consuming node's profile: strict allows none
/// implicitly, repro only widening, live all (narrowing warned). Edges into
/// a precision-setting node are explicit casts.
pub(super) fn resolve_casts(cx: &mut Ctx<'_>, decls: &mut [Option<Decl>], edges: &[Edge]) {
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

/// One test per pass, each driving the passes before it on a small scene.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::compile::testing::{declared, errors, graph_scene, with_profile};
    use crate::graph::{compile, CompileOptions, SourceRef};
    use crate::ops;
    use crate::profile::Profile;

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
    fn a_cycle_without_a_feedback_edge_says_how_to_fix_it() {
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
    fn a_loop_through_a_feedback_edge_compiles_and_schedules_without_it() {
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
    fn feedback_delays_are_whole_samples_at_least_one() {
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
    fn the_same_wire_at_two_delays_is_two_taps() {
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
    fn a_long_cycle_is_named_by_its_ends() {
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
    fn a_cycle_report_names_a_real_cycle_even_past_a_dead_end() {
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
}
