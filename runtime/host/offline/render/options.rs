//! What `morphrt render` is asked to do: its arguments ([`RenderOptions`]),
//! documented once here for `morphrt help render` and the manual.

use crate::host::files::wav::WavFormat;
use crate::profile::Profile;
use crate::scene::TimeArg;
use std::path::PathBuf;

/// What `morphrt render` was asked to do: the command's arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct RenderOptions {
    /// The scene file (JSON); `-` reads it from standard input.
    ///
    /// A scene from standard input resolves its resources from the current
    /// directory. The scene and every resource it reads must be regular
    /// files: a FIFO, a device, a directory or a socket is refused up
    /// front, naming the path and what it is (exit 2).
    pub scene: PathBuf,
    /// Output WAV or FLAC file (replaced only when the render completes), a FIFO
    /// or device (streamed), or `-` for standard output. Never a file
    /// the render reads.
    ///
    /// The output is named as a WAV: it must end in `.wav` or `.wave` (any
    /// case), be `-`, or be an existing FIFO or device; `-o x.mp3` or a
    /// name without an extension is refused up front (exit 2) with the
    /// `.wav` name to use. A name ending in `.flac` writes FLAC. `-o -` is refused when standard output is a
    /// terminal. The output rules (see the command's description) are
    /// checked before anything renders.
    #[arg(short = 'o', long = "output")]
    pub output: PathBuf,
    /// Session profile: strict, repro or live (default: the snapshot's when
    /// resuming, else the scene's, else repro).
    #[arg(long, value_parser = Profile::parse_arg)]
    pub profile: Option<Profile>,
    /// Length, e.g. 10s, 250ms, 4800samples, 8bars (at the scene's tempo); at most 24 hours (default: the
    /// scene's duration, else 10s; when resuming, what remains of it).
    ///
    /// The render writes exactly this much (e.g. `10s`, `250ms`, `1m30s`,
    /// `4800samples`). Without it: the scene's `duration`, else 10 s; with
    /// `--input`, the input's length plus the scene's tail; with `--midi`
    /// (and no `duration`), the file's last event plus the tail. A length
    /// that rounds to no sample is refused, saying so. One limit holds for
    /// `-d`, the scene's `duration`, `run --duration` and a resumed render:
    /// 24 hours, refused up front (exit 2) with the limit in the message.
    #[arg(allow_hyphen_values = true, short = 'd', long = "duration")]
    pub duration: Option<TimeArg>,
    /// Sample format of the output (default: f32 for a WAV, i24 for a FLAC).
    ///
    /// Integer formats scale by 2^(b−1)−1, round half to even and clamp (no
    /// dither). The header carries the final sizes from the start; past
    /// 4 GiB it is RF64 (a `ds64` chunk with 64-bit sizes). A FLAC holds
    /// i16 or i24; f32 with a FLAC output is refused (exit 2).
    #[arg(long, value_enum)]
    pub format: Option<WavFormat>,
    /// Container of the output: wav or flac (default: flac when -o ends in
    /// `.flac`, any case; else wav, also for `-o -`).
    ///
    /// A FLAC output goes through the same output rules as a WAV (a
    /// temporary file renamed into place when complete, never over an
    /// input); its name must end in `.flac` (or be `-`, a FIFO or a
    /// device). Decoding it gives back every integer sample exactly, and
    /// `--hash` is the hash of the samples as for a WAV.
    #[arg(long, value_enum)]
    pub container: Option<Container>,
    /// Replace the scene's seed (when resuming it must agree with the snapshot's).
    ///
    /// An unsigned integer 0 … 18446744073709551615; a value outside that
    /// range says so.
    #[arg(long, allow_hyphen_values = true, value_parser = crate::scene::seed_arg)]
    pub seed: Option<u64>,
    /// Block size in frames (default: the scene's, else the profile's; when
    /// resuming it must agree with the snapshot's).
    #[arg(long = "block-size")]
    pub block_size: Option<usize>,
    #[command(flatten)]
    pub threads: crate::host::files::threads::ThreadArgs,
    /// Print the SHA-256 of the main-bus samples at engine precision.
    ///
    /// The hash is of the interleaved little-endian main-bus samples at
    /// engine precision, so a strict hash is the same at every block size.
    /// With `-o -` it goes to stderr.
    #[arg(long)]
    pub hash: bool,
    /// Print a JSON summary: frames, duration, hash, peak, clipped
    /// samples, per-channel levels, time and real-time factor.
    ///
    /// One JSON object on stdout: `frames`, `duration_s`, `hash`, `peak`,
    /// `peak_dbfs`, `clipped`, `per_channel` (`peak`, `peak_dbfs`,
    /// `clipped`, `dc_offset`), `time_s` and `rtf` (wall time / audio time;
    /// below 1 is faster than real time), with `format`, `rf64`, `bytes`,
    /// `profile`, `block_size`, `threads` (the count it rendered with) and
    /// `ahead` (what it rendered ahead on a thread of its own: `sum`,
    /// `taken`, `edges`; `null` when nothing); stdout then holds only that
    /// object (no `--hash` line). With `-o -` it goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Extra directories to look up "@resource:NAME" in (repeatable).
    #[arg(long = "resources")]
    pub resources: Vec<PathBuf>,
    /// Write the engine state at this time on the scene's timeline
    /// (repeatable; absolute, also when resuming), e.g. 5s or 240000samples.
    #[arg(
        allow_hyphen_values = true,
        long = "snapshot-at",
        requires = "snapshot_out"
    )]
    pub snapshot_at: Vec<TimeArg>,
    /// The snapshot file; with several times, the sample index goes
    /// before the extension (snap.240000.json).
    #[arg(long = "snapshot-out", requires = "snapshot_at")]
    pub snapshot_out: Option<PathBuf>,
    /// Continue from a snapshot: the WAV holds only the continuation,
    /// -d long (default: the rest of the scene's duration).
    ///
    /// The continuation is bit for bit what the uninterrupted render
    /// writes. A snapshot of an edited scene carries by node id and
    /// operator, naming every node that starts fresh. The snapshot must be
    /// a regular file, and the output may not be it.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// The audio input the scene's `input` nodes read: an audio file (WAV,
    /// AIFF/AIFC, FLAC, MP3 or Ogg Vorbis, told by its content), or `-`
    /// for standard input (WAV, FLAC, MP3 or Ogg). The render is then,
    /// unless -d says otherwise, the input's length plus the scene's tail.
    /// Given once.
    ///
    /// Integer (8/16/24/32-bit) and float WAVs of any channel count are
    /// read. A scene that sets no `sample_rate` renders at the file's
    /// rate; a file at another rate than the scene's is converted as it
    /// is read (the polyphase converter when a node reading it is strict,
    /// else rubato), and the summary says `converted: …`. The tail: the render goes on until the main bus stays
    /// below −100 dBFS for 100 ms (at most 60 s more), so a dry chain adds
    /// nothing and a reverb's tail is kept; the summary says which length
    /// was used (`length: input 3.000 s + tail 1.996 s`, or `length: -d
    /// 5s`).
    ///
    /// `--input -` reads the WAV from standard input, also one whose header
    /// records no length (data size 0 or `0xFFFFFFFF`, as a program writing
    /// to a pipe leaves it), so renders chain: `morphrt render
    /// scenes/drone.json -o - -d 3s | morphrt render scenes/input-hall.json
    /// --input - -o wet.wav`. With a tail the header's sizes are known only
    /// at the end: a file output is written as always (nothing until it is
    /// complete), while `-o -` gets the whole WAV when the render ends (it
    /// waits in an unlinked file in `TMPDIR`; `-d` streams as it renders).
    ///
    /// A bad input — not a WAV, cut short (also standard input part-way),
    /// no frames, a directory or a FIFO (refused unopened), a rate no
    /// converter reaches (e.g. 44101 Hz into 48000 Hz),
    /// too few channels, `--input` given twice — exits 2 naming the file,
    /// and no output file is left (to `-o -` with `-d`, what streamed
    /// before a failure part-way has gone out). A scene with `input` nodes
    /// rendered without `--input` is refused; `--input` for a scene without
    /// them is a warning.
    #[arg(long = "input", value_name = "FILE.wav")]
    pub input: Vec<PathBuf>,
    /// A standard MIDI file (format 0 or 1) played into the scene's MIDI
    /// `controls`, each message at its exact sample. The render is then,
    /// unless -d or the scene's duration says otherwise, the file's last
    /// event plus the scene's tail. Given once.
    ///
    /// Every message lands on its exact sample: the tempo map, or SMPTE
    /// timecode, is converted in integer arithmetic to the nearest sample,
    /// halves up; all tracks are merged by time, ties in track order. It
    /// goes through the same mapping `run --midi` uses, so a strict render
    /// is the same bits at any block size. Notes on a channel a `"module"`
    /// control listens on play that voice module (CC 64 as its sustain
    /// pedal). Without `-d` or the scene's `duration` the render runs to
    /// the file's last event (its End of Track) and then the tail, as after
    /// `--input`. The summary counts the messages mapped and those no
    /// control listens to.
    ///
    /// A missing file, a directory or device, one that is not a MIDI file
    /// (the error says what it starts with), a format 2 file, `--midi`
    /// given twice, or a scene with no MIDI control (nothing would move)
    /// exits 2, leaving no output.
    #[arg(long = "midi", value_name = "FILE.mid")]
    pub midi: Vec<PathBuf>,
    /// Sets a node's param before the scene compiles, as if the scene
    /// file said so: `--set lp.cutoff=900Hz`, `--set g.gain=-6dB`,
    /// `--set lp.mode=lowpass` (a node of a module too). The value is
    /// written as the scene writes it (a number, `true`/`false`, or text
    /// with a unit) and checked as the scene's own; a node the scene does
    /// not have exits 2 naming the nodes it has. Repeatable, applied in
    /// order after `--set-file`. Diagnostics then name the scene as
    /// edited (`FILE (with --set)`), its lines those of the edited JSON.
    #[arg(long = "set", value_name = "NODE.PARAM=VALUE", value_parser = crate::api::parse_set)]
    pub set: Vec<(String, serde_json::Value)>,
    /// A JSON file holding one object of `"node.param": value` pairs,
    /// each set as `--set` does (`{"lp.cutoff": "900Hz", "g.gain": 0.5}`):
    /// a parameter set for a sweep.
    #[arg(long = "set-file", value_name = "FILE.json")]
    pub set_file: Option<PathBuf>,
}

/// The container `render` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Container {
    Wav,
    Flac,
}

impl RenderOptions {
    /// The container: `--container`, else from the output's extension.
    pub fn container(&self) -> Container {
        let flac_name = self
            .output
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("flac"));
        match self.container {
            Some(c) => c,
            None if flac_name => Container::Flac,
            None => Container::Wav,
        }
    }

    /// The sample format: `--format`, else f32 for a WAV and i24 for a FLAC.
    pub fn sample_format(&self) -> WavFormat {
        self.format.unwrap_or(match self.container() {
            Container::Wav => WavFormat::F32,
            Container::Flac => WavFormat::I24,
        })
    }
}
