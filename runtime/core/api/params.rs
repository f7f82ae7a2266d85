//! The params a host lists, automates and shows: every settable param of
//! the scene's nodes (`lp.cutoff`), every `controls` entry that moves a
//! param (by its source: `/filter/cutoff`, `midi/cc74`), and the session
//! profile (`profile`), each with a stable id, a range, a unit, a default,
//! display text and text parsing.
//!
//! A [`ParamList`] describes the params of one compiled [`Plan`]; it
//! holds no engine. [`ParamRoutes`] resolves it against the engine that
//! plays the plan, once, off the audio thread, so that a host's param
//! change becomes the engine's [`ChangeRecord`]s on the audio thread
//! without a lookup or an allocation.
//!
//! A param's value is an `f64` in the param's own terms: a number in its
//! canonical unit (Hz, s, linear amplitude, dB for a level, rad), an
//! integer, the index of a choice, 0 or 1 for a toggle, and a control's
//! position from 0 to 1 (its curve maps the position onto its target's
//! range, as an OSC message's argument is mapped).

use crate::engine::{ChangeRecord, Engine};
use crate::graph::{ControlMap, ControlSource, ControlTarget, ControlValue, Plan};
use crate::ops::{OpSpec, ParamKind, Value};
use crate::profile::Profile;
use crate::scene::{Dimension, MidiSource, Quantity};

/// The profiles as the `profile` param's choices, strictest first.
const PROFILES: [&str; 3] = ["strict", "repro", "live"];

/// What values a param takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamRange {
    /// A number from `min` to `max` in the canonical unit of `dim`.
    Number {
        /// The lowest value.
        min: f64,
        /// The highest value.
        max: f64,
        /// What the number measures.
        dim: Dimension,
    },
    /// An integer from `min` to `max`.
    Integer {
        /// The lowest value.
        min: i64,
        /// The highest value.
        max: i64,
    },
    /// One of the choices; the value is its index.
    Choice(&'static [&'static str]),
    /// Off (0) or on (1).
    Toggle,
}

impl ParamRange {
    /// The lowest and highest value.
    pub fn bounds(&self) -> (f64, f64) {
        match *self {
            ParamRange::Number { min, max, .. } => (min, max),
            ParamRange::Integer { min, max } => (min as f64, max as f64),
            ParamRange::Choice(c) => (0.0, c.len().saturating_sub(1) as f64),
            ParamRange::Toggle => (0.0, 1.0),
        }
    }

    /// Steps between the lowest and highest value of a stepped param
    /// (an integer, a choice, a toggle); `None` for a continuous number.
    pub fn steps(&self) -> Option<u64> {
        match *self {
            ParamRange::Number { .. } => None,
            _ => {
                let (lo, hi) = self.bounds();
                Some((hi - lo) as u64)
            }
        }
    }

    /// `v` as the param's value: in range, a whole number where the param
    /// is stepped (rounded to the nearest step). `None` for NaN, or a
    /// value outside the range.
    fn value(&self, v: f64) -> Option<ControlValue> {
        let (lo, hi) = self.bounds();
        if v.is_nan() || v < lo || v > hi {
            return None;
        }
        Some(match *self {
            ParamRange::Number { .. } => ControlValue::Number(v),
            ParamRange::Integer { .. } => ControlValue::Integer(round(v) as i64),
            ParamRange::Choice(_) => ControlValue::Enum(round(v) as usize),
            ParamRange::Toggle => ControlValue::Bool(v >= 0.5),
        })
    }

    /// `v` in words with its unit: `440 Hz`, `1.2 kHz`, `250 ms`,
    /// `-6.02 dB` (an amplitude is shown in decibels), a choice's name,
    /// `on`/`off`.
    pub fn display(&self, v: f64) -> String {
        match *self {
            ParamRange::Number { dim, .. } => show_number(v, dim),
            ParamRange::Integer { .. } => format!("{}", round(v) as i64),
            ParamRange::Choice(c) => {
                let i = round(v.max(0.0)) as usize;
                c.get(i).map_or_else(|| format!("{v}"), |s| s.to_string())
            }
            ParamRange::Toggle => if v >= 0.5 { "on" } else { "off" }.to_string(),
        }
    }

