//! morphrt: a scene-graph audio runtime. A JSON scene wires operators into
//! a graph; it is compiled into a plan and run in fixed blocks, in real time
//! (cpal) or offline (WAV), under one of three profiles: `strict` (bit-exact
//! f64), `repro` (deterministic f32) or `live` (lowest latency), switchable
//! while it plays. README.md and GUIDE.md show the commands, ARCHITECTURE.md
//! the layers and the path of a block; `scenes/README.md` teaches
//! the scene format; this is the map of the code.
//!
//! # From scene text to sound
//!
//! ```
//! use morphrt::engine::Engine;
//! use morphrt::graph::{compile, CompileOptions};
//!
//! let text = r#"{
//!     "version": "1.0",
//!     "sample_rate": 48000,
//!     "nodes": [{ "id": "tone", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } }],
//!     "outputs": { "main": ["tone"] }
//! }"#;
//! let scene = morphrt::scene::load_str(text, "tone.json", None).expect("a valid scene");
//! let plan = compile(&scene, &CompileOptions::default()).expect("it compiles");
//! let mut engine = Engine::new(plan);
//! engine.process_block(64);
//! let bus = engine.bus();
//! assert_eq!(bus.frames(), 64);
//! // A 1 kHz sine at 48 kHz: a quarter period is 12 samples.
//! assert!((bus.get(0, 12) - 0.5).abs() < 1e-6);
//! ```
//!
//! # Layers
//!
//! Two crates. `morphrt-core` (`runtime/core/`) holds the engine layers
//! dsp → profile → scene → ops → graph → engine → api, with no devices, files or
//! terminal; this crate re-exports them under the same names and adds the
//! command line's outside world. Each layer may use only the layers above
//! it in this table; the crate boundary enforces it between the two crates,
//! and a test (`runtime/layering.rs`) checks the order inside each crate,
//! the wings of `host/`, and that no two files or folders use each other.
//!
//! | layer | crate | may also use | owns |
//! |---|---|---|---|
//! | [`dsp`] | core | — | sample trait, math policies, FP-mode guard, FFTs, Philox streams, windows, oversampling filters, node state |
//! | [`profile`] | core | dsp | the three profiles, what each means, per-node settings |
//! | [`scene`] | core | dsp, profile | the scene format, units, command-line times, resources, located errors |
//! | [`ops`] | core | dsp … scene | the operator registry, one file or folder per family |
//! | [`graph`] | core | dsp … ops | compile: scene → plan, and `check`'s report |
//! | [`engine`] | core | dsp … graph | the block processor, handover (save, migration, the incoming engine), the deck, offline loops |
//! | [`api`] | core | dsp … engine | the embedding API: the real-time player and what hosts plug into it |
//! | [`host`] | morphrt | dsp … engine | the outside world, in wings: files, machine, record, remote, offline, live |
//! | [`bench`] | morphrt | dsp … host | timing, parity, calibration |
//! | [`cli`] | morphrt | all | one clap options type per command, and the dispatch |
//!
//! `main.rs` is the binary: it parses the command line and calls [`cli::main`].
//!
//! # Where each concept lives
//!
//! The engine's concepts (scene format, profiles, operators, compile,
//! engine, handover) are mapped in `morphrt-core`'s crate documentation
//! (`runtime/core/lib.rs`); paths below are relative to `runtime/`.
//!
//! - **Handover**: save and migration `engine/handover.rs`; the audio
//!   thread's save of long state in parts over blocks
//!   `engine/save.rs`; the control side's steps (compile, save,
//!   migrate, fast-forward, offer), shared by `run` and offline scripts,
//!   `engine/incoming.rs`; hot edits and
//!   profile switches against the audio thread `host/live/session/` (what
//!   a session starts with `host/live/session/config.rs`, edits and their
//!   refusal `host/live/session/edit.rs`, the handover's phases
//!   `host/live/session/handover.rs`, placing against the audio clock
//!   `host/live/session/place.rs`, snapshots
//!   `host/live/session/snapshot.rs`);
//!   file watching `host/live/watch.rs`.
//! - **Real time** (`host/live/`): the callback, `core/api/player/` in
//!   `morphrt-core`, played with this crate's input through
//!   `host/live/player.rs`; its
//!   control loop `host/live/control.rs`; backends behind one seam
//!   `host/live/device/mod.rs` (cpal's host `host/live/device/cpal/mod.rs`,
//!   the clock device `host/live/device/clock.rs`); audio input: what the callback reads
//!   `host/live/input/`, the ring from an input stream
//!   `host/live/input/ring.rs` with its drift control
//!   `host/live/input/drift.rs`, the input stream's control side and
//!   rebuilds `host/live/device/input.rs`, cpal's input stream
//!   `host/live/device/cpal/input.rs`, and `run`'s input
//!   `host/live/run/input_device.rs`;
//!   `morphrt run` `host/live/run/` (its setup `host/live/run/setup.rs`, what
//!   drives it `host/live/run/driving.rs`), keys `host/live/keys.rs`, the tap that
//!   records what the device played `host/live/tap.rs`; the session's input
//!   `host/live/input/` (a file played as one `host/live/input/file.rs`, the
//!   history handovers catch up through is morphrt-core's `InputHistory`; its
//!   recording beside the journal `host/live/input/record.rs`).
//! - **Remote in** (`host/remote/`): the messages transports send,
//!   and how a change becomes an engine's record, `host/remote/mod.rs`;
//!   OSC packets decoded `host/remote/osc.rs`; MIDI messages onto a
//!   scene's `controls` `host/remote/midi.rs`; MIDI files as exactly
//!   timed messages `host/remote/midi_file.rs`; `render --midi`
//!   `host/offline/midi.rs`, landing scheduled changes in offline loops
//!   `engine/feed.rs`; the control thread's hub every transport sends to
//!   (resolving, the ring to the callback, the journal, replies)
//!   `host/live/remote_in.rs`; `run --osc`'s socket and thread
//!   `host/live/osc_in.rs`; MIDI ports and the `file:` port for `run`
//!   `host/live/midi.rs`; the records the engine lands at their sample
//!   `engine/changes.rs`; a scene's `controls` loaded
//!   `scene/load/controls.rs`, resolved `graph/compile/controls.rs` into
//!   the scaling of `graph/controls.rs`.
//! - **Files** (`host/files/`): the output rules every written file obeys
//!   `host/files/rules.rs`, carried out by the one atomic, fsynced writer
//!   `host/files/write.rs`, with its errors `host/files/error.rs`; the lock
//!   that keeps a journal to one writer `host/files/lock.rs`; signals
//!   `host/files/signals.rs`; SHA-256 `host/files/digest.rs`; WAV headers
//!   and sample formats `host/files/wav.rs`; reading a WAV (a file, or a
//!   stream with a pipe's streaming header) as audio input
//!   `host/files/wav_in.rs`; reading a scene from disk
//!   `host/files/scene.rs`.
//! - **Offline** (`host/offline/`): `render` `host/offline/render/`
//!   (its arguments, plan and length, loop into the WAV, and report),
//!   its errors `host/offline/error.rs`;
//!   its audio input (`--input`, the tail length) `host/offline/input.rs`
//!   and WAV output (encoding, a header known only at the end)
//!   `host/offline/wav_out.rs`; levels `host/offline/levels.rs`; `plot` `host/offline/plot.rs`, its
//!   ticks and labels `host/offline/axes.rs` and the picture with its
//!   bitmap font `host/offline/canvas.rs`.
//! - **Records** (`host/record/`): journal and replay
//!   `host/record/journal/` (records, the writer, reading back, the
//!   re-render, the timeline, the command, and its errors
//!   `host/record/journal/error.rs`); the recorded input replay feeds back
//!   `host/record/input.rs`; snapshot files `host/record/snapshot/`
//!   (reading, writing under the output rules, resources from folders;
//!   the format, its codec and resuming are the core's
//!   `core/api/snapshot/`).
//! - **Measuring**: the machine and build a timing belongs to, and stored
//!   calibrations, `host/machine/`; `bench` and `calibrate` in [`bench`].
//! - **Command line**: [`cli::Command`] in `cli/mod.rs`; `check`
//!   `cli/check.rs`; the scene format's JSON Schema `graph/schema.rs` (it
//!   reads both the scene loader and the registry), printed by `cli/docs.rs`.

pub use morphrt_core::{api, dsp, engine, graph, ops, profile, scene};

pub mod bench;
pub mod cli;
pub mod host;

#[cfg(test)]
mod layering;
