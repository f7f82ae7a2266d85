//! What `morphrt check` prints: every node's resolved profile, precision,
//! math policy, providers, guarantee and latency (a voice module as one
//! block, `voice_report.rs`).

use super::voice_report::{row_cells, voice_lines, voice_rows, voices_json, VoiceRow};
use super::{NoteAction, Plan, PlanNode, SourceRef};
use crate::ops::Value;
use crate::profile::Profile;
use crate::scene::{capped_list, escape_invisible, Diagnostic};
use serde_json::json;

/// What a node runs with: its math policy, then the choices its operator
/// reports for its profile and params (the rule its build follows).
fn choices(n: &PlanNode) -> Vec<(&'static str, String)> {
    let mut v = vec![("math", n.profile.math.name().to_string())];
    v.extend((n.op.choices)(&n.profile, &n.values));
    v
}

/// [`choices`] as the table shows them: `math=libm conv=direct`.
fn providers(n: &PlanNode) -> String {
    choices(n)
        .iter()
        .map(|(what, choice)| format!("{what}={choice}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A node's inputs by port name (`in`, `in3`, `cutoff`) with their sources.
fn named_inputs(n: &PlanNode) -> impl Iterator<Item = (String, &Vec<SourceRef>)> {
    let audio = n.inputs.iter().enumerate().map(|(k, l)| {
        let name = if n.op.variadic_inputs {
            format!("in{k}")
        } else {
            n.op.inputs[k].to_string()
        };
        (name, l)
    });
    let params = n
        .param_inputs
        .iter()
        .enumerate()
        .map(|(k, l)| (n.op.params[k].name.to_string(), l));
    audio.chain(params)
}

/// The alignment delays on a node's inputs, e.g. `in1<-noisy+1024`, or `-`.
fn alignment(plan: &Plan, i: usize) -> String {
    let n = &plan.nodes[i];
    let mut parts = Vec::new();
    for (port, list) in named_inputs(n) {
        for s in list.iter().filter(|s| s.delay > 0) {
            parts.push(format!("{port}<-{}+{}", plan.nodes[s.node].id, s.delay));
        }
    }
    if parts.is_empty() {
        "-".to_string()
    } else {
        capped_list(&parts, ",")
    }
}

/// One feedback edge as `check` reports it.
struct FeedbackEdge {
    from: String,
    to: String,
    delay_samples: usize,
}

/// Every feedback edge, in schedule order of its destination.
fn feedback_edges(plan: &Plan) -> Vec<FeedbackEdge> {
    let mut v = Vec::new();
    for n in &plan.nodes {
        for (port, list) in named_inputs(n) {
            for s in list.iter().filter(|s| s.is_feedback()) {
                let src = &plan.nodes[s.node];
                v.push(FeedbackEdge {
                    from: format!("{}:{}", src.id, src.op.outputs[s.port]),
                    to: format!("{}:{port}", n.id),
                    delay_samples: s.feedback,
                });
            }
        }
    }
    v
}

/// A human-readable table.
/// What one iterative-solver step costs on a nominal machine (a Newton step
/// with one `exp`, about 40 cycles at 2 GHz). Only for the worst-case
/// estimate below; real costs are what `morphrt bench` measures.
pub(crate) const NOMINAL_NS_PER_SOLVER_STEP: f64 = 20.0;

/// A node whose worst case per block exceeds the block's deadline.
#[derive(Clone, Debug, PartialEq)]
pub struct DeadlineRisk {
    pub(crate) node: String,
    /// Worst-case solver steps per sample (iterations × oversampling).
    pub(crate) steps_per_sample: u64,
    pub(crate) worst_us: f64,
    pub(crate) deadline_us: f64,
}

impl std::fmt::Display for DeadlineRisk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node `{}` may take up to {:.0} µs per block against a {:.0} µs deadline ({} solver steps per sample at worst, about {NOMINAL_NS_PER_SOLVER_STEP} ns each on a nominal machine); lower its `max_iterations` or `oversampling`",
            self.node, self.worst_us, self.deadline_us, self.steps_per_sample
        )
    }
}

/// Nodes whose worst-case cost per block (every solver iteration taken at
/// every oversampled sample) exceeds the block's real-time deadline on a
/// nominal machine.
pub fn deadline_risks(plan: &Plan) -> Vec<DeadlineRisk> {
    let deadline_us = plan.block_size as f64 / plan.sample_rate as f64 * 1e6;
    plan.nodes
        .iter()
        .filter_map(|n| {
            let steps = (n.op.solver_steps?)(&n.profile, &n.values);
            let worst_us = steps as f64 * plan.block_size as f64 * NOMINAL_NS_PER_SOLVER_STEP / 1e3;
            (worst_us > deadline_us).then(|| DeadlineRisk {
                node: n.id.clone(),
                steps_per_sample: steps,
                worst_us,
                deadline_us,
            })
        })
        .collect()
}