    /// The value `text` names: a number with or without a unit of the
    /// param's dimension (`"1.2kHz"`, `"-6 dB"`, `"250ms"`; a bare number
    /// is in the canonical unit), a choice's name or index, `on`/`off`.
    /// Out of range is an error saying what is valid.
    pub fn parse(&self, text: &str, sample_rate: u32) -> Result<f64, String> {
        let t = text.trim();
        let v = match *self {
            ParamRange::Number { dim, .. } => Quantity::parse(t)
                .and_then(|q| q.to_canonical(dim, sample_rate))
                .map_err(|e| e.to_string())?,
            ParamRange::Integer { .. } => {
                t.parse::<i64>()
                    .map_err(|_| format!("`{t}` is not an integer"))? as f64
            }
            ParamRange::Choice(c) => match c.iter().position(|s| *s == t) {
                Some(i) => i as f64,
                None => t
                    .parse::<usize>()
                    .map_err(|_| format!("`{t}` is not one of {}", c.join(", ")))?
                    as f64,
            },
            ParamRange::Toggle => match t {
                "on" | "true" | "1" => 1.0,
                "off" | "false" | "0" => 0.0,
                _ => return Err(format!("`{t}` is not on or off")),
            },
        };
        if self.value(v).is_none() {
            let (lo, hi) = self.bounds();
            return Err(format!(
                "`{t}` is out of range (valid: {} … {})",
                self.display(lo),
                self.display(hi)
            ));
        }
        Ok(v)
    }
}

/// Rounds half away from zero without `std`'s float rounding (which the
/// strict build does not use).
fn round(v: f64) -> f64 {
    libm::round(v)
}

/// A number of `dim` in words, to four significant digits.
fn show_number(v: f64, dim: Dimension) -> String {
    let sig = |x: f64| {
        let s = format!("{:.4}", x);
        let s = if x != 0.0 && x.abs() < 1e6 {
            let digits = 4 - 1 - libm::floor(libm::log10(x.abs())) as i32;
            format!("{:.*}", digits.clamp(0, 9) as usize, x)
        } else {
            s
        };
        // Trailing zeros after a decimal point say nothing.
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    match dim {
        Dimension::Frequency if v.abs() >= 1000.0 => format!("{} kHz", sig(v / 1000.0)),
        Dimension::Frequency => format!("{} Hz", sig(v)),
        Dimension::Time if v.abs() < 1.0 && v != 0.0 => format!("{} ms", sig(v * 1000.0)),
        Dimension::Time => format!("{} s", sig(v)),
        Dimension::Amplitude if v <= 0.0 => "-inf dB".to_string(),
        Dimension::Amplitude => format!("{} dB", sig(20.0 * libm::log10(v))),
        Dimension::Level => format!("{} dB", sig(v)),
        Dimension::Angle => format!("{} rad", sig(v)),
        Dimension::Scalar => sig(v),
    }
}

/// What a param moves.
#[derive(Clone, Debug, PartialEq)]
enum Target {
    /// The session profile: a handover, not a record.
    Profile,
    /// A node's param (every voice's copy of a template node's).
    Node { node: String, param: &'static str },
    /// The scene's `controls` with this source (the param's id); `shown`
    /// is the range its first target's values are shown in.
    Control { shown: ParamRange },
}

/// One param a host can list and set.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    id: String,
    module: Option<String>,
    range: ParamRange,
    default: f64,
    target: Target,
    /// The targets of a control, for display.
    scale: Option<ControlTarget>,
}

impl Param {
    /// The stable id: `node.param` for a node's param, the source of a
    /// control (an OSC address, `midi/cc74`, `midi/ch2/cc74`,
    /// `midi/bend`, `midi/aftertouch`, `midi/program`), or `profile`. An
    /// edit that keeps the node (or the control) keeps the id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The module the node belongs to, for a host's grouping.
    pub fn module(&self) -> Option<&str> {
        self.module.as_deref()
    }

    /// What values it takes (for a control: its position 0…1).
    pub fn range(&self) -> ParamRange {
        self.range
    }

    /// Its value when the scene starts: the scene's value of the param, a
    /// control's position of the target's scene value (0 when the value
    /// lies outside the control's range), the scene's profile.
    pub fn default_value(&self) -> f64 {
        self.default
    }

    /// The canonical unit of its values (`Hz`, `s`, `dB` for a level,
    /// `rad`), empty for amplitudes (linear), plain numbers, steps and
    /// control positions.
    pub fn unit(&self) -> &'static str {
        match self.range {
            ParamRange::Number { dim, .. } if dim != Dimension::Amplitude => dim.canonical(),
            _ => "",
        }
    }

    /// Whether this is the session profile (set through the controller,
    /// which hands the session over; never a record).
    pub fn is_profile(&self) -> bool {
        self.target == Target::Profile
    }

    /// `v` in words: the value with its unit, a choice's name; for a
    /// control, the value its target takes at that position.
    pub fn display(&self, v: f64) -> String {
        match (&self.scale, &self.target) {
            (Some(t), Target::Control { shown, .. }) => shown.display(t.scale(v).as_f64()),
            _ => self.range.display(v),
        }
    }

    /// The value `text` names (see [`ParamRange::parse`]); a control reads
    /// its position (0…1).
    pub fn parse(&self, text: &str, sample_rate: u32) -> Result<f64, String> {
        self.range
            .parse(text, sample_rate)
            .map_err(|e| format!("`{}`: {e}", self.id))
    }
}

