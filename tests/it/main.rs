//! The integration tests: one binary, one module per area (as cargo's own
//! test suite is laid out), so the crate is linked into one test binary
//! instead of one per file. Helpers shared by the modules are in
//! [`support`]; fixtures, ALSA configurations and the Python oracles stay
//! in tests/fixtures, tests/alsa and tests/oracles.
//!
//! Run one module with `cargo test --test it voices::`, one test with
//! `cargo test --test it NAME`.

mod support;

mod ahead;
mod audio_in;
mod backends;
mod bench;
mod capture;
mod cli;
mod control_records;
mod controls_scene;
mod docs;
mod dynamics;
mod engine;
mod envelopes_and_utilities;
mod errors;
mod examples;
mod expression;
mod feedback;
mod flac_out;
mod flood;
mod formats;
mod fp_mode;
mod fuzz_files;
mod fuzz_scenes;
mod grains;
mod handover;
mod handover_budget;
mod hot_reload;
mod input_device;
mod inputs;
mod isa_cap;
mod jack;
mod jack_callback;
mod lanes;
mod legato;
mod lfo;
mod live_input;
mod live_switch;
mod live_threads;
mod messages;
mod midi;
mod migration;
mod modulation;
mod node_timing;
mod osc;
mod oscillator_phase;
mod output_rules;
mod oversampling_edit;
mod pitch;
mod playback;
mod playing;
mod plugin;
mod plugin_host;
mod plugin_watch;
mod processor;
mod rates;
mod realtime;
mod recovery;
mod recovery_backoff;
mod regression;
mod render_safety;
mod replay;
mod resample;
mod resume_live;
mod reverb;
mod run_rates;
mod sc_peers;
mod scenes;
mod scripted_render;
mod set_params;
mod shapers;
mod snapshot;
mod sources;
mod state_in_parts;
mod switch_events;
mod take_names;
mod takes;
mod tempo;
mod term;
mod threads;
mod tools;
mod transports;
mod voices;
mod voices_carry;
mod voices_check;
mod voices_clearing;
mod voices_control;
mod warnings;
mod watchdog;
