//! `run`'s transports: the flags of each (flattened into `run`'s options)
//! and the one list that opens them. A transport is registered here: its
//! flags as one field of [`TransportArgs`], its `open` as one line of
//! [`open_transports`].

use crate::host::live::remote_in::Inlet;
use crate::host::live::transport::Transport;
use crate::host::live::{midi, osc_in};
use crate::host::HostError;
use std::io::Write;

/// The flags of every transport, as `run` takes them.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TransportArgs {
    #[command(flatten)]
    pub osc: osc_in::OscArgs,
    #[command(flatten)]
    pub midi: midi::MidiArgs,
}

/// Opens every transport `args` asks for, in order, each delivering to
/// `inlet`; the first that cannot open stops `run` (before the device
/// opens).
pub(super) fn open_transports(
    args: &TransportArgs,
    inlet: &Inlet,
    log: &mut dyn Write,
) -> Result<Vec<Box<dyn Transport>>, HostError> {
    let mut all = osc_in::open(&args.osc, inlet, log)?;
    all.extend(midi::open(&args.midi, inlet, log)?);
    Ok(all)
}