impl DeadlineRisk {
    /// The risk as a warning about its node.
    pub fn diagnostic(&self, file: &str) -> Diagnostic {
        Diagnostic::warning(file, None, self.to_string()).with_node(self.node.clone())
    }
}

/// A node's estimated cost per sample, in nanoseconds (`crate::ops::CostFn`).
pub fn node_cost_ns(n: &PlanNode) -> f64 {
    (n.op.cost)(&n.profile, &n.values)
}

/// The estimated cost of the whole plan per sample, in nanoseconds.
pub fn plan_cost_ns(plan: &Plan) -> f64 {
    plan.nodes.iter().map(node_cost_ns).sum()
}

/// The estimated real-time factor (seconds of audio per second of work)
/// from the nominal per-node costs; infinite for a plan that costs nothing.
pub fn estimated_rtf(plan: &Plan) -> f64 {
    let ns_per_second = plan_cost_ns(plan) * plan.sample_rate as f64;
    if ns_per_second > 0.0 {
        1e9 / ns_per_second
    } else {
        f64::INFINITY
    }
}

/// `3.2 s`, `17 min`, `2.5 h`: a span of wall-clock time, roughly.
fn rough_time(seconds: f64) -> String {
    if seconds < 10.0 {
        format!("{seconds:.2} s")
    } else if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else {
        format!("{:.1} h", seconds / 3600.0)
    }
}

