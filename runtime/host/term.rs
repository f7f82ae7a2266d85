//! The terminal: how much the command line says (`-q` / `-v`), whether it
//! colours it (`--color`, `NO_COLOR`), and the progress line of `render`.
//!
//! Every message of the CLI goes to stderr through [`messages`] (what the
//! command tells the user; dropped under `-q` unless it is an error) or
//! [`errors`] (the error a command ends with; always shown). Both colour a
//! line's leading `error:` (red, bold), `warning:` (yellow, bold), `help:`
//! and `note:` (cyan), as cargo and rustc do, when colour is on: `--color
//! always`, or `auto` (the default) with stderr a terminal and `NO_COLOR`
//! unset or empty (<https://no-color.org>). What the user asked for on
//! stdout (`--hash`, `--json`, tables) is never filtered or coloured.

use anstyle::{AnsiColor, Style};
use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// When to colour messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set to a non-empty value.
    #[default]
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    pub fn parse(s: &str) -> Option<ColorWhen> {
        match s {
            "auto" => Some(ColorWhen::Auto),
            "always" => Some(ColorWhen::Always),
            "never" => Some(ColorWhen::Never),
            _ => None,
        }
    }
}

/// How much the command line says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Errors only (and what was asked for on stdout).
    Quiet,
    #[default]
    Normal,
    /// Also resolved settings, resource paths and timings.
    Verbose,
}

/// 0 quiet, 1 normal, 2 verbose.
static VERBOSITY: AtomicU8 = AtomicU8::new(1);
/// 0 auto, 1 always, 2 never.
static COLOR: AtomicU8 = AtomicU8::new(0);

/// Sets the process's verbosity and colour choice (from the global flags).
pub fn init(verbosity: Verbosity, color: ColorWhen) {
    VERBOSITY.store(verbosity as u8, Ordering::Relaxed);
    COLOR.store(
        match color {
            ColorWhen::Auto => 0,
            ColorWhen::Always => 1,
            ColorWhen::Never => 2,
        },
        Ordering::Relaxed,
    );
}

pub fn verbosity() -> Verbosity {
    match VERBOSITY.load(Ordering::Relaxed) {
        0 => Verbosity::Quiet,
        2 => Verbosity::Verbose,
        _ => Verbosity::Normal,
    }
}

pub fn quiet() -> bool {
    verbosity() == Verbosity::Quiet
}

pub fn verbose() -> bool {
    verbosity() == Verbosity::Verbose
}

/// Whether messages on stderr are coloured.
pub fn stderr_color() -> bool {
    let when = match COLOR.load(Ordering::Relaxed) {
        1 => ColorWhen::Always,
        2 => ColorWhen::Never,
        _ => ColorWhen::Auto,
    };
    color_enabled(
        when,
        std::env::var_os("NO_COLOR").as_deref(),
        io::stderr().is_terminal(),
    )
}

