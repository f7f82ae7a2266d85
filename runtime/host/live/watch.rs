//! Watching the scene file and the resources it uses, so that a running
//! program picks up every save.
//!
//! Editors rarely write a file in place. Most write a temporary file and
//! rename it over the target, vim renames the original away and writes a new
//! one, some delete and recreate. A watch on the file itself follows the old
//! inode and goes silent after the first such save, so each file is watched
//! through its directory (non-recursively) and events are matched by path.
//! Matching whole paths is also what keeps editor scratch files (`x.json.tmp`,
//! `.x.json.swp`, `x.json~`, vim's `4913`, Emacs' `.#x.json`) out of the
//! reports, while a rename from one of them onto a watched name still counts,
//! since that rename is how an atomic save arrives.
//!
//! The watcher only says *which* files changed, never what they contain: a
//! file can be seen half-written, so the consumer re-reads and re-parses it,
//! keeps the running graph when that fails, and tries again on the next
//! report. Everything here runs on a control thread, never the audio thread.
//!
//! A watched directory that is deleted or renamed takes its watch with it.
//! Its files are reported as changed (the consumer's reload then fails or
//! finds them recreated), an error says so, and the next
//! [`FileWatcher::set_files`] watches the directory again if it exists.

use notify::event::ModifyKind;
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode};
use notify_debouncer_full::{new_debouncer, DebounceEventResult, Debouncer, RecommendedCache};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The debouncer thread wakes every quarter of the debounce time; a floor
/// keeps a zero or tiny debounce from turning that into a spinning loop.
const MIN_DEBOUNCE: Duration = Duration::from_millis(4);

/// Errors kept for [`FileWatcher::take_errors`]; a consumer that never asks
/// must not grow memory without bound, and the newest errors matter most.
const MAX_ERRORS: usize = 64;

/// Watches a set of files (the scene and every resource it uses) for changes.
///
/// Events arrive on notify's own threads and are collected under a lock that
/// [`take_changes`](Self::take_changes) drains, so the control loop needs no
/// thread of its own and nothing polls the file system.
pub struct FileWatcher {
    debouncer: Debouncer<RecommendedWatcher, RecommendedCache>,
    shared: Arc<Shared>,
    /// Each directory is watched once, however many watched files it holds.
    dirs: BTreeSet<PathBuf>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// Canonical path to the path as the caller spelt it, which is what
    /// reports give back so the caller can compare with what it passed.
    files: BTreeMap<PathBuf, PathBuf>,
    /// Canonical paths changed since the last take, each once.
    pending: BTreeSet<PathBuf>,
    errors: VecDeque<String>,
}

impl FileWatcher {
    /// Starts watching `files`.
    ///
    /// Each file is watched through its parent directory, because editors
    /// save by rename and a watch on the file itself dies after the first
    /// rename-save. A file may be missing (a resource deleted before being
    /// recreated), but its directory must exist.
    ///
    /// `debounce` is how long events for a file are held so that the several
    /// events of one save, or a quick burst of saves, come out as one change;
    /// a file written continuously is reported once the writing pauses for
    /// that long. 30–50 ms suits editors; values under 4 ms are raised to 4 ms.
    pub fn start(files: &[PathBuf], debounce: Duration) -> Result<FileWatcher, WatchError> {
        let shared = Arc::new(Shared::default());
        let sink = Arc::clone(&shared);
        let debouncer = new_debouncer(
            debounce.max(MIN_DEBOUNCE),
            None,
            move |result: DebounceEventResult| sink.deliver(result),
        )
        .map_err(WatchError::Start)?;
        let mut watcher = FileWatcher {
            debouncer,
            shared,
            dirs: BTreeSet::new(),
        };
        watcher.set_files(files)?;
        Ok(watcher)
    }

