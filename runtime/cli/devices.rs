//! `morphrt devices`: the audio outputs and the configurations each supports.

use crate::host::HostError;
use std::io::Write;

/// Lists every output device: its id (what `run --device` takes), whether
/// it is the default, its name, its default and supported configurations.
pub fn devices(out: &mut dyn Write) -> Result<(), HostError> {
    let list = crate::host::live::device::list()?;
    let mut text = String::new();
    if list.is_empty() {
        text.push_str("no audio output devices\n");
    }
    for d in list {
        let default = if d.is_default { "  [default]" } else { "" };
        text.push_str(&format!("{}{default}  ({})\n", d.id, d.name));
        if let Some(c) = d.default_config {
            text.push_str(&format!("    default: {c}\n"));
        }
        for c in d.configs {
            text.push_str(&format!("    supports: {c}\n"));
        }
    }
    out.write_all(text.as_bytes())
        .map_err(|e| HostError::Runtime(format!("cannot write the device list: {e}")))
}