/// The params of one plan, in a stable order: `profile`, the controls in
/// the scene's order, then the nodes' params by node id and the
/// operator's param order.
#[derive(Clone, Debug, Default)]
pub struct ParamList {
    params: Vec<Param>,
    sample_rate: u32,
}

impl ParamList {
    /// The index of the `profile` param: always the first.
    pub const PROFILE: usize = 0;

    /// The params `plan` offers. Call it before the plan is handed to an
    /// engine (the engine takes its nodes).
    pub fn new(plan: &Plan) -> ParamList {
        let mut params = vec![Param {
            id: "profile".to_string(),
            module: None,
            range: ParamRange::Choice(&PROFILES),
            default: profile_index(plan.session_profile) as f64,
            target: Target::Profile,
            scale: None,
        }];
        params.extend(control_params(plan));
        params.extend(node_params(plan));
        ParamList {
            params,
            sample_rate: plan.sample_rate,
        }
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.params.len()
    }

    /// Whether there are none (never: `profile` is always there).
    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The param at `index`.
    pub fn get(&self, index: usize) -> Option<&Param> {
        self.params.get(index)
    }

    /// The index of the param with this id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.params.iter().position(|p| p.id == id)
    }

    /// Every param, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Param> {
        self.params.iter()
    }

    /// The sample rate that `samples` in parsed text is counted at.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// The profile a value of the `profile` param names.
    pub fn profile(value: f64) -> Option<Profile> {
        match ParamRange::Choice(&PROFILES).value(value)? {
            ControlValue::Enum(i) => Profile::parse(PROFILES[i]),
            _ => None,
        }
    }

    /// This list resolved against `engine`, which plays the plan it was
    /// made from or one compiled from an edit of it, whose `controls` are
    /// `plan_controls`: a node param moves the node of that id (every
    /// voice's copy of a template node), a control param every control of
    /// `plan_controls` with its source. A param whose node (or every
    /// target of whose control) the edit removed moves nothing there.
    /// Allocates: call it off the audio thread.
    pub fn routes(&self, engine: &Engine, plan_controls: &[ControlMap]) -> ParamRoutes {
        let mut routes = ParamRoutes {
            engine: engine.id(),
            spans: Vec::with_capacity(self.params.len()),
            moves: Vec::new(),
            scales: Vec::new(),
        };
        for p in &self.params {
            let start = routes.moves.len();
            match &p.target {
                Target::Profile => {}
                Target::Node { node, param } => {
                    for si in engine.node_copies(node) {
                        let Some(pi) = engine.param_index(si, param) else {
                            continue;
                        };
                        routes.moves.push(Move {
                            node: si as u32,
                            param: pi as u16,
                            how: How::Direct(p.range),
                            ramp: 0,
                        });
                    }
                }
                Target::Control { .. } => {
                    for c in plan_controls {
                        if source_id(&c.source).as_deref() != Some(p.id.as_str()) {
                            continue;
                        }
                        let Some(t) = c.target.as_ref() else {
                            continue;
                        };
                        let copies = engine.node_copies(&t.node);
                        let Some(pi) = copies
                            .first()
                            .and_then(|&si| engine.param_index(si, t.param))
                        else {
                            continue;
                        };
                        let scale = routes.scales.len();
                        routes.scales.push(t.clone());
                        for si in copies {
                            routes.moves.push(Move {
                                node: si as u32,
                                param: pi as u16,
                                how: How::Scaled(scale),
                                ramp: c.ramp,
                            });
                        }
                    }
                }
            }
            routes.spans.push((start, routes.moves.len()));
        }
        routes
    }
}

