//! Snapshots asked for while playing (`w`, or a timetagged request): the
//! audio thread saves the playing engine between handovers, and its
//! state is written here, off the audio thread, as a snapshot file of the
//! engine playing.

use super::{LiveSession, Phase, SnapshotFailure};
use crate::engine::EngineState;
use crate::host::live::player::ToAudio;
use crate::host::record::snapshot::WriteError;
use std::io::Write;
use std::path::{Path, PathBuf};

impl LiveSession {
    /// Asks for a snapshot file of the playing engine at the next block
    /// boundary (between handovers): `STEM.<sample>.snapshot.json`.
    pub fn request_snapshot(&mut self, stem: PathBuf) {
        self.snapshot_wanted = Some((stem, None));
    }

    /// Asks for a snapshot file of the playing engine at sample `at`: the
    /// state at `at` exactly under a sample-accurate profile (the audio
    /// thread cuts its block there), at the start of its block under a
    /// block-accurate one, or at the next block boundary if the clock has
    /// passed it ([`ToAudio::SaveAt`]).
    pub fn request_snapshot_at(&mut self, stem: PathBuf, at: u64) {
        self.snapshot_wanted = Some((stem, Some(at)));
    }

    /// Asks the audio thread for the save of a snapshot asked for, when
    /// nothing is in flight or queued (it waits for the buffer otherwise,
    /// and stays asked for when the request does not get through).
    pub(super) fn start_snapshot(&mut self) {
        if !matches!(self.phase, Phase::Idle)
            || self.queued.is_some()
            || self.snapshot_wanted.is_none()
            || self.saved.is_none()
        {
            return;
        }
        let (stem, at) = self.snapshot_wanted.take().expect("checked");
        let buf = self.saved.take().expect("checked");
        let request = match at {
            Some(at) => ToAudio::SaveAt { state: buf, at },
            None => ToAudio::Save(buf),
        };
        match self.link.send(request) {
            Ok(()) => self.phase = Phase::Snapshotting(stem),
            Err(ToAudio::Save(buf) | ToAudio::SaveAt { state: buf, .. }) => {
                self.saved = Some(buf);
                self.snapshot_wanted = Some((stem, at));
            }
            Err(_) => unreachable!("pushed a capture"),
        }
    }

    /// Writes the saved state as a snapshot file (off the audio thread).
    pub(super) fn write_snapshot(
        &mut self,
        state: &EngineState,
        at: u64,
        stem: &Path,
        log: &mut dyn Write,
    ) {
        let path = PathBuf::from(format!("{}.{at}.snapshot.json", stem.display()));
        // The engine saved is the one playing: its text, profile and
        // resources, not those of a change queued meanwhile.
        let result = (|| -> Result<u64, SnapshotFailure> {
            let mut opts = self.fixed.options(self.profile);
            opts.skip_build = true;
            let (_, plan) = self.compile_plan(&self.playing_text, &opts)?;
            let cx = crate::host::record::snapshot::SnapshotContext::new(&plan, &self.playing_text)
                .map_err(WriteError::Snapshot)?;
            let mut inputs = self.protected.clone();
            inputs.add("the scene", &self.path);
            for (reference, file) in &self.resources {
                inputs.add(&format!("resource `{reference}`, read from"), file);
            }
            Ok(cx.write(state, &path, &inputs)?.bytes)
        })();
        match result {
            Ok(bytes) => {
                let _ = writeln!(
                    log,
                    "\nsnapshot at {:.3} s written to {} ({bytes} bytes)",
                    at as f64 / self.fixed.sample_rate as f64,
                    path.display()
                );
                self.last_result = format!("snapshot {}", path.display());
                self.snapshots.push((at, path));
            }
            Err(e) => {
                let _ = writeln!(log, "\nwarning: cannot write the snapshot: {e}");
            }
        }
    }
}
