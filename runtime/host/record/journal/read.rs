//! Reading a journal back: its records line by line (a last line cut
//! short is a warning), checked against the header this build expects.

use super::error::{JournalError, Problem};
use super::{Record, FORMAT, VERSION};
use crate::host::machine::{build_id, cpu_info};
use std::path::{Path, PathBuf};

/// A journal read back.
#[derive(Debug)]
pub struct Session {
    pub records: Vec<Record>,
    /// Problems that do not stop a replay (a truncated last line, another build).
    pub warnings: Vec<String>,
    pub dir: PathBuf,
}

/// Reads a journal. A last line cut short (a session killed while writing
/// it: no newline at its end) is dropped with a warning naming it;
/// anything else that does not parse is an error naming the line.
pub fn read(path: &Path) -> Result<Session, JournalError> {
    let bytes = crate::scene::resource::read_regular(path)
        .map_err(|e| JournalError::new(path, Problem::Unreadable(e)))?;
    let (records, mut warnings) = parse_lines(path, &bytes)?;
    match records.first() {
        Some(Record::Header {
            format,
            version,
            morphrt,
            build,
            cpu_level,
            channels,
            ..
        }) => {
            if format != FORMAT || *version != VERSION {
                return Err(JournalError::at_line(
                    path,
                    1,
                    Problem::Format {
                        format: format.clone(),
                        version: *version,
                    },
                ));
            }
            if !(1..=u16::MAX as usize).contains(channels) {
                return Err(JournalError::at_line(path, 1, Problem::Channels(*channels)));
            }
            if morphrt != env!("CARGO_PKG_VERSION") {
                warnings.push(format!(
                    "the session ran on morphrt {morphrt}, this is {}: repro and live stretches may differ in their last bits; strict stays exact",
                    env!("CARGO_PKG_VERSION")
                ));
            } else if *build != build_id() || *cpu_level != cpu_info().1 {
                warnings.push(
                    "the session ran on another build or CPU feature level: repro and live stretches may differ in their last bits; strict stays exact"
                        .to_string(),
                );
            }
        }
        _ => return Err(JournalError::at_line(path, 1, Problem::NoHeader)),
    }
    if !records.iter().any(|r| matches!(r, Record::Scene { .. })) {
        return Err(JournalError::new(path, Problem::NoScene));
    }
    Ok(Session {
        records,
        warnings,
        dir: path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    })
}

/// The records of a journal's text, one per line. The last line, when it
/// has no newline (every record is written with one) or stops in the
/// middle of a value, is a record cut short: a warning, not an error.
fn parse_lines(path: &Path, bytes: &[u8]) -> Result<(Vec<Record>, Vec<String>), JournalError> {
    let terminated = bytes.ends_with(b"\n");
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = body.split(|b| *b == b'\n').collect();
    let n = lines.len();
    let mut records = Vec::new();
    let mut warnings = Vec::new();
    for (i, line) in lines.into_iter().enumerate() {
        let last = i + 1 == n;
        match parse_line(line) {
            Ok(Some(r)) => records.push(r),
            Ok(None) => {}
            Err((eof, _)) if last && (eof || !terminated) => {
                warnings.push(cut_short(path, i + 1));
            }
            Err((_, problem)) => return Err(JournalError::at_line(path, i + 1, problem)),
        }
    }
    Ok((records, warnings))
}

/// One line of a journal: a record, nothing (a blank line), or why not,
/// with whether it stops in the middle of a value.
fn parse_line(line: &[u8]) -> Result<Option<Record>, (bool, Problem)> {
    let text = std::str::from_utf8(line).map_err(|source| {
        let byte = source.valid_up_to() + 1;
        (false, Problem::NotText { byte, source })
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| (e.is_eof(), Problem::NotARecord(e)))
}

/// The warning for a last line cut short.
fn cut_short(path: &Path, line: usize) -> String {
    format!(
        "{}:{line}: the journal ends in the middle of a record (the session was cut off); replaying up to the record before it",
        path.display()
    )
}
