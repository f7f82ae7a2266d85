//! The output rules: where a file the program writes goes, decided and
//! checked before anything is written, so that no mistake in `-o` costs the
//! user a file or a long render. `render -o` obeys them, and so does every
//! other file the program writes ([`Kind`] lists them); [`super::write`] is
//! the one writer that carries them out.
//!
//! The rules (Unix):
//! - Never write over an input: the scene, a resource the plan read, the
//!   snapshot resumed from, the journal replayed and its copies (same path
//!   after resolving links, or same inode).
//! - A regular file is written under a hidden temporary name beside it,
//!   flushed to disk and renamed over it only when complete, with the
//!   replaced file's permissions (and, as root, its owner). A file the user
//!   could not write is not replaced, nor, even by root, a file with no
//!   write permission. The two files of a live session that must survive
//!   a crash, the journal and the capture, are written in place instead
//!   (the capture never over an existing file unless asked).
//! - A symbolic link is written through: its target is replaced, the link stays.
//! - A FIFO or a character device is written in place, streaming (a FIFO
//!   waits for its reader); `-` is standard output. No temporary file. Only
//!   what is written in one pass streams ([`Kind::stream`]); for the rest a
//!   FIFO, a device or `-` is refused, never replaced by a regular file.
//! - A block device, a socket or a directory is refused.
//! - The name has the extension of what is written (`.wav` for a WAV).
//! - The temporary file is removed on every failure: an error, a panic, or
//!   a signal ([`crate::host::files::signals`]).

use super::error::FileError;
use std::ffi::CString;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, IsTerminal};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A file the command reads, which its outputs must not replace.
#[derive(Clone, Debug)]
pub struct Input {
    /// What it is to the command, for messages: "the scene `a.json`".
    pub what: String,
    canonical: Option<PathBuf>,
    id: Option<(u64, u64)>,
}

/// Every file a command reads.
#[derive(Clone, Debug, Default)]
pub struct Inputs(Vec<Input>);

impl Inputs {
    /// Adds a file, identified by its canonical path and its inode (a hard
    /// link to it is the same file under another name); `what` says what it
    /// is to the command ("the scene"), for messages.
    pub fn add(&mut self, what: &str, path: &Path) {
        let canonical = std::fs::canonicalize(path).ok();
        let id = std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
        if id.is_some()
            && self
                .0
                .iter()
                .any(|i| i.id == id && i.canonical == canonical)
        {
            // Already there (a resource every edit reads again).
            return;
        }
        self.0.push(Input {
            what: format!("{what} `{}`", path.display()),
            canonical,
            id,
        });
    }

    /// Adds what standard input is, when it is a regular file (`render - < scene.json`).
    pub fn add_stdin(&mut self, what: impl Into<String>) {
        if let Some((dev, ino, mode)) = fd_id(libc::STDIN_FILENO) {
            if mode & libc::S_IFMT == libc::S_IFREG {
                self.0.push(Input {
                    what: what.into(),
                    canonical: None,
                    id: Some((dev, ino)),
                });
            }
        }
    }

    /// The input that `canonical` (or the existing file `meta`) is, if any.
    fn find(&self, canonical: Option<&Path>, meta: Option<&Metadata>) -> Option<&Input> {
        let id = meta.map(|m| (m.dev(), m.ino()));
        self.0.iter().find(|i| {
            (canonical.is_some() && i.canonical.as_deref() == canonical)
                || (id.is_some() && i.id == id)
        })
    }

    /// The input that is the file of device `dev` and inode `ino`, if any.
    fn find_id(&self, dev: u64, ino: u64) -> Option<&Input> {
        self.0.iter().find(|i| i.id == Some((dev, ino)))
    }
}

/// Device, inode and mode of an open descriptor.
fn fd_id(fd: libc::c_int) -> Option<(u64, u64, u32)> {
    // SAFETY: fstat fills a zeroed struct; `fd` is only inspected.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev, st.st_ino, st.st_mode))
    }
}

