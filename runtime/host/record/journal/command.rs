//! `morphrt replay`: its arguments, the output checked before the replay
//! renders (none of the files it reads, room for the WAV), and the WAV
//! written.

use super::error::JournalError;
use super::read::{read, Session};
use super::rerender::{check_length, rerender, Replay};
use super::timeline::timeline;
use super::{KeptResource, Record};
use crate::host::files::error::FileError;
use crate::host::files::rules::{Inputs, Kind, Output};
use crate::host::files::wav::{WavFormat, WavLayout};
use crate::host::HostError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a replay as a 32-bit float WAV to a checked output: a regular
/// file under a temporary name, renamed into place when complete, or
/// streamed to a FIFO, a device or standard output (the header carries the
/// final sizes up front, RF64 past 4 GiB; below that the bytes are what
/// hound writes).
pub fn write_wav(
    r: &Replay,
    output: Output,
    stdout: &mut (dyn Write + Send),
) -> Result<(), HostError> {
    let layout = WavLayout {
        channels: u16::try_from(r.channels).map_err(|_| FileError::WavChannels(r.channels))?,
        sample_rate: r.sample_rate,
        format: WavFormat::F32,
        frames: r.samples.len() as u64 / r.channels.max(1) as u64,
    };
    let header = layout.header().ok_or(FileError::WavFrames(layout.frames))?;
    output.write_with(stdout, |w| {
        w.write_all(&header)?;
        for chunk in r.samples.chunks(1 << 14) {
            let bytes: Vec<u8> = chunk.iter().flat_map(|s| s.to_le_bytes()).collect();
            w.write_all(&bytes)?;
        }
        Ok(())
    })?;
    Ok(())
}

/// Every file a replay reads: the journal, and the copies of resources and
/// snapshots it keeps beside it, none of which its output may replace.
pub fn inputs(journal: &Path, session: &Session) -> Inputs {
    let mut inputs = Inputs::default();
    inputs.add("the journal", journal);
    for r in &session.records {
        let kept: &[KeptResource] = match r {
            Record::Scene { resources, .. } | Record::Handover { resources, .. } => resources,
            Record::Resume { snapshot, .. } => std::slice::from_ref(snapshot),
            Record::Input { file, .. } => {
                inputs.add("the session's recorded input", &session.dir.join(file));
                &[]
            }
            _ => &[],
        };
        for k in kept {
            inputs.add(
                &format!("the journal's copy of `{}`", k.reference),
                &session.dir.join(&k.copy),
            );
        }
    }
    inputs
}

/// What `morphrt replay` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct ReplayOptions {
    /// The journal (`.jsonl`) that `run` wrote.
    pub journal: PathBuf,
    /// Output WAV file.
    ///
    /// An output like `render -o`, under the same rules: free space checked
    /// up front, a regular file replaced only when complete, `-o -`
    /// streams.
    #[arg(short = 'o', long = "output", required_unless_present = "info")]
    pub output: Option<PathBuf>,
    /// Stop at this time of the session (e.g. 30s, 1440000samples).
    #[arg(allow_hyphen_values = true, long)]
    pub until: Option<crate::scene::TimeArg>,
    /// Print the session's timeline (edits, switches, rejected edits) instead.
    ///
    /// In session time, from 0 when it started playing; a session resumed
    /// from a snapshot says once where on the scene's timeline it started.
    #[arg(long)]
    pub info: bool,
    /// Threads that render each block (1 to 1024; default: every core).
    ///
    /// The same bytes at every count, whatever count the session played
    /// at: as `render --threads`, each node computes what it computes
    /// alone and a node's inputs are summed in the graph's fixed order.
    #[arg(long, value_parser = crate::host::files::threads::thread_count, allow_negative_numbers = true)]
    pub threads: Option<u16>,
    /// Estimated nanoseconds of work a level of the graph must save before
    /// it is spread over the threads.
    #[arg(long = "thread-min-work-ns", hide = true)]
    pub min_work_ns: Option<u64>,
}

/// The size of the WAV a replay writes, when the journal says how long the
/// session was (its end record, or `--until`), so that the output's free
/// space is checked up front, as `render` checks it; else 0 (not checked).
/// A session longer than a replay renders is refused here, before that.
fn replay_len(path: &Path, session: &Session, until: Option<u64>) -> Result<u64, JournalError> {
    let Some(Record::Header {
        channels,
        sample_rate,
        ..
    }) = session.records.first()
    else {
        return Ok(0);
    };
    let end = session.records.iter().rev().find_map(|r| match r {
        Record::End { frames } => Some(*frames),
        _ => None,
    });
    let Some(frames) = until.map_or(end, |u| Some(end.map_or(u, |e| e.min(u)))) else {
        return Ok(0);
    };
    check_length(path, frames, *sample_rate)?;
    let layout = WavLayout {
        channels: u16::try_from(*channels).unwrap_or(u16::MAX),
        sample_rate: *sample_rate,
        format: WavFormat::F32,
        frames,
    };
    Ok(layout.file_len().unwrap_or(0))
}

/// `morphrt replay`: the timeline (`--info`) or the re-rendered session.
pub fn replay(opts: &ReplayOptions, log: &mut dyn Write) -> Result<(), HostError> {
    let journal = opts.journal.as_path();
    if let Some(holder) = crate::host::files::lock::writer_of(journal) {
        let _ = writeln!(
            log,
            "note: `{}` is still being written by {holder} (the session is playing): this is the session up to its last record so far",
            journal.display()
        );
    }
    if opts.info {
        print!("{}", timeline(journal)?);
        return Ok(());
    }
    let Some(out) = opts.output.as_deref() else {
        return Err(HostError::Usage(
            "replay needs -o OUT.wav (or --info)".to_string(),
        ));
    };
    let session = read(journal)?;
    let until = match &opts.until {
        Some(t) => {
            let rate = match session.records.first() {
                Some(Record::Header { sample_rate, .. }) => *sample_rate,
                _ => 48_000,
            };
            Some(t.length(rate, None, log).map_err(HostError::Usage)?)
        }
        None => None,
    };
    // Where the WAV goes is checked before the replay renders.
    let needed = replay_len(journal, &session, until)?;
    let output = Output::prepare(out, &inputs(journal, &session), needed, &Kind::REPLAY)?;
    let what = output.describe();
    let t0 = std::time::Instant::now();
    let threads = crate::host::files::threads::ThreadArgs {
        threads: opts.threads,
        min_work_ns: opts.min_work_ns,
        ..Default::default()
    };
    let workers = threads.workers(crate::host::files::threads::all_cores(), false)?;
    let threads = workers.as_ref().map_or(1, |w| w.threads());
    let r = rerender(journal, until, workers)?;
    for w in &r.warnings {
        let _ = writeln!(log, "warning: {w}");
    }
    write_wav(&r, output, &mut std::io::stdout())?;
    let secs = r.frames as f64 / r.sample_rate as f64;
    let _ = writeln!(
        log,
        "replayed {} frames ({secs:.2}s, {} ch) to {what}{} in {:.2}s ({:.1}x real time)",
        r.frames,
        r.channels,
        match threads {
            1 => String::new(),
            n => format!(" on {n} threads"),
        },
        t0.elapsed().as_secs_f64(),
        secs / t0.elapsed().as_secs_f64().max(1e-9)
    );
    Ok(())
}
