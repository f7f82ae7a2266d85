//! Where a render's WAV goes, decided and checked before the first block,
//! so that no mistake in `-o` costs the user a file or a long render.
//!
//! The rules (Unix):
//! - Never write over an input: the scene, a resource the plan read, the
//!   snapshot resumed from (same path after resolving links, or same inode).
//! - A regular file is written under a hidden temporary name beside it and
//!   renamed over it only when complete, with the replaced file's
//!   permissions (and, as root, its owner). A file the user could not write
//!   is not replaced, nor, even by root, a file with no write permission.
//! - A symbolic link is written through: its target is replaced, the link stays.
//! - A FIFO or a character device is written in place, streaming (a FIFO
//!   waits for its reader); `-` is standard output. No temporary file.
//! - A block device, a socket or a directory is refused.
//! - The temporary file is removed on every failure: an error, a panic, or
//!   (with [`crate::host::files::signals::InterruptGuard`]) SIGINT, SIGTERM or SIGHUP.

use crate::host::HostError;
use std::ffi::CString;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, IsTerminal, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A file the render reads, which its output must not replace.
#[derive(Clone, Debug)]
pub struct Input {
    /// What it is to the render, for messages: "the scene `a.json`".
    pub what: String,
    canonical: Option<PathBuf>,
    id: Option<(u64, u64)>,
}

/// Every file a render reads.
#[derive(Clone, Debug, Default)]
pub struct Inputs(Vec<Input>);

impl Inputs {
    /// Adds a file, identified by its canonical path and its inode (a hard
    /// link to it is the same file under another name); `what` says what it
    /// is to the render ("the scene"), for messages.
    pub fn add(&mut self, what: &str, path: &Path) {
        self.0.push(Input {
            what: format!("{what} `{}`", path.display()),
            canonical: std::fs::canonicalize(path).ok(),
            id: std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino())),
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

    fn find_id(&self, id: (u64, u64)) -> Option<&Input> {
        self.0.iter().find(|i| i.id == Some(id))
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

/// Where the samples go.
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

/// A checked output: what the user named and where it really goes.
#[derive(Debug)]
pub struct Output {
    /// The path as given, which every message names.
    pub shown: PathBuf,
    /// Where the bytes go.
    pub dest: Destination,
    /// The target when `shown` is a symbolic link.
    pub link_target: Option<PathBuf>,
}

fn runtime(msg: String) -> HostError {
    HostError::Runtime(msg)
}

/// The output must be named as what render writes: a `.wav` (or `.wave`,
/// any case) file, `-` (standard output), or an existing FIFO or device,
/// which take the stream whatever their name. Anything else — `x.mp3`,
/// `out` — is refused before anything renders, rather than writing a WAV
/// under a name that says otherwise. Called after [`Output::prepare`], so
/// an output that is an input or a directory gets that, sharper, error.
pub fn check_extension(path: &Path) -> Result<(), HostError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Ok(());
    }
    let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase());
    if matches!(ext.as_deref(), Some("wav" | "wave")) {
        return Ok(());
    }
    let name = path.display();
    let wav = path.with_extension("wav");
    Err(HostError::Usage(match ext {
        Some(e) => format!(
            "render writes WAV files only, and `{name}` names a `.{e}` file; use a .wav or .wave name (e.g. -o {}), or -o - to pipe the WAV to a converter",
            wav.display()
        ),
        None => format!(
            "`{name}` has no extension; render writes WAV files: use a .wav or .wave name (e.g. -o {})",
            wav.display()
        ),
    }))
}