/// How a value becomes a node's param value.
#[derive(Clone, Copy, Debug)]
enum How {
    /// The value is the param's own.
    Direct(ParamRange),
    /// A position 0…1 scaled by the routes' target `m` (a control's).
    Scaled(usize),
}

/// One node param a param moves.
#[derive(Clone, Copy, Debug)]
struct Move {
    node: u32,
    param: u16,
    how: How,
    /// Samples the change glides over (a control's `ramp`; 0: a step).
    ramp: u64,
}

/// Why a param change became no record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamRefused {
    /// No param has this index.
    NoSuchParam,
    /// NaN, or outside the param's range.
    OutOfRange,
    /// The `profile` param: the controller switches profiles.
    Profile,
    /// The param moves nothing in this engine: an edit removed its node,
    /// or every node its control moved.
    Gone,
}

/// A [`ParamList`] resolved against one engine: which node params each
/// param moves there. Turning a change into records is real-time safe.
#[derive(Clone, Debug, Default)]
pub struct ParamRoutes {
    engine: u64,
    /// Per param, its range of `moves`.
    spans: Vec<(usize, usize)>,
    moves: Vec<Move>,
    /// The targets whose scale maps a control's position onto its param.
    scales: Vec<ControlTarget>,
}

impl ParamRoutes {
    /// The engine these routes were resolved against ([`Engine::id`]).
    pub fn engine(&self) -> u64 {
        self.engine
    }

    /// How many records a change of param `index` makes (0: no such
    /// param, or none of its nodes plays).
    pub(crate) fn moves(&self, index: usize) -> usize {
        self.spans.get(index).map_or(0, |(start, end)| end - start)
    }

    /// The records that set param `index` to `value` at `sample`, each
    /// passed to `each`: one per node the param moves (every voice's copy
    /// of a template node's param; for a control, through its curve onto
    /// each of its targets, gliding over its `ramp`). Real-time safe: no
    /// allocation, no lookup by name. `seq` is returned in each record's
    /// report. A value out of range makes no record at all.
    pub fn records(
        &self,
        index: usize,
        value: f64,
        sample: u64,
        seq: u64,
        mut each: impl FnMut(ChangeRecord),
    ) -> Result<(), ParamRefused> {
        if index == ParamList::PROFILE {
            return Err(ParamRefused::Profile);
        }
        let &(start, end) = self.spans.get(index).ok_or(ParamRefused::NoSuchParam)?;
        let moves = &self.moves[start..end];
        if moves.is_empty() {
            return Err(ParamRefused::Gone);
        }
        let in_range = |m: &Move| match m.how {
            How::Direct(range) => range.value(value).is_some(),
            How::Scaled(_) => (0.0..=1.0).contains(&value),
        };
        if !moves.iter().all(in_range) {
            return Err(ParamRefused::OutOfRange);
        }
        for m in moves {
            let value = match m.how {
                How::Direct(range) => range.value(value).ok_or(ParamRefused::OutOfRange)?,
                How::Scaled(c) => self.scales[c].scale(value),
            };
            each(ChangeRecord {
                sample,
                node: m.node,
                param: m.param,
                value,
                ramp: m.ramp,
                engine: self.engine,
                seq,
            });
        }
        Ok(())
    }
}

fn profile_index(p: Profile) -> usize {
    PROFILES.iter().position(|n| *n == p.name()).unwrap_or(1)
}

