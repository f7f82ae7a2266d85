//! The backend seam: `morphrt devices` lists every backend's devices under
//! its name, a device id goes to the backend whose ids have its form, and
//! an id no backend knows is refused naming every backend's devices.

use crate::support as common;

use common::{stderr, stdout};
use morphrt::host::live::device::{self, Backend, DeviceError, Direction};

/// Every backend's output and input ids, from the library.
fn ids(backend: Backend) -> Vec<String> {
    let host = backend.host();
    let listed = |l: Result<Vec<device::DeviceInfo>, DeviceError>| {
        l.unwrap_or_else(|e| panic!("{}: {e}", host.name()))
            .into_iter()
            .map(|d| d.id)
    };
    listed(host.outputs())
        .chain(listed(host.inputs()))
        .collect()
}

#[test]
fn devices_lists_every_backends_devices_under_its_name() {
    let o = common::morphrt(&["devices"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let headings: Vec<(usize, Backend)> = Backend::ALL
        .iter()
        .map(|b| {
            let heading = format!("\n{}:\n", b.host().name());
            let at = format!("\n{out}")
                .find(&heading)
                .unwrap_or_else(|| panic!("no heading `{}`: {out}", heading.trim()));
            (at, *b)
        })
        .collect();
    assert!(
        headings.windows(2).all(|w| w[0].0 < w[1].0),
        "in the backends' order: {out}"
    );
    let midi = out
        .find("MIDI inputs (run --midi NAME):")
        .expect("MIDI inputs");
    for (i, (start, backend)) in headings.iter().enumerate() {
        let end = headings.get(i + 1).map_or(midi, |h| h.0);
        let section = &out[*start..end];
        for id in ids(*backend) {
            assert!(
                section.contains(&format!("    {id}  ")),
                "`{id}` under {}: {section}",
                backend.host().name()
            );
        }
    }
    // The clock device is a backend's device like any other.
    let clock = &out[headings[1].0..midi];
    assert!(clock.contains("    clock  ("), "{out}");
}

#[test]
fn a_device_id_goes_to_the_backend_whose_ids_have_its_form() {
    assert_eq!(device::owner("clock"), Some(Backend::Clock));
    assert_eq!(device::owner("jack"), Some(Backend::Jack));
    assert_eq!(device::owner("alsa:null"), Some(Backend::Cpal));
    assert_eq!(device::owner("alsa:no-such-device"), Some(Backend::Cpal));
    assert_eq!(device::owner("nope"), None);
    assert_eq!(device::owner("nohost:x"), None);
}

#[test]
fn an_unknown_device_is_refused_naming_every_backends_devices() {
    let o = common::morphrt(&[
        "run",
        "--no-journal",
        "scenes/drone.json",
        "--device",
        "nope",
        "--duration",
        "1s",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("`nope` is not a device id"), "{err}");
    let available = err
        .split("available: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no list: {err}"));
    for b in Backend::ALL {
        for d in b.host().outputs().unwrap() {
            assert!(available.contains(&d.id), "`{}` listed: {err}", d.id);
        }
    }
    assert!(available.contains("clock"), "{err}");
    // The same list the library gives for outputs.
    assert!(
        available.starts_with(&device::names(Direction::Output)),
        "{err}"
    );
}

#[test]
fn an_input_id_no_backend_knows_is_bad_input_listing_the_inputs() {
    let o = common::morphrt(&[
        "run",
        "--no-journal",
        "scenes/input-hall.json",
        "--device",
        "clock",
        "--input-device",
        "nope",
        "--duration",
        "0.2s",
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--input-device: `nope` is not a device id"),
        "{err}"
    );
    assert!(
        err.contains(&format!("available: {}", device::names(Direction::Input))),
        "{err}"
    );
}

#[test]
fn the_clock_backend_has_no_input_and_no_default_output() {
    let need = device::Need {
        sample_rate: 48_000,
        min_channels: 1,
        block: 64,
    };
    let clock = Backend::Clock.host();
    assert!(matches!(
        clock.open_input(Some("clock"), need),
        Err(DeviceError::NoInput { .. })
    ));
    let request = device::Request {
        sample_rate: 48_000,
        bus_channels: 1,
        period: 64,
        ..device::Request::default()
    };
    assert!(matches!(
        clock.open_output(None, &request),
        Err(DeviceError::NoDefault { .. })
    ));
    let opened = device::open_output(Some("clock"), &request).unwrap();
    assert_eq!((opened.id.as_str(), opened.channels), ("clock", 2));
    assert_eq!(opened.sample_rate, 48_000);
    assert_eq!(opened.device.period_frames(), Some(64));
}

#[test]
fn a_device_error_keeps_the_backends_error_as_its_source() {
    use std::error::Error;
    let cause = std::io::Error::other("the card is gone");
    let e = DeviceError::stream("cannot start the output stream", cause);
    assert_eq!(
        e.to_string(),
        "cannot start the output stream: the card is gone"
    );
    assert_eq!(e.source().unwrap().to_string(), "the card is gone");
    let own = DeviceError::stream_refused("morphrt does not read u64 samples");
    assert!(own.source().is_none());
    // A backend's own parse error is kept.
    let bad = device::Backend::Cpal.host().open_output(
        Some("nohost:x"),
        &device::Request {
            sample_rate: 48_000,
            bus_channels: 2,
            period: 64,
            ..device::Request::default()
        },
    );
    match bad {
        Err(e @ DeviceError::BadId { .. }) => assert!(e.source().is_some(), "{e}"),
        Err(e) => panic!("not a bad id: {e}"),
        Ok(_) => panic!("opened `nohost:x`"),
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn nothing_outside_the_device_seam_chooses_a_backend_by_name() {
    let runtime = common::root().join("runtime");
    let seam = runtime.join("host/live/device");
    let mut files = Vec::new();
    sources(&runtime, &mut files);
    let named: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&seam) && !f.starts_with(runtime.join("core")))
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let shown = f
                .strip_prefix(common::root())
                .unwrap()
                .display()
                .to_string();
            text.lines()
                .enumerate()
                .filter(|(_, l)| {
                    [
                        "CLOCK_DEVICE",
                        "ClockDevice",
                        "ClockHost",
                        "device::clock",
                        "\"clock\"",
                        "CpalHost",
                        "device::cpal::open",
                    ]
                    .iter()
                    .any(|p| l.contains(p))
                })
                .map(|(i, l)| format!("{shown}:{}: {}", i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(named.is_empty(), "{}", named.join("\n"));
}
