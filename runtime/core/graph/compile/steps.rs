//! After pass 7, sequencer steps that drive a param past what its node can
//! play: a `sequencer`'s `value` output wired into a port (an oscillator's
//! `freq`) sets that param to its static value plus the step, so a step
//! whose sum the target's lints refuse (a `freq` above Nyquist, which
//! plays its alias) is known before anything plays.

use super::{Ctx, Decl};
use crate::ops::sequencer::{step_outputs, SEQUENCER};
use crate::ops::{lint_of_setting, ParamKind};
use crate::scene::capped_list;

/// Warns each sequencer step that sets a param of the node it drives
/// where that node's lints object (the rule events and live controls
/// follow too: [`lint_of_setting`]), once per sequencer and target, at
/// the sequencer's `steps`, naming the first such step and the others.
/// Only where the value is certain: the sequencer's `value` is the one
/// source of that port, so the param is its static value plus the step
/// (held to the param's range, as every port is).
pub(super) fn step_lints(cx: &mut Ctx<'_>, decls: &[Option<Decl>], sample_rate: u32) {
    let scene = cx.scene;
    let Some(value_out) = SEQUENCER.outputs.iter().position(|o| *o == "value") else {
        return;
    };
    for (target, d) in scene.nodes.iter().zip(decls) {
        let Some(d) = d else { continue };
        for (pi, sources) in d.param_in.iter().enumerate() {
            let &[(src, port, _)] = sources.as_slice() else {
                continue;
            };
            let Some(seq) = decls[src]
                .as_ref()
                .filter(|s| core::ptr::eq(s.op, &SEQUENCER) && port == value_out)
            else {
                continue;
            };
            let spec = &d.op.params[pi];
            let (ParamKind::Number { min, max, .. }, Some(base)) =
                (spec.kind, d.values[pi].as_number())
            else {
                continue;
            };
            let written = match seq.values.get(SEQUENCER.index_of("steps")) {
                Some(crate::ops::Value::Gains(g)) => g.clone(),
                _ => Vec::new(),
            };
            let mut first = None;
            let mut others = Vec::new();
            for (k, step) in step_outputs(&seq.values).into_iter().enumerate() {
                if step.is_nan() {
                    continue;
                }
                let played = (base + step).clamp(min, max);
                let Some(lint) = lint_of_setting(d.op, &d.values, pi, played, sample_rate as f64)
                else {
                    continue;
                };
                let shown = written.get(k).copied().unwrap_or(step);
                if first.is_none() {
                    first = Some((k, shown, lint));
                } else {
                    others.push(format!("{k} ({shown})"));
                }
            }
            let Some((k, shown, lint)) = first else {
                continue;
            };
            let source = &scene.nodes[src];
            let loc = source
                .params
                .iter()
                .find(|p| p.name == "steps")
                .map_or_else(|| source.loc.clone(), |p| p.loc.clone());
            let more = if others.is_empty() {
                String::new()
            } else {
                format!(" (so do steps {})", capped_list(&others, ", "))
            };
            cx.warn(
                &loc,
                Some(&source.id),
                format!(
                    "step {k} ({shown}) into `{}:{}` sets {}{more}",
                    target.id, spec.name, lint.message
                ),
                Some(match lint.help {
                    Some(h) => format!(
                        "`{}` plays its `{}` plus the step: lower the step, or {h}",
                        target.id, spec.name
                    ),
                    None => format!(
                        "`{}` plays its `{}` plus the step: lower the step",
                        target.id, spec.name
                    ),
                }),
            );
        }
    }
}
