//! The registry as `morphrt ops` shows it: text and JSON.

use super::{OpSpec, ParamKind};
use serde_json::json;

fn kind_text(k: &ParamKind) -> (String, String, String, String) {
    // (type, unit, default, range)
    match *k {
        ParamKind::Number {
            dim,
            default,
            min,
            max,
            modulatable,
        } => (
            if modulatable {
                "number (port)"
            } else {
                "number"
            }
            .to_string(),
            units_text(dim),
            format!("{default}"),
            format!("{} … {}", fmt(min), fmt(max)),
        ),
        ParamKind::Integer { default, min, max } => (
            "integer".into(),
            String::new(),
            default.to_string(),
            format!("{min} … {max}"),
        ),
        ParamKind::Enum { choices, default } => (
            "enum".into(),
            String::new(),
            default.to_string(),
            choices.join(" | "),
        ),
        ParamKind::Bool { default } => (
            "bool".into(),
            String::new(),
            default.to_string(),
            "true | false".into(),
        ),
        ParamKind::Resource => (
            "resource".into(),
            String::new(),
            "(required)".into(),
            "@resource:NAME".into(),
        ),
        ParamKind::OptionalResource => (
            "resource".into(),
            String::new(),
            "(none)".into(),
            "@resource:NAME".into(),
        ),
        ParamKind::Gains => (
            "gains".into(),
            "linear".into(),
            "all 1.0".into(),
            "array".into(),
        ),
        ParamKind::Steps { max } => (
            "steps".into(),
            String::new(),
            "[0]".into(),
            format!("1 … {max} numbers or null"),
        ),
        ParamKind::StepLength { default_ms } => (
            "step length".into(),
            "1/16, beats, bars, s, ms".into(),
            format!("1/16 with a tempo, else {default_ms}ms"),
            "1 ms … 1 h".into(),
        ),
    }
}

/// The canonical unit and every unit the param accepts, e.g.
/// `Hz (Hz, kHz, midi)`; a plain number has neither.
fn units_text(dim: crate::scene::Dimension) -> String {
    let mut accepted: Vec<&str> = dim
        .units()
        .iter()
        .copied()
        .filter(|u| !u.starts_with('('))
        .collect();
    if accepted.is_empty() {
        return dim.canonical().to_string();
    }
    if !accepted.contains(&dim.canonical()) {
        accepted.insert(0, dim.canonical());
    }
    format!("{} ({})", dim.canonical(), accepted.join(", "))
}

/// What "tier" means, for the listing.
pub(crate) const TIER_NOTE: &str = "tier: the strongest profile an operator can honour \
     (strict = bit-exact, repro = deterministic on one build, live = replayable); \
     under strict, a node whose operator's tier is weaker is an error";