/// The colour decision: `always` and `never` win; `auto` colours a
/// terminal unless `NO_COLOR` holds a non-empty value.
pub fn color_enabled(when: ColorWhen, no_color: Option<&std::ffi::OsStr>, terminal: bool) -> bool {
    match when {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// The messages stream: stderr, coloured as configured, and under `-q`
/// only what belongs to an error.
pub fn messages() -> Messages<io::Stderr> {
    Messages::new(io::stderr(), stderr_color(), quiet())
}

/// The stream for the error a command ends with: stderr, coloured as
/// configured, never filtered.
pub fn errors() -> Messages<io::Stderr> {
    Messages::new(io::stderr(), stderr_color(), false)
}

/// A line-oriented writer that colours the leading `error:`, `warning:`,
/// `help:` and `note:` of each line and, when `errors_only`, keeps only
/// errors. A message is a line that starts without indentation plus the
/// indented (and blank) lines after it, so an error's `-->` and `help:`
/// lines go with it.
pub struct Messages<W: Write> {
    out: W,
    color: bool,
    errors_only: bool,
    line: Vec<u8>,
    /// The buffered text starts a line (nothing of it was written yet).
    at_line_start: bool,
    /// Whether the current message is shown.
    keep: bool,
}

impl<W: Write> Messages<W> {
    pub fn new(out: W, color: bool, errors_only: bool) -> Messages<W> {
        Messages {
            out,
            color,
            errors_only,
            line: Vec::new(),
            at_line_start: true,
            keep: !errors_only,
        }
    }

    /// What was written so far (the buffered start of a line included).
    pub fn get_ref(&mut self) -> &W {
        let _ = self.emit();
        &self.out
    }

    /// Writes the buffered text: a whole line (ending in `\n` or `\r`), or
    /// the start of one on flush.
    fn emit(&mut self) -> io::Result<()> {
        if self.line.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.line);
        let ends = matches!(line.last(), Some(b'\n' | b'\r'));
        if self.at_line_start {
            let text = String::from_utf8_lossy(&line);
            let body = text.trim_end_matches(['\n', '\r']);
            let starts_message = !body.is_empty() && !body.starts_with([' ', '\t']);
            if starts_message {
                self.keep = !self.errors_only || body.starts_with("error");
            }
            if self.keep {
                if self.color {
                    let styled = style_line(&text);
                    self.out.write_all(styled.as_bytes())?;
                } else {
                    self.out.write_all(&line)?;
                }
            }
        } else if self.keep {
            self.out.write_all(&line)?;
        }
        self.at_line_start = ends;
        Ok(())
    }
}

impl<W: Write> Write for Messages<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            self.line.push(b);
            if b == b'\n' || b == b'\r' {
                self.emit()?;
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.emit()?;
        self.out.flush()
    }
}

impl<W: Write> Drop for Messages<W> {
    fn drop(&mut self) {
        let _ = self.emit();
        let _ = self.out.flush();
    }
}

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const HELP: Style = AnsiColor::Cyan.on_default();

/// `line` with its leading label (after any indentation) coloured.
fn style_line(line: &str) -> String {
    let body = line.trim_start_matches([' ', '\t']);
    let indent = &line[..line.len() - body.len()];
    for (label, style) in [
        ("error", ERROR),
        ("warning", WARNING),
        ("help", HELP),
        ("note", HELP),
    ] {
        if let Some(rest) = body.strip_prefix(label) {
            if rest.starts_with(':') || rest.starts_with('[') {
                return format!("{indent}{style}{label}{style:#}{rest}");
            }
        }
    }
    line.to_string()
}

/// The text of `render`'s progress line: percentage, elapsed time and the
/// estimated time left (from the rate so far; unknown before any progress).
pub fn progress_text(done: u64, total: u64, elapsed: Duration) -> String {
    let fraction = if total == 0 {
        1.0
    } else {
        done.min(total) as f64 / total as f64
    };
    let eta = if done == 0 || total == 0 {
        "?".to_string()
    } else {
        let left = elapsed.as_secs_f64() * (1.0 - fraction) / fraction;
        clock(Duration::from_secs_f64(left.max(0.0)), true)
    };
    const WIDTH: usize = 24;
    let filled = ((fraction * WIDTH as f64) as usize).min(WIDTH);
    format!(
        "rendering [{}{}] {:5.1}%  elapsed {}  ETA {eta}",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled),
        fraction * 100.0,
        clock(elapsed, false)
    )
}

