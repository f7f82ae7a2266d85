//! Standard MIDI files (`.mid`, format 0 or 1) as a list of channel
//! messages at exact times: what `render --midi` maps onto the scene's
//! controls offline, and the `file:` MIDI port plays into a live session.
//!
//! **Time.** Every event's time is an exact fraction of a second, kept as
//! an integer numerator over one denominator per file, never a float:
//! - metrical division (ticks per quarter note, PPQ): the tempo map (every
//!   Set Tempo meta event of every track, at its tick; 120 bpm before the
//!   first) gives tick t the time Σ ticks·µs-per-quarter / (PPQ·10⁶);
//! - SMPTE division (frames per second × ticks per frame): tick t is at
//!   t / (fps·tpf) s, where "29" is 30 drop-frame, 30000/1001 frames a
//!   second; tempo events do not apply.
//!
//! A time becomes a sample at rate sr as the nearest sample, halves
//! rounded up: ⌊(t·sr + ½)⌋, in integer arithmetic, so the same file lands
//! on the same samples on every machine.
//!
//! **Order.** All tracks are merged by time; events at the same time keep
//! track order, then their order in the track.

use super::MidiFileError;
use std::path::Path;

/// The largest MIDI file read (64 MiB: hours of dense performance).
pub const MAX_BYTES: u64 = 64 << 20;

/// One channel message of the file at its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedMessage {
    /// The time's numerator over [`MidiFile::den`] seconds.
    pub num: u128,
    /// The track it came from (0-based).
    pub track: usize,
    /// Status and data bytes; `len` of them are used.
    pub bytes: [u8; 3],
    pub len: usize,
}