/// What a command writes, which decides what may take it: the name it
/// must have, whether it may stream, and how messages call it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    /// Who writes, for messages: `render`, `run --capture`.
    pub writer: &'static str,
    /// What, for messages: `WAV files`.
    pub what: &'static str,
    /// What one such file is called before its name in messages ("the
    /// journal" `j.jsonl`); empty for the main output of a command.
    pub noun: &'static str,
    /// The option that names it, for suggestions: `-o`.
    pub flag: &'static str,
    /// The extensions (any case) its name must have; empty: any name.
    pub extensions: &'static [&'static str],
    /// Written in one pass, without seeking back: may go to standard
    /// output (`-`), a FIFO or a character device.
    pub stream: bool,
    /// Said after the suggested name, when streaming helps: ", or -o - …".
    pub pipe_hint: &'static str,
}

const WAV: &[&str] = &["wav", "wave"];

impl Kind {
    /// `render -o`: the WAV, streamed where it can be.
    pub const RENDER: Kind = Kind {
        writer: "render",
        what: "WAV files",
        noun: "",
        flag: "-o",
        extensions: WAV,
        stream: true,
        pipe_hint: ", or -o - to pipe the WAV to a converter",
    };
    /// `render -o out.flac` (or `--container flac`): the FLAC, streamed
    /// where it can be (once the render is complete).
    pub const RENDER_FLAC: Kind = Kind {
        what: "FLAC files",
        extensions: &["flac"],
        pipe_hint: ", or -o - --container flac to pipe the FLAC",
        ..Kind::RENDER
    };
    /// `replay -o`: the replayed device output, a WAV like render's.
    pub const REPLAY: Kind = Kind {
        writer: "replay",
        ..Kind::RENDER
    };
    /// `run --capture`: a WAV whose header is rewritten as it grows, in
    /// place under its name (a regular file only).
    pub const CAPTURE: Kind = Kind {
        writer: "run --capture",
        what: "WAV files",
        noun: "the capture",
        flag: "--capture",
        extensions: WAV,
        stream: false,
        pipe_hint: "",
    };
    /// The input a journaled session read, kept beside its journal.
    pub const RECORDED_INPUT: Kind = Kind {
        writer: "run --input",
        what: "WAV files",
        noun: "the recorded input",
        flag: "--journal",
        extensions: WAV,
        stream: false,
        pipe_hint: "",
    };
    /// `plot -o`: a PNG picture.
    pub const PLOT: Kind = Kind {
        writer: "plot",
        what: "PNG pictures",
        noun: "",
        flag: "-o",
        extensions: &["png"],
        stream: true,
        pipe_hint: ", or -o - for standard output",
    };
    /// `schema -o`: the scene format's JSON Schema.
    pub const SCHEMA: Kind = Kind {
        writer: "schema",
        what: "the JSON Schema",
        noun: "",
        flag: "-o",
        extensions: &[],
        stream: true,
        pipe_hint: "",
    };
    /// A snapshot file (`render --snapshot-out`, `w` while playing).
    pub const SNAPSHOT: Kind = Kind {
        writer: "a snapshot",
        what: "snapshot files",
        noun: "snapshot",
        flag: "--snapshot-out",
        extensions: &[],
        stream: false,
        pipe_hint: "",
    };
    /// The journal of `run`, appended to as the session goes (opened in
    /// place, see [`Output::open_in_place`]).
    pub const JOURNAL: Kind = Kind {
        writer: "run --journal",
        what: "journals",
        noun: "the journal",
        flag: "--journal",
        extensions: &[],
        stream: false,
        pipe_hint: "",
    };
    /// A resource kept beside a journal.
    pub const JOURNAL_COPY: Kind = Kind {
        writer: "the journal",
        what: "resource copies",
        noun: "the journal's copy",
        flag: "--journal",
        extensions: &[],
        stream: false,
        pipe_hint: "",
    };
    /// The store of `calibrate`'s measurements.
    pub const CALIBRATION: Kind = Kind {
        writer: "calibrate",
        what: "calibrations",
        noun: "the calibration store",
        flag: "",
        extensions: &[],
        stream: false,
        pipe_hint: "",
    };

