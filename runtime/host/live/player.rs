//! The real-time player as `run` uses it: the core's callback body
//! ([`crate::api::player`]) playing a [`LiveInput`] (an input device, a
//! file played as one), with the input history and the tap of this crate
//! plugged into it.

pub use crate::api::player::{
    install_panic_hook, ChangeLink, FromAudio, Link, Meters, NodeTimes, Switches, TimingLink,
    ToAudio, CATCH_UP_LIMIT, CATCH_UP_PER_BLOCK, CHANGES_PER_BLOCK, CHANGE_RING, NOTES_PER_BLOCK,
    NOTE_RING,
};
use crate::host::live::input::LiveInput;

/// The callback body playing a [`LiveInput`].
pub type Player = crate::api::player::Player<dyn LiveInput>;

/// The cell a device callback runs a [`Player`] from.
pub type PlayerCell = crate::api::player::PlayerCell<dyn LiveInput>;
