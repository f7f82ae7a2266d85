//! morphrt: a scene-graph audio runtime with three execution profiles —
//! `strict` (bit-exact f64), `repro` (deterministic f32) and `live` (lowest
//! latency).
//!
//! Layers, each using only those before it: [`dsp`] → [`profile`] →
//! [`scene`] → [`ops`] → [`graph`] → [`engine`] → [`host`] → [`bench`].

pub mod bench;
pub mod dsp;
pub mod engine;
pub mod graph;
pub mod host;
pub mod ops;
pub mod profile;
pub mod scene;
