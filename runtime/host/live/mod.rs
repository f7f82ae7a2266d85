//! Live: what `morphrt run` plays. The control side of a session (hot
//! edits and profile switches), the audio callback that plays it, the
//! control loop that watches the callback, control in (the hub every
//! transport sends to, the transport seam in `transport`, the OSC socket,
//! MIDI input ports in `midi`), the backends it plays through (cpal, or
//! the clock device; `device`), the scene watcher, keys, and the tap that
//! records what the device played.

pub mod control;
pub mod device;
pub mod input;
pub mod keys;
pub mod midi;
pub mod osc_in;
pub mod player;
pub mod remote_in;
pub mod run;
pub mod session;
pub mod tap;
pub mod transport;
pub mod watch;
