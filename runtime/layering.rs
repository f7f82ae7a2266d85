//! The crates' structure, checked on the source: the layer rule (a layer
//! folder names only itself and the layers before it, in the order of the
//! table in the crate doc), the order of `host/`'s wings, and no import
//! circle between any two files or folders. The compiler enforces the
//! boundary between `morphrt-core` (`runtime/core/`) and this crate, but not
//! the order inside one crate (every module of a crate sees every other), so
//! a plain scan of `crate::` and `super::` paths does, in each crate.

use std::path::{Path, PathBuf};

/// The folder of `runtime/` that holds the `morphrt-core` crate.
const CORE: &str = "core";

/// A file's path as the repository names it: `runtime/host/x.rs`,
/// `runtime/core/dsp/x.rs`.
fn shown(root: &Path, rel: &Path) -> String {
    let core = root.file_name().is_some_and(|n| n == CORE);
    format!(
        "runtime/{}{}",
        if core { "core/" } else { "" },
        rel.display()
    )
}

/// The source roots of the two crates: `runtime/` and `runtime/core/`.
fn roots() -> [PathBuf; 2] {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    [runtime.join(CORE), runtime]
}

/// The layer folders, in order: each may use only those before it. The
/// first seven are `morphrt-core`'s (under `runtime/core/`), the last three
/// this crate's (under `runtime/`).
const LAYERS: [&str; 10] = [
    "dsp", "profile", "scene", "ops", "graph", "engine", "api", "host", "bench", "cli",
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
        if layer == CORE {
            continue;
        }
        let Some(rank) = LAYERS.iter().position(|l| *l == layer) else {
            found.push(format!(
                "{}: a folder that is not a layer of the crate ({})",
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
                            "{}:{line}: {layer} uses {name}, a later layer",
                            shown(root, rel)
                        ));
                    }
                }
            }
        }
    }
    found
}

/// The wings of `host/`, in order: each may use only those before it
/// (`mod.rs` is the face and may name any of them). `error` comes last:
/// the one error a command returns holds each wing's own error, and the
/// wings name it only through the face (`crate::host::HostError`).
const HOST_WINGS: [&str; 8] = [
    "term", "files", "machine", "record", "remote", "offline", "live", "error",
];

/// A source file's module path under `runtime/`: `host/live/run.rs` is
/// `["host", "live", "run"]`, `host/live/mod.rs` is `["host", "live"]`,
/// `lib.rs` and `main.rs` are the root `[]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// Every path a piece of code names through `crate::` or `super::`, as
/// crate-relative segments (`crate::host::live::run::RunOptions` →
/// `host live run RunOptions`; a group `crate::a::{b::c, d}` gives `a b c`
/// and `a d`), with its line number. `module` is the module of the file.
fn crate_paths(code: &str, module: &[String]) -> Vec<(usize, Vec<String>)> {
    let s: Vec<char> = code.chars().collect();
    let line_of = |i: usize| 1 + s[..i].iter().filter(|c| **c == '\n').count();
    let is_boundary = |i: usize| i == 0 || !(s[i - 1].is_alphanumeric() || s[i - 1] == '_');
    let starts = |i: usize, pat: &str| {
        pat.chars()
            .enumerate()
            .all(|(k, p)| s.get(i + k) == Some(&p))
    };
    // The `::`-separated segments from `i`; groups expand to one path per item.
    fn segments(
        s: &[char],
        mut i: usize,
        prefix: Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) -> usize {
        let mut path = prefix;
        loop {
            while i < s.len() && s[i].is_whitespace() {
                i += 1;
            }
            if s.get(i) == Some(&'{') {
                i += 1;
                loop {
                    i = segments(s, i, path.clone(), out);
                    while i < s.len() && s[i].is_whitespace() {
                        i += 1;
                    }
                    match s.get(i) {
                        Some(',') => i += 1,
                        Some('}') => return i + 1,
                        _ => return i,
                    }
                    while i < s.len() && s[i].is_whitespace() {
                        i += 1;
                    }
                    if s.get(i) == Some(&'}') {
                        return i + 1;
                    }
                }
            }
            let (name, after) = ident_at(s, i);
            if name.is_empty() {
                break;
            }
            if name != "self" {
                path.push(name);
            }
            i = after;
            if s.get(i) == Some(&':') && s.get(i + 1) == Some(&':') {
                i += 2;
            } else {
                break;
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
        i
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let (base, j) = if is_boundary(i) && starts(i, "crate::") {
            (Vec::new(), i + "crate::".len())
        } else if is_boundary(i) && starts(i, "super::") {
            let mut j = i;
            let mut ups = 0;
            while starts(j, "super::") {
                ups += 1;
                j += "super::".len();
            }
            let keep = module.len().saturating_sub(ups);
            (module[..keep].to_vec(), j)
        } else {
            i += 1;
            continue;
        };
        let mut paths = Vec::new();
        let end = segments(&s, j, base, &mut paths);
        let line = line_of(i);
        found.extend(paths.into_iter().map(|p| (line, p)));
        i = end.max(i + 1);
    }
    found
}

/// Every source file of the crate under `root`, by module path (the core
/// crate's folder inside `runtime/` is another crate).
fn modules(root: &Path) -> Vec<(Vec<String>, PathBuf)> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files
        .into_iter()
        .filter(|f| !f.ends_with("build.rs") && !f.starts_with(root.join(CORE)))
        .map(|f| {
            let rel = f.strip_prefix(root).expect("under runtime/").to_path_buf();
            (module_of(&rel), rel)
        })
        .collect()
}

/// The uses between files as (user, used) module paths: each path named
/// resolves to the longest module it starts with. A module's use of its
/// own ancestors (shared types in a parent's `mod.rs`) or descendants (a
/// face re-exporting its children) is not an edge between peers.
fn uses(root: &Path) -> Vec<(Vec<String>, Vec<String>, String)> {
    let mods = modules(root);
    let known: std::collections::HashSet<Vec<String>> =
        mods.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = Vec::new();
    for (module, rel) in &mods {
        let src = std::fs::read_to_string(root.join(rel)).expect("readable source");
        for (line, path) in crate_paths(&code_only(&src), module) {
            let Some(target) = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| known.contains(p))
            else {
                continue;
            };
            let related = target.starts_with(module) || module.starts_with(&target);
            if !related {
                edges.push((
                    module.clone(),
                    target,
                    format!("{}:{line}", shown(root, rel)),
                ));
            }
        }
    }
    edges
}

