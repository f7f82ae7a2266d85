//! The deck: one sample clock, one engine playing, and during a swap the
//! previous one fading out under it.
//!
//! Everything that turns engines into output frames lives here — the swap
//! between two `process` calls (a block boundary, or a sample a block was
//! cut at), the equal-gain (linear) crossfade, the mapping of
//! each engine's main bus onto a fixed set of output channels — so that
//! `run`, offline renders with scripted handovers and `replay` produce the
//! same samples. Real-time safe after construction: swapping only moves
//! boxes; a retired engine waits in the deck until the caller takes it and
//! sends it off the audio thread to be dropped.
//!
//! The arithmetic here — the crossfade, the channel mapping, the device
//! stage's conversion to f32 — runs under the playing engine's FP mode
//! (its session profile's flush-to-zero), like the engine's own blocks, so
//! a host that calls back with FTZ/DAZ set gets the samples `replay` does.

use super::{BusRef, Engine};
use crate::dsp::fpmode::FpGuard;
use crate::dsp::vector::{at_level, SimdLevel};

/// An engine fading out after a swap.
struct Fade {
    engine: Box<Engine>,
    /// The swap sample (the fade's first frame).
    start: u64,
    /// Frames of the fade.
    len_frames: u64,
}

/// Plays engines one after another on one sample clock.
pub struct Deck {
    current: Box<Engine>,
    fading: Option<Fade>,
    /// An engine whose fade is over (or that was cut), for the caller to take.
    retired: Option<Box<Engine>>,
    channels: usize,
    /// The engines' block size: the most frames one `process` renders.
    block_frames: usize,
    /// Interleaved output of the last block: `frames × channels`.
    out: Vec<f64>,
    /// The incoming engine's frames during a fade.
    scratch: Vec<f64>,
    frames: usize,
    /// Whether `process` maps the bus into `out` (a host that reads the
    /// engine's bus itself turns it off, [`map_output`](Self::map_output)).
    map: bool,
}

/// Why a swap was refused (the offered engine comes back).
pub enum SwapRefused {
    /// The engine's clock is not the deck's.
    WrongClock(Box<Engine>),
    /// A fade is still running, or a retired engine has not been taken.
    Busy(Box<Engine>),
}

impl SwapRefused {
    pub(crate) fn into_engine(self) -> Box<Engine> {
        match self {
            SwapRefused::WrongClock(e) | SwapRefused::Busy(e) => e,
        }
    }
}

impl Deck {
    /// A deck of `channels` output channels (≥ 1) playing `engine`.
    pub fn new(engine: Box<Engine>, channels: usize) -> Deck {
        let block = engine.block_size();
        let channels = channels.max(1);
        Deck {
            current: engine,
            fading: None,
            retired: None,
            channels,
            block_frames: block,
            out: vec![0.0; block * channels],
            scratch: vec![0.0; block * channels],
            frames: 0,
            map: true,
        }
    }

    /// Whether the following blocks are mapped onto the outputs
    /// ([`output`](Self::output)); off, `output` keeps what it last had.
    pub(crate) fn map_output(&mut self, on: bool) {
        self.map = on;
    }

    /// The absolute sample of the next block's first frame.
    pub(crate) fn clock(&self) -> u64 {
        self.current.clock()
    }

    pub(crate) fn engine(&self) -> &Engine {
        &self.current
    }

    /// The playing engine, to queue records on it with what is attached
    /// to it ([`Engine::with_attached`]).
    pub fn engine_mut(&mut self) -> &mut Engine {
        &mut self.current
    }

    pub(crate) fn block_size(&self) -> usize {
        self.block_frames
    }

    /// Whether the playing engine's session profile flushes denormals to
    /// zero: the FP mode of everything the deck and the device stage compute.
    pub(crate) fn flush_to_zero(&self) -> bool {
        self.current.session_flush
    }

    /// Turns per-node timing of the playing engine on or off; turning it on
    /// zeroes its counters first. Real-time safe.
    pub(crate) fn set_node_timing(&mut self, on: bool) {
        if on && !self.current.node_timing() {
            self.current.clear_node_times();
        }
        self.current.set_node_timing(on);
    }

    /// Whether a crossfade is in progress.
    pub(crate) fn is_fading(&self) -> bool {
        self.fading.is_some()
    }

