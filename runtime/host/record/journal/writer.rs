//! Writing a journal while a session plays: where it goes
//! ([`prepare`], [`default_path`]) and the open [`Journal`] that appends
//! records and keeps copies of resources beside it.

use super::{KeptResource, Record};
use crate::host::files::digest::sha256_hex;
use crate::host::files::error::FileError;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::write::write_file;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where `run` journals by default: the platform's data directory.
pub fn default_path(scene: &Path) -> Option<PathBuf> {
    let stem = scene
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene".to_string());
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    dirs::data_dir().map(|d| {
        d.join("morphrt")
            .join("journals")
            .join(format!("{secs}-{}-{stem}.jsonl", std::process::id()))
    })
}

/// An open journal, appended to as the session goes.
pub struct Journal {
    path: PathBuf,
    /// The journal for messages: "the journal `j.jsonl`".
    named: String,
    file: std::io::BufWriter<std::fs::File>,
    /// Where resource copies go: `resources/` beside the journal.
    store: PathBuf,
    /// What the session reads, which no copy may replace; grows with the
    /// resources edits add.
    inputs: Inputs,
}

/// Checks where a journal goes, under the output rules: never one of
/// `inputs` (the scene, its resources, the snapshot resumed from), never a
/// device, a FIFO or a directory. Creates its directory, which the data
/// directory's default may not have yet. Unless `replace`, an existing
/// file is [`FileError::Exists`] and the journal will be created
/// exclusively ([`Output::prepare_new`]).
pub fn prepare(path: &Path, inputs: &Inputs, replace: bool) -> Result<Output, FileError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            FileError::io(
                dir,
                format!("cannot create `{}` for the journal", dir.display()),
                e,
            )
        })?;
    }
    Output::prepare_with(path, inputs, 0, &Kind::JOURNAL, replace)
}

impl Journal {
    /// Creates the journal at a checked output (see [`prepare`]), which it
    /// appends to in place: a killed session leaves every record written
    /// before it. `inputs` are the session's, which resource copies must
    /// not replace either.
    pub fn create(output: Output, inputs: &Inputs) -> Result<Journal, FileError> {
        let path = output.shown.clone();
        let named = output.named();
        let file = output.open_in_place()?;
        let store = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join("resources");
        Ok(Journal {
            path,
            named,
            file: std::io::BufWriter::new(file),
            store,
            inputs: inputs.clone(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record and flushes it to the operating system.
    pub fn write(&mut self, r: &Record) -> Result<(), FileError> {
        let line = serde_json::to_string(r).expect("journal records serialise");
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|e| FileError::io(&self.path, format!("cannot write {}", self.named), e))
    }

    /// Appends a progress record (the session has played up to sample
    /// `at`) and syncs the journal to disk, so that what it says survives
    /// a power cut as well as a killed process.
    pub fn progress(&mut self, at: u64) -> Result<(), FileError> {
        self.write(&Record::Progress { at })?;
        self.file
            .get_ref()
            .sync_data()
            .map_err(|e| FileError::io(&self.path, format!("cannot sync {}", self.named), e))
    }

    /// Keeps a copy of each resource beside the journal (once per content),
    /// each written whole through the one writer.
    pub fn resources(
        &mut self,
        list: &[(String, PathBuf)],
    ) -> Result<Vec<KeptResource>, FileError> {
        let mut out = Vec::with_capacity(list.len());
        for (reference, path) in list {
            let bytes = std::fs::read(path).map_err(|e| {
                FileError::io(
                    path,
                    format!("cannot read `{}` to journal it", path.display()),
                    e,
                )
            })?;
            self.inputs
                .add(&format!("resource `{reference}`, read from"), path);
            let sha = sha256_hex(&bytes);
            let ext = path
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            let name = format!("{sha}{ext}");
            let dest = self.store.join(&name);
            if !dest.is_file() {
                std::fs::create_dir_all(&self.store).map_err(|e| {
                    FileError::io(
                        &self.store,
                        format!("cannot create `{}`", self.store.display()),
                        e,
                    )
                })?;
                write_file(&dest, &self.inputs, &Kind::JOURNAL_COPY, |w| {
                    w.write_all(&bytes)
                })?;
            }
            out.push(KeptResource {
                reference: reference.clone(),
                path: path.display().to_string(),
                sha256: sha,
                copy: format!("resources/{name}"),
            });
        }
        Ok(out)
    }
}
