//! Reading a scene from disk: its text, the parsed scene, the compiled
//! plan, and what `-v` says about it.

use crate::engine::Engine;
use crate::graph::{compile, CompileOptions, Plan};
use crate::host::HostError;
use crate::scene::{self, Diagnostic};
use std::path::Path;

/// Reads and parses a scene file, keeping its text (a snapshot records the
/// text's SHA-256).
pub fn read_scene(path: &Path) -> Result<(String, scene::Scene), HostError> {
    let file = path.display().to_string();
    let text = scene::read_scene_text(path).map_err(HostError::Input)?;
    let scene = scene::load_str(
        &text,
        &file,
        Some(crate::engine::incoming::parent_dir(path)),
    )
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

/// Reads, parses and compiles a scene file into a ready engine.
pub fn load_engine(
    path: &Path,
    opts: &CompileOptions,
) -> Result<(Engine, Vec<Diagnostic>), HostError> {
    let mut plan = load_plan(path, opts)?;
    let warnings = std::mem::take(&mut plan.warnings);
    Ok((Engine::new(plan), warnings))
}