    /// Makes `next` the playing engine from now (between two `process` calls). With
    /// `fade_frames` > 0 the current engine keeps running under it and fades
    /// out linearly while `next` fades in; with 0 it is cut and retired at
    /// once. `next` must stand at the deck's clock. Per-node timing carries
    /// over: `next` times its nodes when the current engine does.
    pub fn swap(&mut self, next: Box<Engine>, fade_frames: u64) -> Result<(), SwapRefused> {
        if next.clock() != self.clock() {
            return Err(SwapRefused::WrongClock(next));
        }
        if self.fading.is_some() || self.retired.is_some() {
            return Err(SwapRefused::Busy(next));
        }
        // Both engines are in the deck before anything runs on them: a
        // panic below unwinds through no box that owns one (an engine is
        // never freed on the audio thread).
        let old = std::mem::replace(&mut self.current, next);
        let old = if fade_frames == 0 {
            self.retired.insert(old)
        } else {
            &mut self
                .fading
                .insert(Fade {
                    start: old.clock(),
                    engine: old,
                    len_frames: fade_frames,
                })
                .engine
        };
        self.current.set_node_timing(old.node_timing());
        self.current.carry_controls_from(old);
        self.current.take_notes_since_save(old);
        self.current.carry_notes_from(old);
        Ok(())
    }

    /// Makes `next` the playing engine from now, at its own clock (a
    /// restored snapshot: the deck's clock becomes `next`'s), cutting the
    /// current one, which is retired. Given back while a fade runs or a
    /// retired engine has not been taken. Real-time safe.
    pub(crate) fn replace(&mut self, next: Box<Engine>) -> Result<(), Box<Engine>> {
        if self.fading.is_some() || self.retired.is_some() {
            return Err(next);
        }
        let old = std::mem::replace(&mut self.current, next);
        let old = self.retired.insert(old);
        self.current.set_node_timing(old.node_timing());
        Ok(())
    }

    /// The playing engine was saved now (by the caller, whole): the notes
    /// from outside it takes from here reach the engine migrated from
    /// that save at its swap.
    pub(crate) fn saved_now(&mut self) {
        self.current.notes_from_save();
    }

    /// Starts a save of the playing engine spread over blocks (see
    /// [`Engine::begin_save`]); true if it is already complete.
    pub(crate) fn begin_save(&mut self, st: &mut super::EngineState) -> bool {
        self.current.begin_save(st)
    }

    /// Copies the save's next part (see [`Engine::continue_save`]);
    /// true once complete.
    pub(crate) fn continue_save(&mut self, st: &mut super::EngineState) -> bool {
        self.current.continue_save(st)
    }

    /// Loads the next block's session input into the playing engine and
    /// the one fading out under it: `src` holds `frames` interleaved frames
    /// of `width` channels (each engine takes the channels it reads; those
    /// `src` lacks are silence). For hosts that load input themselves (the
    /// callback); real-time safe.
    pub(crate) fn load_input(&mut self, src: &[f64], width: usize, frames: usize) {
        self.current
            .input_block(frames)
            .load_interleaved(src, width);
        if let Some(f) = &mut self.fading {
            f.engine.input_block(frames).load_interleaved(src, width);
        }
    }

    /// The engine fading out under the playing one during a crossfade.
    pub(crate) fn fading_mut(&mut self) -> Option<&mut Engine> {
        self.fading.as_mut().map(|f| &mut *f.engine)
    }

    /// Queues a control record on the playing engine (real-time safe; see
    /// [`Engine::push_change`]), and during a crossfade on the engine
    /// fading out too, at the same sample, so that both play it.
    pub(crate) fn push_change(
        &mut self,
        r: super::ChangeRecord,
    ) -> Result<(), super::ChangeReport> {
        if let Some(f) = &mut self.fading {
            f.engine.push_change_as(&self.current, r);
        }
        self.current.push_change(r)
    }

    /// Queues a note record on the playing engine (real-time safe; see
    /// [`Engine::push_note_record`]), and during a crossfade on the engine
    /// fading out too, at the same sample.
    pub(crate) fn push_note(&mut self, r: super::NoteRecord) -> Result<(), super::ChangeReport> {
        if let Some(f) = &mut self.fading {
            if r.engine == self.current.id() {
                f.engine.push_note_as(&self.current, r.note);
            }
        }
        self.current.push_note_record(r)
    }

    /// Room in the playing engine's queue of notes from outside.
    pub(crate) fn note_room(&self) -> usize {
        self.current.note_room()
    }

    /// Room in the playing engine's control queue.
    pub(crate) fn control_room(&self) -> usize {
        self.current.control_room()
    }

    /// Hands the playing engine's control reports to `f` (real-time safe).
    /// The engine fading out reports nothing: what it was given, the
    /// playing engine reports.
    pub(crate) fn take_change_reports(&mut self, f: impl FnMut(super::ChangeReport)) {
        if let Some(fading) = &mut self.fading {
            fading.engine.take_change_reports(|_| {});
        }
        self.current.take_change_reports(f);
    }

    /// Takes the engine that stopped playing, to be dropped off the audio thread.
    pub(crate) fn take_retired(&mut self) -> Option<Box<Engine>> {
        self.retired.take()
    }

