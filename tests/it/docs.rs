//! The user docs do what they say: every shell command in README.md and
//! GUIDE.md runs and succeeds, and every relative link in the repository's
//! Markdown files resolves, to a file and, with a `#fragment`, to a heading
//! of it.
//!
//! The commands run as written, from a scratch directory that holds links
//! to `scenes/` and `resources/`, against the binary under test, with a few
//! stand-ins on `PATH` so that a machine without a sound card runs them
//! fast:
//! - `cargo run --release -- ARGS` and `target/release/morphrt ARGS` run
//!   the binary under test; `cargo build --release` does nothing (it is
//!   built); `cargo test` does nothing (CI runs it itself); `cargo bench
//!   --bench NAME` checks that the bench exists;
//! - `morphrt run` without `--device` (a command for a sound card) plays on
//!   the clock device for 2 s, recording from an ALSA test device that
//!   reads zeros (`tests/alsa/input.conf`);
//! - `python3 -m pip` does nothing (CI installs numpy and scipy);
//! - `HOME`, `XDG_DATA_HOME` and `XDG_CACHE_HOME` are inside the scratch
//!   directory, so journals, calibrations and completions land there.

use crate::support as common;

use common::{root, temp_dir};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A shell block of a Markdown file: its first line's number and its text.
struct Block {
    line: usize,
    text: String,
}

/// The commands of `file`: every ```` ```sh ```` block whole, and the `$ `
/// lines of every ```` ```console ```` block.
fn shell_blocks(file: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    let mut blocks = Vec::new();
    let mut open: Option<(usize, &str, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        match &mut open {
            None => {
                if let Some(lang) = fence.strip_prefix("```") {
                    open = Some((i + 1, lang.trim(), String::new()));
                }
            }
            Some((start, lang, body)) => {
                if fence.starts_with("```") {
                    if !body.is_empty() {
                        blocks.push(Block {
                            line: *start,
                            text: std::mem::take(body),
                        });
                    }
                    open = None;
                } else if *lang == "sh" {
                    body.push_str(line.trim_start());
                    body.push('\n');
                } else if *lang == "console" {
                    if let Some(command) = fence.strip_prefix("$ ") {
                        body.push_str(command);
                        body.push('\n');
                    }
                }
            }
        }
    }
    assert!(open.is_none(), "{file}: a code block is never closed");
    blocks
}

/// Writes an executable script.
fn script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The scratch directory the commands of `file` run in, with the
/// stand-ins of the module's comment; returns it and the `PATH` to use.
fn scratch(name: &str) -> (PathBuf, String) {
    let dir = temp_dir(name);
    for link in ["scenes", "resources"] {
        std::os::unix::fs::symlink(root().join(link), dir.join(link)).unwrap();
    }
    let bin = dir.join("bin");
    for d in [&bin, &dir.join("target/release"), &dir.join("home")] {
        std::fs::create_dir_all(d).unwrap();
    }
    let alsa = root().join("tests/alsa/input.conf");
    script(
        &bin.join("morphrt"),
        &format!(
            r#"#!/usr/bin/env bash
set -e
run=no; device=no
for a in "$@"; do
  case "$a" in
    run) run=yes ;;
    --device|--device=*) device=yes ;;
  esac
done
if [ $run = yes ] && [ $device = no ]; then
  export ALSA_CONFIG_PATH='{alsa}' INFILE=/dev/zero RECORDED=/dev/null
  exec '{exe}' "$@" --device clock --input-device alsa:recorded --duration 2s
fi
exec '{exe}' "$@"
"#,
            alsa = alsa.display(),
            exe = env!("CARGO_BIN_EXE_morphrt"),
        ),
    );
    std::os::unix::fs::symlink(bin.join("morphrt"), dir.join("target/release/morphrt")).unwrap();
    script(
        &bin.join("cargo"),
        &format!(
            r#"#!/usr/bin/env bash
case "$1" in
  run) [ "$2" = --release ] && [ "$3" = -- ] || {{ echo "cargo stand-in: run as \`cargo run --release -- ARGS\`" >&2; exit 1; }}
       shift 3; exec morphrt "$@" ;;
  build) exit 0 ;;
  test) exit 0 ;;
  bench) [ "$2" = --bench ] && [ -f '{root}/benches/'"$3".rs ] && exit 0
         echo "cargo stand-in: no bench \`$3\`" >&2; exit 1 ;;