/// Import circles: for every folder, the graph of its children (files and
/// folders) with an edge a → b when something in a uses something in b;
/// each strongly connected group of two or more children is a circle,
/// reported with one use per edge of it.
fn circles(root: &Path) -> Vec<String> {
    use petgraph::graph::{DiGraph, NodeIndex};
    let mut by_parent: std::collections::BTreeMap<Vec<String>, Vec<(String, String, String)>> =
        Default::default();
    for (from, to, at) in uses(root) {
        let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
        let parent = from[..common].to_vec();
        by_parent
            .entry(parent)
            .or_default()
            .push((from[common].clone(), to[common].clone(), at));
    }
    let mut found = Vec::new();
    for (parent, edges) in &by_parent {
        let mut g = DiGraph::<&str, ()>::new();
        let mut index: std::collections::BTreeMap<&str, NodeIndex> = Default::default();
        for (a, b, _) in edges {
            let a = *index
                .entry(a.as_str())
                .or_insert_with(|| g.add_node(a.as_str()));
            let b = *index
                .entry(b.as_str())
                .or_insert_with(|| g.add_node(b.as_str()));
            g.update_edge(a, b, ());
        }
        for scc in petgraph::algo::tarjan_scc(&g) {
            if scc.len() < 2 {
                continue;
            }
            let scc: Vec<&str> = scc.iter().map(|n| g[*n]).collect();
            let mut names: Vec<&str> = scc.clone();
            names.sort();
            let witness: Vec<String> = edges
                .iter()
                .filter(|(a, b, _)| scc.contains(&a.as_str()) && scc.contains(&b.as_str()))
                .map(|(a, b, at)| format!("    {a} → {b} ({at})"))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            found.push(format!(
                "in `{}`: {} use each other:\n{}",
                if parent.is_empty() {
                    "runtime".to_string()
                } else {
                    parent.join("/")
                },
                names.join(", "),
                witness.join("\n")
            ));
        }
    }
    found
}

/// Uses of a later wing of `host/` by an earlier one.
fn wing_order(root: &Path) -> Vec<String> {
    let rank = |m: &[String]| -> Option<usize> {
        (m.len() >= 2 && m[0] == "host").then(|| HOST_WINGS.iter().position(|w| *w == m[1]))?
    };
    let mut found = Vec::new();
    for (from, to, at) in uses(root) {
        if let (Some(a), Some(b)) = (rank(&from), rank(&to)) {
            if b > a {
                found.push(format!(
                    "{at}: host/{} uses host/{}, a later wing",
                    from[1], to[1]
                ));
            }
        }
    }
    for (m, rel) in modules(root) {
        if m.len() >= 2 && m[0] == "host" && rank(&m).is_none() {
            found.push(format!(
                "runtime/{}: not in a wing of host/ ({})",
                rel.display(),
                HOST_WINGS.join(" → ")
            ));
        }
    }
    found
}

