//! `morphrt check`: validate a scene and print every node's resolved
//! profile, providers, guarantee, latency and estimated cost, with the
//! warnings; `--json` prints the same, or the errors, as one JSON object.

use crate::graph::{check_json, check_table, check_warnings, deadline_risks, CompileOptions};
use crate::host::{load_plan, HostError};
use crate::profile::Profile;
use crate::scene::{Diagnostic, Shown};
use std::io::Write;
use std::path::PathBuf;

/// What `morphrt check` was asked to do: the command's arguments.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct CheckOptions {
    /// The scene file (JSON).
    pub scene: PathBuf,
    /// Session profile: strict, repro or live (default: the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// Machine-readable output: one JSON object (the report, or the errors).
    ///
    /// For a valid scene it is the report (`file`, `session_profile`,
    /// `sample_rate`, `block_size`, `seed`, `guarantee`, `nodes` each with
    /// `cost_ns_per_sample`, `main`, `latency`, `feedback` (a list of
    /// `from`, `to`, `delay_samples`), `events`, `cost_ns_per_sample`,
    /// `estimated_rtf`) with `"ok": true`, `diagnostics`, `truncated`, and
    /// the older `warnings` and `deadline_warnings` string lists. For a
    /// scene with errors (exit 2) it is `{"ok": false, "diagnostics": [...],
    /// "truncated": N}` and nothing on stderr. Each diagnostic is
    /// `{"severity": "error"|"warning", "file", "line", "column", "path",
    /// "node", "message", "help"}` (`null` where not known; `path` is the
    /// JSON path, e.g. `nodes[1].params.mode`); `truncated` counts those
    /// left out after the first 20 of each severity.
    #[arg(long)]
    pub json: bool,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    ///
    /// They must be existing directories (else exit 2).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// A MIDI file to check against the scene's controls: what it maps,
    /// and a warning for each note it leaves on.
    #[arg(long)]
    pub midi: Option<PathBuf>,
    /// Also show the plan at N threads: what the engine spreads over a
    /// pool of N threads (`run --threads`), level by level, with the
    /// thread each node is dealt to first, how each lane group runs, the
    /// critical path and the speed-up the cost estimates promise, and what
    /// a render into a file puts ahead (with `--json`: the `threads`
    /// object).
    #[arg(long, value_parser = crate::host::files::threads::thread_count, allow_negative_numbers = true)]
    pub threads: Option<u16>,
    /// Block size in frames (default: the scene's, else the profile's):
    /// the scene is checked compiled at it (the report's `block_size`, its
    /// deadline warnings, and the plan at `--threads`).
    #[arg(long = "block-size")]
    pub block_size: Option<usize>,
    /// The pool's threshold for the plan at `--threads`, as `run`,
    /// `render` and `bench` take it (default: the one `morphrt calibrate` stored for
    /// the scene on this machine with that thread count, else 20 µs).
    #[arg(long = "thread-min-work-ns", hide = true)]
    pub min_work_ns: Option<u64>,
}

/// The scene file's text and scene, read again for the plan at
/// `--threads` (none from standard input, already read).
fn reread(opts: &CheckOptions) -> Option<(String, crate::scene::Scene)> {
    (opts.scene.as_os_str() != "-")
        .then(|| crate::host::read_scene(&opts.scene).ok())
        .flatten()
}

/// What `render --threads T` would render ahead (`ahead.rs`), for a
/// scene read from a file.
fn ahead_cut(
    scene: Option<&crate::scene::Scene>,
    copts: &CompileOptions,
    plan: &crate::graph::Plan,
    threads: u16,
) -> Option<crate::host::offline::ahead::Cut> {
    if threads < 2 {
        return None;
    }
    crate::host::offline::ahead::checked_cut(plan, scene?, |part| {
        crate::graph::compile(part, copts).ok()
    })
}