    /// Replaces the watched set, since a scene edit may add or remove resources.
    /// Meant to be called after every reload, because it also renews the
    /// watch of a directory that was deleted and recreated.
    ///
    /// Directories still needed stay watched throughout, so a change to a
    /// file in both sets is neither lost nor dropped from the pending
    /// changes; pending changes of files no longer watched are forgotten.
    /// On error the previous set stays in force.
    pub fn set_files(&mut self, files: &[PathBuf]) -> Result<(), WatchError> {
        let mut wanted = BTreeMap::new();
        for file in files {
            wanted
                .entry(canonical(file)?)
                .or_insert_with(|| file.clone());
        }
        let dirs: BTreeSet<PathBuf> = wanted
            .keys()
            .filter_map(|f| f.parent().map(Path::to_path_buf))
            .collect();

        // Watching a directory again is harmless (the kernel keeps one watch
        // per directory) and restores a watch that ended with a deletion.
        let mut added = Vec::new();
        for dir in &dirs {
            if let Err(e) = self.debouncer.watch(dir, RecursiveMode::NonRecursive) {
                for dir in &added {
                    let _ = self.debouncer.unwatch(dir);
                }
                return Err(WatchError::Directory {
                    dir: dir.clone(),
                    source: e,
                });
            }
            if !self.dirs.contains(dir) {
                added.push(dir);
            }
        }

        {
            let mut state = self.shared.lock();
            state.pending.retain(|f| wanted.contains_key(f));
            state.files = wanted;
        }

        for dir in self.dirs.difference(&dirs) {
            // A deleted directory has taken its watch with it; nothing to undo.
            let _ = self.debouncer.unwatch(dir);
        }
        self.dirs = dirs;
        Ok(())
    }

    /// The watched files that changed since the last call, each once, as the
    /// caller spelt them; empty when nothing changed. Never blocks on the
    /// file system, so a control loop can call it every tick.
    pub fn take_changes(&self) -> Vec<PathBuf> {
        self.shared.lock().take()
    }

    /// Like [`take_changes`](Self::take_changes), but waits up to `timeout`
    /// for a change, for a control thread that has nothing else to do.
    pub fn wait_changes(&self, timeout: Duration) -> Vec<PathBuf> {
        let state = self.shared.lock();
        let (mut state, _) = self
            .shared
            .changed
            .wait_timeout_while(state, timeout, |s| s.pending.is_empty())
            .unwrap_or_else(PoisonError::into_inner);
        state.take()
    }

    /// Problems since the last call (the newest 64 at most): notify's errors,
    /// and watched directories that went away. They are kept rather than
    /// raised because the watcher keeps running after them; the caller
    /// decides whether to show them.
    pub fn take_errors(&self) -> Vec<String> {
        self.shared.lock().errors.drain(..).collect()
    }
}

impl Shared {
    /// Never panics on a poisoned lock: the state is a set of paths that is
    /// valid at every step, and a panic here would end notify's thread.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs on the debouncer's thread.
    fn deliver(&self, result: DebounceEventResult) {
        let mut state = self.lock();
        match result {
            Ok(events) => {
                let before = state.pending.len();
                for event in &events {
                    state.note(event);
                }
                if state.pending.len() > before {
                    self.changed.notify_all();
                }
            }
            Err(errors) => {
                for e in errors {
                    state.push_error(e.to_string());
                }
            }
        }
    }
}

impl State {
    fn note(&mut self, event: &Event) {
        if event.need_rescan() {
            // The kernel's queue overflowed and events were lost, so any
            // watched file may have changed.
            self.pending.extend(self.files.keys().cloned());
            return;
        }
        if !is_change(&event.kind) {
            return;
        }
        // A watched directory that is removed or renamed names itself in
        // such an event, and its files go with it.
        let gone = matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        );
        // Every path counts: a rename event names both the old and the new
        // name, and either may be the watched file.
        for path in &event.paths {
            if self.files.contains_key(path) {
                self.pending.insert(path.clone());
            } else if gone && self.files.keys().any(|f| f.parent() == Some(path)) {
                let orphans = self.files.keys().filter(|f| f.parent() == Some(path));
                self.pending.extend(orphans.cloned());
                self.push_error(format!(
                    "{} was removed or renamed; changes in it are not seen until it is watched again",
                    path.display()
                ));
            }
        }
    }

    fn push_error(&mut self, error: String) {
        if self.errors.len() == MAX_ERRORS {
            self.errors.pop_front();
        }
        self.errors.push_back(error);
    }

    fn take(&mut self) -> Vec<PathBuf> {
        let pending = std::mem::take(&mut self.pending);
        pending
            .iter()
            .filter_map(|f| self.files.get(f).cloned())
            .collect()
    }
}