    /// Renders `frames` (≤ the block size) into [`output`](Self::output).
    pub(crate) fn process(&mut self, frames: usize) {
        let frames = frames.min(self.block_frames);
        let ch = self.channels;
        let start = self.current.clock();
        // Each engine runs its block under its own FP modes and reads its
        // input feed under the caller's; the crossfade runs under the
        // playing engine's.
        self.current.process_block(frames);
        if let Some(f) = &mut self.fading {
            f.engine.process_block(frames);
        }
        let _fp = FpGuard::new(self.current.session_flush);
        self.frames = self.current.bus().frames();
        match &mut self.fading {
            _ if !self.map => {}
            None => map_bus(self.current.simd, self.current.bus(), ch, &mut self.out),
            Some(f) => {
                map_bus(f.engine.simd, f.engine.bus(), ch, &mut self.out);
                map_bus(self.current.simd, self.current.bus(), ch, &mut self.scratch);
                let len = f.len_frames as f64;
                for i in 0..self.frames {
                    let k = (start + i as u64 - f.start) as f64;
                    let g = if k >= len { 1.0 } else { k / len };
                    for c in 0..ch {
                        let j = i * ch + c;
                        self.out[j] = self.out[j] * (1.0 - g) + self.scratch[j] * g;
                    }
                }
            }
        }
        if let Some(f) = &self.fading {
            if start + frames as u64 >= f.start + f.len_frames {
                self.retired = self.fading.take().map(|f| f.engine);
            }
        }
    }

    /// The last block, interleaved: `frames() × channels()` samples.
    pub(crate) fn output(&self) -> &[f64] {
        &self.out[..self.frames * self.channels]
    }

    /// The last block as the device gets it ([`device_sample`]), into `dst`
    /// (at most `frames() × channels()` samples), under the playing
    /// engine's FP mode. Returns the peak |sample|. Real-time safe.
    pub(crate) fn device_output(&self, dst: &mut [f32]) -> f32 {
        let _fp = FpGuard::new(self.current.session_flush);
        let mut peak = 0.0f32;
        for (d, x) in dst.iter_mut().zip(self.output()) {
            *d = device_sample(*x);
            peak = peak.max(d.abs());
        }
        peak
    }

    /// The last block as f32 without the device stage's clip (for a host
    /// with an output stage of its own), into `dst` (at most `frames() ×
    /// channels()` samples), under the playing engine's FP mode. Returns
    /// the peak |sample|. Real-time safe.
    pub(crate) fn plain_output(&self, dst: &mut [f32]) -> f32 {
        let _fp = FpGuard::new(self.current.session_flush);
        let mut peak = 0.0f32;
        for (d, x) in dst.iter_mut().zip(self.output()) {
            *d = *x as f32;
            peak = peak.max(d.abs());
        }
        peak
    }

    /// Frames of the last block.
    pub(crate) fn frames(&self) -> usize {
        self.frames
    }
}

/// Maps a main bus onto `ch` output channels, interleaved: bus channel d
/// feeds output d; a mono bus also feeds output 1; a one-channel output
/// gets the mean of all bus channels; other outputs are silent. With the
/// instructions of `level` (the same values at every level).
fn map_bus(level: SimdLevel, bus: BusRef<'_>, ch: usize, out: &mut [f64]) {
    at_level(
        level,
        #[inline(always)]
        || match bus {
            BusRef::F32(b, n) => map_channels(b, n, ch, out),
            BusRef::F64(b, n) => map_channels(b, n, ch, out),
        },
    )
}

/// [`map_bus`] of the first `n` frames of `bus`, an output channel at a time.
#[inline(always)]
fn map_channels<S: Copy + Into<f64>>(bus: &[Vec<S>], n: usize, ch: usize, out: &mut [f64]) {
    let bc = bus.len();
    let out = &mut out[..n * ch];
    if ch == 1 && bc > 1 {
        for (i, o) in out.iter_mut().enumerate() {
            let mut sum = 0.0;
            for c in bus {
                sum += c[i].into();
            }
            *o = sum / bc as f64;
        }
        return;
    }
    if ch == 1 && bc == 1 {
        for (o, &x) in out.iter_mut().zip(&bus[0][..n]) {
            *o = x.into();
        }
        return;
    }
    if ch == 2 && bc >= 1 {
        let right = &bus[if bc == 1 { 0 } else { 1 }][..n];
        for ((o, &l), &r) in out.chunks_exact_mut(2).zip(&bus[0][..n]).zip(right) {
            o[0] = l.into();
            o[1] = r.into();
        }
        return;
    }
    for d in 0..ch {
        let from = if d < bc {
            Some(d)
        } else if bc == 1 && d == 1 {
            Some(0)
        } else {
            None
        };
        let to = out[d..].iter_mut().step_by(ch);
        match from {
            Some(c) => to.zip(&bus[c][..n]).for_each(|(o, &x)| *o = x.into()),
            None => to.for_each(|o| *o = 0.0),
        }
    }
}

