//! morphrt: a scene-graph audio runtime. A JSON scene wires operators into
//! a graph; it is compiled into a plan and run in fixed blocks, in real time
//! (cpal) or offline (WAV), under one of three profiles: `strict` (bit-exact
//! f64), `repro` (deterministic f32) or `live` (lowest latency), switchable
//! while it plays. DESIGN.md is the contract; this is the map.
//!
//! # Layers
//!
//! One folder of `runtime/` per layer. Each may use only the layers above it
//! in this table (DESIGN §2); a test in this file fails on any `crate::`
//! path that breaks the rule.
//!
//! | layer | may also use | owns |
//! |---|---|---|
//! | [`dsp`] | — | sample trait, math policies, FP-mode guard, FFTs, Philox streams, windows, oversampling filters, node state |
//! | [`profile`] | dsp | the three profiles, what each means, per-node settings |
//! | [`scene`] | dsp, profile | the scene format, units, resources, located errors |
//! | [`ops`] | dsp … scene | the operator registry, one file per family |
//! | [`graph`] | dsp … ops | compile: scene → plan, and `check`'s report |
//! | [`engine`] | dsp … graph | the block processor, migration, the deck |
//! | [`host`] | dsp … engine | files, devices, threads, journals |
//! | [`bench`] | dsp … host | timing, parity, calibration |
//!
//! `main.rs` is the binary: it parses arguments and calls the library.
//!
//! # Where each concept lives
//!
//! - **Scene format** (§3): types in [`scene`]; loading, validation and
//!   unknown-field warnings in `scene/load.rs` ([`scene::load_str`]); units
//!   and exact times `scene/units.rs`; `@resource:` `scene/resource.rs`;
//!   line:column diagnostics `scene/diag.rs`.
//! - **Profiles** (§4): the semantics table [`profile::Profile`]; a node's
//!   resolved settings [`profile::NodeProfile`]; precedence node > module >
//!   scene > session in `graph/compile.rs`.
//! - **Operators** (§5): [`ops::registry`]; each [`ops::OpSpec`] declares
//!   ports, params, tier and the choices it makes per profile; state travels
//!   as [`dsp::state::NodeState`]; goldens `ops/golden.rs`, conformance
//!   suite `ops/conformance.rs`.
//! - **Compile**: [`graph::compile`], one function per pass in
//!   `graph/compile.rs`; what `check` prints, `graph/report.rs`.
//! - **Engine** (§6): [`engine::Engine`] (blocks, events, ramps, NaN recovery,
//!   live limiter, FP-mode runs) in `engine/mod.rs`; the main bus
//!   `engine/bus.rs`; deck and crossfade [`engine::Deck`] in `engine/deck.rs`.
//! - **Handover** (§6): capture and migration `engine/handover.rs`; the
//!   control side's steps, shared by `run` and offline scripts,
//!   `host/handover.rs`; hot edits and profile switches against the audio
//!   thread `host/live.rs`; file watching `host/watch.rs`.
//! - **Real time**: the callback and the device output stage (clip, stop
//!   fade) `host/player.rs`; its control loop `host/realtime.rs`; cpal
//!   `host/device.rs`; `morphrt run` `host/run.rs`, keys `host/keys.rs`,
//!   capture `host/capture.rs`.
//! - **Offline**: `host/render.rs`; journal and replay `host/journal.rs`;
//!   snapshots and resume `host/snapshot.rs`.
//! - **Tools**: `plot` `host/plot.rs`; the scene format's JSON Schema
//!   `graph/schema.rs` (it reads both the scene loader and the registry).

pub mod bench;
pub mod cli;
pub mod dsp;
pub mod engine;
pub mod graph;
pub mod host;
pub mod ops;
pub mod profile;
pub mod scene;

/// The layer rule of DESIGN §2, checked on the source: a file in one layer
/// folder may name only its own layer and those before it. The compiler
/// cannot enforce it (every module of one crate sees every other), so a
/// plain scan of `crate::` paths does.
#[cfg(test)]
mod layering {
    use std::path::{Path, PathBuf};

