//! The transport seam: a [`Transport`] is a control input of a playing
//! session (the OSC socket, MIDI ports, a MIDI file played in real time).
//! Each reads the outside world on its own thread and sends
//! [`Message`](crate::host::remote::Message)s through the hub's
//! [`Inlet`](crate::host::live::remote_in::Inlet), decoding against the
//! mappings the hub keeps current; the hub resolves, lands, journals and
//! answers them whatever sent them.
//!
//! A transport is opened before the device (so that a bad address or
//! name stops `run` before anything plays), started once the session's
//! hub is ready, ticked by the control loop, and stopped when dropped.
//! `run`'s list of them, with their flags, is `host/live/run/transports.rs`.

use crate::host::HostError;

/// A control input of a playing session (see the module docs).
pub trait Transport {
    /// Begins serving: the hub is ready and reads what arrives. Returns
    /// what `run` says of it (`OSC: listening on 127.0.0.1:9000 …`).
    fn start(&mut self) -> Result<String, HostError>;
    /// Called on every tick of the control loop, from the first one,
    /// when the session plays (a MIDI file's time 0 is there).
    fn tick(&mut self) {}
}