    /// `noun ` before a name, or nothing.
    fn prefix(&self) -> String {
        if self.noun.is_empty() {
            String::new()
        } else {
            format!("{} ", self.noun)
        }
    }
}

/// Where the bytes go.
#[derive(Debug)]
pub enum Destination {
    /// Standard output (`-o -`): the caller's writer.
    Stdout,
    /// A FIFO or character device, opened for writing, written in place.
    Stream(File),
    /// A regular file at `target` (links resolved), new or replacing `replaces`.
    File {
        target: PathBuf,
        replaces: Option<Metadata>,
    },
}

/// A checked output: what the user named, where it really goes, and what
/// is written there.
#[derive(Debug)]
pub struct Output {
    /// The path as given, which every message names.
    pub shown: PathBuf,
    /// Where the bytes go.
    pub dest: Destination,
    /// The target when `shown` is a symbolic link.
    pub link_target: Option<PathBuf>,
    /// What is written.
    pub kind: Kind,
    /// Whether a file at the target may be replaced. When not
    /// ([`Output::prepare_new`]), the file is created exclusively, and one
    /// that appeared after the check is an error, never replaced.
    pub replace: bool,
}

/// The output must be named as what `kind` writes (for a WAV a `.wav` or
/// `.wave` file, any case), or be `-` (standard output) or an existing FIFO
/// or device, which take the stream whatever their name, when the kind
/// streams. Anything else — `x.mp3`, `out` — is refused before anything
/// is written, rather than writing a WAV under a name that says otherwise.
/// [`Output::prepare`] checks it last, so an output that is an input or a
/// directory gets that, sharper, error.
pub fn check_extension(path: &Path, kind: &Kind) -> Result<(), FileError> {
    if kind.extensions.is_empty() || (kind.stream && path.as_os_str() == "-") {
        return Ok(());
    }
    if kind.stream && std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase());
    if ext.as_deref().is_some_and(|e| kind.extensions.contains(&e)) {
        return Ok(());
    }
    let name = path.display();
    let good = path.with_extension(kind.extensions[0]);
    let names = kind
        .extensions
        .iter()
        .map(|e| format!(".{e}"))
        .collect::<Vec<_>>()
        .join(" or ");
    let (writer, what, flag) = (kind.writer, kind.what, kind.flag);
    Err(FileError::Extension {
        path: path.to_path_buf(),
        message: match ext {
            Some(e) => format!(
                "{writer} writes {what} only, and `{name}` names a `.{e}` file; use a {names} name (e.g. {flag} {}){}",
                good.display(),
                kind.pipe_hint
            ),
            None => format!(
                "`{name}` has no extension; {writer} writes {what}: use a {names} name (e.g. {flag} {})",
                good.display()
            ),
        },
    })
}

impl Output {
    /// Resolves `path` (`-` is standard output), checks it against the
    /// rules above for what `kind` writes and, for a regular file, that
    /// `needed` bytes fit on its file system. Opens a FIFO or device here
    /// (a FIFO blocks until it has a reader), so every problem with the
    /// output shows before anything is computed. For a kind that does not
    /// stream, nothing is opened: checking is free of side effects.
    ///
    /// Errors: exit 2 when the command line contradicts itself (the output
    /// is an input, `-` is a terminal, the wrong extension); exit 1 when the
    /// file system says no (missing directory, a directory, read-only, no
    /// room, a block device).
    pub fn prepare(
        path: &Path,
        inputs: &Inputs,
        needed: u64,
        kind: &Kind,
    ) -> Result<Output, FileError> {
        Output::prepare_with(path, inputs, needed, kind, true)
    }

