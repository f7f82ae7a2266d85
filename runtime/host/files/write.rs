//! The one file writer: every file the program writes goes through here,
//! after [`super::rules`] checked where it goes.
//!
//! A regular file is written under a hidden temporary name beside its
//! target ([`TempFile`]), flushed to disk (fsync), renamed over the target
//! and the directory synced, so the target holds either its old content or
//! the whole new one, even after a crash. The temporary file is removed on
//! every failure: an error, a panic (it is removed when dropped) or a stop
//! signal ([`TempRegistration`]); one that a killed process (SIGKILL, a
//! crash) could not remove is removed by the next write to the same target,
//! once its process is gone. A FIFO, a character device or standard output,
//! where the rules let the kind stream, is written in place. The files that
//! grow as they go and must be readable under their own name at every
//! moment are opened in place after the same checks: the journal, appended
//! to and locked against a second writer ([`Output::open_in_place`]), and
//! the capture, created new unless the caller asks to replace an existing
//! file ([`Output::create_in_place`], [`Existing`]).

use super::error::FileError;
use super::lock;
use super::rules::{Destination, Inputs, Kind, Output};
use super::signals::TempRegistration;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Seek, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A hidden file beside the target, removed when dropped unless it was
/// renamed over the target by [`TempFile::commit`].
#[derive(Debug)]
pub struct TempFile {
    file: File,
    path: PathBuf,
    target: PathBuf,
    /// The output for messages: "the capture `take.wav`".
    named: String,
    replaces: bool,
    committed: bool,
    /// Where the next write lands, and where the bytes not yet sent to
    /// the disk begin ([`TempFile::write`]).
    at: u64,
    unsent: u64,
    /// Removes the file when a stop signal ends the process.
    _signal: Option<TempRegistration>,
}