impl Output {
    /// Resolves `path` (`-` is standard output), checks it against the
    /// rules above and, for a regular file, that `needed` bytes fit on its
    /// file system. Opens a FIFO or device here (a FIFO blocks until it has
    /// a reader), so every problem with the output shows before rendering.
    ///
    /// Errors: exit 2 when the command line contradicts itself (the output
    /// is an input, `-` is a terminal); exit 1 when the file system says no
    /// (missing directory, a directory, read-only, no room, a block device).
    pub fn prepare(path: &Path, inputs: &Inputs, needed: u64) -> Result<Output, HostError> {
        let shown = path.to_path_buf();
        if path.as_os_str() == "-" {
            if io::stdout().is_terminal() {
                return Err(HostError::Usage(
                    "`-o -` writes to standard output, which is a terminal; redirect it (`> out.wav`, `| program`) or give -o FILE".into(),
                ));
            }
            if let Some(i) = fd_id(libc::STDOUT_FILENO).and_then(|(d, n, _)| inputs.find_id((d, n)))
            {
                return Err(HostError::Usage(format!(
                    "standard output is {}; morphrt never writes over what it reads",
                    i.what
                )));
            }
            return Ok(Output {
                shown,
                dest: Destination::Stdout,
                link_target: None,
            });
        }
        let name = shown.display();
        let (target, meta) =
            resolve_links(path).map_err(|e| runtime(format!("cannot write `{name}`: {e}")))?;
        let link_target = (target != path).then(|| target.clone());
        let via = link_target
            .as_ref()
            .map(|t| format!(" (a link to `{}`)", t.display()))
            .unwrap_or_default();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Err(runtime(format!(
                "cannot write `{name}`{via}: it is a directory; give a file name, e.g. -o {}",
                target.join("out.wav").display()
            )));
        }
        let target = canonical_target(&target)
            .map_err(|e| runtime(format!("cannot create `{name}`{via}: {e}")))?;
        if let Some(i) = inputs.find(Some(&target), meta.as_ref()) {
            return Err(HostError::Usage(format!(
                "`{name}`{via} is {}; morphrt never writes over what it reads: choose another output file",
                i.what
            )));
        }
        let dest = match meta {
            None => Destination::File {
                target,
                replaces: None,
            },
            Some(m) => {
                let t = m.file_type();
                if t.is_file() {
                    check_replaceable(&target, &m)
                        .map_err(|e| runtime(format!("`{name}`{via} {e}")))?;
                    Destination::File {
                        target,
                        replaces: Some(m),
                    }
                } else if t.is_fifo() || t.is_char_device() {
                    let f = OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NOCTTY)
                        .open(&target)
                        .map_err(|e| {
                            runtime(format!("cannot open `{name}`{via} for writing: {e}"))
                        })?;
                    Destination::Stream(f)
                } else {
                    let kind = if t.is_block_device() {
                        "a block device (a disk)"
                    } else if t.is_socket() {
                        "a socket"
                    } else {
                        "not a regular file"
                    };
                    return Err(runtime(format!(
                        "refusing to write `{name}`{via}: it is {kind}; morphrt writes regular files, FIFOs, character devices and standard output (-o -)"
                    )));
                }
            }
        };
        if let Destination::File { target, .. } = &dest {
            let dir = target.parent().unwrap_or(Path::new("/"));
            if let Some(free) = free_bytes(dir).filter(|free| needed > *free) {
                return Err(runtime(format!(
                    "`{name}`{via} needs {} ({needed} bytes); `{}` has {} free",
                    format_bytes(needed),
                    dir.display(),
                    format_bytes(free)
                )));
            }
        }
        Ok(Output {
            shown,
            dest,
            link_target,
        })
    }

    /// Whether the samples go to standard output.
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

    /// Opens the writer: the caller's `stdout`, the stream, or a new
    /// temporary file beside the target (with the replaced file's mode).
    pub fn start<'a>(self, stdout: &'a mut dyn Write) -> Result<Sink<'a>, HostError> {
        let what = self.describe();
        match self.dest {
            Destination::Stdout => Ok(Sink::Stdout(stdout)),
            Destination::Stream(f) => Ok(Sink::Stream(f)),
            Destination::File { target, replaces } => {
                let temp = TempFile::create(&target, replaces.as_ref())
                    .map_err(|e| runtime(format!("cannot write {what}: {e}")))?;
                Ok(Sink::Temp(temp))
            }
        }
    }

    /// Writes `bytes` whole and completes the output (a regular file
    /// appears only now, renamed into place); on failure nothing partial is
    /// left and a replaced file is unchanged.
    pub fn write_all(self, bytes: &[u8], stdout: &mut dyn Write) -> Result<(), HostError> {
        let what = self.describe();
        let mut sink = self.start(stdout)?;
        let aftermath = sink.aftermath();
        sink.write_all(bytes)
            .map_err(|e| runtime(format!("cannot write {what}: {e}{aftermath}")))?;
        sink.finish()
            .map_err(|e| runtime(format!("cannot finish {what}: {e}{aftermath}")))
    }
}

