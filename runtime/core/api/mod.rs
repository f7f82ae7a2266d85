//! The embedding API: what a host of the engine uses — the command line,
//! a plugin, a Python module, any program that embeds `morphrt-core`.
//! [`Loaded`] reads a scene with located [`Diagnostics`] and lists its
//! params by stable id ([`ParamList`]); [`Activation`] turns a scene into
//! a [`Controller`] (any thread) and a [`Processor`] (the audio thread);
//! the [`player`] is the callback body the command line's devices run;
//! [`snapshot`] is the one snapshot format every host reads and writes.

mod controller;
mod event;
mod load;
mod overrides;
mod params;
pub mod player;
mod processor;
pub mod snapshot;

pub use controller::{ActivateError, Activation, ControlError, Controller, Notice};
pub use event::{Event, EventKind};
pub use load::{Diagnostics, Loaded};
pub use overrides::{parse_set, set_params};
pub use params::{Param, ParamList, ParamRange, ParamRefused, ParamRoutes};
pub use player::{
    install_panic_hook, InputHistory, InputSource, Meters, NodeTimes, OutputTap, Player,
    PlayerCell, Switches,
};
pub use processor::{Metering, NoteEnd, ProcessError, Processor};