impl TempFile {
    /// Creates `.NAME.PID.partial` beside `target` (never over anything),
    /// with the permissions, and as root the owner, of the file it replaces;
    /// `named` names the output in errors. Partial files of `target` that a
    /// process which is no longer running left behind (killed before it
    /// could remove them) are removed first, each with a note.
    pub fn create(
        target: &Path,
        replaces: Option<&Metadata>,
        named: &str,
    ) -> Result<TempFile, FileError> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = std::process::id();
        remove_stale_partials(dir, &name);
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
                    return Err(FileError::io(
                        target,
                        format!(
                            "cannot write {named}: cannot write in the directory `{}`",
                            dir.display()
                        ),
                        e,
                    ))
                }
            }
        };
        let temp = TempFile {
            _signal: TempRegistration::new(&path),
            file,
            path,
            target: target.to_path_buf(),
            named: named.to_string(),
            replaces: replaces.is_some(),
            committed: false,
            at: 0,
            unsent: 0,
        };
        if let Some(m) = replaces {
            // Giving a file away needs root; elsewhere this keeps what it can
            // (the group, when the user is in it) and the write goes on.
            let _ = std::os::unix::fs::fchown(&temp.file, Some(m.uid()), Some(m.gid()));
            let _ = std::os::unix::fs::fchown(&temp.file, None, Some(m.gid()));
            // Set-id and sticky bits have no meaning on a data file.
            let perms = std::fs::Permissions::from_mode(m.mode() & 0o777);
            temp.file.set_permissions(perms).map_err(|e| {
                FileError::io(
                    target,
                    format!("cannot write {named}: cannot set the permissions of the new file"),
                    e,
                )
            })?;
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

    /// What a failure left at the target, for messages.
    pub fn aftermath(&self) -> &'static str {
        if self.replaces {
            "; the file is unchanged"
        } else {
            "; nothing was written"
        }
    }

    fn failed(&self, doing: &str, source: io::Error) -> FileError {
        FileError::Io {
            path: self.target.clone(),
            context: format!("{doing} {}", self.named),
            source,
            after: self.aftermath().to_string(),
        }
    }

    /// Flushes the file to disk, renames it over the target and syncs the
    /// directory, so the rename survives a crash. On failure the temporary
    /// file is removed and the target is as it was.
    pub fn commit(mut self) -> Result<(), FileError> {
        self.file
            .sync_all()
            .map_err(|e| self.failed("cannot finish", e))?;
        std::fs::rename(&self.path, &self.target).map_err(|e| self.failed("cannot finish", e))?;
        self.committed = true;
        if let Some(dir) = self.target.parent() {
            if let Ok(d) = File::open(dir) {
                // Not every file system can sync a directory; the file
                // itself is durable.
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

/// The partial files of a target named `name` in `dir` that processes no
/// longer running left behind (`.NAME.PID.partial`, `.NAME.PID-N.partial`)
/// are removed, each with a note naming the file and the PID. A partial
/// file of a running process (or of this one) is left alone, and so is
/// anything that is not a regular file.
fn remove_stale_partials(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{name}.");
    let own = std::process::id();
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|f| f.strip_suffix(".partial"))
            .and_then(partial_pid)
        else {
            continue;
        };
        if pid == own || process_is_running(pid) || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let mut log = crate::host::term::messages();
        let _ = match std::fs::remove_file(&path) {
            Ok(()) => writeln!(
                log,
                "note: removed `{}`, a partial file left by morphrt (PID {pid}), which is no longer running",
                path.display()
            ),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => writeln!(
                log,
                "warning: cannot remove `{}`, a partial file left by morphrt (PID {pid}), which is no longer running: {e}",
                path.display()
            ),
        };
    }
}

/// The PID in the middle of a partial file's name: `1234` or `1234-2`.
fn partial_pid(middle: &str) -> Option<u32> {
    let (pid, n) = middle.split_once('-').unwrap_or((middle, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(pid) || !digits(n) {
        return None;
    }
    pid.parse().ok()
}

/// Whether a process `pid` exists (`kill(pid, 0)`: only "no such process"
/// says it does not; one of another user exists too).
fn process_is_running(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 sends nothing; it only checks that `pid` exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    alive || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// How many bytes a temporary file gathers before they are sent on their
/// way to the disk. The sync at the end waits for what is not yet on its
/// way and for the file system's journal: on an ext4 disk, a 5.8 MB file
/// synced at once took 2.4 ms, sent on in steps of 4 MiB 1.4–2.2 ms, in
/// steps of 256 KiB 0.6–1.1 ms (the journal's part).
const WRITEBACK_BYTES: u64 = 256 << 10;

/// The page size write-back goes by (that of x86-64 and most Linux
/// systems; on a larger one a step may still end inside a page).
const PAGE_BYTES: u64 = 4096;

impl Write for TempFile {
    /// Writes, and every [`WRITEBACK_BYTES`] starts the write-back of
    /// their whole pages to the disk without waiting for it (a page still
    /// filling would go twice), so the sync that completes the file waits
    /// only for its last few hundred kilobytes.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.at += n as u64;
        if self.at >= self.unsent + WRITEBACK_BYTES {
            let whole = self.at & !(PAGE_BYTES - 1);
            start_writeback(&self.file, self.unsent, whole - self.unsent);
            self.unsent = whole;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for TempFile {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        let at = self.file.seek(pos)?;
        self.at = at;
        self.unsent = self.unsent.min(at);
        Ok(at)
    }
}

/// Starts writing `len` bytes of `file` from `offset` to the disk and
/// returns at once; a failure is only a missed head start (the sync in
/// [`TempFile::commit`] reports errors).
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor; the call only schedules write-back.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset as libc::off64_t,
            len as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &File, _: u64, _: u64) {}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Where an open output's bytes go.
enum To<'a> {
    /// The caller's standard output.
    Stdout(&'a mut (dyn Write + Send)),
    /// A FIFO or character device.
    Stream(File),
    /// A temporary file, renamed into place by [`Sink::finish`].
    Temp(TempFile),
}

/// An open output: write to it, then [`finish`](Sink::finish) it; dropped
/// unfinished, it leaves nothing (a temporary file is removed).
pub struct Sink<'a> {
    to: To<'a>,
    path: PathBuf,
    /// The output for messages.
    named: String,
}

impl Sink<'_> {
    /// Makes the output complete: flushes a stream, syncs and renames a
    /// temporary file into place.
    pub fn finish(self) -> Result<(), FileError> {
        let aftermath = self.aftermath();
        let failed = |source| FileError::Io {
            path: self.path.clone(),
            context: format!("cannot finish {}", self.named),
            source,
            after: aftermath.to_string(),
        };
        match self.to {
            To::Stdout(w) => w.flush().map_err(failed),
            To::Stream(mut f) => f.flush().map_err(failed),
            To::Temp(t) => t.commit(),
        }
    }

    /// The temporary file a regular file's output is written to (`None`
    /// for a stream), for a writer that patches what it wrote before the
    /// rename: a WAV header whose sizes are known only at the end.
    pub fn temp_file(&self) -> Option<&File> {
        match &self.to {
            To::Temp(t) => Some(&t.file),
            _ => None,
        }
    }

    /// What became of the output when writing failed, for the message.
    pub fn aftermath(&self) -> &'static str {
        match &self.to {
            To::Temp(t) => t.aftermath(),
            _ => "",
        }
    }

    /// The error for a failed write to this output, naming it.
    pub fn write_error(&self, source: io::Error) -> FileError {
        FileError::Io {
            path: self.path.clone(),
            context: format!("cannot write {}", self.named),
            source,
            after: self.aftermath().to_string(),
        }
    }
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.to {
            To::Stdout(w) => w.write(buf),
            To::Stream(f) => f.write(buf),
            To::Temp(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.to {
            To::Stdout(w) => w.flush(),
            To::Stream(f) => f.flush(),
            To::Temp(t) => t.flush(),
        }
    }
}

/// Counts what goes through, for the size of what was written.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl Output {
    /// Opens the writer: the caller's `stdout`, the stream, or a new
    /// temporary file beside the target (with the replaced file's mode).
    pub fn start<'a>(self, stdout: &'a mut (dyn Write + Send)) -> Result<Sink<'a>, FileError> {
        let named = self.named();
        let path = self.shown.clone();
        let to = match self.dest {
            Destination::Stdout => To::Stdout(stdout),
            Destination::Stream(f) => To::Stream(f),
            Destination::File { target, replaces } => {
                To::Temp(TempFile::create(&target, replaces.as_ref(), &named)?)
            }
        };
        Ok(Sink { to, path, named })
    }

    /// Writes what `write` writes (through a buffer) and completes the
    /// output; returns the size written. A regular file appears only now,
    /// renamed into place; on failure nothing partial is left and a
    /// replaced file is unchanged.
    pub fn write_with(
        self,
        stdout: &mut (dyn Write + Send),
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<u64, FileError> {
        let sink = self.start(stdout)?;
        let mut w = io::BufWriter::with_capacity(
            1 << 16,
            Counting {
                inner: sink,
                bytes: 0,
            },
        );
        if let Err(e) = write(&mut w).and_then(|_| w.flush()) {
            let (counting, _) = w.into_parts();
            return Err(counting.inner.write_error(e));
        }
        let counting = match w.into_inner() {
            Ok(c) => c,
            Err(e) => {
                let (error, w) = e.into_parts();
                return Err(w.into_parts().0.inner.write_error(error));
            }
        };
        let bytes = counting.bytes;
        counting.inner.finish()?;
        Ok(bytes)
    }

    /// Writes `bytes` whole and completes the output (see [`write_with`](Self::write_with)).
    pub fn write_all(self, bytes: &[u8], stdout: &mut (dyn Write + Send)) -> Result<(), FileError> {
        self.write_with(stdout, |w| w.write_all(bytes)).map(drop)
    }

    /// Opens a regular file in place, created or emptied, for a file that
    /// grows as it goes and is read up to its last complete record (the
    /// journal). The rules were checked by [`Output::prepare`]: never an
    /// input, never a device, a FIFO or a directory. The file is locked
    /// for this process ([`super::lock`]) before it is emptied, so a file
    /// another process is writing is refused, naming it, and left as it
    /// is. An output that may not replace ([`Output::prepare_new`]) is
    /// created exclusively.
    pub fn open_in_place(self) -> Result<File, FileError> {
        let named = self.named();
        let Destination::File { target, .. } = self.dest else {
            return Err(regular_only(self.shown, &named, &self.kind));
        };
        let failed = |e| FileError::io(&self.shown, format!("cannot write {named}"), e);
        let mut options = OpenOptions::new();
        options.write(true);
        if self.replace {
            options.create(true);
        } else {
            options.create_new(true);
        }
        let file = options.open(&target).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => FileError::Exists {
                path: self.shown.clone(),
                shown: named.clone(),
            },
            _ => failed(e),
        })?;
        if let Some(holder) = lock::lock_for_writing(&file).map_err(failed)? {
            return Err(FileError::InUse {
                path: self.shown.clone(),
                shown: named.clone(),
                holder,
            });
        }
        file.set_len(0).map_err(failed)?;
        Ok(file)
    }

    /// Creates a regular file in place, under its final name, for a file
    /// that is kept readable as it grows (the capture): created new
    /// (`O_EXCL`, and the directory synced so the name survives a crash),
    /// or, with [`Existing::Replace`], an existing file emptied (keeping its
    /// permissions and owner). With [`Existing::Refuse`] a file that has the
    /// name is never touched. The rules were checked by [`Output::prepare`].
    pub fn create_in_place(self, existing: Existing) -> Result<InPlace, FileError> {
        let named = self.named();
        let Destination::File { target, .. } = self.dest else {
            return Err(regular_only(self.shown, &named, &self.kind));
        };
        let mut open = OpenOptions::new();
        open.write(true);
        match existing {
            Existing::Refuse => open.create_new(true),
            Existing::Replace => open.create(true).truncate(true),
        };
        let existed = existing == Existing::Replace && target.exists();
        let file = open.open(&target).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                return already_exists(self.shown.clone(), &named);
            }
            let dir = match target.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            FileError::io(
                &self.shown,
                format!(
                    "cannot write {named}: cannot write in the directory `{}`",
                    dir.display()
                ),
                e,
            )
        })?;
        if !existed {
            if let Some(dir) = target.parent().and_then(|d| File::open(d).ok()) {
                // As in `TempFile::commit`: not every file system syncs a directory.
                let _ = dir.sync_all();
            }
        }
        Ok(InPlace {
            file,
            path: target,
            created: !existed,
        })
    }
}