/// Checks another file the render writes (a snapshot): it must not be an
/// input nor the WAV itself (exit 2: the command line contradicts itself).
pub fn check_side_output(
    path: &Path,
    what: &str,
    inputs: &Inputs,
    wav: &Output,
) -> Result<(), HostError> {
    let Ok((target, meta)) = resolve_links(path) else {
        // Unreadable paths fail when the file is written, with its own error.
        return Ok(());
    };
    let canonical = canonical_target(&target).ok();
    let clash = |name: String| {
        HostError::Usage(format!(
            "{what} `{}` is {name}; morphrt never writes over what it reads or writes twice: choose another file",
            path.display()
        ))
    };
    if let Some(i) = inputs.find(canonical.as_deref(), meta.as_ref()) {
        return Err(clash(i.what.clone()));
    }
    let same_as_wav = match &wav.dest {
        Destination::File { target, .. } => canonical.as_deref() == Some(target.as_path()),
        Destination::Stream(f) => match (f.metadata(), &meta) {
            (Ok(a), Some(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
            _ => false,
        },
        Destination::Stdout => false,
    };
    if same_as_wav {
        return Err(clash(format!("the WAV output {}", wav.describe())));
    }
    Ok(())
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

/// The absolute path of `target`, whose directory must exist.
fn canonical_target(target: &Path) -> Result<PathBuf, String> {
    let file = target
        .file_name()
        .ok_or_else(|| "it names a directory; give a file name".to_string())?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let canonical = std::fs::canonicalize(dir).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => format!("directory `{}` does not exist", dir.display()),
        _ => format!("`{}`: {e}", dir.display()),
    })?;
    if !canonical.is_dir() {
        return Err(format!("`{}` is not a directory", dir.display()));
    }
    Ok(canonical.join(file))
}

/// A file is replaced only if the user could write it (`access(W_OK)`) and
/// it has some write permission: root passes `access` for any file, but a
/// file nobody may write was made read-only on purpose.
fn check_replaceable(target: &Path, m: &Metadata) -> Result<(), String> {
    let c = CString::new(target.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: access() reads a NUL-terminated path.
    let writable = unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0;
    let mode = m.mode() & 0o7777;
    if !writable {
        return Err(format!(
            "is not writable by you (mode {mode:04o}, owner uid {}); morphrt does not replace a file you could not write: choose another output or change its permissions",
            m.uid()
        ));
    }
    if mode & 0o222 == 0 {
        return Err(format!(
            "is read-only (mode {mode:04o}, owner uid {}); morphrt does not replace a file without write permission, even as root: choose another output or make it writable",
            m.uid()
        ));
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

/// A hidden file beside the target, removed when dropped unless it was
/// renamed over the target by [`TempFile::commit`].
#[derive(Debug)]
pub struct TempFile {
    file: File,
    path: PathBuf,
    target: PathBuf,
    replaces: bool,
    committed: bool,
}

impl TempFile {
    /// Creates `.NAME.PID.partial` beside `target` (never over anything),
    /// with the permissions, and as root the owner, of the file it replaces.
    pub fn create(target: &Path, replaces: Option<&Metadata>) -> Result<TempFile, String> {
        let dir = target.parent().unwrap_or(Path::new("/"));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = std::process::id();
        let mut n = 0;
        let (file, path) = loop {
            let path = dir.join(match n {
                0 => format!(".{name}.{pid}.partial"),
                _ => format!(".{name}.{pid}-{n}.partial"),
            });
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(f) => break (f, path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => {
                    return Err(format!(
                        "cannot create a temporary file in `{}`: {e}",
                        dir.display()
                    ))
                }
            }
        };
        let temp = TempFile {
            file,
            path,
            target: target.to_path_buf(),
            replaces: replaces.is_some(),
            committed: false,
        };
        if let Some(m) = replaces {
            // Giving a file away needs root; elsewhere this keeps what it can
            // (the group, when the user is in it) and the render goes on.
            let _ = std::os::unix::fs::fchown(&temp.file, Some(m.uid()), Some(m.gid()));
            let _ = std::os::unix::fs::fchown(&temp.file, None, Some(m.gid()));
            // Set-id and sticky bits have no meaning on a WAV file.
            let perms = std::fs::Permissions::from_mode(m.mode() & 0o777);
            temp.file
                .set_permissions(perms)
                .map_err(|e| format!("cannot set the permissions of the new file: {e}"))?;
        }
        Ok(temp)
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a file at the target is being replaced.
    pub fn replaces(&self) -> bool {
        self.replaces
    }

    /// Flushes the file to disk and renames it over the target.
    pub fn commit(mut self) -> io::Result<()> {
        self.file.sync_all()?;
        std::fs::rename(&self.path, &self.target)?;
        self.committed = true;
        Ok(())
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The open output.
pub enum Sink<'a> {
    /// The caller's standard output.
    Stdout(&'a mut dyn Write),
    /// A FIFO or character device.
    Stream(File),
    /// A temporary file, renamed into place by [`Sink::finish`].
    Temp(TempFile),
}

impl Sink<'_> {
    /// Makes the output complete: flushes a stream, renames a temporary
    /// file into place.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::Stream(mut f) => f.flush(),
            Sink::Temp(t) => t.commit(),
        }
    }

    /// What became of the output when the render failed, for the message.
    pub fn aftermath(&self) -> &'static str {
        match self {
            Sink::Temp(t) if t.replaces() => "; the file is unchanged",
            Sink::Temp(_) => "; nothing was written",
            _ => "",
        }
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Stdout(w) => w.write(buf),
            Sink::Stream(f) => f.write(buf),
            Sink::Temp(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Stdout(w) => w.flush(),
            Sink::Stream(f) => f.flush(),
            Sink::Temp(t) => t.flush(),
        }
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
    fn a_dropped_temp_file_is_removed_and_a_committed_one_replaces_the_target() {
        let d = dir("temp");
        let target = d.join("out.wav");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let meta = std::fs::metadata(&target).unwrap();
        let mut t = TempFile::create(&target, Some(&meta)).unwrap();
        let partial = t.path().to_path_buf();
        t.write_all(b"new").unwrap();
        drop(t);
        assert!(!partial.exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"old");

        let mut t = TempFile::create(&target, Some(&meta)).unwrap();
        t.write_all(b"new").unwrap();
        t.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o640, "the replaced file's mode is kept");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
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
        let e = canonical_target(&d.join("nope").join("x.wav")).unwrap_err();
        assert!(e.contains("does not exist") && e.contains("nope"), "{e}");
    }

    #[test]
    fn bytes_read_in_decimal_units() {
        assert_eq!(format_bytes(999), "999 bytes");
        assert_eq!(format_bytes(4_300_800_000), "4.3 GB");
        assert_eq!(format_bytes(9_300_000_000_000), "9.3 TB");
    }
}
