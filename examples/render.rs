//! An offline render with `morphrt-core` alone: load a scene, compile it
//! under strict, run it in blocks and keep the main bus, interleaved, as
//! little-endian samples at the engine's precision (f64 under strict).
//! These are the bytes `morphrt render --hash` hashes, and they are the
//! same bit for bit.
//!
//! ```sh
//! cargo run --release --example render -- scenes/pluck-delay.json 2 pluck.f64
//! ```
//!
//! A scene that names `@resource:` files needs a resolver
//! (`morphrt_core::graph::Resolver`), which the host supplies; this
//! example supplies none, so such a scene is refused with its location.

use morphrt_core::engine::{run_blocks, Engine};
use morphrt_core::graph::{compile, CompileOptions};
use morphrt_core::profile::Profile;
use std::path::Path;

/// The main bus of the scene in `text` (read from `path`, which names it
/// in messages and gives its folder) for `seconds`, under strict: the
/// interleaved little-endian f64 samples.
pub fn render(text: &str, path: &Path, seconds: f64) -> Result<Vec<u8>, String> {
    let shown = |d: Vec<morphrt_core::scene::Diagnostic>| {
        d.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let dir = path.parent().map(Path::to_path_buf);
    let scene =
        morphrt_core::scene::load_str(text, &path.display().to_string(), dir).map_err(shown)?;
    let options = CompileOptions {
        profile: Some(Profile::Strict),
        ..CompileOptions::default()
    };
    let plan = compile(&scene, &options).map_err(shown)?;
    let frames = (seconds * f64::from(plan.sample_rate)).round() as u64;
    let mut engine = Engine::new(plan);
    let mut bytes = Vec::new();
    run_blocks(
        &mut engine,
        frames,
        |bus| bus.write_le_interleaved(&mut bytes),
        |_| {},
    );
    Ok(bytes)
}

#[allow(dead_code)] // a test includes this file for `render` alone
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [scene, seconds, out] = &args[..] else {
        eprintln!("usage: render SCENE SECONDS OUT (raw interleaved f64, little-endian)");
        std::process::exit(2);
    };
    let result = std::fs::read_to_string(scene)
        .map_err(|e| format!("cannot read `{scene}`: {e}"))
        .and_then(|text| {
            let seconds: f64 = seconds
                .parse()
                .map_err(|_| format!("`{seconds}` is not a number of seconds"))?;
            render(&text, Path::new(scene), seconds)
        })
        .and_then(|bytes| {
            std::fs::write(out, &bytes).map_err(|e| format!("cannot write `{out}`: {e}"))
        });
    if let Err(e) = result {
        // Scene diagnostics say `error:` themselves.
        if e.starts_with("error") {
            eprintln!("{e}");
        } else {
            eprintln!("error: {e}");
        }
        std::process::exit(1);
    }
}