/// A warning when the estimate says rendering `frames` samples will take
/// longer than real time: how long it may take, and the costliest node.
pub fn slow_render_warning(plan: &Plan, frames: u64) -> Option<Diagnostic> {
    let rtf = estimated_rtf(plan);
    if rtf >= 1.0 {
        return None;
    }
    let audio_s = frames as f64 / plan.sample_rate as f64;
    let (top, top_ns) = plan
        .nodes
        .iter()
        .map(|n| (n, node_cost_ns(n)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let total = plan_cost_ns(plan);
    let share = top_ns / total * 100.0;
    let strict = plan
        .nodes
        .iter()
        .any(|n| n.profile.profile == Profile::Strict);
    let stands_out = share >= STANDS_OUT_PERCENT;
    let mut help = if stands_out {
        format!(
            "node `{}` ({}) is {share:.0}% of the estimate; a lighter profile for it (repro, live), or a shorter input, renders faster",
            top.id, top.op.name
        )
    } else {
        let (op, count, op_ns) = costliest_operator(plan);
        format!(
            "no node stands out (the costliest, `{}`, is {}% of the estimate); the {count} `{op}` node{} are {:.0}% of it together: a lighter profile for them (repro, live), or fewer nodes, renders faster",
            top.id,
            if share < 1.0 { "under 1".to_string() } else { format!("{share:.0}") },
            if count == 1 { "" } else { "s" },
            op_ns / total * 100.0
        )
    };
    if strict {
        help.push_str("; strict keeps IEEE denormals, so a render full of subnormal numbers can take 10–100× longer still");
    }
    let d = Diagnostic::warning(
        &plan.file,
        None,
        format!(
            "estimated {} real time: a {} render may take ~{} (nominal costs per node, see `check`; `morphrt bench` measures this machine)",
            rtf_text(rtf),
            rough_time(audio_s),
            rough_time(audio_s / rtf)
        ),
    )
    .with_help(help);
    Some(if stands_out {
        d.with_node(top.id.clone())
    } else {
        d
    })
}

/// A node at least this share of the estimate (in percent) is named as the
/// cost to cut; below it the advice is about the costliest operator.
const STANDS_OUT_PERCENT: f64 = 10.0;

/// The operator whose nodes together cost the most: its name, how many
/// nodes, and their cost per sample in nanoseconds.
fn costliest_operator(plan: &Plan) -> (&'static str, usize, f64) {
    let mut by_op: Vec<(&'static str, usize, f64)> = Vec::new();
    for n in &plan.nodes {
        let ns = node_cost_ns(n);
        match by_op.iter_mut().find(|(op, _, _)| *op == n.op.name) {
            Some(e) => {
                e.1 += 1;
                e.2 += ns;
            }
            None => by_op.push((n.op.name, 1, ns)),
        }
    }
    by_op
        .into_iter()
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .unwrap_or(("", 0, 0.0))
}

/// `0.03×`, `1.5×`, `120×`.
fn rtf_text(rtf: f64) -> String {
    if rtf.is_infinite() {
        "∞×".to_string()
    } else if rtf < 0.1 {
        format!("{rtf:.3}×")
    } else if rtf < 10.0 {
        format!("{rtf:.2}×")
    } else {
        format!("{rtf:.0}×")
    }
}

/// Events at or after `end` (a sample on the scene's timeline) never take
/// effect: one warning each, naming the event, its time and the length.
/// `length` says whose length `end` is (`-d 2s`, `the scene's duration`).
pub fn events_after_end(plan: &Plan, end: u64, length: &str) -> Vec<Diagnostic> {
    let sr = plan.sample_rate as f64;
    plan.events
        .iter()
        .filter(|e| e.sample >= end)
        .map(|e| {
            let node = plan.nodes.get(e.node).map(|n| n.id.clone());
            let mut d = Diagnostic::warning(
                &plan.file,
                Some(e.loc.clone()),
                format!(
                    "event at {}s (sample {}) is after the end of the render ({}s, {end} samples, {length}): it never takes effect",
                    e.sample as f64 / sr,
                    e.sample,
                    end as f64 / sr
                ),
            )
            .with_help("move the event earlier, or render longer".to_string());
            if let Some(n) = node {
                d = d.with_node(n);
            }
            d
        })
        .collect()
}

/// Everything `check` warns about: the compiler's warnings, nodes that may
/// miss the block deadline, events after the scene's `duration`, and a
/// render of the scene's length (else 10 s) slower than real time.
pub fn check_warnings(plan: &Plan) -> Vec<Diagnostic> {
    let mut all = plan.warnings.clone();
    all.extend(
        deadline_risks(plan)
            .iter()
            .map(|r| r.diagnostic(&plan.file)),
    );
    if let Some(d) = plan.duration {
        all.extend(events_after_end(plan, d, "the scene's duration"));
    }
    let frames = plan.duration.unwrap_or(10 * plan.sample_rate as u64);
    all.extend(slow_render_warning(plan, frames));
    all
}

/// The table `morphrt check` prints: one row per node (id, operator,
/// module, profile, precision, …).
pub fn check_table(plan: &Plan) -> String {
    let mut rows = vec![[
        "node".to_string(),
        "op".to_string(),
        "module".to_string(),
        "profile".to_string(),
        "precision".to_string(),
        "ftz".to_string(),
        "providers".to_string(),
        "guarantee".to_string(),
        "latency".to_string(),
        "align".to_string(),
        "ns/sample".to_string(),
    ]];
    // A voice module is one block: its template once, then its sum.
    let voice = voice_rows(plan);
    for (i, n) in plan.nodes.iter().enumerate() {
        if voice[i] == VoiceRow::Copy {
            continue;
        }
        let (id, module) = row_cells(plan, i, voice[i]).unwrap_or_else(|| {
            (
                n.id.clone(),
                n.module.clone().unwrap_or_else(|| "-".to_string()),
            )
        });
        rows.push([
            escape_invisible(&id, false).into_owned(),
            n.op.name.to_string(),
            module,
            n.profile.profile.name().to_string(),
            n.profile.precision.name().to_string(),
            if n.profile.flush_to_zero { "on" } else { "off" }.to_string(),
            providers(n),
            n.guarantee.name().to_string(),
            n.latency.to_string(),
            alignment(plan, i),
            format!("{:.1}", node_cost_ns(n)),
        ]);
    }
    let widths: Vec<usize> = (0..11)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    out.push_str(&format!(
        "{}: session profile {}, {} Hz, block size {}, seed {}\n",
        plan.file,
        plan.session_profile,
        plan.sample_rate,
        plan.block_size,
        match plan.seed {
            super::SeedSource::None => "none".to_string(),
            super::SeedSource::Given(s) => s.to_string(),
            super::SeedSource::Auto(s) => format!("{s} (auto)"),
        }
    ));
    if let Some(t) = &plan.tempo {
        out.push_str(&tempo_line(t, plan.sample_rate));
        out.push('\n');
    }
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    let main = plan.main.iter().map(|s| {
        format!(
            "{}:{}",
            escape_invisible(&plan.nodes[s.node].id, false),
            plan.nodes[s.node].op.outputs[s.port]
        )
    });
    let channels = plan.main.len();
    out.push_str(&format!(
        "main: {} ({channels} channel{}), guarantee {}: {}\n",
        capped_list(main, ", "),
        if channels == 1 { "" } else { "s" },
        plan.guarantee(),
        plan.guarantee().guarantee_text()
    ));
    out.push_str(&format!(
        "latency: {} samples on the main bus\n",
        plan.latency
    ));
    out.push_str(&format!("input: {}\n", inputs_text(plan)));
    let delayed = plan
        .main
        .iter()
        .enumerate()
        .filter(|(_, s)| s.delay > 0)
        .map(|(c, s)| format!("channel {c} +{}", s.delay));
    let delayed = capped_list(delayed, ", ");
    if !delayed.is_empty() {
        out.push_str(&format!("main alignment: {delayed}\n"));
    }
    for f in feedback_edges(plan) {
        out.push_str(&format!(
            "feedback: {} → {} delayed {} samples ({} ms)\n",
            f.from,
            f.to,
            f.delay_samples,
            f.delay_samples as f64 * 1000.0 / plan.sample_rate as f64
        ));
    }
    out.push_str(&format!("events: {}\n", event_count(plan)));
    for c in &plan.conversions {
        out.push_str(&format!(
            "converted: {}\n",
            escape_invisible(&c.to_string(), false)
        ));
    }
    out.push_str(&voice_lines(plan));
    out.push_str(&format!(
        "controls: {}{}\n",
        plan.controls.len(),
        if plan.controls.is_empty() {
            " (`/morphrt/param NODE PARAM VALUE` over OSC still reaches every param)"
        } else {
            ""
        }
    ));
    for c in &plan.controls {
        out.push_str(&format!("  {}\n", escape_invisible(&c.describe(), false)));
    }
    out.push_str(&format!(
        "estimated cost: {:.1} ns per sample, {} real time (nominal per-node figures; `morphrt bench` measures this machine)\n",
        plan_cost_ns(plan),
        rtf_text(estimated_rtf(plan))
    ));
    out
}

/// The input channels a plan reads and the nodes reading each, for `check`:
/// `none`, or `channel 0 (mic), channel 1 (guitar)`.
pub fn inputs_text(plan: &Plan) -> String {
    let uses = plan.inputs();
    if uses.is_empty() {
        return "none (the scene has no `input` node)".to_string();
    }
    let mut parts: Vec<String> = Vec::new();
    for u in &uses {
        match parts.last_mut() {
            Some(last) if last.starts_with(&format!("channel {} (", u.channel)) => {
                last.pop();
                last.push_str(&format!(", {})", escape_invisible(&u.node, false)));
            }
            _ => parts.push(format!(
                "channel {} ({})",
                u.channel,
                escape_invisible(&u.node, false)
            )),
        }
    }
    let width = plan.input_width();
    format!(
        "{} (an input of at least {width} channel{})",
        capped_list(parts, ", "),
        if width == 1 { "" } else { "s" }
    )
}

/// The same as JSON (stable field names, for scripts).
pub fn check_json(plan: &Plan) -> serde_json::Value {
    let nodes: Vec<serde_json::Value> = plan
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let params: serde_json::Map<String, serde_json::Value> =
                n.op.params
                    .iter()
                    .zip(&n.values)
                    .map(|(s, v)| {
                        let jv = match v {
                            Value::Number(x) => json!(x),
                            Value::Integer(x) => json!(x),
                            Value::Enum(i) => match s.kind {
                                crate::ops::ParamKind::Enum { choices, .. } => json!(choices[*i]),
                                _ => json!(i),
                            },
                            Value::Bool(b) => json!(b),
                            Value::Resource(a) => json!(a.path.display().to_string()),
                            Value::Gains(g) => json!(g),
                            Value::Span(r) => json!(format!("{}s", r.decimal_text())),
                        };
                        (s.name.to_string(), jv)
                    })
                    .collect();
            json!({
                "id": n.id,
                "op": n.op.name,
                "module": n.module,
                "profile": n.profile.profile.name(),
                "precision": n.profile.precision.name(),
                "math": n.profile.math.name(),
                "flush_to_zero": n.profile.flush_to_zero,
                "fft_provider": n.profile.fft_provider,
                "oversampling": n.profile.oversampling,
                "choices": choices(n)
                    .into_iter()
                    .map(|(what, choice)| (what.to_string(), json!(choice)))
                    .collect::<serde_json::Map<_, _>>(),
                "guarantee": n.guarantee.name(),
                "latency": n.latency,
                "output_latency": n.output_latency,
                "cost_ns_per_sample": node_cost_ns(n),
                "align": alignment(plan, i),
                "params": params,
            })
        })
        .collect();
    json!({
        "file": plan.file,
        "session_profile": plan.session_profile.name(),
        "sample_rate": plan.sample_rate,
        "block_size": plan.block_size,
        "tempo": plan.tempo.map(|t| tempo_json(&t, plan.sample_rate)),
        "seed": match plan.seed { super::SeedSource::None => serde_json::Value::Null, s => json!(s.value()) },
        "seed_auto": matches!(plan.seed, super::SeedSource::Auto(_)),
        "guarantee": plan.guarantee().name(),
        "nodes": nodes,
        "main": plan.main.iter().map(|s| format!("{}:{}", plan.nodes[s.node].id, plan.nodes[s.node].op.outputs[s.port])).collect::<Vec<_>>(),
        "latency": plan.latency,
        "inputs": plan.inputs().iter().map(|u| json!({ "node": u.node, "channel": u.channel })).collect::<Vec<_>>(),
        "input_channels": plan.input_width(),
        "feedback": feedback_edges(plan)
            .into_iter()
            .map(|f| json!({ "from": f.from, "to": f.to, "delay_samples": f.delay_samples }))
            .collect::<Vec<_>>(),
        "events": plan.events.len(),
        "conversions": plan.conversions.iter().map(conversion_json).collect::<Vec<_>>(),
        "notes": note_count(plan).0,
        "pedal_changes": note_count(plan).1,
        "voices": voices_json(plan),
        "controls": plan.controls.iter().map(|c| c.to_json()).collect::<Vec<_>>(),
        "cost_ns_per_sample": plan_cost_ns(plan),
        "estimated_rtf": Some(estimated_rtf(plan)).filter(|r| r.is_finite()),
        "warnings": plan.warnings.iter().map(|w| w.to_string()).collect::<Vec<_>>(),
    })
}

/// A conversion as JSON: `what`, `from_hz`, `to_hz`, `method`.
pub fn conversion_json(c: &super::Conversion) -> serde_json::Value {
    json!({ "what": c.what, "from_hz": c.from_hz, "to_hz": c.to_hz, "method": c.method.name() })
}

/// The scene's notes and pedal changes, as the plan places them: (note
/// starts, pedal changes).
fn note_count(plan: &Plan) -> (usize, usize) {
    plan.notes
        .iter()
        .fold((0, 0), |(on, pedal), n| match n.action {
            NoteAction::On { .. } => (on + 1, pedal),
            NoteAction::Sustain(_) => (on, pedal + 1),
            _ => (on, pedal),
        })
}

/// The `events:` line's count: param changes, and notes when there are any.
fn event_count(plan: &Plan) -> String {
    let changes = plan.events.len();
    let of = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    match note_count(plan) {
        (0, 0) => changes.to_string(),
        (on, pedal) => {
            let mut s = format!(
                "{}, {}",
                of(changes, "param change", "param changes"),
                of(on, "note", "notes")
            );
            if pedal > 0 {
                s.push_str(&format!(", {}", of(pedal, "pedal change", "pedal changes")));
            }
            s
        }
    }
}

/// `tempo 120bpm, meter 4/4: 24000 samples a beat, 96000 a bar`; a count
/// that is not whole is given exactly and to two decimals.
pub(crate) fn tempo_line(t: &crate::scene::Tempo, sample_rate: u32) -> String {
    let spb = t.samples_per_beat(sample_rate);
    let bar = spb.checked_mul(t.bar_beats());
    let count = |r: crate::scene::Rational| {
        if r.is_integer() {
            r.num.to_string()
        } else {
            format!(
                "{} (= {:.2}, rounded half to even)",
                r.decimal_text(),
                r.to_f64()
            )
        }
    };
    format!(
        "tempo {}, meter {}/{}: {} samples a beat, {} a bar",
        t.bpm_text(),
        t.meter.0,
        t.meter.1,
        count(spb),
        bar.map(count)
            .unwrap_or_else(|| "(out of range)".to_string())
    )
}

/// The tempo for `check --json`: bpm, meter, samples a beat and a bar
/// (as numbers and exactly, `"2880000/97"`).
fn tempo_json(t: &crate::scene::Tempo, sample_rate: u32) -> serde_json::Value {
    let spb = t.samples_per_beat(sample_rate);
    let bar = spb.checked_mul(t.bar_beats()).unwrap_or(spb);
    json!({
        "bpm": t.bpm.to_f64(),
        "meter": format!("{}/{}", t.meter.0, t.meter.1),
        "beats_per_bar": t.bar_beats().to_f64(),
        "samples_per_beat": spb.to_f64(),
        "samples_per_beat_exact": format!("{}/{}", spb.num, spb.den),
        "samples_per_bar": bar.to_f64(),
        "samples_per_bar_exact": format!("{}/{}", bar.num, bar.den),
    })
}
