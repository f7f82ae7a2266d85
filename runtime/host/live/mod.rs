//! Live: what `morphrt run` plays. The control side of a session (hot
//! edits and profile switches), the audio callback that plays it, the
//! control loop that watches the callback, the devices it plays through
//! (cpal, or the clock device), the scene watcher, keys, the tap that
//! records what the device played, and MIDI input ports (`midi`).

pub mod control;
pub mod device;
pub mod input;
pub mod keys;
pub mod midi;
pub mod player;
pub mod run;
pub mod session;
pub mod tap;
pub mod watch;
