//! `morphrt plugin --watch`: the plugin, loaded by a host with a log,
//! applies saves of its scene file while it plays, as `run` does (README,
//! *In a DAW: a CLAP plugin*): a changed param glides with the tone's
//! phase carried, a structural edit crossfades, a bad save goes to the
//! host's log while the output goes on unchanged; `process` allocates
//! nothing throughout.

use crate::support::{counting, morphrt, stderr, temp_dir};
use clack_extensions::latency::PluginLatency;
use clack_extensions::log::{HostLog, HostLogImpl, LogSeverity};
use clack_host::prelude::*;
use std::ffi::CString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A strict tone; the saves below change it.
const TONE: &str = r#"{
  "version": "1.0",
  "profile": "strict",
  "sample_rate": 48000,
  "nodes": [
    { "id": "tone", "op": "sine", "params": { "freq": "440Hz", "amp": 0.25 } }
  ],
  "outputs": { "main": ["tone"] }
}"#;

/// The same with a second tone mixed in: a structural edit.
const TWO_TONES: &str = r#"{
  "version": "1.0",
  "profile": "strict",
  "sample_rate": 48000,
  "nodes": [
    { "id": "tone", "op": "sine", "params": { "freq": "440Hz", "amp": 0.125 } },
    { "id": "hum", "op": "sine", "params": { "freq": "660Hz", "amp": 0.1 } },
    { "id": "sum", "op": "mix", "params": { "gains": [1, 1] } }
  ],
  "edges": [{ "from": "tone", "to": "sum:in0" }, { "from": "hum", "to": "sum:in1" }],
  "outputs": { "main": ["sum"] }
}"#;

/// A host whose log keeps what the plugin logs.
struct Logged(Arc<Mutex<Vec<(LogSeverity, String)>>>);
impl SharedHandler<'_> for Logged {
    fn request_restart(&self) {}
    fn request_process(&self) {}
    fn request_callback(&self) {}
}
impl HostLogImpl for Logged {
    fn log(&self, severity: LogSeverity, message: &str) {
        self.0.lock().unwrap().push((severity, message.to_string()));
    }
}

struct LogHost;
impl HostHandlers for LogHost {
    type Shared<'a> = Logged;
    type MainThread<'a> = ();
    type AudioProcessor<'a> = ();
    fn declare_extensions(builder: &mut HostExtensions<Self>, _: &Logged) {
        builder.register::<HostLog>();
    }
}

