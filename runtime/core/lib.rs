//! morphrt-core: the engine of morphrt, a scene-graph audio runtime. A JSON
//! scene wires operators into a graph; it is compiled into a plan and run in
//! fixed blocks under one of three profiles: `strict` (bit-exact f64),
//! `repro` (deterministic f32) or `live` (lowest latency), switchable while
//! it plays. This crate holds no devices, files or terminal: the `morphrt`
//! crate (the command line) and every other host build on it.
//!
//! # From scene text to sound
//!
//! ```
//! use morphrt_core::engine::Engine;
//! use morphrt_core::graph::{compile, CompileOptions};
//!
//! let text = r#"{
//!     "version": "1.0",
//!     "sample_rate": 48000,
//!     "nodes": [{ "id": "tone", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } }],
//!     "outputs": { "main": ["tone"] }
//! }"#;
//! let scene = morphrt_core::scene::load_str(text, "tone.json", None).expect("a valid scene");
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
//! One folder of `runtime/core/` per layer. Each may use only the layers
//! above it in this table; a test (`runtime/layering.rs` in the `morphrt`
//! crate) fails on any `crate::` path that breaks the rule and on any two
//! files or folders that use each other.
//!
//! | layer | may also use | owns |
//! |---|---|---|
//! | [`dsp`] | — | sample trait, math policies, FP-mode guard, FFTs, Philox streams, windows, oversampling filters, node state |
//! | [`profile`] | dsp | the three profiles, what each means, per-node settings |
//! | [`scene`] | dsp, profile | the scene format, units, command-line times, resources, located errors |
//! | [`ops`] | dsp … scene | the operator registry, one file or folder per family |
//! | [`graph`] | dsp … ops | compile: scene → plan, and `check`'s report |
//! | [`engine`] | dsp … graph | the block processor, handover (save, migration, the incoming engine), the deck, offline loops |
//! | [`api`] | dsp … engine | the embedding API: scenes loaded for a host with their params by stable id, the real-time player, the controller and processor a host plays through |
//!
//! # Where each concept lives
//!
//! - **Scene format**: types in [`scene`]; loading, validation and
//!   unknown-field warnings in `scene/load/` ([`scene::load_str`]): typed
//!   readers `scene/load/read.rs`, one file per section (`scene/load/top.rs`,
//!   `scene/load/config.rs`, `scene/load/nodes.rs`, `scene/load/edges.rs`,
//!   `scene/load/outputs.rs`, `scene/load/events.rs`), located errors and
//!   did-you-mean `scene/load/report.rs`; units, exact times and
//!   command-line times ([`scene::TimeArg`]) `scene/units.rs`;
//!   `@resource:` `scene/resource.rs`; line:column diagnostics
//!   `scene/diag.rs`.
//! - **Profiles**: the semantics table [`profile::Profile`]; a node's
//!   resolved settings [`profile::NodeProfile`]; precedence node > module >
//!   scene > session in `graph/compile/nodes.rs`.
//! - **Operators**: [`ops::registry`]; each [`ops::OpSpec`] declares
//!   ports, params, tier and the choices it makes per profile; state travels
//!   as [`dsp::state::NodeState`]; goldens `ops/golden.rs`, conformance
//!   suite `ops/conformance.rs`.
//! - **Compile**: [`graph::compile`], one function per pass in
//!   `graph/compile/` (the driver in `graph/compile/mod.rs`; passes by group
//!   in `graph/compile/nodes.rs`, `graph/compile/edges.rs`,
//!   `graph/compile/outputs.rs`, `graph/compile/events.rs`,
//!   `graph/compile/build.rs`, gates that never open `graph/compile/gates.rs`);
//!   what `check` prints, `graph/report.rs`.
//! - **Engine**: [`engine::Engine`] (blocks, events, ramps, FP-mode runs)
//!   in `engine/mod.rs`; nodes and their NaN/panic recovery
//!   `engine/node.rs`; mixing `engine/mix.rs`; per-node timing
//!   `engine/timing.rs`; the main bus `engine/bus.rs`; deck, crossfade and
//!   the device output stage (clip, stop fade) [`engine::Deck`] in
//!   `engine/deck.rs`; loops over a bare engine for tests and library
//!   users [`engine::run_blocks`] `engine/blocks.rs`.
//! - **Handover**: save and migration `engine/handover.rs`; the audio
//!   thread's save of long state in parts over blocks
//!   `engine/save.rs`; the control side's steps (compile, save,
//!   migrate, fast-forward, offer), shared by every host,
//!   `engine/incoming.rs`.
//! - **Embedding API**: [`Activation`] gives a [`Controller`] (profile
//!   switches, edits, snapshots, restores, param indices) and a
//!   [`Processor`] (`process` with host buffers of any size, one block
//!   late) in `api/controller.rs` and `api/processor.rs`, events
//!   `api/event.rs`; the callback body both rest on, [`api::player`]
//!   (`api/player/`), which offline hosts play through too
//!   (`api/player/offline.rs`; scripted handovers and `replay`
//!   [`api::player::Scripted`] `api/player/scripted.rs`). The per-node
//!   state every operator builds implements [`ops::NodeProcessor`].

#![deny(missing_docs)]

pub mod api;
pub mod dsp;
pub mod engine;
pub mod graph;
pub mod ops;
pub mod profile;
pub mod scene;

pub use api::{Activation, Controller, Event, Processor};