/// The device output stage, one definition for `run` and `replay`: an
/// engine sample as the device gets it (f32, clipped to ±1 for hearing
/// safety). Its result depends on the FP mode (an f32 denormal flushes
/// under FTZ): call it under the engine's, as `Deck::device_output` does.
#[inline]
pub fn device_sample(x: f64) -> f32 {
    (x as f32).clamp(-1.0, 1.0)
}

/// The gain of frame `k` (0-based) of a stop fade of `len` frames: linear
/// to silence, reaching 0 on the fade's last frame.
#[inline]
pub fn stop_fade_gain(k: u64, len: u64) -> f32 {
    (len - 1 - k.min(len - 1)) as f32 / len as f32
}

/// A device sample under the stop fade's `gain` (exact when the gain is 1).
#[inline]
pub fn faded(v: f32, gain: f32) -> f32 {
    if gain == 1.0 {
        v
    } else {
        v * gain
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{compile, CompileOptions};
    use crate::profile::Profile;

    fn engine(amp: f64) -> Box<Engine> {
        let text = format!(
            r#"{{"version":"1.0","seed":1,"sample_rate":48000,
            "nodes":[{{"id":"n","op":"noise","params":{{"amp":{amp}}}}}],
            "edges":[],"outputs":{{"main":["n:out"]}}}}"#
        );
        let scene = crate::scene::load_str(&text, "t.json", None).unwrap();
        let options = CompileOptions {
            profile: Some(Profile::Repro),
            block_size: Some(64),
            ..CompileOptions::default()
        };
        Box::new(Engine::new(compile(&scene, &options).unwrap()))
    }

    /// A fade ends and retires the engine fading out at the same block
    /// whether the deck maps its output or not; unmapped, `output` is
    /// never written (it keeps its initial silence).
    #[test]
    fn a_fade_retires_its_engine_at_the_same_block_mapped_or_not() {
        let mut retired_at = Vec::new();
        for map in [true, false] {
            let mut deck = Deck::new(engine(0.5), 2);
            deck.map_output(map);
            deck.swap(engine(0.25), 100).ok().unwrap();
            let mut at = None;
            for k in 1..10 {
                deck.process(64);
                let silent = deck.output().iter().all(|&x| x == 0.0);
                assert_eq!(silent, !map, "mapped {map}: block {k}");
                if deck.take_retired().is_some() {
                    at = Some(k);
                    break;
                }
            }
            retired_at.push(at.expect("the fade ended"));
        }
        assert_eq!(retired_at[0], retired_at[1]);
        assert_eq!(
            retired_at[0], 2,
            "a fade of 100 frames ends in the second block"
        );
    }

    /// The bus mapped onto every output width, for every bus width and
    /// precision, is the rule of [`map_bus`] taken sample by sample: bus
    /// channel d on output d, a mono bus on outputs 0 and 1, the mean of
    /// the bus (summed in channel order) on a one-channel output, silence
    /// elsewhere; only the block's frames are written.
    #[test]
    fn the_bus_maps_onto_outputs_by_the_rule() {
        let n = 37;
        for bc in 0..4usize {
            let wide: Vec<Vec<f64>> = (0..bc)
                .map(|c| {
                    (0..n + 3)
                        .map(|i| ((i * 13 + c * 5) % 17) as f64 / 7.0 - 1.1)
                        .collect()
                })
                .collect();
            let narrow: Vec<Vec<f32>> = wide
                .iter()
                .map(|c| c.iter().map(|&x| x as f32).collect())
                .collect();
            for ch in 1..5usize {
                for f32_bus in [false, true] {
                    let bus = if f32_bus {
                        BusRef::F32(&narrow, n)
                    } else {
                        BusRef::F64(&wide, n)
                    };
                    let x = |c: usize, i: usize| {
                        if f32_bus {
                            narrow[c][i] as f64
                        } else {
                            wide[c][i]
                        }
                    };
                    for level in SimdLevel::available() {
                        let mut out = vec![f64::NAN; (n + 3) * ch];
                        map_bus(level, bus, ch, &mut out);
                        for i in 0..n {
                            for d in 0..ch {
                                let want = if ch == 1 && bc > 1 {
                                    (0..bc).fold(0.0, |s, c| s + x(c, i)) / bc as f64
                                } else if d < bc {
                                    x(d, i)
                                } else if bc == 1 && d == 1 {
                                    x(0, i)
                                } else {
                                    0.0
                                };
                                assert_eq!(
                                out[i * ch + d].to_bits(),
                                want.to_bits(),
                                "bus of {bc}, {ch} outputs, f32 {f32_bus}, frame {i} output {d}, {level:?}"
                            );
                            }
                        }
                        assert!(out[n * ch..].iter().all(|x| x.is_nan()));
                    }
                }
            }
        }
    }
}