esac
echo "cargo stand-in: unexpected \`cargo $*\`" >&2; exit 1
"#,
            root = root().display()
        ),
    );
    let python = which("python3");
    script(
        &bin.join("python3"),
        &format!(
            "#!/usr/bin/env bash\n[ \"$1 $2\" = \"-m pip\" ] && exit 0\nexec '{}' \"$@\"\n",
            python.display()
        ),
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (dir, path)
}

/// Where `program` is on `PATH`.
fn which(program: &str) -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

/// Runs every shell block of `file`, in order, in one scratch directory;
/// a block that fails (or that says `echo identical` and does not print
/// it) fails the test, naming its line.
fn run_blocks_of(file: &str) {
    let blocks = shell_blocks(file);
    assert!(!blocks.is_empty(), "{file} has no shell block");
    let (dir, path) = scratch(&file.replace(['/', '.'], "-"));
    for block in &blocks {
        let o = Command::new("timeout")
            .args(["--kill-after=5", "120", "bash", "-euo", "pipefail", "-c"])
            .arg(&block.text)
            .current_dir(&dir)
            .env("PATH", &path)
            .env("HOME", dir.join("home"))
            .env("XDG_DATA_HOME", dir.join("home/data"))
            .env("XDG_CACHE_HOME", dir.join("home/cache"))
            .stdin(Stdio::null())
            .output()
            .expect("bash runs");
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            o.status.success(),
            "{file}:{}: the block fails ({}):\n{}\n--- stdout\n{out}\n--- stderr\n{err}",
            block.line,
            o.status,
            block.text
        );
        if block.text.contains("echo identical") {
            assert!(
                out.contains("identical"),
                "{file}:{}: no `identical`:\n{}\n--- stderr\n{err}",
                block.line,
                block.text
            );
        }
    }
}

#[test]
fn every_shell_command_of_the_readme_runs() {
    run_blocks_of("README.md");
}

#[test]
fn every_shell_command_of_the_guide_runs() {
    run_blocks_of("GUIDE.md");
}

/// A heading's GitHub anchor: lower case, punctuation but `-` and `_`
/// dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut code = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            code = !code;
        } else if !code && line.starts_with('#') {
            found.push(anchor(line.trim_start_matches('#')));
        }
    }
    found
}

/// The targets of the inline links `[text](target)` of a Markdown text,
/// outside code blocks and code spans, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut code = false;
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            code = !code;
            continue;
        }
        if code {
            continue;
        }
        // Code spans hold examples, not links.
        let prose: String = line
            .split('`')
            .enumerate()
            .map(|(k, part)| if k % 2 == 0 { part } else { "" })
            .collect();
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            found.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// The repository's Markdown files (not under `target/` or `.git/`).
fn markdown_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with('.') || name == "target" {
            continue;
        }
        if path.is_dir() && !path.is_symlink() {
            markdown_files(&path, found);
        } else if name.ends_with(".md") {
            found.push(path);
        }
    }
}

