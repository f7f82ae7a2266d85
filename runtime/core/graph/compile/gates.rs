//! After pass 7, gates that can never open: a param that switches its node
//! on only above a threshold (`adsr`'s `gate`, see `ops::gate_threshold`),
//! driven by edges whose sources are statically bounded at or below it.

use super::{Ctx, Decl};
use crate::ops::{gate_threshold, output_bound};
use crate::scene::{capped_list, Scene};

/// Warns a gate whose static value plus the peaks of every source driving
/// it stays at or below its threshold. Only where that is certain: each
/// source declares a bound (`ops::output_bound`: an oscillator's `|amp|`),
/// no edge or event changes the params the bound rests on, no event sets
/// the gate itself, and a peak that allows for rounding (several terms, an
/// approximate sine) is below the threshold by a margin.
pub(super) fn dead_gates(cx: &mut Ctx<'_>, decls: &[Option<Decl>]) {
    let scene = cx.scene;
    'nodes: for (node, d) in scene.nodes.iter().zip(decls) {
        let Some(d) = d else { continue };
        let Some((gate, threshold)) = gate_threshold(d.op) else {
            continue;
        };
        let Some(g) = d.op.param_index(gate) else {
            continue;
        };
        let (sources, Some(base)) = (&d.param_in[g], d.values[g].as_number()) else {
            continue;
        };
        if sources.is_empty() || has_event(scene, &node.id, gate) {
            continue;
        }
        let mut peak = base;
        // A sum of several terms is rounded in the engine's order, not this
        // one: then only a peak clearly below the threshold counts.
        let mut exact = sources.len() == 1 && base == 0.0;
        let mut named = Vec::with_capacity(sources.len());
        for &(src, _, _) in sources {
            let Some(s) = decls[src].as_ref() else {
                continue 'nodes;
            };
            let Some(bound) = output_bound(s.op, &s.profile, &s.values) else {
                continue 'nodes;
            };
            let id = &scene.nodes[src].id;
            let changed = bound.params.iter().any(|&param| {
                s.op.param_index(param)
                    .is_none_or(|p| !s.param_in[p].is_empty())
                    || has_event(scene, id, param)
            });
            if changed {
                continue 'nodes;
            }
            peak += bound.peak;
            exact &= bound.exact;
            named.push(format!("`{id}` ({} of amp {})", s.op.name, bound.peak));
        }
        let margin = if exact { 0.0 } else { threshold.abs() * 1e-6 };
        if peak > threshold - margin {
            continue;
        }
        let loc = scene
            .edges
            .iter()
            .find(|e| e.to.node == node.id && e.to.port.as_deref() == Some(gate))
            .map_or_else(|| node.loc.clone(), |e| e.loc.clone());
        let base_text = if base == 0.0 {
            String::new()
        } else {
            format!(" (its static value {base} included)")
        };
        cx.warn(
            &loc,
            Some(&node.id),
            format!(
                "`{gate}` is on only above the threshold {threshold}, but what drives it peaks at {peak}{base_text}: {}; the node never switches on",
                capped_list(&named, ", ")
            ),
            Some(format!(
                "raise the amplitude of what drives `{gate}` so it exceeds {threshold}, or offset it with the node's own `{gate}` value"
            )),
        );
    }
}

/// Whether an event sets `param` of node `id`.
fn has_event(scene: &Scene, id: &str, param: &str) -> bool {
    scene
        .events
        .iter()
        .any(|e| e.node == id && e.param == param)
}
