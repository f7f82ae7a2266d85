//! The input side of `render --input`: the WAV a scene's `input` nodes
//! read, checked against the scene before anything renders (the channels
//! the nodes read), fed to the engine block by block (input frame 0 at the
//! render's first sample: sample 0, or the resumed clock with `--resume`),
//! and the render's default length, the input's plus the scene's tail
//! ([`Tail`]).
//!
//! **Reading ahead.** A thread of its own decodes (and converts) the
//! input a chunk at a time, a few chunks ahead of the engine, which takes
//! its blocks from them: decoding a FLAC or an MP3, or reading a WAV from
//! the disk, runs beside the engine instead of in turn with it. The engine
//! sees the input end, or fail, at the same block as if it read the file
//! itself: once it has taken the last frame before the end or the failure.
//!
//! **Rates.** A scene that sets no `sample_rate` renders at its input's
//! rate ([`open_early`]): nothing is converted. A scene that sets one
//! reads an input at another rate converted as it streams: by the strict
//! polyphase converter when a node reading it is strict, else by rubato
//! ([`crate::dsp::resample`]). Both take their filter's delay out, so
//! input time t is session time t (within half a sample).

use crate::dsp::resample::{converter, Method, RateConverter};
use crate::engine::{InputBlock, InputFeed};
use crate::graph::{Conversion, Plan};
use crate::host::files::rules::Inputs;
use crate::host::files::wav_in::{check_fits, InputFormat, WavInError, WavInput};
use crate::host::offline::error::RenderError;
use crate::host::HostError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};

/// The main bus counts as silent below −100 dBFS.
pub const TAIL_THRESHOLD: f64 = 1e-5;
/// The tail ends once the main bus stayed silent this long (ms).
pub const TAIL_SILENCE_MS: u64 = 100;
/// The longest tail after the input (and the scene's latency), in seconds.
pub const TAIL_MAX_S: u64 = 60;

/// The render's input WAV, shared between the engine (which reads it as
/// its [`InputFeed`]) and the render (which asks where it ended and
/// whether it failed, after each block).
#[derive(Clone)]
pub struct RenderInput {
    wav: Arc<Mutex<Ahead>>,
    /// Set once the engine has seen the end or a failure: until then
    /// [`state`](Self::state) answers without the lock.
    news: Arc<AtomicBool>,
    /// As messages name it: `` `in.wav` `` or `standard input`.
    pub shown: String,
    /// Channels per frame.
    pub channels: usize,
    /// The stored sample format.
    pub format: InputFormat,
    /// The frames it holds at the session's rate, when known before reading.
    pub frames: Option<u64>,
    /// The conversion to the session's rate, when the file has another.
    pub conversion: Option<Conversion>,
}

impl std::fmt::Debug for RenderInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RenderInput")
            .field("shown", &self.shown)
            .finish()
    }
}

/// How an input stands after a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputState {
    /// More may come.
    Reading,
    /// It ended after this many frames.
    Ended(u64),
}

impl RenderInput {
    fn lock(&self) -> MutexGuard<'_, Ahead> {
        // A panic while holding the lock cannot leave the reader half
        // updated in a way that matters here: the render stops anyway.
        self.wav.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The feed the engine reads the input from.
    pub fn feed(&self) -> Box<dyn InputFeed> {
        Box::new(SharedFeed(self.wav.clone()))
    }

    /// Where the input stands, or why it failed (bad input: exit 2). A
    /// failure is reported once: it is taken out of the reader.
    pub fn state(&self) -> Result<InputState, RenderError> {
        if !self.news.load(Ordering::Acquire) {
            return Ok(InputState::Reading);
        }
        let mut w = self.lock();
        if let Some(e) = w.error.take() {
            return Err(RenderError::Input(e));
        }
        match w.ended {
            Some(0) => Err(RenderError::NoAudio {
                shown: self.shown.clone(),
            }),
            Some(n) => Ok(InputState::Ended(n)),
            None => Ok(InputState::Reading),
        }
    }
}

/// The engine's side of a [`RenderInput`].
struct SharedFeed(Arc<Mutex<Ahead>>);

impl InputFeed for SharedFeed {
    fn read(&mut self, _start: u64, block: &mut InputBlock<'_>) {
        let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
        w.read(block);
    }
}

