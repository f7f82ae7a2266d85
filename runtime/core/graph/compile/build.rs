//! Passes 13–16, after the graph is valid: each node's guarantee, the
//! build of every node, latency compensation from the latencies the built
//! nodes report, and the plan assembled in schedule order.

use super::events::EditTiming;
use super::{time_to_samples, CompileOptions, Ctx, Decl, Session};
use crate::graph::{Plan, PlanEvent, PlanNode, SeedSource, SourceRef};
use crate::ops::{AnyNode, BuildCtx, Value};
use crate::profile::Profile;

/// Pass 13, guarantees (see [`crate::profile`]): a node's guarantee is the
/// weakest profile among itself and everything upstream of it, feedback
/// edges included (so every node of a loop ends with the loop's weakest).
/// `upstream[i]` lists the nodes feeding node `i`. A worklist: a node whose
/// guarantee weakens passes it on to the nodes it feeds; a guarantee can
/// only weaken twice, so the work is linear in the edges. Indexed like
/// `own`.
pub(super) fn propagate_guarantees(upstream: &[Vec<usize>], own: &[Profile]) -> Vec<Profile> {
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

/// Pass 14, build (the node lifecycle of [`crate::ops::NodeProcessor`]): every
/// node prepared at its precision and math policy, in schedule order, with
/// its noise hash from the session seed, its id and its local `seed` param.
/// Skipped for `check` (nothing is built, latencies read 0). Indexed by
/// declaration.
pub(super) fn build_nodes(
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
        let connected: Vec<bool> = d.audio_in.iter().map(|s| !s.is_empty()).collect();
        let bcx = BuildCtx {
            sample_rate: session.sample_rate as f64,
            values: &d.values,
            n_inputs: d.n_inputs,
            connected: &connected,
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
pub(super) struct Alignment {
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

/// Pass 15, latency compensation (`scenes/README.md`, *Latency*): where
/// paths of different latency meet, the shorter ones are delayed so every
/// input of a node arrives as late as its latest. Follows the build,
/// because a node's latency is what the built node reports (an
/// oversampler's filters, an STFT's frame). `upstream` holds ordinary edges
/// only: a feedback edge delays by exactly what the scene says, so a loop's
/// length is its feedback delay plus the latencies of the nodes on it.
/// Indexed like `latency`.
pub(super) fn compensate_latency(
    order: &[usize],
    upstream: &[Vec<usize>],
    latency: &[usize],
) -> Alignment {
    let mut arrival = vec![0usize; latency.len()];
    let mut output = vec![0usize; latency.len()];
    for &i in order {
        arrival[i] = upstream[i].iter().map(|&s| output[s]).max().unwrap_or(0);
        output[i] = arrival[i] + latency[i];
    }
    Alignment { arrival, output }
}

/// What the last pass puts together, indexed by declaration.
pub(super) struct Parts {
    pub(super) decls: Vec<Decl>,
    pub(super) built: Vec<Option<AnyNode>>,
    pub(super) latency: Vec<usize>,
    pub(super) guarantees: Vec<Profile>,
    pub(super) align: Alignment,
    pub(super) order: Vec<usize>,
    /// Main-bus sources, by declaration.
    pub(super) main: Vec<SourceRef>,
    /// Events, by declaration.
    pub(super) events: Vec<PlanEvent>,
    pub(super) controls: Vec<crate::graph::ControlMap>,
}

/// Pass 16, the plan: nodes in schedule order, every source renumbered to
/// its schedule position and given its alignment delay, the main bus
/// aligned to its latest channel.
pub(super) fn assemble(
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
        controls,
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
        tempo: session.tempo,
        nodes,
        main,
        latency: bus_latency,
        events,
        controls,
        voices: Vec::new(),
        notes: Vec::new(),
        crossfade: timing.crossfade,
        resources: cx.resources,
        conversions: cx.conversions,
        warnings: cx.warnings,
    }
}

/// One test per pass, each driving the passes before it on a small scene.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::compile;
    use crate::graph::compile::testing::{ctx, declared, errors, graph_scene, with_profile};

    #[test]
    fn a_guarantee_goes_around_a_loop() {
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
