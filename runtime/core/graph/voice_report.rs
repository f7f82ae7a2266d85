//! What `morphrt check` says about a voice module: one block for the
//! module, not a row per voice. Its template nodes are shown once (voice
//! 0's copies stand for all), its sum as the module, and one line gives
//! the voice count, the note map, the steal fade, the rule that frees a
//! voice, the cost per sounding voice and at every voice sounding, and the
//! module's latency.

use super::{Plan, VoicePool};
use serde_json::json;

/// Where a node of the schedule stands in the voice modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum VoiceRow {
    /// Not a voice module's node.
    Plain,
    /// Voice 0's copy of a template node: the row that stands for every
    /// voice's (`pool` is the index into [`Plan::voices`]).
    Template { pool: usize, node: usize },
    /// Another voice's copy: not shown.
    Copy,
    /// The module's sum of its voices (its id, or `id#r`).
    Sum { pool: usize },
}

/// Each schedule index's [`VoiceRow`].
pub(super) fn voice_rows(plan: &Plan) -> Vec<VoiceRow> {
    let mut rows = vec![VoiceRow::Plain; plan.nodes.len()];
    for (p, pool) in plan.voices.iter().enumerate() {
        for (v, nodes) in pool.nodes.iter().enumerate() {
            for (k, &i) in nodes.iter().enumerate() {
                rows[i] = if v == 0 {
                    VoiceRow::Template { pool: p, node: k }
                } else {
                    VoiceRow::Copy
                };
            }
        }
        let right = format!("{}#r", pool.module);
        for (i, n) in plan.nodes.iter().enumerate() {
            if n.id == pool.module || n.id == right {
                rows[i] = VoiceRow::Sum { pool: p };
            }
        }
    }
    rows
}

/// The table's node and module cells for node `i` of row kind `row`
/// (`None`: the node's own id and module).
pub(super) fn row_cells(plan: &Plan, i: usize, row: VoiceRow) -> Option<(String, String)> {
    match row {
        VoiceRow::Template { pool, node } => {
            let p = &plan.voices[pool];
            Some((
                p.template[node].clone(),
                format!("{} ×{} voices", p.module, p.nodes.len()),
            ))
        }
        VoiceRow::Sum { pool } => Some((
            plan.nodes[i].id.clone(),
            format!("{} (sum)", plan.voices[pool].module),
        )),
        VoiceRow::Plain | VoiceRow::Copy => None,
    }
}

/// One voice module as `check` reports it.
struct Summary<'a> {
    pool: &'a VoicePool,
    /// Estimated ns per sample of one voice's nodes.
    per_voice_ns: f64,
    /// Of the module's sum node(s).
    sum_ns: f64,
    /// Samples from the scene's sources to the module's sum.
    latency: usize,
}

fn summaries(plan: &Plan) -> Vec<Summary<'_>> {
    let cost = |i: usize| {
        let n = &plan.nodes[i];
        (n.op.cost)(&n.profile, &n.values)
    };
    let rows = voice_rows(plan);
    plan.voices
        .iter()
        .enumerate()
        .map(|(p, pool)| {
            let sums = rows
                .iter()
                .enumerate()
                .filter(|(_, r)| **r == VoiceRow::Sum { pool: p });
            Summary {
                pool,
                per_voice_ns: pool
                    .nodes
                    .first()
                    .map_or(0.0, |n| n.iter().map(|&i| cost(i)).sum::<f64>()),
                sum_ns: sums.clone().map(|(i, _)| cost(i)).sum(),
                latency: sums
                    .map(|(i, _)| plan.nodes[i].output_latency)
                    .max()
                    .unwrap_or(0),
            }
        })
        .collect()
}

/// `"osc.freq"` for a note target (template node, param index).
fn target(plan: &Plan, pool: &VoicePool, t: Option<(usize, usize)>) -> Option<String> {
    let (k, pi) = t?;
    let op = plan.nodes[*pool.nodes.first()?.get(k)?].op;
    Some(format!("{}.{}", pool.template[k], op.params.get(pi)?.name))
}

/// What frees a released voice.
fn free_rule(plan: &Plan, pool: &VoicePool) -> String {
    let ms = pool.free_after as f64 * 1000.0 / plan.sample_rate as f64;
    match pool.release_end {
        Some(k) => format!(
            "free once `{}` is below -100 dBFS after the note-off",
            pool.template[k]
        ),
        None => format!(
            "free after {ms:.0} ms below -100 dBFS after the note-off (`{}`)",
            pool.template[pool.out]
        ),
    }
}

fn ms(plan: &Plan, samples: u64) -> f64 {
    samples as f64 * 1000.0 / plan.sample_rate as f64
}

/// The table's lines about voice modules: one per module (none when the
/// scene has none).
pub(super) fn voice_lines(plan: &Plan) -> String {
    let mut out = String::new();
    for s in summaries(plan) {
        let p = s.pool;
        let n = p.nodes.len();
        let note: Vec<String> = [
            ("pitch", p.pitch),
            ("gate", p.gate),
            ("velocity", p.velocity),
        ]
        .into_iter()
        .filter_map(|(what, t)| Some(format!("{what} {}", target(plan, p, t)?)))
        .collect();
        out.push_str(&format!(
            "voices: `{}` ×{n} ({} template node{} each; note {}; out `{}`; steal fade {} samples ({:.1} ms); same note {}; {})\n",
            p.module,
            p.template.len(),
            if p.template.len() == 1 { "" } else { "s" },
            if note.is_empty() { "-".to_string() } else { note.join(", ") },
            p.template[p.out],
            p.steal_fade,
            ms(plan, p.steal_fade),
            if p.reuse_same_note { "reuses its voice" } else { "takes a new voice" },
            free_rule(plan, p),
        ));
        out.push_str(&format!(
            "  cost: {:.1} ns per sample per sounding voice, {:.1} with all {n} sounding (sum included; a free voice costs nothing); latency {} samples\n",
            s.per_voice_ns,
            s.per_voice_ns * n as f64 + s.sum_ns,
            s.latency
        ));
    }
    out
}

/// The `voices` array of `check --json`.
pub(super) fn voices_json(plan: &Plan) -> serde_json::Value {
    summaries(plan)
        .into_iter()
        .map(|s| {
            let p = s.pool;
            let n = p.nodes.len();
            json!({
                "module": p.module,
                "voices": n,
                "template": p.template,
                "out": p.template[p.out],
                "note": {
                    "pitch": target(plan, p, p.pitch),
                    "gate": target(plan, p, p.gate),
                    "velocity": target(plan, p, p.velocity),
                },
                "steal_fade_samples": p.steal_fade,
                "same_note": if p.reuse_same_note { "reuse" } else { "new" },
                "release_end": p.release_end.map(|k| p.template[k].clone()),
                "free_after_samples": p.free_after,
                "free_rule": free_rule(plan, p),
                "cost_ns_per_sample_per_voice": s.per_voice_ns,
                "cost_ns_per_sample_all_voices": s.per_voice_ns * n as f64 + s.sum_ns,
                "latency": s.latency,
            })
        })
        .collect()
}