#[test]
fn no_two_files_or_folders_use_each_other() {
    let found: Vec<String> = roots().iter().flat_map(|r| circles(r)).collect();
    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn host_wings_use_only_the_wings_before_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtime");
    let found = wing_order(&root);
    assert!(found.is_empty(), "host/ wings:\n{}", found.join("\n"));
}

#[test]
fn a_circle_of_three_files_is_reported() {
    let dir = std::env::temp_dir().join(format!("morphrt-circle-{}", std::process::id()));
    let host = dir.join("host");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("mod.rs"), "pub mod a;\npub mod b;\npub mod c;\n").unwrap();
    std::fs::write(
        host.join("a.rs"),
        "use crate::host::b::X;\nuse super::HostError;\n",
    )
    .unwrap();
    std::fs::write(host.join("b.rs"), "use super::c::{Y, z::W};\n").unwrap();
    std::fs::write(host.join("c.rs"), "fn f() { crate::host::a::g() }\n").unwrap();
    let found = circles(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        found,
        ["in `host`: a, b, c use each other:\n    a → b (runtime/host/a.rs:1)\n    b → c (runtime/host/b.rs:1)\n    c → a (runtime/host/c.rs:1)"]
    );
}

#[test]
fn paths_resolve_from_the_file_they_are_in() {
    let module = ["host".to_string(), "live".to_string(), "run".to_string()];
    let got = crate_paths(
        &code_only("use super::{tap::Tap, session};\nuse crate::engine::{self, Deck};\nx(super::super::HostError);"),
        &module,
    );
    let want: Vec<(usize, Vec<String>)> = [
        (1, "host live tap Tap"),
        (1, "host live session"),
        (2, "engine"),
        (2, "engine Deck"),
        (3, "host HostError"),
    ]
    .iter()
    .map(|(l, p)| (*l, p.split(' ').map(String::from).collect()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn every_layer_uses_only_the_layers_before_it() {
    let found: Vec<String> = roots().iter().flat_map(|r| violations(r)).collect();
    assert!(found.is_empty(), "layering:\n{}", found.join("\n"));
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

/// Every path the crate docs' maps name in backticks (`scene/units.rs`,
/// `graph/compile/`): each must exist under `runtime/`, `runtime/core/` (or
/// at the top of the repository), so a map cannot point at a file that moved.
#[test]
fn every_path_the_map_names_exists() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    for lib in ["runtime/lib.rs", "runtime/core/lib.rs"] {
        paths_named_exist(top, lib);
    }
}

fn paths_named_exist(top: &Path, lib: &str) {
    let lib = std::fs::read_to_string(top.join(lib)).expect("lib.rs");
    let doc: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let named: Vec<&str> = doc
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            (s.ends_with(".rs") || s.ends_with('/') || s.ends_with(".md")) && !s.contains(' ')
        })
        .collect();
    assert!(named.len() > 20, "the map names {} paths", named.len());
    let missing: Vec<&&str> = named
        .iter()
        .filter(|p| {
            ["runtime", "runtime/core", ""]
                .iter()
                .all(|dir| !top.join(dir).join(p).exists())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the crate doc names paths that do not exist: {missing:?}"
    );
}

/// The crates a host brings (devices, file watching, WAV files, the
/// command line, MIDI ports, OSC, plots): none is a dependency of
/// `morphrt-core`, so the engine builds without them.
const HOST_CRATES: [&str; 7] = [
    "cpal", "notify", "hound", "clap", "midir", "rosc", "plotters",
];

/// The names of the dependencies a `Cargo.toml` declares (every
/// `[…dependencies]` table, dev- and build- included).
fn declared_dependencies(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_deps = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line
                .trim_matches(|c| c == '[' || c == ']')
                .ends_with("dependencies");
        } else if in_deps && !line.is_empty() && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                names.push(name.trim().to_string());
            }
        }
    }
    names
}

#[test]
fn the_core_crate_depends_on_no_host_crate() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR"));
    let core = std::fs::read_to_string(top.join("runtime/core/Cargo.toml")).expect("core manifest");
    let deps = declared_dependencies(&core);
    assert!(deps.iter().any(|d| d == "libm"), "{deps:?}");
    let host: Vec<&String> = deps
        .iter()
        .filter(|d| HOST_CRATES.contains(&d.as_str()))
        .collect();
    assert!(
        host.is_empty(),
        "morphrt-core depends on host crates: {host:?}"
    );
    // The scan reads this crate's own manifest, which has them.
    let own = std::fs::read_to_string(top.join("Cargo.toml")).expect("manifest");
    let own = declared_dependencies(&own);
    assert!(
        HOST_CRATES.iter().all(|c| own.iter().any(|d| d == c)),
        "{own:?}"
    );
}
