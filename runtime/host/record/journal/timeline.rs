//! The session's timeline that `replay --info` prints, one line per
//! event, in session time.

use super::read::read;
use super::rerender::{last_sample, no_end};
use super::Record;
use crate::host::HostError;
use std::path::Path;

/// The session's timeline, one line per event, for `replay --info`. Every
/// time and sample is the session's: from 0 when it started playing. The
/// journal records edits, rejections and snapshots on the engine's clock,
/// which a session resumed from a snapshot starts at the snapshot's
/// sample: those are shifted back by it, and the resume line says where on
/// the scene's timeline the session started.
pub fn timeline(path: &Path) -> Result<String, HostError> {
    let s = read(path)?;
    let mut out = String::new();
    let mut rate = 48_000.0;
    // The engine clock at the session's first frame.
    let origin = s
        .records
        .iter()
        .find_map(|r| match r {
            Record::Resume { clock, .. } => Some(*clock),
            _ => None,
        })
        .unwrap_or(0);
    let session = |n: u64| n.saturating_sub(origin);
    for w in &s.warnings {
        out += &format!("warning: {w}\n");
    }
    if !s.records.iter().any(|r| matches!(r, Record::End { .. })) {
        let sample_rate = match s.records.first() {
            Some(Record::Header { sample_rate, .. }) => *sample_rate,
            _ => 48_000,
        };
        let last = no_end(last_sample(&s.records), sample_rate);
        out += &format!("warning: {last}; `replay` plays it up to there\n");
    }
    for r in &s.records {
        let t = |n: u64, rate: f64| format!("{:>9.3} s", n as f64 / rate);
        let line = match r {
            Record::Header {
                morphrt,
                cpu,
                cpu_level,
                scene,
                block_size,
                sample_rate,
                seed,
                profile,
                channels,
                ..
            } => {
                rate = *sample_rate as f64;
                format!(
                    "session of {scene}: morphrt {morphrt}, {profile}, {sample_rate} Hz, block {block_size}, {channels} ch, seed {}, on {cpu} ({cpu_level})",
                    seed.map_or("none".to_string(), |s| s.to_string())
                )
            }
            Record::Resume { snapshot, clock } => format!(
                "{}  resumed from snapshot {} at sample {clock} ({:.3} s) of the scene's timeline; times and samples here are the session's, from 0 when it started playing",
                t(0, rate),
                snapshot.path,
                *clock as f64 / rate
            ),
            Record::Scene { resources, .. } => format!(
                "{}  start ({} resource{})",
                t(0, rate),
                resources.len(),
                if resources.len() == 1 { "" } else { "s" }
            ),
            Record::Handover {
                reason,
                from,
                to,
                saved_at,
                swap_at,
                fade,
                ..
            } => {
                let what = match (reason.as_str(), from, to) {
                    ("switch", Some(f), Some(t)) => format!("switch {f} → {t}"),
                    ("tempo", _, _) => "the transport's tempo".to_string(),
                    _ => "edit".to_string(),
                };
                let (n, s) = (session(*saved_at), session(*swap_at));
                format!(
                    "{}  {what} (captured at {n}, swapped at {s}, fade {fade})",
                    t(s, rate)
                )
            }
            Record::Rejected { at, error, .. } => format!(
                "{}  rejected edit: {}",
                t(session(*at), rate),
                error.lines().next().unwrap_or("")
            ),
            Record::Snapshot { at, file } => {
                format!("{}  snapshot {file}", t(session(*at), rate))
            }
            Record::Control {
                at,
                node,
                param,
                value,
                from,
                ..
            } => format!(
                "{}  control {node}.{param} = {} ({from})",
                t(session(*at), rate),
                value.as_f64()
            ),
            Record::Note {
                at,
                module,
                action,
                from,
            } => format!(
                "{}  note {} ({from})",
                t(session(*at), rate),
                action.text(module)
            ),
            Record::ControlError { at, from, error } => format!(
                "{}  control refused: {from}: {error}",
                t(session(*at), rate)
            ),
            Record::Input {
                file,
                source,
                channels,
                format,
                ..
            } => format!(
                "{}  input from {source} ({channels} ch, {format}), recorded in {file}",
                t(0, rate)
            ),
            Record::InputEnd { frames, .. } => {
                format!("{}  input recorded: {frames} frames", t(*frames, rate))
            }
            // One a second: the timeline is the events between them.
            Record::Progress { .. } => continue,
            Record::Stop { at, fade } => format!("{}  stop (fade {fade} frames)", t(*at, rate)),
            Record::End { frames } => format!("{}  end ({frames} frames)", t(*frames, rate)),
        };
        out += &line;
        out.push('\n');
    }
    Ok(out)
}