/// A range of an operator's param, if a host may set it: a settable
/// number, integer, choice or toggle.
fn spec_range(op: &OpSpec, index: usize) -> Option<ParamRange> {
    let spec = op.params.get(index)?;
    if !spec.settable_by_events {
        return None;
    }
    match spec.kind {
        ParamKind::Number { dim, min, max, .. } => Some(ParamRange::Number { min, max, dim }),
        ParamKind::Integer { min, max, .. } => Some(ParamRange::Integer { min, max }),
        ParamKind::Enum { choices, .. } => Some(ParamRange::Choice(choices)),
        ParamKind::Bool { .. } => Some(ParamRange::Toggle),
        _ => None,
    }
}

/// A static value as a param value.
fn value_f64(v: &Value) -> f64 {
    match *v {
        Value::Number(x) => x,
        Value::Integer(i) => i as f64,
        Value::Enum(i) => i as f64,
        Value::Bool(b) => f64::from(u8::from(b)),
        _ => 0.0,
    }
}

/// The settable params of the scene's nodes: every node of the plan the
/// scene names (not the compiler's own, whose ids hold `#`), a voice
/// module's template node once (its first voice's copy describes it).
fn node_params(plan: &Plan) -> Vec<Param> {
    let mut nodes: Vec<(&str, Option<&str>, &crate::graph::PlanNode)> = Vec::new();
    for n in &plan.nodes {
        if !n.id.contains('#') {
            nodes.push((&n.id, n.module.as_deref(), n));
        }
    }
    for pool in &plan.voices {
        for (k, id) in pool.template.iter().enumerate() {
            let first = pool.nodes.first().and_then(|v| plan.nodes.get(v[k]));
            if let Some(n) = first {
                nodes.push((id, Some(&pool.module), n));
            }
        }
    }
    nodes.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::new();
    for (id, module, n) in nodes {
        for (pi, spec) in n.op.params.iter().enumerate() {
            let Some(range) = spec_range(n.op, pi) else {
                continue;
            };
            out.push(Param {
                id: format!("{id}.{}", spec.name),
                module: module.map(str::to_string),
                range,
                default: n.values.get(pi).map_or(0.0, value_f64),
                target: Target::Node {
                    node: id.to_string(),
                    param: spec.name,
                },
                scale: None,
            });
        }
    }
    out
}

/// The id of a control's source, if a host may set it as a param (notes
/// and poly aftertouch are events, not params).
fn source_id(source: &ControlSource) -> Option<String> {
    let ch = |c: &Option<u8>| c.map_or(String::new(), |c| format!("ch{c}/"));
    Some(match source {
        ControlSource::Osc(a) => a.clone(),
        ControlSource::Midi(m) => match m {
            MidiSource::Cc { cc, channel, .. } => format!("midi/{}cc{cc}", ch(channel)),
            MidiSource::Bend { channel } => format!("midi/{}bend", ch(channel)),
            MidiSource::Aftertouch { channel } => format!("midi/{}aftertouch", ch(channel)),
            MidiSource::Program { channel } => format!("midi/{}program", ch(channel)),
            MidiSource::Note { .. } | MidiSource::PolyAftertouch { .. } => return None,
        },
    })
}

/// One param per control source that moves a param, in the scene's order
/// of first appearance; several controls on one source move together.
fn control_params(plan: &Plan) -> Vec<Param> {
    let mut out: Vec<Param> = Vec::new();
    for c in &plan.controls {
        let (Some(id), Some(target)) = (source_id(&c.source), c.target.as_ref()) else {
            continue;
        };
        if out.iter().any(|p| p.id == id) {
            continue;
        }
        let node = plan
            .nodes
            .iter()
            .find(|n| n.id == target.node || n.id == crate::graph::voice_node_id(&target.node, 0));
        let shown = node
            .and_then(|n| {
                let pi = n.op.param_index(target.param)?;
                spec_range(n.op, pi).map(|r| (r, n.values.get(pi).map_or(0.0, value_f64)))
            })
            .unwrap_or((
                ParamRange::Number {
                    min: 0.0,
                    max: 1.0,
                    dim: Dimension::Scalar,
                },
                0.0,
            ));
        out.push(Param {
            id,
            module: None,
            range: ParamRange::Number {
                min: 0.0,
                max: 1.0,
                dim: Dimension::Scalar,
            },
            default: position_of(target, shown.1),
            target: Target::Control { shown: shown.0 },
            scale: Some(target.clone()),
        });
    }
    out
}