    /// The layer folders under `runtime/`, in order: each may use only
    /// those before it.
    const LAYERS: [&str; 9] = [
        "dsp", "profile", "scene", "ops", "graph", "engine", "host", "bench", "cli",
    ];

    /// Removes comments (line, nested block) and the contents of string and
    /// char literals, keeping line breaks so that line numbers still match.
    fn code_only(src: &str) -> String {
        let s: Vec<char> = src.chars().collect();
        let mut out = String::with_capacity(src.len());
        let mut i = 0;
        let keep_newlines = |out: &mut String, run: &[char]| {
            out.extend(run.iter().filter(|c| **c == '\n'));
        };
        while i < s.len() {
            let c = s[i];
            let next = s.get(i + 1).copied();
            if c == '/' && next == Some('/') {
                while i < s.len() && s[i] != '\n' {
                    i += 1;
                }
            } else if c == '/' && next == Some('*') {
                let start = i;
                let mut depth = 0;
                while i < s.len() {
                    if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                keep_newlines(&mut out, &s[start..i.min(s.len())]);
            } else if c == 'r' && (next == Some('"') || next == Some('#')) && {
                let mut j = i + 1;
                while s.get(j) == Some(&'#') {
                    j += 1;
                }
                s.get(j) == Some(&'"') && (i == 0 || !s[i - 1].is_alphanumeric())
            } {
                let start = i;
                let mut j = i + 1;
                let mut hashes = 0;
                while s[j] == '#' {
                    hashes += 1;
                    j += 1;
                }
                j += 1;
                loop {
                    if j >= s.len() {
                        break;
                    }
                    if s[j] == '"' && (0..hashes).all(|h| s.get(j + 1 + h) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                i = j;
                out.push_str("\"\"");
                keep_newlines(&mut out, &s[start..i.min(s.len())]);
            } else if c == '"' {
                let start = i;
                i += 1;
                while i < s.len() && s[i] != '"' {
                    i += if s[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
                keep_newlines(&mut out, &s[start..i.min(s.len())]);
            } else if c == '\'' && next == Some('\\') {
                // An escaped char literal: skip to its closing quote.
                i += 2;
                while i < s.len() && s[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if c == '\'' && s.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        }
        out
    }

    fn ident_at(s: &[char], mut i: usize) -> (String, usize) {
        while i < s.len() && s[i].is_whitespace() {
            i += 1;
        }
        let start = i;
        while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
            i += 1;
        }
        (s[start..i].iter().collect(), i)
    }

    /// The top-level modules a piece of code names through `crate::` (also
    /// `crate::{a::…, b}`) or through enough `super::` to reach the crate
    /// root from a file `depth` modules deep, with their line numbers.
    fn crate_refs(code: &str, depth: usize) -> Vec<(usize, String)> {
        let s: Vec<char> = code.chars().collect();
        let line_of = |i: usize| 1 + s[..i].iter().filter(|c| **c == '\n').count();
        let is_boundary = |i: usize| i == 0 || !(s[i - 1].is_alphanumeric() || s[i - 1] == '_');
        let starts = |i: usize, pat: &str| {
            pat.chars()
                .enumerate()
                .all(|(k, p)| s.get(i + k) == Some(&p))
        };
        let mut refs = Vec::new();
        let mut i = 0;
        while i < s.len() {
            // How far up a path starting here climbs: `crate::` reaches the
            // root at once; `super::` counts towards `depth`.
            let mut j = i;
            let mut root = false;
            if is_boundary(i) && starts(i, "crate::") {
                j = i + "crate::".len();
                root = true;
            } else if is_boundary(i) && starts(i, "super::") {
                let mut ups = 0;
                while starts(j, "super::") {
                    ups += 1;
                    j += "super::".len();
                }
                root = ups >= depth;
            }
            if !root {
                i = j.max(i + 1);
                continue;
            }
            let (name, after) = ident_at(&s, j);
            if !name.is_empty() {
                refs.push((line_of(i), name));
                i = after;
                continue;
            }
            // A group: the first name of each top-level item.
            if s.get(j) == Some(&'{') {
                let mut k = j + 1;
                let mut nest = 0;
                let mut item_start = true;
                while k < s.len() {
                    match s[k] {
                        '{' => nest += 1,
                        '}' if nest == 0 => break,
                        '}' => nest -= 1,
                        ',' if nest == 0 => item_start = true,
                        c if item_start && !c.is_whitespace() => {
                            let (name, after) = ident_at(&s, k);
                            if !name.is_empty() {
                                refs.push((line_of(k), name));
                            }
                            item_start = false;
                            k = after.max(k + 1);
                            continue;
                        }
                        _ => {}
                    }
                    k += 1;
                }
                i = k;
                continue;
            }
            i = j.max(i + 1);
        }
        refs
    }

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                rust_files(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// Every use of a later layer, as `file:line: layer uses other`.
    fn violations(root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
            .expect("runtime/ is readable")
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            let layer = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let Some(rank) = LAYERS.iter().position(|l| *l == layer) else {
                found.push(format!(
                    "{}: a folder that is not a layer of DESIGN §2 ({})",
                    dir.display(),
                    LAYERS.join(" → ")
                ));
                continue;
            };
            let mut files = Vec::new();
            rust_files(&dir, &mut files);
            for file in files {
                let rel = file.strip_prefix(root).expect("under runtime/");
                // Module depth: `dsp/fft/rust.rs` is dsp::fft::rust (3),
                // `dsp/fft/mod.rs` is dsp::fft (2).
                let mut depth = rel.components().count();
                if rel.file_name().is_some_and(|n| n == "mod.rs") {
                    depth -= 1;
                }
                let src = std::fs::read_to_string(&file).expect("readable source");
                for (line, name) in crate_refs(&code_only(&src), depth) {
                    if let Some(r) = LAYERS.iter().position(|l| *l == name) {
                        if r > rank {
                            found.push(format!(
                                "runtime/{}:{line}: {layer} uses {name}, a later layer",
                                rel.display()
                            ));
                        }
                    }
                }
            }
        }
        found
    }

    #[test]
    fn every_layer_uses_only_the_layers_before_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
        let found = violations(&root);
        assert!(
            found.is_empty(),
            "DESIGN §2 layering:\n{}",
            found.join("\n")
        );
    }

    #[test]
    fn the_scan_sees_every_form_of_path() {
        let src = "use crate::dsp::Sample;\n\
                   use crate::{profile::Profile, ops::{self, Value}};\n\
                   // use crate::host::Player;\n\
                   let s = \"crate::engine\"; let c = '\"';\n\
                   fn f() -> crate::graph::Plan { super::super::scene::x() }\n\
                   /* crate::bench /* nested */ crate::bench */ use super::sample;";
        let names: Vec<(usize, String)> = crate_refs(&code_only(src), 2);
        let want = [
            (1, "dsp"),
            (2, "profile"),
            (2, "ops"),
            (5, "graph"),
            (5, "scene"),
        ];
        assert_eq!(
            names,
            want.map(|(l, n)| (l, n.to_string())).to_vec(),
            "{}",
            code_only(src)
        );
        // Two `super::` from three modules deep stay inside the layer.
        assert!(crate_refs("super::super::fft::plan", 3).is_empty());
        assert_eq!(
            crate_refs("super::super::super::ops::X", 3),
            vec![(1, "ops".to_string())]
        );
    }

    #[test]
    fn a_later_layer_in_a_numeric_file_is_reported() {
        let dir = std::env::temp_dir().join(format!("morphrt-layering-{}", std::process::id()));
        let dsp = dir.join("dsp");
        std::fs::create_dir_all(&dsp).unwrap();
        std::fs::write(dsp.join("ok.rs"), "use super::sample::Sample;\n").unwrap();
        std::fs::write(
            dsp.join("bad.rs"),
            "//! Docs may say crate::ops.\nuse crate::ops::{NodeState, StateError};\n",
        )
        .unwrap();
        let found = violations(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found, ["runtime/dsp/bad.rs:2: dsp uses ops, a later layer"]);
    }
}
