//! `morphrt devices`: every backend's audio outputs and inputs, and the
//! configurations each supports; then the MIDI inputs.

use crate::host::live::device::{Backend, DeviceInfo};
use crate::host::HostError;
use std::io::Write;

/// Lists every backend's devices under its name, outputs then inputs: a
/// device's id (what `run --device` and `run --input-device` take),
/// whether it is the default, its name, its default and supported
/// configurations.
pub fn devices(out: &mut dyn Write) -> Result<(), HostError> {
    let mut text = String::new();
    for backend in Backend::ALL {
        let host = backend.host();
        let outputs = host.outputs()?;
        let inputs = host.inputs()?;
        text.push_str(&format!("{}:\n", host.name()));
        if let Some(note) = host.note() {
            text.push_str(&format!("  {note}\n"));
        }
        text.push_str("  outputs (run --device ID):\n");
        section(&mut text, outputs, "no audio output devices");
        text.push_str("  inputs (run --input-device ID):\n");
        section(&mut text, inputs, "no audio input devices");
    }
    text.push_str("MIDI inputs (run --midi NAME):\n");
    match crate::host::live::midi::list_inputs() {
        Ok(names) if names.is_empty() => text.push_str("  no MIDI inputs\n"),
        Ok(names) => names
            .iter()
            .for_each(|n| text.push_str(&format!("  {n}\n"))),
        Err(why) => text.push_str(&format!("  none: {why}\n")),
    }
    out.write_all(text.as_bytes())
        .map_err(HostError::stdout("cannot write the device list"))
}

/// One side of a backend's devices, indented under its heading.
fn section(text: &mut String, list: Vec<DeviceInfo>, none: &str) {
    if list.is_empty() {
        text.push_str(&format!("    {none}\n"));
    }
    for d in list {
        let default = if d.is_default { "  [default]" } else { "" };
        text.push_str(&format!("    {}{default}  ({})\n", d.id, d.name));
        if let Some(c) = d.default_config {
            text.push_str(&format!("        default: {c}\n"));
        }
        for c in d.configs {
            text.push_str(&format!("        supports: {c}\n"));
        }
    }
}