    /// As [`prepare`](Self::prepare), for a file that must not replace
    /// anything (a take of `run` without `--overwrite`): an existing
    /// regular file is [`FileError::Exists`] (after every other check of
    /// the name, so an input is still refused as one), and the file will be
    /// created exclusively.
    pub fn prepare_new(path: &Path, inputs: &Inputs, kind: &Kind) -> Result<Output, FileError> {
        Output::prepare_with(path, inputs, 0, kind, false)
    }

    /// [`prepare`](Self::prepare) when `replace`, else
    /// [`prepare_new`](Self::prepare_new).
    pub fn prepare_with(
        path: &Path,
        inputs: &Inputs,
        needed: u64,
        kind: &Kind,
        replace: bool,
    ) -> Result<Output, FileError> {
        let shown = path.to_path_buf();
        let kind = *kind;
        if path.as_os_str() == "-" {
            if !kind.stream {
                return Err(FileError::StdoutNotAllowed {
                    writer: kind.writer,
                    what: kind.what,
                });
            }
            if io::stdout().is_terminal() {
                return Err(FileError::StdoutIsTerminal);
            }
            if let Some(i) = fd_id(libc::STDOUT_FILENO).and_then(|(d, n, _)| inputs.find_id(d, n)) {
                return Err(FileError::StdoutIsInput {
                    input: i.what.clone(),
                });
            }
            return Ok(Output {
                shown,
                dest: Destination::Stdout,
                link_target: None,
                kind,
                replace,
            });
        }
        let name = format!("{}`{}`", kind.prefix(), shown.display());
        let unsuitable = |message: String| FileError::Unsuitable {
            path: path.to_path_buf(),
            message,
        };
        let (target, meta) = resolve_links(path)
            .map_err(|e| FileError::io(path, format!("cannot write {name}"), e))?;
        let link_target = (target != path).then(|| target.clone());
        let via = link_target
            .as_ref()
            .map(|t| format!(" (a link to `{}`)", t.display()))
            .unwrap_or_default();
        let names_a_directory = path
            .as_os_str()
            .as_bytes()
            .last()
            .is_some_and(|b| *b == b'/');
        if meta.as_ref().is_some_and(|m| m.is_dir()) || names_a_directory {
            let what = if names_a_directory && meta.is_none() {
                "it is a directory name (it ends in `/`)"
            } else {
                "it is a directory"
            };
            let example = match kind.extensions.first() {
                Some(e) => format!("out.{e}"),
                None => "out".to_string(),
            };
            return Err(unsuitable(format!(
                "cannot write {name}{via}: {what}; give a file name, e.g. {} {}",
                kind.flag,
                target.join(example).display()
            )));
        }
        let target = canonical_target(&target, &format!("{name}{via}"))?;
        if let Some(i) = inputs.find(Some(&target), meta.as_ref()) {
            return Err(FileError::IsInput {
                path: path.to_path_buf(),
                shown: format!("{name}{via}"),
                input: i.what.clone(),
            });
        }
        let named = format!("{name}{via}");
        let dest = match meta {
            None => Destination::File {
                target,
                replaces: None,
            },
            Some(m) => existing(path, target, m, &named, &kind, replace)?,
        };
        if let Destination::File { target, .. } = &dest {
            let dir = target.parent().unwrap_or(Path::new("/"));
            if let Some(free) = free_bytes(dir).filter(|free| needed > *free) {
                return Err(unsuitable(format!(
                    "{name}{via} needs {} ({needed} bytes); `{}` has {} free",
                    format_bytes(needed),
                    dir.display(),
                    format_bytes(free)
                )));
            }
        }
        check_extension(path, &kind)?;
        Ok(Output {
            shown,
            dest,
            link_target,
            kind,
            replace,
        })
    }

    /// Whether the bytes go to standard output.
    pub fn is_stdout(&self) -> bool {
        matches!(self.dest, Destination::Stdout)
    }