/// What writing a file in place does when a file already has its name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Existing {
    /// Leave it alone and refuse: the new file is created new or not at
    /// all, so an earlier take is never lost.
    #[default]
    Refuse,
    /// Empty it and write over it.
    Replace,
}

/// A regular file opened in place by [`Output::create_in_place`].
#[derive(Debug)]
pub struct InPlace {
    /// The open file, positioned at its start.
    pub file: File,
    /// Where it is (links resolved).
    pub path: PathBuf,
    /// Whether it was created (rather than an existing file emptied).
    pub created: bool,
}

/// The refusal of an output whose name an existing file has.
fn already_exists(path: PathBuf, named: &str) -> FileError {
    FileError::Unsuitable {
        message: format!(
            "{named} already exists; it is not replaced (an earlier take is never lost): choose another name, or move it away first",
        ),
        path,
    }
}

/// What a kind that writes regular files only says of any other output
/// (the rules refuse them first; this is the writer's own guard).
fn regular_only(path: PathBuf, named: &str, kind: &Kind) -> FileError {
    FileError::Unsuitable {
        path,
        message: format!(
            "cannot write {named}: {} writes {} to regular files only",
            kind.writer, kind.what
        ),
    }
}

/// Writes a regular file at `path` under the rules for `kind`, never over
/// one of `inputs`: checks, then [`Output::write_with`]. Returns the size
/// written. For kinds that do not stream (a snapshot, a calibration).
pub fn write_file(
    path: &Path,
    inputs: &Inputs,
    kind: &Kind,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<u64, FileError> {
    Output::prepare(path, inputs, 0, kind)?.write_with(&mut io::sink(), write)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("morphrt-write-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_dropped_temp_file_is_removed_and_a_committed_one_replaces_the_target() {
        let d = dir("temp");
        let target = d.join("out.wav");
        std::fs::write(&target, b"old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let meta = std::fs::metadata(&target).unwrap();
        let mut t = TempFile::create(&target, Some(&meta), "`out.wav`").unwrap();
        let partial = t.path().to_path_buf();
        t.write_all(b"new").unwrap();
        drop(t);
        assert!(!partial.exists());
        assert_eq!(std::fs::read(&target).unwrap(), b"old");

        let mut t = TempFile::create(&target, Some(&meta), "`out.wav`").unwrap();
        t.write_all(b"new").unwrap();
        t.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o640, "the replaced file's mode is kept");
        assert_eq!(names(&d), ["out.wav"]);
    }

    #[test]
    fn a_failed_write_never_leaves_a_partial_file() {
        let d = dir("atomic");
        let path = d.join("s.json");
        let write = |f: &dyn Fn(&mut dyn Write) -> io::Result<()>| {
            write_file(&path, &Inputs::default(), &Kind::SNAPSHOT, f)
        };
        assert_eq!(write(&|w| w.write_all(b"old")).unwrap(), 3);
        let e = write(&|w| {
            w.write_all(b"new and half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("disk full"), "{e}");
        assert!(e.to_string().contains("s.json"), "{e}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"old",
            "the old file stays whole"
        );
        assert_eq!(names(&d), ["s.json"], "no temporary file is left");
        let missing = d.join("missing/s.json");
        let e = write_file(&missing, &Inputs::default(), &Kind::SNAPSHOT, |w| {
            w.write_all(b"x")
        })
        .unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
    }

    #[test]
    fn a_panic_while_writing_leaves_nothing() {
        let d = dir("panic");
        let path = d.join("s.json");
        let r = std::panic::catch_unwind(|| {
            write_file(&path, &Inputs::default(), &Kind::SNAPSHOT, |w| {
                w.write_all(&[b'x'; 100_000])?;
                panic!("in the middle");
            })
        });
        assert!(r.is_err());
        assert!(names(&d).is_empty());
    }

    #[test]
    fn an_input_is_never_written_nor_is_a_fifo_replaced() {
        let d = dir("rules");
        let scene = d.join("s.json");
        std::fs::write(&scene, b"{}").unwrap();
        let mut inputs = Inputs::default();
        inputs.add("the scene", &scene);
        let e = write_file(&scene, &inputs, &Kind::SNAPSHOT, |w| w.write_all(b"x")).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("is the scene"), "{e}");
        assert_eq!(std::fs::read(&scene).unwrap(), b"{}");

        let fifo = d.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a NUL-terminated path in our own directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let o = Output::prepare(&fifo, &Inputs::default(), 0, &Kind::JOURNAL);
        let e = o.unwrap_err();
        assert!(e.to_string().contains("it is a FIFO"), "{e}");
        let e = Output::prepare(Path::new("-"), &Inputs::default(), 0, &Kind::JOURNAL).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        let kept = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        use std::os::unix::fs::FileTypeExt;
        assert!(kept.is_fifo());
    }

    #[test]
    fn a_file_opened_in_place_is_emptied_and_grows() {
        let d = dir("in-place");
        let path = d.join("j.jsonl");
        std::fs::write(&path, b"an older journal").unwrap();
        let o = Output::prepare(&path, &Inputs::default(), 0, &Kind::JOURNAL).unwrap();
        let mut f = o.open_in_place().unwrap();
        f.write_all(b"{}\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        assert_eq!(names(&d), ["j.jsonl"]);
    }

    #[test]
    fn a_partial_files_name_gives_its_pid() {
        assert_eq!(partial_pid("1234"), Some(1234));
        assert_eq!(partial_pid("1234-2"), Some(1234));
        for not in ["", "12a", "1234-", "-2", "1-2-3", "99999999999"] {
            assert_eq!(partial_pid(not), None, "{not}");
        }
        assert!(process_is_running(std::process::id()));
    }
}
