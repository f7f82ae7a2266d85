//! The outside world: loading a scene from disk and compiling it, offline
//! WAV rendering, real-time output, hot reload, journals and snapshots.

pub mod render;

use crate::engine::Engine;
use crate::graph::{compile, CompileOptions, Plan};
use crate::scene::{self, Diagnostic};
use std::path::Path;

/// A failure a command can report, with the exit code it maps to.
#[derive(Debug)]
pub enum HostError {
    /// Bad input: the scene or the arguments (exit code 2).
    Input(Vec<Diagnostic>),
    /// Bad command-line usage that is not a scene problem (exit code 2).
    Usage(String),
    /// The machine let us down: I/O, devices (exit code 1).
    Runtime(String),
    /// A signal stopped the command after it cleaned up; the exit code is
    /// 128 + the signal's number, as a shell reports a process the signal
    /// killed (130 for SIGINT, 143 for SIGTERM).
    Interrupted { signal: i32, message: String },
    /// Already reported on the command's output (`check --json` prints
    /// its errors as JSON); nothing more to print, exit with this code.
    Reported(i32),
}

impl HostError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            HostError::Input(_) | HostError::Usage(_) => 2,
            HostError::Runtime(_) => 1,
            HostError::Interrupted { signal, .. } => 128 + signal,
            HostError::Reported(code) => *code,
        }
    }

    /// The failure in words, without the `error:` prefix (for a one-line
    /// diagnostic); diagnostics of bad input are joined.
    pub fn message(&self) -> String {
        match self {
            HostError::Input(ds) => ds
                .iter()
                .map(|d| d.message.clone())
                .collect::<Vec<_>>()
                .join("; "),
            HostError::Usage(s) | HostError::Runtime(s) => s.clone(),
            HostError::Interrupted { message, .. } => message.clone(),
            HostError::Reported(_) => String::new(),
        }
    }
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Input(ds) => write!(f, "{}", scene::Shown::new(ds)),
            HostError::Usage(s) => write!(f, "error: {s}"),
            HostError::Runtime(s) => write!(f, "error: {s}"),
            HostError::Interrupted { message, .. } => write!(f, "{message}"),
            HostError::Reported(_) => Ok(()),
        }
    }
}

impl std::error::Error for HostError {}

/// A device that cannot play is the machine's failure, not the input's.
impl From<device::DeviceError> for HostError {
    fn from(e: device::DeviceError) -> HostError {
        HostError::Runtime(e.to_string())
    }
}

/// Reads and parses a scene file, keeping its text (a snapshot records the
/// text's SHA-256).
pub fn read_scene(path: &Path) -> Result<(String, scene::Scene), HostError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        HostError::Input(vec![Diagnostic::error(
            &file,
            None,
            format!("cannot read scene file `{file}`: {e}"),
        )])
    })?;
    let scene = scene::load_str(&text, &file, Some(handover::parent_dir(path)))
        .map_err(HostError::Input)?;
    Ok((text, scene))
}

/// What `-v` adds about a compiled scene: the session's settings, each
/// node's resolved profile and precision, and where every resource was read.
pub fn verbose_plan(plan: &Plan) -> String {
    let seed = match plan.seed {
        crate::graph::SeedSource::None => "none".to_string(),
        crate::graph::SeedSource::Given(s) => s.to_string(),
        crate::graph::SeedSource::Auto(s) => format!("{s} (from the clock)"),
    };
    let mut out = format!(
        "note: `{}`: session profile {}, block size {}, {} Hz, seed {seed}, latency {} samples",
        plan.file, plan.session_profile, plan.block_size, plan.sample_rate, plan.latency
    );
    for n in &plan.nodes {
        out.push_str(&format!(
            "\nnote: node `{}` ({}): profile {}, {}, guarantee {}",
            n.id,
            n.op.name,
            n.profile.profile,
            n.profile.precision.name(),
            n.guarantee
        ));
    }
    for (reference, path) in &plan.resources {
        out.push_str(&format!(
            "\nnote: resource `{reference}` read from {}",
            path.display()
        ));
    }
    out
}

/// Reads, parses and compiles a scene file.
pub fn load_plan(path: &Path, opts: &CompileOptions) -> Result<Plan, HostError> {
    let scene = scene::load_file(path).map_err(HostError::Input)?;
    compile(&scene, opts).map_err(HostError::Input)
}

/// `morphrt schema`: the scene format's JSON Schema, pretty-printed, to
/// `out` or to `output` under the rules of `render`'s output (written
/// whole under a temporary name and renamed into place).
pub fn write_schema(output: Option<&Path>, out: &mut dyn std::io::Write) -> Result<(), HostError> {
    let text = serde_json::to_string_pretty(&crate::graph::schema::scene_schema())
        .map_err(|e| HostError::Runtime(format!("cannot print the schema: {e}")))?
        + "\n";
    match output {
        None => out
            .write_all(text.as_bytes())
            .map_err(|e| HostError::Runtime(format!("cannot write the schema: {e}"))),
        Some(path) => {
            let o = render::output::Output::prepare(
                path,
                &render::output::Inputs::default(),
                text.len() as u64,
            )?;
            o.write_all(text.as_bytes(), out)
        }
    }
}

/// Reads, parses and compiles a scene file into a ready engine.
pub fn load_engine(
    path: &Path,
    opts: &CompileOptions,
) -> Result<(Engine, Vec<Diagnostic>), HostError> {
    let mut plan = load_plan(path, opts)?;
    let warnings = std::mem::take(&mut plan.warnings);
    Ok((Engine::new(plan), warnings))
}
pub mod calibration;
pub mod capture;
pub mod check;
pub mod device;
pub mod handover;
pub mod journal;
pub mod keys;
pub mod live;
pub mod machine;
pub mod player;
pub mod plot;
pub mod realtime;
pub mod run;
pub mod snapshot;
pub mod term;
pub mod watch;