    /// The output for messages: the path as given, with a link's target.
    pub fn describe(&self) -> String {
        match (&self.dest, &self.link_target) {
            (Destination::Stdout, _) => "standard output".into(),
            (_, Some(t)) => format!("`{}` (→ `{}`)", self.shown.display(), t.display()),
            (_, None) => format!("`{}`", self.shown.display()),
        }
    }

    /// The output for messages with what it is: "the journal `j.jsonl`".
    pub fn named(&self) -> String {
        format!("{}{}", self.kind.prefix(), self.describe())
    }

    /// Whether `path` (as it is on disk now) is where this output goes.
    fn is(&self, canonical: Option<&Path>, meta: Option<&Metadata>) -> bool {
        match &self.dest {
            Destination::File { target, .. } => canonical == Some(target.as_path()),
            Destination::Stream(f) => match (f.metadata(), meta) {
                (Ok(a), Some(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
                _ => false,
            },
            Destination::Stdout => false,
        }
    }
}

/// Where an output that exists at `target` (links resolved; `m` its
/// metadata) goes: a regular file is replaced (when `replace`, and when the
/// user may), a FIFO or character device takes a stream (opened here, when
/// `kind` streams); anything else is refused, saying what it is. `named`
/// is the output as messages name it.
fn existing(
    path: &Path,
    target: PathBuf,
    m: Metadata,
    named: &str,
    kind: &Kind,
    replace: bool,
) -> Result<Destination, FileError> {
    let t = m.file_type();
    if t.is_file() {
        if !replace {
            return Err(FileError::Exists {
                path: path.to_path_buf(),
                shown: named.to_string(),
            });
        }
        check_replaceable(&target, &m, named)?;
        return Ok(Destination::File {
            target,
            replaces: Some(m),
        });
    }
    if kind.stream && (t.is_fifo() || t.is_char_device()) {
        let f = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(&target)
            .map_err(|e| FileError::io(path, format!("cannot open {named} for writing"), e))?;
        return Ok(Destination::Stream(f));
    }
    let it = if t.is_block_device() {
        "a block device (a disk)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    };
    let takes = if kind.stream {
        "morphrt writes regular files, FIFOs, character devices and standard output (-o -)"
            .to_string()
    } else {
        format!(
            "{} writes {} to regular files only, never in place of a device or a FIFO",
            kind.writer, kind.what
        )
    };
    Err(FileError::Unsuitable {
        path: path.to_path_buf(),
        message: format!("refusing to write {named}: it is {it}; {takes}"),
    })
}

/// Checks another file a command writes beside its main output (a
/// snapshot of a render, the journal of a session): it must pass the
/// rules for `kind` and be neither an input nor the `main` output, named
/// `main_what` in the message (exit 2: the command line contradicts
/// itself). Nothing is written or opened.
pub fn check_side_output(
    path: &Path,
    kind: &Kind,
    inputs: &Inputs,
    main: &Output,
    main_what: &str,
) -> Result<(), FileError> {
    let what = if kind.noun.is_empty() {
        kind.writer
    } else {
        kind.noun
    };
    let clash = |other: String| FileError::Clash {
        path: path.to_path_buf(),
        what: what.to_string(),
        other,
    };
    if let Ok((target, meta)) = resolve_links(path) {
        let canonical = canonical_target(&target, "").ok();
        if let Some(i) = inputs.find(canonical.as_deref(), meta.as_ref()) {
            return Err(clash(i.what.clone()));
        }
        if main.is(canonical.as_deref(), meta.as_ref()) {
            return Err(clash(format!("{main_what} {}", main.describe())));
        }
    }
    debug_assert!(!kind.stream, "preparing a streamed output would open it");
    Output::prepare(path, inputs, 0, kind).map(drop)
}

/// Follows symbolic links from `path` to what they finally name (which may
/// not exist yet), with that file's metadata if it exists.
fn resolve_links(path: &Path) -> io::Result<(PathBuf, Option<Metadata>)> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            Ok(m) => return Ok((p, Some(m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((p, None)),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// The absolute path of `target`, whose directory must exist; `named` is
/// the output as the messages name it.
fn canonical_target(target: &Path, named: &str) -> Result<PathBuf, FileError> {
    let refused = |why: String| FileError::Unsuitable {
        path: target.to_path_buf(),
        message: format!("cannot create {named}: {why}"),
    };
    let file = target
        .file_name()
        .ok_or_else(|| refused("it names a directory; give a file name".to_string()))?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let canonical = std::fs::canonicalize(dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => FileError::NoDirectory {
            path: target.to_path_buf(),
            dir: dir.to_path_buf(),
            named: named.to_string(),
            source: e,
        },
        _ => FileError::io(
            target,
            format!("cannot create {named}: `{}`", dir.display()),
            e,
        ),
    })?;
    if !canonical.is_dir() {
        return Err(refused(format!("`{}` is not a directory", dir.display())));
    }
    Ok(canonical.join(file))
}

/// A file is replaced only if the user could write it (`access(W_OK)`) and
/// it has some write permission: root passes `access` for any file, but a
/// file nobody may write was made read-only on purpose.
fn check_replaceable(target: &Path, m: &Metadata, named: &str) -> Result<(), FileError> {
    let refused = |why: String| FileError::Unsuitable {
        path: target.to_path_buf(),
        message: format!("{named} {why}"),
    };
    let c = CString::new(target.as_os_str().as_bytes())
        .map_err(|_| refused("has a NUL byte in its name".to_string()))?;
    // SAFETY: access() reads a NUL-terminated path.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    let mode = m.mode() & 0o7777;
    if !writable {
        return Err(refused(format!(
            "is not writable by you (mode {mode:04o}, owner uid {}); morphrt does not replace a file you could not write: choose another output or change its permissions",
            m.uid()
        )));
    }
    if mode & 0o222 == 0 {
        return Err(refused(format!(
            "is read-only (mode {mode:04o}, owner uid {}); morphrt does not replace a file without write permission, even as root: choose another output or make it writable",
            m.uid()
        )));
    }
    Ok(())
}

/// Bytes available to the user on `dir`'s file system (`None` when the
/// file system does not say).
fn free_bytes(dir: &Path) -> Option<u64> {
    let c = CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills a zeroed struct from a NUL-terminated path.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut s) != 0 || s.f_blocks == 0 {
            return None;
        }
        Some((s.f_bavail as u64).saturating_mul(s.f_frsize as u64))
    }
}

/// Human-readable bytes for messages (decimal units, like `df -H`).
pub fn format_bytes(n: u64) -> String {
    const UNITS: [(&str, f64); 4] = [("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    for (unit, size) in UNITS {
        if n as f64 >= size {
            return format!("{:.1} {unit}", n as f64 / size);
        }
    }
    format!("{n} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("morphrt-output-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn links_resolve_to_their_final_target_even_when_it_does_not_exist() {
        let d = dir("links");
        std::os::unix::fs::symlink("b", d.join("a")).unwrap();
        std::os::unix::fs::symlink("sub/c.wav", d.join("b")).unwrap();
        let (t, m) = resolve_links(&d.join("a")).unwrap();
        assert_eq!(t, d.join("sub/c.wav"));
        assert!(m.is_none());
        std::os::unix::fs::symlink("loop", d.join("loop")).unwrap();
        assert!(resolve_links(&d.join("loop")).is_err());
    }

    #[test]
    fn a_missing_directory_is_named() {
        let d = dir("missing");
        let e = canonical_target(&d.join("nope").join("x.wav"), "`x.wav`")
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not exist") && e.contains("nope"), "{e}");
    }

    #[test]
    fn bytes_read_in_decimal_units() {
        assert_eq!(format_bytes(999), "999 bytes");
        assert_eq!(format_bytes(4_300_800_000), "4.3 GB");
        assert_eq!(format_bytes(9_300_000_000_000), "9.3 TB");
    }
}