/// The position (0…1) at which `target` takes `value`, found by
/// bisection on its scale (every curve is monotonic); 0 when no position
/// gives it.
fn position_of(target: &ControlTarget, value: f64) -> f64 {
    let at = |x: f64| target.scale(x).as_f64();
    let (a, b) = (at(0.0), at(1.0));
    let (lo_v, hi_v) = if a <= b { (a, b) } else { (b, a) };
    if !(value >= lo_v && value <= hi_v) {
        return 0.0;
    }
    let rising = a <= b;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if (at(mid) < value) == rising {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{compile, CompileOptions};

    const SCENE: &str = r#"{
      "version": "1.0", "sample_rate": 48000, "profile": "strict",
      "modules": [{ "id": "pad", "voices": 3, "note": { "pitch": "osc.freq", "gate": "env.gate" },
        "nodes": [
          { "id": "osc", "op": "saw", "params": { "freq": "220Hz", "amp": 0.2 } },
          { "id": "env", "op": "adsr", "params": { "attack": "5ms" } },
          { "id": "vca", "op": "multiply" } ] }],
      "nodes": [
        { "id": "tone", "op": "sine", "params": { "freq": "440Hz", "amp": 0.5 } },
        { "id": "lp", "op": "biquad", "params": { "mode": "lowpass", "cutoff": "1264.9110640673518Hz", "q": 0.707 } },
        { "id": "out", "op": "gain", "params": { "gain": "-6dB" } } ],
      "edges": [
        { "from": "osc", "to": "vca:a" }, { "from": "env", "to": "vca:b" },
        { "from": "tone", "to": "lp" }, { "from": "lp", "to": "out" }, { "from": "pad", "to": "out" } ],
      "controls": [
        { "osc": "/cut", "node": "lp", "param": "cutoff", "min": "200Hz", "max": "8kHz", "curve": "exp" },
        { "midi": { "cc": 74, "channel": 2 }, "node": "out", "param": "gain", "min": 0, "max": 1 } ],
      "outputs": { "main": ["out"] }
    }"#;

    fn plan(text: &str) -> Plan {
        let scene = crate::scene::load_str(text, "t.json", None).expect("loads");
        compile(&scene, &CompileOptions::default()).expect("compiles")
    }

    #[test]
    fn the_list_holds_the_profile_then_controls_then_node_params_by_id() {
        let list = ParamList::new(&plan(SCENE));
        let ids: Vec<&str> = list.iter().map(Param::id).collect();
        assert_eq!(&ids[..3], &["profile", "/cut", "midi/ch2/cc74"]);
        // Node params sorted by node id, each in its operator's order; the
        // template nodes once, not once per voice; no compiler node.
        let nodes: Vec<&str> = ids[3..]
            .iter()
            .map(|i| i.split('.').next().unwrap())
            .collect();
        let mut sorted = nodes.clone();
        sorted.sort();
        assert_eq!(nodes, sorted);
        for want in [
            "osc.freq",
            "osc.amp",
            "lp.cutoff",
            "lp.mode",
            "tone.freq",
            "out.gain",
        ] {
            assert!(ids.contains(&want), "{want} missing from {ids:?}");
        }
        assert!(ids.iter().all(|i| !i.contains('#')), "{ids:?}");
        // Sizes read once at build are not host params.
        let saw = crate::ops::lookup("saw").unwrap();
        for spec in saw.params.iter().filter(|s| !s.settable_by_events) {
            assert!(!ids.contains(&format!("osc.{}", spec.name).as_str()));
        }
        let osc = list.get(list.index_of("osc.amp").unwrap()).unwrap();
        assert_eq!(osc.module(), Some("pad"));
    }

    #[test]
    fn ranges_and_defaults_come_from_the_operator_and_the_scene() {
        let list = ParamList::new(&plan(SCENE));
        let p = |id: &str| list.get(list.index_of(id).unwrap()).unwrap().clone();
        let spec = crate::ops::lookup("biquad").unwrap();
        let cutoff = &spec.params[spec.param_index("cutoff").unwrap()];
        let ParamKind::Number { min, max, .. } = cutoff.kind else {
            panic!("cutoff is a number")
        };
        assert_eq!(p("lp.cutoff").range().bounds(), (min, max));
        assert_eq!(p("lp.cutoff").unit(), "Hz");
        assert_eq!(p("lp.cutoff").default_value(), 1264.9110640673518);
        // -6 dB as the scene gives it: 10^(-6/20).
        assert_eq!(p("out.gain").default_value(), libm::pow(10.0, -6.0 / 20.0));
        assert_eq!(p("out.gain").unit(), "");
        let mode = p("lp.mode");
        let ParamRange::Choice(choices) = mode.range() else {
            panic!("mode is a choice")
        };
        assert_eq!(choices[mode.default_value() as usize], "lowpass");
        assert_eq!(mode.range().steps(), Some(choices.len() as u64 - 1));
        assert_eq!(p("profile").display(p("profile").default_value()), "strict");
        // The control's default is the position its curve gives the
        // scene's cutoff: 200·40^x = 1264.9… at x = ½.
        assert!((p("/cut").default_value() - 0.5).abs() < 1e-12);
    }

    #[test]
    fn display_and_parse_speak_the_scene_units_and_round_trip() {
        let sr = 48000;
        let hz = ParamRange::Number {
            min: 10.0,
            max: 20000.0,
            dim: Dimension::Frequency,
        };
        assert_eq!(hz.display(440.0), "440 Hz");
        assert_eq!(hz.display(1234.6), "1.235 kHz");
        assert_eq!(hz.parse("1.2kHz", sr), Ok(1200.0));
        assert_eq!(hz.parse("440", sr), Ok(440.0));
        assert_eq!(hz.parse("69midi", sr), Ok(440.0));
        let e = hz.parse("3ms", sr).unwrap_err();
        assert!(e.contains("frequency"), "{e}");
        let e = hz.parse("30kHz", sr).unwrap_err();
        assert!(e.contains("out of range") && e.contains("20 kHz"), "{e}");
        let amp = ParamRange::Number {
            min: 0.0,
            max: 4.0,
            dim: Dimension::Amplitude,
        };
        assert_eq!(amp.display(0.5), "-6.021 dB");
        assert_eq!(amp.display(0.0), "-inf dB");
        assert_eq!(amp.parse("-inf dB", sr), Ok(0.0));
        let t = ParamRange::Number {
            min: 0.0,
            max: 10.0,
            dim: Dimension::Time,
        };
        assert_eq!(t.display(0.25), "250 ms");
        assert_eq!(t.display(1.5), "1.5 s");
        assert_eq!(t.parse("480samples", sr), Ok(0.01));
        let choice = ParamRange::Choice(&PROFILES);
        assert_eq!(choice.parse("live", sr), Ok(2.0));
        assert_eq!(choice.parse("1", sr), Ok(1.0));
        assert!(choice
            .parse("loud", sr)
            .unwrap_err()
            .contains("strict, repro, live"));
        assert_eq!(ParamRange::Toggle.parse("on", sr), Ok(1.0));
        assert_eq!(ParamRange::Toggle.display(0.0), "off");
        // Every value a display shows parses back to within the four
        // digits it shows.
        for (range, values) in [
            (hz, &[10.0, 99.99, 440.0, 1234.5, 19999.0][..]),
            (amp, &[0.001, 0.5, 1.0, 3.9][..]),
            (t, &[0.0005, 0.25, 1.5, 9.99][..]),
        ] {
            for &v in values {
                let back = range.parse(&range.display(v), sr).unwrap();
                assert!(
                    ((back - v) / v).abs() < 1e-3,
                    "{v} → {} → {back}",
                    range.display(v)
                );
            }
        }
    }

    #[test]
    fn a_param_change_plays_as_the_same_change_from_a_scene_event() {
        // The change as a record from the routes, and as an event in the
        // scene, at the same sample: the same bits under strict.
        let with_event = SCENE.replace(
            r#""controls""#,
            r#""events": [{ "time": "10ms", "node": "tone", "param": "freq", "value": "660Hz" }],
            "controls""#,
        );
        let run = |text: &str, change: bool| {
            let plan = plan(text);
            let list = ParamList::new(&plan);
            let controls = plan.controls.clone();
            let mut engine = Engine::new(plan);
            let routes = list.routes(&engine, &controls);
            if change {
                let i = list.index_of("tone.freq").unwrap();
                let mut n = 0;
                routes
                    .records(i, 660.0, 480, 7, |r| {
                        assert_eq!((r.engine, r.seq, r.ramp), (engine.id(), 7, 0));
                        engine.push_change(r).unwrap();
                        n += 1;
                    })
                    .unwrap();
                assert_eq!(n, 1);
            }
            let mut out = Vec::new();
            for _ in 0..32 {
                engine.process_block(64);
                let bus = engine.bus();
                out.extend((0..64).map(|i| bus.get(0, i).to_bits()));
            }
            out
        };
        let event = run(&with_event, false);
        assert_eq!(run(SCENE, true), event);
        assert_ne!(run(SCENE, false), event, "the change is audible");
    }

    #[test]
    fn a_template_param_moves_every_voice_and_a_control_scales_by_its_curve() {
        let plan = plan(SCENE);
        let list = ParamList::new(&plan);
        let controls = plan.controls.clone();
        let engine = Engine::new(plan);
        let routes = list.routes(&engine, &controls);
        let mut nodes = Vec::new();
        let amp = list.index_of("osc.amp").unwrap();
        routes
            .records(amp, 0.1, 0, 0, |r| {
                assert_eq!(r.value, ControlValue::Number(0.1));
                nodes.push(r.node as usize);
            })
            .unwrap();
        let mut want = engine.node_copies("osc");
        want.sort();
        nodes.sort();
        assert_eq!((nodes.len(), nodes), (3, want));
        // `/cut` at ¾: 200·40^¾ Hz on `lp.cutoff`.
        let cut = list.index_of("/cut").unwrap();
        let mut got = Vec::new();
        routes.records(cut, 0.75, 0, 0, |r| got.push(r)).unwrap();
        let lp = engine.node_copies("lp")[0];
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].node as usize, lp);
        let ControlValue::Number(hz) = got[0].value else {
            panic!("a number")
        };
        assert!((hz - 200.0 * libm::pow(40.0, 0.75)).abs() < 1e-9, "{hz}");
        let shown = list.get(cut).unwrap().display(0.75);
        assert_eq!(
            shown,
            ParamRange::Number {
                min: 0.0,
                max: 1.0,
                dim: Dimension::Frequency
            }
            .display(hz)
        );
    }

    #[test]
    fn refused_changes_say_why_and_make_no_record() {
        let plan = plan(SCENE);
        let list = ParamList::new(&plan);
        let controls = plan.controls.clone();
        let engine = Engine::new(plan);
        let routes = list.routes(&engine, &controls);
        let mut n = 0;
        let mut count = |_| n += 1;
        assert_eq!(
            routes.records(ParamList::PROFILE, 2.0, 0, 0, &mut count),
            Err(ParamRefused::Profile)
        );
        assert_eq!(
            routes.records(list.len(), 0.0, 0, 0, &mut count),
            Err(ParamRefused::NoSuchParam)
        );
        let freq = list.index_of("tone.freq").unwrap();
        assert_eq!(
            routes.records(freq, f64::NAN, 0, 0, &mut count),
            Err(ParamRefused::OutOfRange)
        );
        assert_eq!(
            routes.records(freq, 1e9, 0, 0, &mut count),
            Err(ParamRefused::OutOfRange)
        );
        let cut = list.index_of("/cut").unwrap();
        assert_eq!(
            routes.records(cut, 1.5, 0, 0, &mut count),
            Err(ParamRefused::OutOfRange)
        );
        assert_eq!(n, 0);
        assert_eq!(ParamList::profile(2.0), Some(Profile::Live));
        assert_eq!(ParamList::profile(0.0), Some(Profile::Strict));
        assert_eq!(ParamList::profile(3.0), None);
    }
}