fn fmt(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn inputs(spec: &OpSpec) -> String {
    if spec.variadic_inputs {
        "in0 … inN".to_string()
    } else if spec.inputs.is_empty() {
        "-".to_string()
    } else {
        spec.inputs.join(", ")
    }
}

/// The default description: the profiles' math policies, for an operator
/// whose signal path calls sin, cos, tanh or exp through its math policy
/// (`Math::sin` … `Math::exp`, fast approximations under live).
const MATH: [&str; 3] = [
    "f64, libm",
    "f32, std math",
    "f32, fast approximations (signal path)",
];

/// [`OpSpec::algorithms`] for an operator whose signal path uses none of
/// the fast approximations: under live its math (coefficients, levels in
/// dB, if any) is `std`'s, as under repro.
pub(crate) const NO_FAST_MATH: [&str; 3] = [
    "f64, libm",
    "f32, std math",
    "f32, std math (no fast approximations on its path)",
];

/// [`OpSpec::algorithms`] for `biquad`: its recursion in f64 at every
/// precision; under live it is reassociated (it rounds differently from
/// repro).
pub(crate) const BIQUAD_MATH: [&str; 3] = [
    "f64, libm",
    "f32 samples, std math; the TDF-II recursion and its state in f64 (within 1e-3 relative RMS of strict from 10 Hz to 20 kHz at Q 0.5 to 20), its multiply-adds fused on AVX-512",
    "f32 samples, std coefficient math (no fast approximations); the f64 TDF-II recursion reassociated for a shorter dependency chain, its multiply-adds fused on AVX-512",
];

/// One line per operator.
pub fn summary(specs: &[&OpSpec]) -> String {
    let w = specs.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut out = format!("{TIER_NOTE}\n\n");
    for s in specs {
        out.push_str(&format!(
            "{:<w$}  tier {:<6}  in: {:<10} out: {:<12} {}\n",
            s.name,
            s.tier.name(),
            inputs(s),
            s.outputs.join(", "),
            s.doc
        ));
    }
    out
}

/// Everything about one operator.
pub fn detail(spec: &OpSpec) -> String {
    let mut out = format!("{} — {}\n", spec.name, spec.doc);
    out.push_str(&format!(
        "  tier:    {} (the strongest profile it honours: bit-exact under strict, \
         deterministic under repro, replayable under live)\n",
        spec.tier
    ));
    out.push_str(&format!("  inputs:  {}\n", inputs(spec)));
    out.push_str(&format!("  outputs: {}\n", spec.outputs.join(", ")));
    let algo = spec.algorithms.unwrap_or(MATH);
    out.push_str(&format!(
        "  strict:  {}\n  repro:   {}\n  live:    {}\n",
        algo[0], algo[1], algo[2]
    ));
    if spec.uses_rng {
        out.push_str("  randomness: seeded Philox streams (needs a seed under strict and repro)\n");
    }
    out.push_str("  params:\n");
    let rows: Vec<(String, String, String, String, String, String)> = spec
        .params
        .iter()
        .map(|p| {
            let (t, u, d, r) = kind_text(&p.kind);
            (p.name.to_string(), t, u, d, r, p.doc.to_string())
        })
        .collect();
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let w3 = rows.iter().map(|r| r.3.chars().count()).max().unwrap_or(0);
    let w4 = rows.iter().map(|r| r.4.chars().count()).max().unwrap_or(0);
    for (n, t, u, d, r, doc) in rows {
        out.push_str(&format!(
            "    {n:<w0$}  {t:<w1$}  {u:<w2$}  default {d:<w3$}  range {r:<w4$}  {doc}\n"
        ));
    }
    out
}

/// Machine-readable description.
pub fn json(spec: &OpSpec) -> serde_json::Value {
    let params: Vec<serde_json::Value> = spec
        .params
        .iter()
        .map(|p| (p, match p.kind {
            ParamKind::Number { dim, default, min, max, modulatable } => json!({
                "name": p.name, "type": "number", "unit": dim.canonical(), "dimension": dim.name(),
                "accepts_units": dim.units().iter().filter(|u| !u.starts_with('(')).collect::<Vec<_>>(),
                "default": default, "min": finite(min), "max": finite(max), "port": modulatable, "doc": p.doc
            }),
            ParamKind::Integer { default, min, max } => json!({
                "name": p.name, "type": "integer", "default": default, "min": min, "max": max, "port": false, "doc": p.doc
            }),
            ParamKind::Enum { choices, default } => json!({
                "name": p.name, "type": "enum", "choices": choices, "default": default, "port": false, "doc": p.doc
            }),
            ParamKind::Bool { default } => json!({
                "name": p.name, "type": "bool", "default": default, "port": false, "doc": p.doc
            }),
            ParamKind::Resource => json!({
                "name": p.name, "type": "resource", "required": true, "port": false, "doc": p.doc
            }),
            ParamKind::OptionalResource => json!({
                "name": p.name, "type": "resource", "required": false, "port": false, "doc": p.doc
            }),
            ParamKind::Gains => json!({
                "name": p.name, "type": "gains", "unit": "linear", "default": "all 1.0", "port": false, "doc": p.doc
            }),
            ParamKind::Steps { max } => json!({
                "name": p.name, "type": "steps", "max": max, "default": [0], "port": false, "doc": p.doc
            }),
            ParamKind::StepLength { default_ms } => json!({
                "name": p.name, "type": "step_length", "default": "1/16", "default_without_tempo": format!("{default_ms}ms"), "port": false, "doc": p.doc
            }),
        }))
        .map(|(p, mut v)| {
            v["settable_by_events"] = json!(p.settable_by_events);
            v
        })
        .collect();
    json!({
        "name": spec.name,
        "doc": spec.doc,
        "tier": spec.tier.name(),
        "inputs": if spec.variadic_inputs { json!("variadic: in0 … inN") } else { json!(spec.inputs) },
        "outputs": spec.outputs,
        "params": params,
        "uses_rng": spec.uses_rng,
        "algorithms": {
            "strict": spec.algorithms.unwrap_or(MATH)[0],
            "repro": spec.algorithms.unwrap_or(MATH)[1],
            "live": spec.algorithms.unwrap_or(MATH)[2],
        },
    })
}

fn finite(v: f64) -> serde_json::Value {
    if v.is_finite() {
        json!(v)
    } else {
        serde_json::Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Operator text cites only what is in the repository (the noise op's
    /// description points at `scenes/README.md`). The word is spelled in
    /// two pieces so that this file contains no such citation either.
    #[test]
    fn no_operator_text_cites_design() {
        let all: Vec<&OpSpec> = crate::ops::registry().to_vec();
        let mut texts = vec![summary(&all)];
        for s in &all {
            texts.push(detail(s));
            texts.push(json(s).to_string());
        }
        for t in texts {
            assert!(!t.contains(concat!("DES", "IGN")), "{t}");
        }
        assert!(
            detail(crate::ops::lookup("noise").unwrap()).contains("scenes/README.md"),
            "noise cites the in-repository formula"
        );
    }

    /// `ops` lists what a param accepts (not only the canonical unit), and
    /// says what a tier is.
    #[test]
    fn ops_text_shows_accepted_units_and_explains_tier() {
        let sine = detail(crate::ops::lookup("sine").unwrap());
        let freq = sine
            .lines()
            .find(|l| l.trim_start().starts_with("freq"))
            .unwrap();
        assert!(freq.contains("Hz (Hz, kHz, midi, beats, bars)"), "{freq}");
        let amp = sine
            .lines()
            .find(|l| l.trim_start().starts_with("amp"))
            .unwrap();
        assert!(amp.contains("linear (linear, dB)"), "{amp}");
        let delay = detail(crate::ops::lookup("delay").unwrap());
        let time = delay
            .lines()
            .find(|l| l.trim_start().starts_with("time"))
            .unwrap();
        assert!(
            time.contains("s (s, ms, us, samples, beats, bars)"),
            "{time}"
        );
        let all: Vec<&OpSpec> = crate::ops::registry().to_vec();
        assert!(summary(&all).starts_with("tier: the strongest profile"));
    }

    /// The live line said "fast approximations" for every operator; the
    /// dynamics ops' live path uses only `std` (coefficient and dB) math,
    /// and so do the filters, delays and most others. Each operator's
    /// text now says which it is, and the ops that do call the fast sine,
    /// cosine, tanh or exp under live still say so.
    #[test]
    fn live_math_text_claims_fast_approximations_only_where_they_run() {
        let live = |name: &str| {
            let d = detail(crate::ops::lookup(name).unwrap());
            let line = d
                .lines()
                .find(|l| l.trim_start().starts_with("live:"))
                .unwrap()
                .to_string();
            let j = json(crate::ops::lookup(name).unwrap());
            assert_eq!(j["algorithms"]["live"], line["  live:".len()..].trim());
            line
        };
        // The compressor's live curve runs its own polynomial log2 and exp2.
        let line = live("compressor");
        assert!(line.contains("polynomial log2 and exp2"), "{line}");
        assert!(!line.contains("std math"), "{line}");
        for name in ["limiter", "follower", "biquad", "onepole", "delay", "saw"] {
            let line = live(name);
            assert!(!line.contains("fast approximations ("), "{name}: {line}");
            assert!(line.contains("no fast approximations"), "{name}: {line}");
        }
        // Their live paths call `M::sin`, `M::cos` (the pan law) or the
        // fast vector sine.
        for name in ["sine", "lfo", "pan", "chorus", "flanger", "phaser"] {
            let line = live(name);
            assert!(
                line.contains("fast approximations (signal path)"),
                "{name}: {line}"
            );
        }
    }
}