/// Samples (all channels) a chunk read ahead holds at most: 256 KiB of
/// f64, so the chunks in flight stay in the cache shared by the reader,
/// which writes them, and the engine, which copies them out, and the
/// reader (which waits when it is ahead) is woken by the engine, a system
/// call, once per 32768 samples.
const AHEAD_SAMPLES: usize = 1 << 15;

/// Chunks read ahead and not yet taken, at most.
const AHEAD_CHUNKS: usize = 4;

/// Session frames the reader thread decoded, and how the input stood
/// after them.
struct Chunk {
    /// Interleaved frames.
    samples: Vec<f64>,
    frames: usize,
    /// The last chunk: the input ended (or failed) after its frames.
    last: bool,
    /// The input's session frames in all, when it ended.
    ended: Option<u64>,
    /// Why it ended early, if it failed.
    error: Option<WavInError>,
}

impl Chunk {
    fn empty() -> Chunk {
        Chunk {
            samples: Vec::new(),
            frames: 0,
            last: false,
            ended: None,
            error: None,
        }
    }
}

/// The engine's end of the input read ahead: the chunk it is taking
/// frames from, and where the input stands once it took the last one.
struct Ahead {
    chunks: Receiver<Chunk>,
    /// Taken chunks' buffers, back to the reader to fill again.
    spent: Sender<Vec<f64>>,
    channels: usize,
    current: Chunk,
    /// Frames of `current` taken.
    at: usize,
    /// What the engine has seen: the end and its length, a failure.
    ended: Option<u64>,
    error: Option<WavInError>,
    /// Raised once `ended` or `error` is set ([`RenderInput::news`]).
    news: Arc<AtomicBool>,
}