/// `m:ss` (or `h:mm:ss`): whole seconds, rounded up when `up` (a time
/// left is never shown as less than it is).
fn clock(d: Duration, up: bool) -> String {
    let s = d.as_secs() + u64::from(up && d.subsec_nanos() > 0);
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The progress line of a long command on a terminal: redrawn at most
/// every 100 ms, erased when dropped. Shown only when stderr is a terminal
/// and not under `-q`.
pub struct Progress {
    total: u64,
    started: std::time::Instant,
    last: Option<std::time::Instant>,
    shown: bool,
    enabled: bool,
}

/// Redraw interval of [`Progress`] (at most ~10 updates a second).
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(100);

impl Progress {
    /// A progress line for `total` units (frames), or a silent one.
    pub fn new(total: u64, wanted: bool) -> Progress {
        Progress {
            total,
            started: std::time::Instant::now(),
            last: None,
            shown: false,
            enabled: wanted && !quiet() && io::stderr().is_terminal(),
        }
    }

    /// Reports `done` units; redraws when the interval has passed.
    pub fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < PROGRESS_INTERVAL)
        {
            return;
        }
        if self.last.is_none() && now.duration_since(self.started) < PROGRESS_INTERVAL {
            // Short renders never show a bar.
            return;
        }
        self.last = Some(now);
        let text = progress_text(done, self.total, now.duration_since(self.started));
        let mut e = io::stderr().lock();
        let _ = write!(e, "\r{text}\x1b[K");
        let _ = e.flush();
        self.shown = true;
    }

    /// Erases the line (also done on drop).
    pub fn finish(&mut self) {
        if self.shown {
            let mut e = io::stderr().lock();
            let _ = write!(e, "\r\x1b[K");
            let _ = e.flush();
            self.shown = false;
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn run(color: bool, errors_only: bool, text: &str) -> String {
        let mut m = Messages::new(Vec::new(), color, errors_only);
        m.write_all(text.as_bytes()).unwrap();
        String::from_utf8(m.get_ref().clone()).unwrap()
    }

    #[test]
    fn labels_are_coloured_like_cargo() {
        let out = run(
            true,
            false,
            "error: bad\n  help: fix it\nwarning: odd\nnote: fyi\nplain error: no\n",
        );
        assert!(out.contains("\x1b[1m\x1b[31merror\x1b[0m: bad"), "{out:?}");
        assert!(out.contains("  \x1b[36mhelp\x1b[0m: fix it"), "{out:?}");
        assert!(
            out.contains("\x1b[1m\x1b[33mwarning\x1b[0m: odd"),
            "{out:?}"
        );
        assert!(out.contains("\x1b[36mnote\x1b[0m: fyi"), "{out:?}");
        assert!(out.ends_with("plain error: no\n"), "{out:?}");
        // Without colour the text passes unchanged.
        let text = "error: bad\n  help: fix it\n";
        assert_eq!(run(false, false, text), text);
    }

    #[test]
    fn errors_only_keeps_whole_errors() {
        let text = "warning: w\n  --> f.json\nrendered 10 frames\nerror: e\n  --> f.json:1:2\n  help: h\n\nwarning: later\n";
        assert_eq!(
            run(false, true, text),
            "error: e\n  --> f.json:1:2\n  help: h\n\n"
        );
    }

    #[test]
    fn a_flushed_partial_line_keeps_its_message() {
        let mut m = Messages::new(Vec::new(), false, true);
        write!(m, "\rstatus 1").unwrap();
        m.flush().unwrap();
        write!(m, " more\nerror: x").unwrap();
        m.flush().unwrap();
        writeln!(m, " y").unwrap();
        assert_eq!(
            String::from_utf8(m.get_ref().clone()).unwrap(),
            "error: x y\n"
        );
    }

    #[test]
    fn no_color_disables_auto_only() {
        let t = true;
        assert!(color_enabled(ColorWhen::Auto, None, t));
        assert!(color_enabled(ColorWhen::Auto, Some(OsStr::new("")), t));
        assert!(!color_enabled(ColorWhen::Auto, Some(OsStr::new("1")), t));
        assert!(!color_enabled(ColorWhen::Auto, None, false));
        assert!(color_enabled(
            ColorWhen::Always,
            Some(OsStr::new("1")),
            false
        ));
        assert!(!color_enabled(ColorWhen::Never, None, t));
    }

    #[test]
    fn progress_text_shows_percentage_elapsed_and_eta() {
        let t = progress_text(250, 1000, Duration::from_secs(10));
        assert!(t.contains(" 25.0%"), "{t}");
        assert!(t.contains("elapsed 0:10"), "{t}");
        // A quarter took 10 s: three quarters more take 30 s.
        assert!(t.contains("ETA 0:30"), "{t}");
        assert!(t.contains("[######------------------]"), "{t}");
        let t = progress_text(0, 1000, Duration::from_millis(1300));
        assert!(t.contains("ETA ?") && t.contains("elapsed 0:01"), "{t}");
        // 0.4 s left shows as a second, not as nothing.
        let t = progress_text(800, 1000, Duration::from_millis(1600));
        assert!(t.contains("ETA 0:01") && t.contains("elapsed 0:01"), "{t}");
        let t = progress_text(1000, 1000, Duration::from_secs(3725));
        assert!(t.contains("100.0%") && t.contains("elapsed 1:02:05") && t.contains("ETA 0:00"));
    }
}