impl TimedMessage {
    /// The message's bytes.
    pub fn message(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A MIDI file's channel messages, merged and timed.
#[derive(Clone, Debug)]
pub struct MidiFile {
    /// Every channel message, in time order.
    pub messages: Vec<TimedMessage>,
    /// The denominator of every time (seconds = num / den).
    pub den: u128,
    /// The time of the file's last event of any kind (its End of Track),
    /// over `den`.
    pub end: u128,
    /// `format 1, 3 tracks, 480 ticks per quarter`: for summaries.
    pub shape: String,
}

impl MidiFile {
    /// Reads and times the file at `path`; the error says what is wrong
    /// (missing, unreadable, not a MIDI file and what it is instead).
    pub fn read(path: &Path) -> Result<MidiFile, MidiFileError> {
        if path == Path::new("-") {
            return Err(MidiFileError::Stdin);
        }
        if let Ok(m) = std::fs::metadata(path) {
            if !m.is_file() {
                return Err(MidiFileError::NotAFile(path.to_path_buf()));
            }
            if m.len() > MAX_BYTES {
                return Err(MidiFileError::TooBig {
                    path: path.to_path_buf(),
                    bytes: m.len(),
                    max: MAX_BYTES,
                });
            }
        }
        let bytes = std::fs::read(path).map_err(|source| MidiFileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        MidiFile::parse(&bytes).map_err(|e| MidiFileError::At {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }

    /// Times the messages of a standard MIDI file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<MidiFile, MidiFileError> {
        if !bytes.starts_with(b"MThd") {
            return Err(MidiFileError::NotMidi {
                what: what_it_is(bytes),
            });
        }
        let smf = midly::Smf::parse(bytes).map_err(MidiFileError::Damaged)?;
        let format = match smf.header.format {
            midly::Format::SingleTrack => 0,
            midly::Format::Parallel => 1,
            midly::Format::Sequential => return Err(MidiFileError::Format2),
        };
        let clock = Clock::new(smf.header.timing, &smf.tracks)?;
        let (messages, end_tick) = merged(&smf.tracks);
        let messages = messages
            .into_iter()
            .map(|(tick, m)| TimedMessage {
                num: clock.at(tick),
                ..m
            })
            .collect();
        let tracks = smf.tracks.len();
        Ok(MidiFile {
            messages,
            den: clock.den,
            end: clock.at(end_tick),
            shape: format!(
                "format {format}, {tracks} track{}, {}",
                if tracks == 1 { "" } else { "s" },
                clock.division
            ),
        })
    }

    /// The sample at `sample_rate` a time (over [`MidiFile::den`]) lands on:
    /// the nearest, halves up.
    pub fn sample(&self, num: u128, sample_rate: u32) -> u64 {
        let s = (num * u128::from(sample_rate) + self.den / 2) / self.den;
        u64::try_from(s).unwrap_or(u64::MAX)
    }

    /// A time as a duration (nanoseconds, nearest, halves up).
    pub fn duration(&self, num: u128) -> std::time::Duration {
        let ns = (num * 1_000_000_000 + self.den / 2) / self.den;
        std::time::Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }
}

/// What a file that is not a MIDI file starts with.
fn what_it_is(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(4)];
    let known = [
        (&b"RIFF"[..], " (a RIFF file: WAV or RMID?)"),
        (b"{", " (JSON?)"),
        (b"OggS", " (Ogg audio)"),
        (b"fLaC", " (FLAC audio)"),
        (b"ID3", " (MP3 audio)"),
    ];
    if bytes.is_empty() {
        return "the file is empty".to_string();
    }
    let kind = known
        .iter()
        .find(|(magic, _)| bytes.starts_with(magic))
        .map_or("", |(_, k)| k);
    let hex: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
    format!("it starts with bytes {}{kind}, not `MThd`", hex.join(" "))
}

/// Every channel message of every track at its absolute tick, merged by
/// tick (ties: track, then file order), and the tick of the last event.
fn merged(tracks: &[midly::Track<'_>]) -> (Vec<(u64, TimedMessage)>, u64) {
    let mut all = Vec::new();
    let mut end = 0;
    for (track, events) in tracks.iter().enumerate() {
        let mut tick = 0u64;
        for e in events {
            tick += u64::from(e.delta.as_int());
            end = end.max(tick);
            if let midly::TrackEventKind::Midi { channel, message } = e.kind {
                let (bytes, len) = encode(channel.as_int(), message);
                let m = TimedMessage {
                    num: 0,
                    track,
                    bytes,
                    len,
                };
                all.push((tick, m));
            }
        }
    }
    // Stable: within a tick, track order, then order in the track.
    all.sort_by_key(|(tick, _)| *tick);
    (all, end)
}

/// A channel message's bytes.
fn encode(channel: u8, m: midly::MidiMessage) -> ([u8; 3], usize) {
    use midly::MidiMessage as M;
    let (kind, a, b, len) = match m {
        M::NoteOff { key, vel } => (0x80, key.as_int(), vel.as_int(), 3),
        M::NoteOn { key, vel } => (0x90, key.as_int(), vel.as_int(), 3),
        M::Aftertouch { key, vel } => (0xa0, key.as_int(), vel.as_int(), 3),
        M::Controller { controller, value } => (0xb0, controller.as_int(), value.as_int(), 3),
        M::ProgramChange { program } => (0xc0, program.as_int(), 0, 2),
        M::ChannelAftertouch { vel } => (0xd0, vel.as_int(), 0, 2),
        M::PitchBend { bend } => {
            let v = bend.0.as_int();
            (0xe0, (v & 0x7f) as u8, (v >> 7) as u8, 3)
        }
    };
    ([kind | (channel & 0x0f), a, b], len)
}

/// Ticks to exact times for one file.
struct Clock {
    den: u128,
    /// Metrical: (tick, time numerator there, µs per quarter from there).
    tempo: Vec<(u64, u128, u128)>,
    /// SMPTE: the numerator per tick.
    per_tick: u128,
    division: String,
}

impl Clock {
    fn new(timing: midly::Timing, tracks: &[midly::Track<'_>]) -> Result<Clock, MidiFileError> {
        match timing {
            midly::Timing::Metrical(ppq) => {
                let ppq = ppq.as_int();
                if ppq == 0 {
                    return Err(MidiFileError::ZeroDivision { smpte: false });
                }
                Ok(Clock {
                    den: u128::from(ppq) * 1_000_000,
                    tempo: tempo_map(tracks),
                    per_tick: 0,
                    division: format!("{ppq} ticks per quarter"),
                })
            }
            midly::Timing::Timecode(fps, tpf) => {
                if tpf == 0 {
                    return Err(MidiFileError::ZeroDivision { smpte: true });
                }
                let tpf = u128::from(tpf);
                let (den, per_tick, rate) = match fps {
                    midly::Fps::Fps29 => (30_000 * tpf, 1001, "29.97 (30 drop-frame)"),
                    other => (u128::from(other.as_int()) * tpf, 1, ""),
                };
                let rate = if rate.is_empty() {
                    fps.as_int().to_string()
                } else {
                    rate.to_string()
                };
                Ok(Clock {
                    den,
                    tempo: Vec::new(),
                    per_tick,
                    division: format!("SMPTE {rate} fps × {tpf} ticks per frame"),
                })
            }
        }
    }

    /// The time of `tick`, over `den`.
    fn at(&self, tick: u64) -> u128 {
        if self.tempo.is_empty() {
            return u128::from(tick) * self.per_tick;
        }
        let i = self.tempo.partition_point(|(t, _, _)| *t <= tick);
        let (from, num, us) = self.tempo[i.saturating_sub(1)];
        num + u128::from(tick - from) * us
    }
}

/// The tempo map of a metrical file: segments (tick, time numerator at
/// it, µs per quarter), starting at tick 0 with 120 bpm.
fn tempo_map(tracks: &[midly::Track<'_>]) -> Vec<(u64, u128, u128)> {
    let mut changes = Vec::new();
    for events in tracks {
        let mut tick = 0u64;
        for e in events {
            tick += u64::from(e.delta.as_int());
            if let midly::TrackEventKind::Meta(midly::MetaMessage::Tempo(us)) = e.kind {
                changes.push((tick, u128::from(us.as_int())));
            }
        }
    }
    changes.sort_by_key(|(tick, _)| *tick);
    let mut map: Vec<(u64, u128, u128)> = vec![(0, 0, 500_000)];
    for (tick, us) in changes {
        let &(from, num, prev) = map.last().expect("starts with one");
        let at = num + u128::from(tick - from) * prev;
        if tick == from {
            // The last tempo at a tick wins.
            map.pop();
        }
        map.push((tick, at, us));
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `tracks` (each a list of raw delta-prefixed event bytes).
    fn smf(format: u16, division: [u8; 2], tracks: &[&[u8]]) -> Vec<u8> {
        let mut f = b"MThd\0\0\0\x06".to_vec();
        f.extend(format.to_be_bytes());
        f.extend((tracks.len() as u16).to_be_bytes());
        f.extend(division);
        for t in tracks {
            f.extend(b"MTrk");
            f.extend((t.len() as u32 + 4).to_be_bytes());
            f.extend(*t);
            f.extend([0, 0xff, 0x2f, 0]);
        }
        f
    }

    #[test]
    fn tempo_changes_move_later_events() {
        // 96 PPQ; tempo 60 bpm (1 s per quarter) from tick 96.
        let conductor: &[u8] = &[0x60, 0xff, 0x51, 3, 0x0f, 0x42, 0x40];
        // cc at tick 0, 96 (0.5 s at 120 bpm) and 192 (then 1 s later).
        let notes: &[u8] = &[0, 0xb0, 1, 10, 0x60, 0xb0, 1, 20, 0x60, 0xb0, 1, 30];
        let f = MidiFile::parse(&smf(1, [0, 96], &[conductor, notes])).unwrap();
        let at: Vec<u64> = f.messages.iter().map(|m| f.sample(m.num, 48000)).collect();
        assert_eq!(at, [0, 24000, 72000]);
        assert_eq!(f.sample(f.end, 48000), 72000);
        assert_eq!(f.shape, "format 1, 2 tracks, 96 ticks per quarter");
    }

    #[test]
    fn smpte_drop_frame_and_rounding() {
        // 29.97 fps × 4 ticks: tick 1 = 1001/120000 s = 400.4 samples at 48 kHz.
        let t: &[u8] = &[1, 0x90, 60, 100, 1, 0x80, 60, 0];
        let f = MidiFile::parse(&smf(0, [(-29i8) as u8, 4], &[t])).unwrap();
        let at: Vec<u64> = f.messages.iter().map(|m| f.sample(m.num, 48000)).collect();
        assert_eq!(at, [400, 801]);
        assert_eq!(f.messages[0].message(), [0x90, 60, 100]);
        // 25 fps × 2 ticks at 100 Hz: tick 1 = 2 samples exactly; ½ rounds up.
        let f = MidiFile::parse(&smf(0, [(-25i8) as u8, 2], &[t])).unwrap();
        assert_eq!(f.sample(f.messages[1].num, 100), 4);
        assert_eq!(f.sample(f.messages[0].num, 25), 1);
    }

    #[test]
    fn ties_keep_track_order_and_bad_files_say_what_they_are() {
        let a: &[u8] = &[0, 0xb0, 7, 1];
        let b: &[u8] = &[0, 0xb1, 7, 2, 0, 0xb1, 7, 3];
        let f = MidiFile::parse(&smf(1, [0, 96], &[b, a])).unwrap();
        let v: Vec<u8> = f.messages.iter().map(|m| m.bytes[2]).collect();
        assert_eq!(v, [2, 3, 1]);
        assert!(MidiFile::parse(b"RIFF....")
            .unwrap_err()
            .to_string()
            .contains("RIFF"));
        assert!(MidiFile::parse(b"")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        assert!(MidiFile::parse(b"MThd\0\0")
            .unwrap_err()
            .to_string()
            .contains("damaged"));
        let e = MidiFile::parse(&smf(2, [0, 96], &[a])).unwrap_err();
        assert!(e.to_string().contains("format 2"), "{e}");
    }
}