impl Ahead {
    /// Starts reading `source` ahead on a thread of its own.
    fn start(mut source: Source) -> Result<Ahead, HostError> {
        let channels = source.channels();
        let (tx, chunks) = mpsc::sync_channel(AHEAD_CHUNKS);
        let (spent, spares) = mpsc::channel::<Vec<f64>>();
        let per_chunk = (AHEAD_SAMPLES / channels).max(1);
        std::thread::Builder::new()
            .name("morphrt-input-reader".into())
            .spawn(move || loop {
                let mut samples = spares.try_recv().unwrap_or_default();
                samples.resize(per_chunk * channels, 0.0);
                let frames = source.read_interleaved(&mut samples);
                let error = source.wav.take_error();
                let ended = source.wav.ended().map(|n| source.session_frames(n));
                let last = error.is_some() || source.ended().is_some() || frames == 0;
                let chunk = Chunk {
                    samples,
                    frames,
                    last,
                    ended,
                    error,
                };
                // The engine's end gone: the render is over.
                if tx.send(chunk).is_err() || last {
                    return;
                }
            })
            .map_err(|source| HostError::Thread {
                what: "the input reader",
                source,
            })?;
        Ok(Ahead {
            chunks,
            spent,
            channels,
            current: Chunk::empty(),
            at: 0,
            ended: None,
            error: None,
            news: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The next frames into `block` (the channels both have; silence in the
    /// rest and after the end). Once it has taken the last frame of the
    /// last chunk, the end and any failure are the engine's to see.
    fn read(&mut self, block: &mut InputBlock<'_>) {
        let (frames, ch) = (block.frames(), self.channels);
        let mut done = 0;
        while done < frames {
            if self.at == self.current.frames {
                if self.current.last {
                    break;
                }
                let Ok(next) = self.chunks.recv() else {
                    // The reader stopped without saying so (it panicked):
                    // what it had not read is silence, and a failure.
                    self.current.last = true;
                    self.error = Some(WavInError::Refused(
                        "the input's reader stopped unexpectedly".to_string(),
                    ));
                    break;
                };
                let old = std::mem::replace(&mut self.current, next);
                let _ = self.spent.send(old.samples);
                self.at = 0;
                continue;
            }
            let take = (frames - done).min(self.current.frames - self.at);
            let from = &self.current.samples[self.at * ch..(self.at + take) * ch];
            for c in 0..ch.min(block.channels()) {
                let dst = &mut block.channel_mut(c)[done..done + take];
                if ch == 1 {
                    dst.copy_from_slice(from);
                } else {
                    for (d, frame) in dst.iter_mut().zip(from.chunks_exact(ch)) {
                        *d = frame[c];
                    }
                }
            }
            done += take;
            self.at += take;
        }
        for c in 0..block.channels() {
            let from = if c < ch { done } else { 0 };
            block.channel_mut(c)[from..].fill(0.0);
        }
        if self.current.last && self.at == self.current.frames {
            if self.ended.is_none() {
                self.ended = self.current.ended;
            }
            if let Some(e) = self.current.error.take() {
                self.error = Some(e);
            }
        }
        if self.ended.is_some() || self.error.is_some() {
            self.news.store(true, Ordering::Release);
        }
    }
}

/// Input frames read from the file at a time when converting.
const CHUNK_FRAMES: usize = 4096;

/// The input as the engine reads it: the file's frames, converted to the
/// session's rate when the file has another. `run --input` plays the same
/// source, so a session hears what a render reads.
pub(crate) struct Source {
    wav: WavInput,
    rate: Option<Converting>,
}

/// A conversion as the input streams: file frames go in a chunk at a
/// time, session frames come out.
struct Converting {
    conv: Box<dyn RateConverter>,
    /// Interleaved file frames `at..len` of the chunk are still to be pushed.
    chunk: Vec<f64>,
    at: usize,
    len: usize,
    /// The file ended and the converter was told.
    finished: bool,
    /// The converter gave its last frame after `finished`.
    drained: bool,
}

impl Source {
    /// `wav` (`shown` as messages name it) as `plan`'s session reads it,
    /// and the conversion it goes through when its rate is not the
    /// session's (see [`converting`]).
    pub(crate) fn new(
        shown: &str,
        wav: WavInput,
        plan: &Plan,
    ) -> Result<(Source, Option<Conversion>), HostError> {
        let rate = converting(shown, &wav, plan)?;
        let conversion = rate.as_ref().map(|r| r.1.clone());
        let source = Source {
            rate: rate.map(|r| r.0),
            wav,
        };
        Ok((source, conversion))
    }

    /// Channels per frame.
    pub(crate) fn channels(&self) -> usize {
        self.wav.channels()
    }

    /// The format of the frames it delivers: the file's own, or 64-bit
    /// float once converted (the converter's output is f64).
    pub(crate) fn format(&self) -> InputFormat {
        if self.rate.is_some() {
            InputFormat::F64
        } else {
            self.wav.format()
        }
    }

    /// The session frames it delivered in all, once it has delivered its
    /// last (the file ended and, when converting, the converter's tail
    /// was pulled).
    pub(crate) fn ended(&self) -> Option<u64> {
        let n = self.wav.ended()?;
        match &self.rate {
            None => Some(n),
            Some(r) => r.drained.then(|| r.conv.output_frames(n)),
        }
    }

    /// The file's error, if reading it failed.
    pub(crate) fn error(&self) -> Option<String> {
        self.wav.error().map(|e| e.to_string())
    }

    /// Session frames for `n` file frames.
    fn session_frames(&self, n: u64) -> u64 {
        self.rate.as_ref().map_or(n, |r| r.conv.output_frames(n))
    }

    /// Fills `dst` with the next `dst.len() / channels` session frames,
    /// interleaved; returns how many there were (silence after them).
    pub(crate) fn read_interleaved(&mut self, dst: &mut [f64]) -> usize {
        let Some(r) = &mut self.rate else {
            return self.wav.read_interleaved(dst);
        };
        let ch = self.wav.channels();
        let want = dst.len() / ch;
        let mut done = 0;
        loop {
            let pulled = r.conv.pull(&mut dst[done * ch..want * ch]);
            done += pulled;
            if done == want {
                return done;
            }
            if r.at == r.len {
                if r.finished {
                    // Pulled to the end of the finished input.
                    r.drained = true;
                    return done;
                }
                r.len = self.wav.read_interleaved(&mut r.chunk);
                r.at = 0;
                if r.len == 0 {
                    r.conv.finish();
                    r.finished = true;
                }
                continue;
            }
            let took = r.conv.push(&r.chunk[r.at * ch..r.len * ch]);
            r.at += took;
            if took == 0 && pulled == 0 {
                // A converter that neither gives nor takes: end here
                // rather than spin (its buffers hold a whole chunk, so it
                // does not happen).
                return done;
            }
        }
    }
}

/// Opens `--input` before the scene compiles, so that a scene which sets
/// no `sample_rate` renders at the input's rate: `Some` when the scene
/// sets none, has an `input` node and one input is given (not standard
/// input when the scene comes from there too). A failure to open it is
/// kept, to be reported where [`open_input`] reports one.
pub fn open_early(
    given: &[PathBuf],
    scene: &crate::scene::Scene,
    scene_from_stdin: bool,
) -> Option<Result<WavInput, WavInError>> {
    let [path] = given else {
        return None;
    };
    let stdin = path.as_os_str() == "-";
    if scene.sample_rate_set || (stdin && scene_from_stdin) || !scene.reads_input() {
        return None;
    }
    Some(if stdin {
        WavInput::stdin()
    } else {
        WavInput::open(path)
    })
}

/// Opens `--input` for `plan` and checks it against the scene: `None`
/// when the scene has no `input` node (a given `--input` is then unread,
/// with a warning); an error when the scene reads input and none was
/// given, when it was given twice, when both it and the scene come from
/// standard input, or when the file does not fit the scene.
pub fn open_input(
    given: &[PathBuf],
    plan: &Plan,
    scene_from_stdin: bool,
    early: Option<Result<WavInput, WavInError>>,
    log: &mut dyn Write,
) -> Result<Option<RenderInput>, HostError> {
    let uses = plan.inputs();
    let path = match given {
        [] if uses.is_empty() => return Ok(None),
        [] => {
            return Err(RenderError::NoInput {
                scene: plan.file.clone(),
                readers: uses_text(plan),
            }
            .into())
        }
        [p] => p,
        [first, second, ..] => {
            return Err(RenderError::InputTwice {
                count: given.len(),
                first: first.clone(),
                second: second.clone(),
            }
            .into())
        }
    };
    if uses.is_empty() {
        let _ = writeln!(
            log,
            "warning: --input `{}` is not read: scene `{}` has no `input` node",
            path.display(),
            plan.file
        );
        return Ok(None);
    }
    let wav = match early {
        Some(opened) => opened,
        None if path.as_os_str() == "-" => {
            if scene_from_stdin {
                return Err(RenderError::BothFromStdin.into());
            }
            WavInput::stdin()
        }
        None => WavInput::open(path),
    }
    .map_err(|e| HostError::from(RenderError::Input(e)))?;
    let shown = if wav.path().is_some() {
        format!("`{}`", wav.name())
    } else {
        wav.name().to_string()
    };
    check_fits(&shown, wav.channels(), plan, log).map_err(RenderError::InputChannels)?;
    let (source, conversion) = Source::new(&shown, wav, plan)?;
    let frames = source
        .wav
        .length_known()
        .then(|| source.session_frames(source.wav.declared_frames()));
    let (channels, format) = (source.wav.channels(), source.wav.format());
    let ahead = Ahead::start(source)?;
    Ok(Some(RenderInput {
        shown,
        channels,
        format,
        frames,
        conversion,
        news: ahead.news.clone(),
        wav: Arc::new(Mutex::new(ahead)),
    }))
}

/// The conversion of `wav` to the session's rate, when it has another:
/// strict (polyphase) when a node reading it is strict, else rubato.
fn converting(
    shown: &str,
    wav: &WavInput,
    plan: &Plan,
) -> Result<Option<(Converting, Conversion)>, HostError> {
    let (from_hz, to_hz) = (wav.sample_rate(), plan.sample_rate);
    if from_hz == to_hz {
        return Ok(None);
    }
    let strict = plan.nodes.iter().any(|n| {
        crate::ops::is_session_input(n.op) && n.profile.profile == crate::profile::Profile::Strict
    });
    let method = if strict {
        Method::Polyphase
    } else {
        Method::Library
    };
    let ch = wav.channels();
    let conv = converter(method, from_hz, to_hz, ch, CHUNK_FRAMES).map_err(|e| {
        HostError::Usage(format!(
            "{shown} is at {from_hz} Hz, but scene `{}` runs at {to_hz} Hz, and {e}; set \"sample_rate\": {from_hz} in the scene, or convert the file (e.g. `sox in.wav -r {to_hz} out.wav`)",
            plan.file
        ))
    })?;
    let conversion = Conversion {
        what: format!("input {shown}"),
        from_hz,
        to_hz,
        method,
    };
    let rate = Converting {
        conv,
        chunk: vec![0.0; CHUNK_FRAMES * ch],
        at: 0,
        len: 0,
        finished: false,
        drained: false,
    };
    Ok(Some((rate, conversion)))
}

/// What reads the input, for messages: `` node `mic` reads channel 0 ``,
/// the first three, then how many more.
fn uses_text(plan: &Plan) -> String {
    let uses = plan.inputs();
    let mut parts: Vec<String> = uses
        .iter()
        .take(3)
        .map(|u| format!("node `{}` reads channel {}", u.node, u.channel))
        .collect();
    if uses.len() > 3 {
        parts.push(format!("{} more", uses.len() - 3));
    }
    parts.join(", ")
}

/// Every file the render reads gets `input` added: no output may replace it.
pub fn protect(inputs: &mut Inputs, given: &[PathBuf]) {
    for p in given {
        if p.as_os_str() == "-" {
            inputs.add_stdin("the input WAV (read from standard input)");
        } else {
            inputs.add("the input WAV", Path::new(p));
        }
    }
}

/// What one output frame does in a render whose length is the input's
/// plus the scene's tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write it (and every frame held before it).
    Write,
    /// Silent past the input: keep it back until the tail goes on or ends.
    Hold,
    /// The tail ended: the frames held are dropped and the render stops.
    End,
}

/// The render's length when it follows the input: every frame until the
/// input ended plus the scene's latency (the `floor`), then on while the
/// main bus is above −100 dBFS, ending after its last frame above that
/// once [`TAIL_SILENCE_MS`] passed below it, or [`TAIL_MAX_S`] after the
/// floor. A dry chain (no latency) thus adds nothing; a reverb's decay is
/// kept to where it falls under −100 dBFS.
#[derive(Clone, Debug)]
pub struct Tail {
    /// The render's first sample (the input's frame 0).
    start: u64,
    latency: u64,
    window: u64,
    max: u64,
    /// The absolute sample the output reaches at least, once the input ended.
    floor: Option<u64>,
    /// Silent frames since the last loud one (or the floor).
    quiet: u64,
}

impl Tail {
    /// A tail for a render from `start` at `sample_rate`, `latency` samples
    /// behind the input.
    pub fn new(start: u64, latency: usize, sample_rate: u32) -> Tail {
        Tail {
            start,
            latency: latency as u64,
            window: (sample_rate as u64 * TAIL_SILENCE_MS).div_ceil(1000),
            max: sample_rate as u64 * TAIL_MAX_S,
            floor: None,
            quiet: 0,
        }
    }

    /// The input ended after `frames` frames.
    pub fn input_ended(&mut self, frames: u64) {
        self.floor.get_or_insert(self.start + frames + self.latency);
    }

    /// The absolute sample before which every frame is [`Step::Write`]:
    /// the floor once the input ended, no bound before.
    pub fn writes_before(&self) -> u64 {
        self.floor.unwrap_or(u64::MAX)
    }

    /// The most frames this render may take after the input's `frames`.
    pub fn most_after(&self) -> u64 {
        self.latency + self.max
    }

    /// Decides frame `at` (absolute), `loud` when a channel is at or above
    /// the threshold.
    pub fn step(&mut self, at: u64, loud: bool) -> Step {
        let Some(floor) = self.floor.filter(|f| at >= *f) else {
            return Step::Write;
        };
        if at >= floor + self.max {
            return Step::End;
        }
        if loud {
            self.quiet = 0;
            return Step::Write;
        }
        self.quiet += 1;
        if self.quiet >= self.window {
            Step::End
        } else {
            Step::Hold
        }
    }

    /// The input's frames and the tail's, for a render that wrote `frames`.
    pub fn split(&self, frames: u64) -> (u64, u64) {
        let input = self
            .floor
            .map_or(frames, |f| f - self.start - self.latency)
            .min(frames);
        (input, frames - input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3-channel 16-bit WAV of `frames` frames (a ramp per channel).
    fn wav_bytes(frames: usize) -> Vec<u8> {
        wav_bytes_of(3, frames)
    }

    fn wav_bytes_of(channels: u16, frames: usize) -> Vec<u8> {
        let spec = hound::WavSpec {
            channels,
            sample_rate: 48000,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        };
        let mut bytes = std::io::Cursor::new(Vec::new());
        let mut w = hound::WavWriter::new(&mut bytes, spec).unwrap();
        for i in 0..frames {
            for c in 0..channels as usize {
                w.write_sample((((i * 7 + c * 1000) % 60_000) as i32 - 30_000) as i16)
                    .unwrap();
            }
        }
        w.finalize().unwrap();
        bytes.into_inner()
    }

    fn opened(bytes: &[u8]) -> WavInput {
        WavInput::from_stream(
            Box::new(std::io::Cursor::new(bytes.to_vec())),
            "standard input",
        )
        .unwrap()
    }

    /// Read ahead on its thread, the input gives the engine the blocks it
    /// would read from the file itself, and the end and any failure after
    /// the same block: lengths not a multiple of a chunk and a multiple of
    /// it, a length unknown until the data ends (as from a pipe), a file
    /// cut short inside a frame; blocks of 7, 64 and 4096 frames, into two
    /// channels of the file's three and into four.
    #[test]
    fn the_input_read_ahead_is_the_file_read_block_by_block() {
        let chunk = AHEAD_SAMPLES / 3;
        let whole = |frames| wav_bytes(frames);
        let unknown = |frames| {
            let mut b = wav_bytes(frames);
            let at = b.windows(4).position(|w| w == b"data").unwrap();
            b[at + 4..at + 8].copy_from_slice(&0u32.to_le_bytes());
            b
        };
        let cut = |frames| {
            let mut b = wav_bytes(frames);
            b.truncate(b.len() - 3);
            b
        };
        let cases: [(&str, Vec<u8>); 6] = [
            ("40000 frames", whole(40_000)),
            (
                "mono, two chunks and a bit",
                wav_bytes_of(1, 2 * AHEAD_SAMPLES + 5),
            ),
            ("two chunks exactly", whole(2 * chunk)),
            ("unknown length, two chunks exactly", unknown(2 * chunk)),
            ("unknown length", unknown(30_001)),
            ("cut short", cut(30_001)),
        ];
        for (what, bytes) in &cases {
            for block in [7, 64, 4096] {
                for width in [2, 4] {
                    let mut direct = opened(bytes);
                    let mut ahead = Ahead::start(Source {
                        wav: opened(bytes),
                        rate: None,
                    })
                    .unwrap();
                    let (mut a, mut b) = (vec![f64::NAN; width * block], vec![0.0; width * block]);
                    let mut ended_at = None;
                    for k in 0.. {
                        a.fill(f64::NAN);
                        b.fill(f64::NAN);
                        InputFeed::read(&mut direct, 0, &mut InputBlock::new(&mut a, block, block));
                        ahead.read(&mut InputBlock::new(&mut b, block, block));
                        let same = a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits());
                        assert!(
                            same,
                            "{what}, block {block}, width {width}: block {k} differs"
                        );
                        let direct_error = direct.take_error().map(|e| e.to_string());
                        let ahead_error = ahead.error.take().map(|e| e.to_string());
                        assert_eq!(
                            direct_error, ahead_error,
                            "{what}, block {block}: block {k}"
                        );
                        assert_eq!(
                            direct.ended(),
                            ahead.ended,
                            "{what}, block {block}: block {k}"
                        );
                        if direct.ended().is_some() {
                            ended_at.get_or_insert(k);
                        }
                        if ended_at.is_some_and(|e| k > e + 2) {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Silence past the floor is held and dropped; a loud frame keeps what
    /// was held; the window of silence ends it; nothing before the floor counts.
    #[test]
    fn the_tail_follows_the_bus() {
        let mut t = Tail::new(100, 2, 1000); // 100-frame window
        assert_eq!(t.step(100, false), Step::Write);
        assert_eq!(t.writes_before(), u64::MAX);
        t.input_ended(10); // floor 112
        assert_eq!(t.writes_before(), 112);
        assert_eq!(t.step(111, false), Step::Write);
        assert_eq!(t.step(112, false), Step::Hold);
        assert_eq!(t.step(113, true), Step::Write);
        for at in 114..213 {
            assert_eq!(t.step(at, false), Step::Hold, "{at}");
        }
        assert_eq!(t.step(213, false), Step::End);
        assert_eq!(t.split(14), (10, 4));
        let mut loud = Tail::new(0, 0, 1000);
        loud.input_ended(5);
        assert_eq!(loud.step(5 + 60_000 - 1, true), Step::Write);
        assert_eq!(loud.step(5 + 60_000, true), Step::End);
    }
}