/// Every broken relative link of the Markdown files under `top`.
fn broken_links(top: &Path) -> Vec<String> {
    let mut files = Vec::new();
    markdown_files(top, &mut files);
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let shown = file.strip_prefix(top).unwrap().display();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let linked = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            if !linked.exists() {
                broken.push(format!("{shown}:{line}: `{target}`: no such file"));
                continue;
            }
            if let Some(fragment) = fragment {
                let heads = std::fs::read_to_string(&linked)
                    .map(|t| anchors(&t))
                    .unwrap_or_default();
                if !heads.iter().any(|h| h == fragment) {
                    broken.push(format!(
                        "{shown}:{line}: `{target}`: no heading `#{fragment}`"
                    ));
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_of_the_docs_resolves() {
    let broken = broken_links(&root());
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_link_check_finds_a_missing_file_and_a_missing_heading() {
    let dir = temp_dir("docs-links");
    std::fs::write(
        dir.join("A.md"),
        "# Top\n\n## Journal and replay\n\n[ok](B.md) [ok](#top) [ok](B.md#the-b-side)\n\
         [web](https://example.org/x.md) `[code](nowhere.md)`\n\n```\n[x](in-code.md)\n```\n\
         [gone](C.md) [nohead](B.md#nothing) [here](#journal-and-replay)\n",
    )
    .unwrap();
    std::fs::write(dir.join("B.md"), "# The B side\n").unwrap();
    assert_eq!(
        broken_links(&dir),
        [
            "A.md:11: `C.md`: no such file",
            "A.md:11: `B.md#nothing`: no heading `#nothing`"
        ]
    );
}

/// What `morphrt help COMMAND` prints: the command's long help.
fn long_help(command: &str) -> String {
    let o = common::morphrt(&["help", command]);
    assert!(o.status.success(), "help {command}: {}", common::stderr(&o));
    common::stdout(&o)
}

#[test]
fn the_long_help_of_each_command_explains_its_flags() {
    // One fact each that the command reference of the docs held, and that
    // `help` now prints instead.
    for (command, facts) in [
        (
            "render",
            &[
                "RF64",
                "Output rules",
                ".NAME.PID.partial",
                "18446744073709551615",
            ][..],
        ),
        (
            "run",
            &["take-2.wav", "(130, 143, 129)", "xrun there is"][..],
        ),
        ("replay", &["cut off by a crash", "in progress"][..]),
        ("check", &["\"ok\": false", "a million nodes"][..]),
        ("bench", &["below `--assert-rtf X`", "comparison key"][..]),
        ("calibrate", &["calibration.json"][..]),
        ("plot", &["10 minutes", "viridis"][..]),
        ("devices", &["ALSA sequencer"][..]),
        ("ops", &["Hz (Hz, kHz, midi)"][..]),
        ("schema", &["render`'s output rules"][..]),
    ] {
        let text = long_help(command);
        for fact in facts {
            assert!(
                text.contains(fact),
                "`morphrt help {command}` lacks `{fact}`:\n{text}"
            );
        }
        let o = common::morphrt(&[command, "--help"]);
        assert_eq!(common::stdout(&o), text, "{command} --help");
    }
    let top = common::morphrt(&["--help"]);
    assert!(common::stdout(&top).contains("Exit codes: 0 success, 2 bad input"));
}

#[test]
fn the_manual_has_a_page_for_every_command_with_its_long_help() {
    let o = common::morphrt(&["man"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let page = common::stdout(&o);
    for command in [
        "render",
        "run",
        "replay",
        "devices",
        "check",
        "bench",
        "calibrate",
        "plot",
        "schema",
        "completions",
        "man",
        "ops",
    ] {
        assert!(
            page.contains(&format!(".TH morphrt-{command} ")),
            "no page for {command}"
        );
    }
    // Long help, not only the summary (roff escapes `-` as `\-`).
    assert!(page.contains("RF64"), "render's --format long help");
    assert!(page.contains("take\\-2.wav"), "run's --overwrite long help");
}

/// The example scene of `scenes/README.md`'s ladder section loads, compiles
/// and plays under every profile: a swept, resonant filter, finite and
/// audible.
#[test]
fn the_ladder_example_of_the_scene_reference_plays_under_every_profile() {
    let text = std::fs::read_to_string(root().join("scenes/README.md")).unwrap();
    let section = text
        .split("## Ladder filter: `ladder`")
        .nth(1)
        .expect("the ladder section");
    let json = section
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a json block");
    let scene = morphrt::scene::load_str(json, "ladder.json", None).expect("the example loads");
    for p in morphrt::profile::Profile::ALL {
        let plan = morphrt::graph::compile(
            &scene,
            &morphrt::graph::CompileOptions {
                profile: Some(p),
                ..morphrt::host::files::resources::compile_options()
            },
        )
        .unwrap_or_else(|e| panic!("{p}: {e:?}"));
        let mut e = morphrt::engine::Engine::new(plan);
        let y = common::play(&mut e, 48_000, 0);
        let peak = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(y.iter().all(|v| v.is_finite()), "{p}");
        assert!(peak > 0.05 && peak < 1.0, "{p}: peak {peak}");
    }
}
