//! One writer per file: the file written in place as it goes (the journal
//! of a `run`) is held under an advisory POSIX record lock over its whole
//! length, so a second writer is refused, naming the process that holds
//! it. The kernel releases the lock when that process ends, however it
//! ends (even SIGKILL), so a lock is never left stale.
//!
//! POSIX locks belong to the process and are released when it closes any
//! descriptor of the file; the writer therefore never opens the file a
//! second time while it holds the lock. Readers take no lock: a journal
//! can be read while it is written.

use std::fs::File;
use std::io;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// The process that holds a write lock on a file: its PID and, where the
/// system says (`/proc/PID/comm`), its program's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The holder's process id.
    pub pid: u32,
    /// The program's name (`morphrt`), if known.
    pub program: Option<String>,
}

impl std::fmt::Display for Holder {
    /// `morphrt (PID 1234)`, or `another process (PID 1234)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.program {
            Some(p) => write!(f, "{p} (PID {})", self.pid),
            None => write!(f, "another process (PID {})", self.pid),
        }
    }
}

/// A lock request over the whole file.
fn whole_file(kind: libc::c_int) -> libc::flock {
    // SAFETY: flock is plain data; zero is a valid value for every field.
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = kind as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    l.l_start = 0;
    l.l_len = 0;
    l
}

/// Takes a write lock on all of `file` (opened for writing) without
/// waiting: `Ok(None)` when it is ours, `Ok(Some(holder))` when another
/// process holds a lock on it.
pub fn lock_for_writing(file: &File) -> io::Result<Option<Holder>> {
    let fd = file.as_raw_fd();
    let mut failed = None;
    // The holder may end between the two calls (the lock is free then):
    // try again, a few times.
    for _ in 0..3 {
        let want = whole_file(libc::F_WRLCK);
        // SAFETY: fcntl on an open descriptor with a valid flock.
        if unsafe { libc::fcntl(fd, libc::F_SETLK, &want) } == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if !matches!(e.raw_os_error(), Some(libc::EACCES | libc::EAGAIN)) {
            return Err(e);
        }
        let mut held = whole_file(libc::F_WRLCK);
        // SAFETY: as above; F_GETLK fills `held` with the conflicting lock.
        if unsafe { libc::fcntl(fd, libc::F_GETLK, &mut held) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if held.l_type != libc::F_UNLCK as libc::c_short {
            return Ok(Some(holder(held.l_pid)));
        }
        failed = Some(e);
    }
    Err(failed.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EAGAIN)))
}

/// The process holding a write lock on the file at `path`, if any (the
/// file is opened for reading and closed again; nothing is locked).
pub fn writer_of(path: &Path) -> Option<Holder> {
    let file = crate::scene::resource::open_regular(path).ok()?;
    let mut l = whole_file(libc::F_RDLCK);
    // SAFETY: fcntl on an open descriptor with a valid flock.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut l) } != 0 {
        return None;
    }
    (l.l_type != libc::F_UNLCK as libc::c_short).then(|| holder(l.l_pid))
}

/// The holder `pid`, named from `/proc` where it can be.
fn holder(pid: libc::pid_t) -> Holder {
    let pid = pid.max(0) as u32;
    let program = std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim_end().to_string())
        .filter(|s| !s.is_empty());
    Holder { pid, program }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_is_free_to_take_and_named_to_others() {
        let d = std::env::temp_dir().join(format!("morphrt-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join("j.jsonl");
        let f = File::create(&path).unwrap();
        assert_eq!(lock_for_writing(&f).unwrap(), None);
        // A process does not conflict with its own lock: another process
        // is needed to see it held (tests/it/takes.rs does).
        assert_eq!(writer_of(&path), None);
        assert_eq!(
            Holder {
                pid: 7,
                program: None
            }
            .to_string(),
            "another process (PID 7)"
        );
    }
}
