//! Terminal conventions of the `morphrt` binary: `-q`, `-v`,
//! `--color` and `NO_COLOR`, the render progress line, and alsa-lib's own
//! error lines kept off stderr.

use crate::support as common;

use common::{morphrt, root, stderr, stdout, temp_dir};
use std::process::Command;

const ESC: &str = "\x1b[";

/// A scene with an unknown top-level field: it renders, with a warning.
fn warned_scene(dir: &std::path::Path) -> String {
    let p = dir.join("warned.json");
    std::fs::write(
        &p,
        r#"{ "version": "1.0", "profle": "strict",
  "nodes": [ { "id": "s", "op": "sine", "params": { "freq": "220Hz" } } ],
  "outputs": { "main": ["s"] } }"#,
    )
    .unwrap();
    p.to_str().unwrap().to_string()
}

/// Runs the binary in a pseudo-terminal (util-linux `script`), so stderr is
/// a terminal; `None` when `script` is not installed.
fn in_pty(args: &str, env: &[(&str, &str)]) -> Option<String> {
    let bin = env!("CARGO_BIN_EXE_morphrt");
    let mut c = Command::new("script");
    c.args(["-qec", &format!("{bin} {args}"), "/dev/null"])
        .current_dir(root())
        .env_remove("NO_COLOR");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().ok()?;
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `--color always` colours `error:` and `help:` even into a pipe,
/// `--color never` does not.
#[test]
fn color_always_colours_errors_into_a_pipe_and_never_does_not() {
    let o = morphrt(&[
        "--color",
        "always",
        "check",
        "tests/fixtures/bad/no-such-file.json",
    ]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains(&format!("{ESC}1m{ESC}31merror{ESC}0m:")),
        "{e:?}"
    );
    let o = morphrt(&[
        "check",
        "--color",
        "never",
        "tests/fixtures/bad/no-such-file.json",
    ]);
    let e = stderr(&o);
    assert!(e.starts_with("error:") && !e.contains(ESC), "{e:?}");
    // Into a pipe, auto does not colour either.
    let o = morphrt(&["check", "tests/fixtures/bad/no-such-file.json"]);
    assert!(!stderr(&o).contains(ESC), "{:?}", stderr(&o));
}

/// On a terminal, auto colours unless NO_COLOR is set to a non-empty value.
#[test]
fn no_color_disables_auto_colour_on_a_terminal() {
    let args = "check tests/fixtures/bad/no-such-file.json";
    let Some(coloured) = in_pty(args, &[]) else {
        eprintln!("`script` is not installed: the terminal case is not run");
        return;
    };
    assert!(coloured.contains(&format!("{ESC}31merror")), "{coloured:?}");
    let plain = in_pty(args, &[("NO_COLOR", "1")]).unwrap();
    assert!(
        plain.contains("error:") && !plain.contains(ESC),
        "{plain:?}"
    );
    let empty = in_pty(args, &[("NO_COLOR", "")]).unwrap();
    assert!(empty.contains(&format!("{ESC}31merror")), "{empty:?}");
}

/// `-q` drops warnings and the render summary; errors still print, and
/// what was asked for on stdout (`--hash`) still comes.
#[test]
fn quiet_keeps_errors_and_asked_for_output_only() {
    let dir = temp_dir("quiet");
    let scene = warned_scene(&dir);
    let out = dir.join("a.wav");
    let args = [
        "render",
        &scene,
        "-o",
        out.to_str().unwrap(),
        "-d",
        "0.1s",
        "--hash",
    ];
    let loud = morphrt(&args);
    assert!(loud.status.success(), "{}", stderr(&loud));
    assert!(stderr(&loud).contains("warning:") && stderr(&loud).contains("rendered "));
    let mut q = vec!["-q"];
    q.extend(args);
    let quiet = morphrt(&q);
    assert!(quiet.status.success());
    assert_eq!(stderr(&quiet), "", "nothing but errors under -q");
    assert_eq!(stdout(&quiet), stdout(&loud), "the hash still prints");
    assert_eq!(stdout(&quiet).trim().len(), 64);
    // With the WAV on stdout (`-o -`) the hash goes to stderr, even under -q.
    let o = common::bin()
        .args(["-q", "render", &scene, "-o", "-", "-d", "0.1s", "--hash"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(stderr(&o), stdout(&loud), "only the hash, on stderr");
    let bad = morphrt(&[
        "render",
        "-q",
        "tests/fixtures/bad/no-such-file.json",
        "-o",
        "x.wav",
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).starts_with("error:"), "{}", stderr(&bad));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-v` adds each node's resolved profile, the session settings and where
/// every resource was read from.
#[test]
fn verbose_shows_resolved_profiles_and_resource_paths() {
    let o = morphrt(&["check", "scenes/sampler-groove.json", "--profile", "strict"]);
    assert!(!stderr(&o).contains("read from"), "{}", stderr(&o));
    let o = morphrt(&[
        "-v",
        "check",
        "scenes/sampler-groove.json",
        "--profile",
        "strict",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let kick = root().join("scenes/resources/kick.wav");
    let top = root().join("resources/kick.wav");
    assert!(
        e.contains("note: resource `@resource:kick.wav` read from")
            && (e.contains(kick.to_str().unwrap())
                || e.contains(top.to_str().unwrap())
                || e.contains("resources/kick.wav")),
        "{e}"
    );
    assert!(
        e.contains("session profile strict, block size 64, 48000 Hz, seed 7"),
        "{e}"
    );
    assert!(
        e.contains("note: node `kick` (sampler): profile strict, f64"),
        "{e}"
    );
}

/// `-v render` adds the same detail, and how long the compile took.
#[test]
fn verbose_render_adds_settings_and_timing() {
    let dir = temp_dir("verbose");
    let out = dir.join("a.wav");
    let args = [
        "render",
        "scenes/drone.json",
        "-o",
        out.to_str().unwrap(),
        "-d",
        "0.1s",
    ];
    let plain = stderr(&morphrt(&args));
    assert!(!plain.contains("note:"), "{plain}");
    let mut v = vec!["--verbose"];
    v.extend(args);
    let o = morphrt(&v);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("note: `scenes/drone.json`: session profile"),
        "{e}"
    );
    assert!(e.contains("note: compiled in ") && e.contains(" ms"), "{e}");
    assert!(e.contains("rendered 4800 frames"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With stderr a pipe, render prints no progress line (only the summary).
#[test]
fn render_prints_no_progress_line_into_a_pipe() {
    let dir = temp_dir("progress");
    let out = dir.join("a.wav");
    let o = morphrt(&[
        "render",
        "scenes/drone.json",
        "-o",
        out.to_str().unwrap(),
        "-d",
        "3s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        !e.contains("rendering") && !e.contains("ETA") && !e.contains('\r'),
        "{e:?}"
    );
    assert!(e.contains("rendered 144000 frames"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `run` without a sound card prints none of alsa-lib's own "ALSA lib ..."
/// lines: only morphrt's message.
#[test]
fn run_prints_no_alsa_lib_lines() {
    let o = morphrt(&[
        "run",
        "scenes/drone.json",
        "--duration",
        "0.2s",
        "--no-journal",
        "--no-watch",
    ]);
    let e = stderr(&o);
    assert!(
        !e.lines().any(|l| l.starts_with("ALSA lib")),
        "alsa-lib spoke: {e}"
    );
    if !o.status.success() {
        assert!(e.contains("error:"), "{e}");
    }
}

/// On a terminal, a long render shows a progress line with percentage,
/// elapsed time and ETA, erases it before the summary, and writes the same
/// bits as without it.
#[test]
fn a_long_render_on_a_terminal_shows_a_progress_line_and_erases_it() {
    let args = "render scenes/drone.json -o /dev/null -d 600s --hash";
    let Some(tty) = in_pty(args, &[]) else {
        eprintln!("`script` is not installed: the terminal case is not run");
        return;
    };
    let piped = morphrt(&[
        "render",
        "scenes/drone.json",
        "-o",
        "/dev/null",
        "-d",
        "600s",
        "--hash",
    ]);
    let hash = stdout(&piped).trim().to_string();
    assert_eq!(hash.len(), 64);
    assert!(tty.contains(&hash), "the same hash on a terminal: {tty:?}");
    assert!(!stderr(&piped).contains("rendering ["));
    // A render this long takes well over the first redraw interval.
    assert!(tty.contains("\rrendering ["), "{tty:?}");
    assert!(
        tty.contains("%  elapsed ") && tty.contains("  ETA "),
        "{tty:?}"
    );
    let erased = tty.rfind("\r\x1b[K").expect("the line is erased");
    let summary = tty.find("rendered 28800000 frames").expect("summary");
    assert!(erased < summary && tty.rfind("\rrendering [").unwrap() < erased);
    let quiet = in_pty(&format!("-q {args}"), &[]).unwrap();
    assert!(
        !quiet.contains("rendering [") && quiet.contains(&hash),
        "{quiet:?}"
    );
}