/// Opening, reading and closing change nothing, and reloading the scene
/// opens it: counting those would reload forever. Metadata changes do count,
/// so that `touch` forces a reload; reads that update the access time do not
/// produce them.
fn is_change(kind: &EventKind) -> bool {
    !matches!(kind, EventKind::Access(_) | EventKind::Other)
}

/// Why files cannot be watched; each keeps the error it came from.
#[derive(Debug)]
pub enum WatchError {
    /// The watcher itself could not start.
    Start(notify::Error),
    /// A directory of a watched file could not be watched.
    Directory { dir: PathBuf, source: notify::Error },
    /// A path with no file name (`/`, `..`).
    NotAFile(PathBuf),
    /// The directory a missing file would appear in cannot be resolved.
    Parent {
        file: PathBuf,
        dir: PathBuf,
        source: std::io::Error,
    },
}

impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchError::Start(e) => write!(f, "cannot start watching files: {e}"),
            WatchError::Directory { dir, source } => {
                write!(f, "cannot watch {}: {source}", dir.display())
            }
            WatchError::NotAFile(p) => write!(f, "cannot watch {}: not a file name", p.display()),
            WatchError::Parent { file, dir, source } => write!(
                f,
                "cannot watch {}: its directory {}: {source}",
                file.display(),
                dir.display()
            ),
        }
    }
}

impl std::error::Error for WatchError {}