/// `morphrt plugin --watch` of `scene` as `dir/NAME.clap`.
fn write_watching(dir: &Path, scene: &Path, name: &str) -> std::path::PathBuf {
    let out = dir.join(format!("{name}.clap"));
    let lib = crate::plugin::library().to_str().unwrap().to_string();
    let o = morphrt(&[
        "plugin",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--library",
        &lib,
        "--watch",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

/// Sample `n` of a sine of `amp` at `hz` (the op's phase from sample 0).
fn sine(amp: f64, hz: f64, n: usize) -> f64 {
    amp * libm::sin(2.0 * std::f64::consts::PI * hz * n as f64 / 48_000.0)
}

/// The first engine sample from `from` at which `f` holds.
fn first(out: &[f64], from: usize, f: impl Fn(usize, f64) -> bool) -> Option<usize> {
    (from..out.len()).find(|&n| f(n, out[n]))
}

/// Saves `text` over `path` as an editor would: a new file renamed over it.
fn save(path: &Path, text: &str) {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn a_watch_build_applies_saves_of_its_scene_and_logs_a_bad_one_while_it_plays() {
    let dir = temp_dir("plugin-watch");
    let scene = dir.join("tone.json");
    std::fs::write(&scene, TONE).unwrap();
    let path = write_watching(&dir, &scene, "tone");
    let c = CString::new(path.to_str().unwrap()).unwrap();
    // Linked in, so the counting allocator sees `process`.
    let entry = PluginEntry::load_from_clack::<morphrt_clap::Entry>(&c).expect("the entry loads");
    let id = CString::new("morphrt.tone").unwrap();
    let logs = Arc::new(Mutex::new(Vec::new()));
    let host = HostInfo::new("morphrt tests", "morphrt", "https://example.invalid", "1.0").unwrap();
    let shared = logs.clone();
    let mut plugin =
        PluginInstance::<LogHost>::new(move |_| Logged(shared), |_| (), &entry, &id, &host)
            .expect("an instance");
    let config = PluginAudioConfiguration {
        sample_rate: 48_000.0,
        min_frames_count: 1,
        max_frames_count: 256,
    };
    let processor = plugin.activate(|_, _| (), config).unwrap();
    let latency = {
        let handle = plugin.plugin_handle();
        handle
            .get_extension::<PluginLatency>()
            .unwrap()
            .get(&handle) as usize
    };
    let mut processor = processor.start_processing().unwrap();
    let mut buf = vec![0f32; 256];
    let mut ports = AudioPorts::with_capacity(1, 1);
    let events = EventBuffer::with_capacity(16);
    let mut out_events = EventBuffer::with_capacity(16);
    // The output, by engine sample (the latency dropped).
    let mut out: Vec<f64> = Vec::new();
    let mut frames = 0usize;
    let before = counting::counts();
    // Plays `n` frames in calls of 256 (then a pause, so the watch has
    // time) until `done` holds of the output, or for `n` frames.
    let mut play =
        |n: usize, pause: Duration, done: &dyn Fn(&[f64]) -> bool, out: &mut Vec<f64>| {
            let start = Instant::now();
            let mut played = 0;
            while played < n {
                let input_audio = InputAudioBuffers::empty();
                let mut output_audio = ports.with_output_buffers([AudioPortBuffer {
                    latency: 0,
                    channels: AudioPortBufferType::f32_output_only([&mut buf[..]].into_iter()),
                }]);
                let input_events = InputEvents::from_buffer(&events);
                out_events.clear();
                let mut output_events = OutputEvents::from_buffer(&mut out_events);
                counting::realtime(|| {
                    processor
                        .process(
                            &input_audio,
                            &mut output_audio,
                            &input_events,
                            &mut output_events,
                            None,
                            None,
                        )
                        .unwrap()
                });
                for (i, x) in buf.iter().enumerate() {
                    if frames + i >= latency {
                        out.push(*x as f64);
                    }
                }
                frames += 256;
                played += 256;
                plugin.call_on_main_thread_callback();
                if done(out.as_slice()) {
                    return true;
                }
                assert!(start.elapsed() < Duration::from_secs(20), "no change seen");
                std::thread::sleep(pause);
            }
            false
        };
    let never = |_: &[f64]| false;
    play(4800, Duration::ZERO, &never, &mut out);

    // A bad save: logged, naming the scene and the unknown op; the tone
    // plays on as it was.
    save(&scene, &TONE.replace("\"sine\"", "\"sinus\""));
    let logged = |_: &[f64]| !logs.lock().unwrap().is_empty();
    assert!(play(
        usize::MAX,
        Duration::from_millis(2),
        &logged,
        &mut out
    ));
    {
        let logs = logs.lock().unwrap();
        let (severity, message) = &logs[0];
        assert_eq!(*severity, LogSeverity::Error);
        assert!(
            message.contains("tone.json") && message.contains("sinus"),
            "{message}"
        );
        assert!(message.contains("goes on"), "{message}");
    }
    play(4800, Duration::ZERO, &never, &mut out);
    let bad_end = out.len();
    let worst = (0..bad_end)
        .map(|n| (out[n] - sine(0.25, 440.0, n)).abs())
        .fold(0.0, f64::max);
    assert!(worst < 1e-6, "the tone changed after the bad save: {worst}");

    // The amp halved: it glides from 0.25 to 0.125, the phase carried.
    save(&scene, &TONE.replace("0.25", "0.125"));
    let settled = |out: &[f64]| {
        out.len() > bad_end + 2400
            && (out.len() - 2400..out.len()).all(|n| (out[n] - sine(0.125, 440.0, n)).abs() < 1e-6)
    };
    assert!(play(
        usize::MAX,
        Duration::from_millis(2),
        &settled,
        &mut out
    ));
    let moved = first(&out, bad_end, |n, x| {
        (x - sine(0.25, 440.0, n)).abs() > 1e-6
    })
    .unwrap();
    let arrived = first(&out, moved, |n, _| {
        n + 256 <= out.len() && (n..n + 256).all(|m| (out[m] - sine(0.125, 440.0, m)).abs() < 1e-6)
    })
    .unwrap();
    // In between, the level passes through values between the two.
    let between = (moved..arrived)
        .filter(|&n| {
            let s = sine(1.0, 440.0, n);
            s.abs() > 0.5 && {
                let a = out[n] / s;
                a > 0.13 && a < 0.245
            }
        })
        .count();
    assert!(
        arrived - moved > 64 && between > 32,
        "a glide, not a step: {moved}..{arrived}, {between} samples between"
    );
    let glide_end = out.len();

    // A second tone mixed in: a structural edit, crossfaded. The first
    // tone carries on; the second rises linearly over the crossfade.
    save(&scene, TWO_TONES);
    let mixed = |out: &[f64]| {
        out.len() > glide_end + 4800
            && (out.len() - 1200..out.len()).any(|n| (out[n] - sine(0.125, 440.0, n)).abs() > 0.09)
    };
    assert!(play(usize::MAX, Duration::from_millis(2), &mixed, &mut out));
    play(2400, Duration::ZERO, &never, &mut out);
    let rest: Vec<f64> = (0..out.len())
        .map(|n| out[n] - sine(0.125, 440.0, n))
        .collect();
    // The second tone's envelope, by 48-sample window.
    let env: Vec<f64> = rest[glide_end..]
        .chunks(48)
        .map(|w| w.iter().fold(0.0f64, |m, x| m.max(x.abs())))
        .collect();
    let rise_from = env.iter().position(|e| *e > 0.005).unwrap();
    let rise_to = env.iter().position(|e| *e > 0.095).unwrap();
    assert!(
        rise_to - rise_from >= 10,
        "a crossfade, not a cut: the second tone rose over {} windows of 48",
        rise_to - rise_from
    );
    let last = env[env.len() - 10..].iter().fold(0.0f64, |m, e| m.max(*e));
    assert!((last - 0.1).abs() < 2e-3, "the second tone at {last}");

    assert_eq!(
        counting::counts(),
        before,
        "allocations and frees in process"
    );
    assert_eq!(logs.lock().unwrap().len(), 1, "only the bad save is logged");
    plugin.deactivate(processor.stop_processing());
}