/// Why a render at `threads` threads puts nothing ahead, when [`ahead_cut`]
/// finds nothing.
fn not_ahead_because(opts: &CheckOptions, plan: &crate::graph::Plan, threads: u16) -> &'static str {
    if threads < 2 {
        "one thread"
    } else if opts.scene.as_os_str() == "-" {
        "the scene is read from standard input here"
    } else {
        crate::host::offline::ahead::not_cut_because(plan)
    }
}

/// The threshold the plan at `threads` threads is shown with: the one
/// asked for, else the scene's calibration's at that count, else the
/// default (as `run` and `render` play it).
fn threshold(
    opts: &CheckOptions,
    text: Option<&str>,
    plan: &crate::graph::Plan,
    threads: u16,
) -> crate::host::machine::calibration::Threshold {
    crate::host::machine::calibration::Threshold::for_scene(
        opts.min_work_ns,
        usize::from(threads),
        text,
        plan,
    )
}

/// Runs `check`. The table (or JSON) goes to `out`, warnings to `log`. With
/// `json`, a scene that does not compile prints `{"ok": false,
/// "diagnostics": […], "truncated": N}` on `out` and returns
/// [`HostError::Reported`] with the exit code (2 for bad input).
pub fn check(
    opts: &CheckOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> Result<(), HostError> {
    let copts = CompileOptions {
        profile: opts.profile,
        block_size: opts.block_size,
        resolver: crate::host::files::resources::Folders::shared(opts.resources.clone()),
        ..CompileOptions::default()
    };
    let plan = match load_plan(&opts.scene, &copts) {
        Ok(plan) => plan,
        Err(e) if opts.json => {
            let diags = match &e {
                HostError::Input(ds) => ds.clone(),
                other => vec![Diagnostic::error(
                    &opts.scene.display().to_string(),
                    None,
                    other.message(),
                )],
            };
            let report = Shown::new(&diags).json_report();
            writeln!(out, "{}", pretty(&report)).map_err(io_error)?;
            return Err(HostError::Reported(e.exit_code()));
        }
        Err(e) => return Err(e),
    };
    if let Some(m) = &opts.midi {
        if let Some(midi) =
            crate::host::offline::midi::open_midi(std::slice::from_ref(m), &plan, 0)?
        {
            let _ = writeln!(log, "{}", midi.summary());
            for l in midi.error_lines() {
                let _ = writeln!(log, "{l}");
            }
        }
    }
    let warnings = check_warnings(&plan);
    let shown = Shown::new(&warnings);
    if opts.json {
        let mut v = check_json(&plan);
        v["ok"] = true.into();
        v["diagnostics"] = shown.json().into();
        v["truncated"] = shown.truncated().into();
        // Kept for scripts written before `diagnostics`: every warning as text.
        v["warnings"] = warnings.iter().map(|w| w.to_string()).collect();
        v["deadline_warnings"] = deadline_risks(&plan)
            .iter()
            .map(|r| r.to_string())
            .collect();
        if let Some(t) = opts.threads {
            let file = reread(opts);
            let cut = ahead_cut(file.as_ref().map(|f| &f.1), &copts, &plan, t);
            let at = threshold(opts, file.as_ref().map(|f| f.0.as_str()), &plan, t);
            let why = cut.is_none().then(|| not_ahead_because(opts, &plan, t));
            v["threads"] = threads_json(&crate::engine::Engine::new(plan), usize::from(t), &at);
            v["threads"]["render_not_ahead"] = why.into();
            v["threads"]["render_ahead"] = match cut {
                Some(c) => serde_json::json!({
                    "sum": c.sum,
                    "taken": c.taken,
                    "edges": c.edges,
                    "part_ns_per_sample": c.part_ns,
                    "cost_ns_per_sample": c.total_ns,
                    "expected_speedup": c.speedup(),
                }),
                None => serde_json::Value::Null,
            };
        }
        writeln!(out, "{}", pretty(&v)).map_err(io_error)?;
    } else {
        if !warnings.is_empty() {
            let _ = writeln!(log, "{shown}");
        }
        if crate::host::term::verbose() {
            let _ = writeln!(log, "{}", crate::host::verbose_plan(&plan));
        }
        write!(out, "{}", check_table(&plan)).map_err(io_error)?;
        if let Some(t) = opts.threads {
            let file = reread(opts);
            let cut = ahead_cut(file.as_ref().map(|f| &f.1), &copts, &plan, t);
            let at = threshold(opts, file.as_ref().map(|f| f.0.as_str()), &plan, t);
            let why = cut.is_none().then(|| not_ahead_because(opts, &plan, t));
            let engine = crate::engine::Engine::new(plan);
            write!(
                out,
                "{}",
                crate::host::files::threads::threads_text(
                    &engine,
                    usize::from(t),
                    at.ns,
                    at.whence()
                )
            )
            .map_err(io_error)?;
            match (cut, why) {
                (Some(cut), _) => writeln!(out, "render: {}", cut.describe()),
                (None, Some(why)) => writeln!(out, "render: nothing ahead ({why})"),
                (None, None) => Ok(()),
            }
            .map_err(io_error)?;
        }
    }
    Ok(())
}

/// The plan at `threads` threads, as `check --json` gives it: what
/// `engine` would spread over a pool of that size and threshold.
fn threads_json(
    engine: &crate::engine::Engine,
    threads: usize,
    at: &crate::host::machine::calibration::Threshold,
) -> serde_json::Value {
    use crate::engine::{GroupSpread, LevelKind};
    let t = engine.threads_report(threads, at.ns);
    let id = |i: usize| engine.node_id(i);
    let mut levels = Vec::new();
    let mut groups = Vec::new();
    let mut one_thread = Vec::new();
    for (l, level) in t.levels.iter().enumerate() {
        let mut dealt = Vec::new();
        for g in &level.groups {
            for (&i, &w) in g.members.iter().zip(&g.threads) {
                let w = match g.how {
                    GroupSpread::Spans { .. } => serde_json::Value::Null,
                    _ => w.into(),
                };
                dealt.push(serde_json::json!({ "node": id(i), "thread": w }));
            }
            let (how, parts) = match g.how {
                GroupSpread::OneThread => ("one_thread", 1),
                GroupSpread::Parts { parts, .. } => ("parts", parts),
                GroupSpread::Spans { spans } => ("spans", spans),
            };
            groups.push(serde_json::json!({
                "level": l,
                "members": g.members.iter().map(|&i| id(i)).collect::<Vec<_>>(),
                "sum": g.sum.map(id),
                "cost_ns_per_sample": g.cost_ns,
                "saves_ns": g.saves_ns,
                "threshold_ns": level.threshold_ns,
                "how": how,
                "parts": parts,
            }));
        }
        for (&i, &w) in level.nodes.iter().zip(&level.threads) {
            dealt.push(serde_json::json!({ "node": id(i), "thread": w }));
        }
        if !level.spread && level.groups.iter().all(|g| g.how == GroupSpread::OneThread) {
            one_thread.push(l);
        }
        levels.push(serde_json::Value::Array(dealt));
    }
    let kinds: Vec<&str> = t
        .levels
        .iter()
        .map(|l| match l.kind {
            LevelKind::Level => "level",
            LevelKind::Schedule => "schedule",
            LevelKind::Voices => "voices",
        })
        .collect();
    serde_json::json!({
        "threads": threads,
        "block_frames": t.frames,
        "levels": levels,
        "level_kinds": kinds,
        "lane_groups": groups,
        "critical_path_ns_per_sample": t.critical_ns,
        "cost_ns_per_sample": t.total_ns,
        "expected_speedup": t.speedup(),
        "min_work_ns": t.min_work_ns,
        "min_work_from": at.key(),
        "one_thread_levels": one_thread,
    })
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).expect("a JSON value always serializes")
}

fn io_error(e: std::io::Error) -> HostError {
    HostError::stdout("cannot write the report")(e)
}