/// The path events will carry for `file`, so that `scenes/x.json` and an
/// absolute spelling of it match. A missing file is placed in its
/// canonical directory, where it will appear when it is created.
fn canonical(file: &Path) -> Result<PathBuf, WatchError> {
    if let Ok(path) = file.canonicalize() {
        return Ok(path);
    }
    let name = file
        .file_name()
        .ok_or_else(|| WatchError::NotAFile(file.to_path_buf()))?;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let dir = dir.canonicalize().map_err(|e| WatchError::Parent {
        file: file.to_path_buf(),
        dir: dir.to_path_buf(),
        source: e,
    })?;
    Ok(dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::io::Write;
    use std::time::Instant;

    const DEBOUNCE: Duration = Duration::from_millis(30);
    /// How long a test waits for a change before calling it lost.
    const DEADLINE: Duration = Duration::from_secs(2);
    const SAVES: usize = 20;

    /// A fresh directory per test, removed when the test ends.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("morphrt-watch-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn file(&self, name: &str) -> PathBuf {
            let path = self.0.join(name);
            fs::write(&path, "{}").unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Every report until one names `path`, or until the deadline.
    fn reports_until(w: &FileWatcher, path: &Path) -> Vec<Vec<PathBuf>> {
        let end = Instant::now() + DEADLINE;
        let mut reports = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return reports;
            }
            let report = w.wait_changes(left);
            if report.is_empty() {
                continue;
            }
            let done = report.iter().any(|p| p == path);
            reports.push(report);
            if done {
                return reports;
            }
        }
    }

    /// Waits for `path` to be reported and checks nothing else was.
    fn expect_change(w: &FileWatcher, path: &Path, what: &str) {
        let reports = reports_until(w, path);
        assert!(
            reports.last().is_some_and(|r| r.iter().any(|p| p == path)),
            "{what}: {} not reported (reports: {reports:?})",
            path.display()
        );
        for r in &reports {
            assert_eq!(r, &[path.to_path_buf()], "{what}: unexpected report");
        }
    }

    fn content(i: usize) -> String {
        format!("{{\"gain_db\": -{i}.5, \"nodes\": []}}")
    }

    /// Saves `SAVES` times in a row with `save`, each with new content,
    /// requires each save to be reported before the next, and then a plain
    /// write to be reported too, proving the watch survived the saves.
    fn survives(name: &str, save: fn(&Path, &str, usize)) {
        let dir = TempDir::new(name);
        let file = dir.file("x.json");
        let w = FileWatcher::start(std::slice::from_ref(&file), DEBOUNCE).unwrap();
        assert!(w.take_changes().is_empty());
        for i in 0..SAVES {
            save(&file, &content(i), i);
            expect_change(&w, &file, &format!("{name} save {i}"));
            assert_eq!(fs::read_to_string(&file).unwrap(), content(i));
        }
        fs::write(&file, "after").unwrap();
        expect_change(&w, &file, &format!("{name}: write after the saves"));
        assert_eq!(w.take_errors(), Vec::<String>::new());
    }

    #[test]
    fn atomic_rename_saves() {
        survives("atomic", |file, text, _| {
            let tmp = file.with_extension("json.tmp");
            fs::write(&tmp, text).unwrap();
            fs::rename(&tmp, file).unwrap();
        });
    }

    #[test]
    fn vim_style_saves() {
        survives("vim", |file, text, i| {
            // vim probes whether it may create files in the directory.
            let probe = file.with_file_name("4913");
            fs::write(&probe, "").unwrap();
            fs::remove_file(&probe).unwrap();
            let backup = file.with_extension("json~");
            fs::rename(file, &backup).unwrap();
            fs::write(file, text).unwrap();
            // With 'backup' set the backup stays and the next save renames over it.
            if i % 2 == 0 {
                fs::remove_file(&backup).unwrap();
            }
        });
    }

    #[test]
    fn in_place_saves() {
        survives("in-place", |file, text, _| fs::write(file, text).unwrap());
    }

    #[test]
    fn delete_and_recreate_saves() {
        survives("recreate", |file, text, _| {
            fs::remove_file(file).unwrap();
            fs::write(file, text).unwrap();
        });
    }

    /// A file seen half-written must be reported again when it is complete:
    /// the consumer's read of the half fails to parse and waits for the next
    /// report. Odd saves complete only after the half has been reported,
    /// even saves complete at once (one report or two are both fine).
    #[test]
    fn half_written_saves() {
        let dir = TempDir::new("half");
        let file = dir.file("x.json");
        let w = FileWatcher::start(std::slice::from_ref(&file), DEBOUNCE).unwrap();
        for i in 0..SAVES {
            let text = content(i);
            let (head, tail) = text.split_at(text.len() / 2);
            let mut out = fs::File::create(&file).unwrap();
            out.write_all(head.as_bytes()).unwrap();
            out.flush().unwrap();
            if i % 2 == 1 {
                expect_change(&w, &file, &format!("half of save {i}"));
                assert_eq!(fs::read_to_string(&file).unwrap(), head);
            }
            out.write_all(tail.as_bytes()).unwrap();
            drop(out);
            // What a consumer does: re-read on each report until it parses.
            let mut reads = Vec::new();
            while reads.last() != Some(&text) {
                expect_change(&w, &file, &format!("save {i} after reads {reads:?}"));
                reads.push(fs::read_to_string(&file).unwrap());
            }
        }
        fs::write(&file, "after").unwrap();
        expect_change(&w, &file, "write after the saves");
    }

    /// Reading a watched file must not report it, or reloading would loop.
    /// A second watched file is written after the reads; events come out in
    /// order, so a report of the read file would come no later than that.
    #[test]
    fn reading_is_not_a_change() {
        let dir = TempDir::new("read");
        let scene = dir.file("x.json");
        let other = dir.file("y.json");
        // Written just now, so the first read also updates the access time.
        fs::write(&scene, content(1)).unwrap();
        let w = FileWatcher::start(&[scene.clone(), other.clone()], DEBOUNCE).unwrap();
        for _ in 0..5 {
            assert_eq!(fs::read_to_string(&scene).unwrap(), content(1));
        }
        fs::write(&other, content(2)).unwrap();
        expect_change(&w, &other, "write after reads");
    }

    /// Ten writes in quick succession come out as one change or a few, each
    /// report naming the file once, and the last content is what a read gets.
    #[test]
    fn burst_coalesces() {
        let dir = TempDir::new("burst");
        let file = dir.file("x.json");
        // A longer debounce than elsewhere so that a scheduler stall in the
        // middle of the burst still falls inside one debounce period.
        let debounce = Duration::from_millis(100);
        let w = FileWatcher::start(std::slice::from_ref(&file), debounce).unwrap();
        for i in 0..10 {
            fs::write(&file, content(i)).unwrap();
        }
        let end = Instant::now() + DEADLINE;
        let mut reports = Vec::new();
        while reports.is_empty() && Instant::now() < end {
            let report = w.take_changes();
            if report.is_empty() {
                std::thread::sleep(Duration::from_millis(5));
            } else {
                reports.push(report);
            }
        }
        // Anything else from the burst is out within a few debounce periods.
        loop {
            let report = w.wait_changes(debounce * 3);
            if report.is_empty() {
                break;
            }
            reports.push(report);
        }
        assert!(
            (1..=3).contains(&reports.len()),
            "10 writes gave {} reports: {reports:?}",
            reports.len()
        );
        for r in &reports {
            assert_eq!(r, std::slice::from_ref(&file));
        }
        assert_eq!(fs::read_to_string(&file).unwrap(), content(9));
    }

    /// Files next to the watched one, including every kind of editor
    /// scratch file, are not reported; a second watched file written after
    /// them proves their events have been delivered and dropped.
    #[test]
    fn neighbours_and_scratch_files_are_not_changes() {
        let dir = TempDir::new("neighbours");
        let scene = dir.file("x.json");
        let other = dir.file("y.json");
        let w = FileWatcher::start(&[scene.clone(), other.clone()], DEBOUNCE).unwrap();
        let names = [
            "unrelated.json",
            "x.json.tmp",
            ".x.json.swp",
            ".x.json.swx",
            "x.json~",
            "4913",
            ".#x.json",
        ];
        for name in names {
            let path = dir.0.join(name);
            fs::write(&path, "scratch").unwrap();
            fs::write(&path, "more").unwrap();
        }
        fs::remove_file(dir.0.join("4913")).unwrap();
        fs::write(&other, content(1)).unwrap();
        expect_change(&w, &other, "write after the scratch files");
    }

    /// A resource in another directory joins the set, and the file in both
    /// sets keeps its pending change across the switch.
    #[test]
    fn set_files_adds_a_resource_elsewhere() {
        let dir = TempDir::new("set-files");
        let scene = dir.file("x.json");
        fs::create_dir(dir.0.join("samples")).unwrap();
        let sample = dir.0.join("samples").join("kick.wav");
        fs::write(&sample, "RIFF").unwrap();
        let mut w = FileWatcher::start(std::slice::from_ref(&scene), DEBOUNCE).unwrap();

        fs::write(&sample, "RIFF1").unwrap();
        fs::write(&scene, content(1)).unwrap();
        // Wait for the scene's change without taking it: it must survive set_files.
        let end = Instant::now() + DEADLINE;
        while w.shared.lock().pending.is_empty() && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        w.set_files(&[scene.clone(), sample.clone()]).unwrap();
        assert_eq!(w.take_changes(), vec![scene.clone()]);

        for i in 0..3 {
            fs::write(&sample, format!("RIFF{i}")).unwrap();
            expect_change(&w, &sample, &format!("sample write {i}"));
        }
        fs::write(&scene, content(2)).unwrap();
        expect_change(&w, &scene, "scene write after set_files");

        // Dropping the sample again: its directory is no longer watched.
        w.set_files(std::slice::from_ref(&scene)).unwrap();
        assert_eq!(w.dirs.len(), 1);
        fs::write(&sample, "RIFF-late").unwrap();
        fs::write(&scene, content(3)).unwrap();
        expect_change(&w, &scene, "scene write after dropping the sample");
    }

    /// Two files of one directory given under different spellings (as a
    /// scene path and a resource path resolved from it can be) are both
    /// reported, each under the caller's spelling: the kernel has one watch
    /// per directory and names its events by one path only. A file missing
    /// at the start is reported when it appears.
    #[test]
    fn spellings_and_missing_files() {
        let dir = TempDir::new("spellings");
        fs::create_dir(dir.0.join("sub")).unwrap();
        let plain = dir.file("x.json");
        dir.file("y.json");
        let spelt = dir.0.join("sub").join("..").join(".").join("y.json");
        let missing = dir.0.join("sub").join("later.json");
        let files = [plain.clone(), spelt.clone(), missing.clone()];
        let w = FileWatcher::start(&files, DEBOUNCE).unwrap();

        fs::write(&plain, content(1)).unwrap();
        expect_change(&w, &plain, "write to the plainly spelt file");
        fs::write(dir.0.join("y.json"), content(2)).unwrap();
        expect_change(&w, &spelt, "write to the file spelt through sub/..");
        fs::write(&missing, content(3)).unwrap();
        expect_change(&w, &missing, "creation of a file missing at the start");
    }

    /// Deleting a watched directory reports its files and ends its watch;
    /// the next set_files watches the recreated directory again.
    #[test]
    fn deleted_directory_is_reported_and_watched_again() {
        let dir = TempDir::new("deleted-dir");
        let sub = dir.0.join("sub");
        fs::create_dir(&sub).unwrap();
        let file = sub.join("x.json");
        fs::write(&file, content(0)).unwrap();
        let mut w = FileWatcher::start(std::slice::from_ref(&file), DEBOUNCE).unwrap();

        fs::remove_dir_all(&sub).unwrap();
        expect_change(&w, &file, "deletion of the directory");
        let errors = w.take_errors();
        assert!(
            errors.len() == 1 && errors[0].contains("removed or renamed"),
            "{errors:?}"
        );
        fs::create_dir(&sub).unwrap();
        fs::write(&file, content(1)).unwrap();
        w.set_files(std::slice::from_ref(&file)).unwrap();
        fs::write(&file, content(2)).unwrap();
        expect_change(&w, &file, "write after the directory was recreated");
    }

    #[test]
    fn start_fails_for_a_missing_directory() {
        let dir = TempDir::new("no-dir");
        let err = FileWatcher::start(&[dir.0.join("gone").join("x.json")], DEBOUNCE)
            .err()
            .expect("a file in a missing directory cannot be watched");
        assert!(matches!(err, WatchError::Parent { .. }), "{err}");
        assert!(err.to_string().contains("gone"), "{err}");
    }

    /// An overflowed kernel queue loses events, so every watched file must
    /// be reported; access events never are.
    #[test]
    fn rescan_reports_every_file_and_access_nothing() {
        use notify::event::{AccessKind, Flag};
        let mut state = State::default();
        for f in ["/a/x.json", "/b/y.wav"] {
            state.files.insert(PathBuf::from(f), PathBuf::from(f));
        }
        state.note(
            &Event::new(EventKind::Access(AccessKind::Any)).add_path(PathBuf::from("/a/x.json")),
        );
        assert_eq!(state.take(), Vec::<PathBuf>::new());
        state.note(&Event::new(EventKind::Other).set_flag(Flag::Rescan));
        assert_eq!(
            state.take(),
            vec![PathBuf::from("/a/x.json"), PathBuf::from("/b/y.wav")]
        );
    }
}
