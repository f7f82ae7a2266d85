//! The JACK backend, [`JackHost`]: `--device jack` registers a JACK client
//! (`morphrt`, or `--name NAME`; JACK numbers a second one, `morphrt-01`)
//! with one output port per device channel (`out_1`, `out_2`, …, or the
//! scene's `channel_names`; [`port_names`]),
//! connected to the server's physical playback ports (`--connect none`
//! leaves them unconnected, `--connect PATTERN` connects them to the
//! input ports whose names match that regular expression, in order).
//!
//! The session runs at the server's rate: a scene that sets another
//! `sample_rate` is refused naming both; one that does not is compiled at
//! the server's. The period is the server's buffer size, followed when it
//! changes (`jack_bufsize`): the player pulls whole blocks through its
//! FIFO into buffers of any size. A server that stops reports the device
//! lost; xruns the server reports count as the session's xruns.
//!
//! With `--midi jack` ([`open_midi`]) the client also has a MIDI input
//! port, `midi_in`, read in the same process callback: each event is
//! stamped with the output frame it arrived at, so it lands at that frame
//! plus a fixed latency whatever the callback's jitter.
//!
//! With `--transport follow` ([`follow_transport`]) the process callback
//! reads the JACK transport each cycle: while it is not rolling the
//! callback plays silence and the player holds (the scene's clock stands
//! still), and the tempo of its bar-beat-tick position is kept for the
//! control thread ([`transport_bpm`]), which hands the scene over to it.
//!
//! libjack is loaded when the backend is first used, so `morphrt` runs on
//! a machine without JACK (the backend then says it is not installed).

use crate::host::live::device::input::{InputDevice, InputStreamSource};
use crate::host::live::device::{
    names, Cause, Device, DeviceError, DeviceInfo, Direction, Host, Need, Opened, Request, Stream,
    StreamEvents, StreamFault,
};
use crate::host::live::input::ring::{RingShape, RingWriter};
use crate::host::live::input::InputFormat;
use crate::host::live::player::{Meters, PlayerCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The device id of the JACK backend.
pub const JACK_DEVICE: &str = "jack";

/// The client name without `--name`.
pub const DEFAULT_NAME: &str = "morphrt";

/// JACK's largest buffer size: the interleaving buffer is made this long
/// up front, so a buffer-size change never allocates.
const MAX_PERIOD: usize = 8192;

/// No callback for this long is a lost client: the server suspends its
/// clients while its graph changes, and says itself when it stops.
const STALL: std::time::Duration = std::time::Duration::from_secs(2);

/// The port type of JACK audio.
const AUDIO_TYPE: &str = "32 bit float mono audio";

/// What an xrun is under JACK, said at the first one.
pub const XRUN_MEANING: &str =
    "under JACK an xrun is one the JACK server reports (a cycle of the graph that missed its deadline) or a callback of morphrt's that started late or overran its budget";

/// What an xrun is under JACK, in the summary.
pub const XRUN_SUMMARY: &str =
    "JACK: the server's xruns and morphrt's late or overrunning callbacks";

/// The JACK backend (see the module docs).
pub struct JackHost;

/// Why the JACK backend cannot serve a session.
#[derive(Debug)]
pub enum JackError {
    /// libjack cannot be loaded.
    NotInstalled(Cause),
    /// No server of that name runs; `source` is the client's refusal.
    NoServer { server: String, source: jack::Error },
    /// The server refused the client.
    Client(jack::Error),
    /// Input ports were asked for without `--device jack`, whose client
    /// owns them.
    NoOutputClient,
}

impl std::fmt::Display for JackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JackError::NotInstalled(e) => {
                write!(f, "JACK is not installed (libjack cannot be loaded: {e})")
            }
            JackError::NoServer { server, .. } => write!(
                f,
                "no JACK server `{server}` is running (start one, e.g. `jackd -d alsa`)"
            ),
            JackError::Client(e) => write!(f, "cannot open a JACK client: {e}"),
            JackError::NoOutputClient => f.write_str(
                "the JACK input ports belong to the client of `--device jack`, which this session does not play through",
            ),
        }
    }
}

impl std::error::Error for JackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JackError::NotInstalled(e) => Some(e.as_ref()),
            JackError::NoServer { source, .. } | JackError::Client(source) => Some(source),
            JackError::NoOutputClient => None,
        }
    }
}

/// libjack loaded, its messages silenced (unless `-v`), or why not.
fn library() -> Result<(), JackError> {
    static QUIET: std::sync::Once = std::sync::Once::new();
    jack::jack_sys::library().map_err(|e| JackError::NotInstalled(Box::new(e)))?;
    QUIET.call_once(|| {
        if !crate::host::term::verbose() {
            jack::set_logger(jack::LoggerType::None);
        }
    });
    Ok(())
}

/// The server `JACK_DEFAULT_SERVER` names, else `default`.
fn server_name() -> String {
    std::env::var("JACK_DEFAULT_SERVER")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".to_string())
}

/// A client of the running server named `name` (JACK numbers it when the
/// name is taken), never starting a server.
fn client(name: &str) -> Result<jack::Client, JackError> {
    library()?;
    // A server busy with other clients can fail a request it would take a
    // moment later (SERVER_ERROR: its answer came too late): asked again
    // twice before giving up.
    let open = || jack::Client::new(name, jack::ClientOptions::NO_START_SERVER);
    let mut opened = open();
    for _ in 0..2 {
        match &opened {
            Err(jack::Error::ClientError(status))
                if status.contains(jack::ClientStatus::SERVER_ERROR)
                    && !status.contains(jack::ClientStatus::SERVER_FAILED) =>
            {
                std::thread::sleep(std::time::Duration::from_millis(200));
                opened = open();
            }
            _ => break,
        }
    }
    opened.map(|(c, _)| c).map_err(|e| match e {
        jack::Error::ClientError(status) if status.contains(jack::ClientStatus::SERVER_FAILED) => {
            JackError::NoServer {
                server: server_name(),
                source: e,
            }
        }
        e => JackError::Client(e),
    })
}

/// The server as `morphrt devices` shows it, with the ports of one side.
fn listing(dir: Direction) -> Vec<DeviceInfo> {
    let Ok(c) = client("morphrt-list") else {
        return Vec::new();
    };
    let flags = match dir {
        Direction::Output => jack::PortFlags::IS_INPUT,
        Direction::Input => jack::PortFlags::IS_OUTPUT,
    };
    let own = format!("{}:", c.name());
    let ports: Vec<String> = c
        .ports(None, Some(AUDIO_TYPE), flags)
        .into_iter()
        .filter(|p| !p.starts_with(&own))
        .collect();
    let side = match dir {
        Direction::Output => "ports it can play into",
        Direction::Input => "ports it can record from",
    };
    vec![DeviceInfo {
        id: JACK_DEVICE.to_string(),
        name: format!("JACK server `{}`", server_name()),
        default_config: Some(format!(
            "{} Hz, buffer {} frames, f32",
            c.sample_rate(),
            c.buffer_size()
        )),
        configs: vec![format!(
            "{side}: {}",
            if ports.is_empty() {
                "none".to_string()
            } else {
                ports.join(", ")
            }
        )],
        is_default: false,
    }]
}

impl Host for JackHost {
    fn name(&self) -> String {
        "JACK".to_string()
    }

    fn outputs(&self) -> Result<Vec<DeviceInfo>, DeviceError> {
        Ok(listing(Direction::Output))
    }

    fn inputs(&self) -> Result<Vec<DeviceInfo>, DeviceError> {
        Ok(listing(Direction::Input))
    }

    fn note(&self) -> Option<String> {
        client("morphrt-list").err().map(|e| e.to_string())
    }

    fn owns(&self, id: &str) -> bool {
        id == JACK_DEVICE
    }

    fn open_output(&self, id: Option<&str>, request: &Request) -> Result<Opened, DeviceError> {
        if id.is_none() {
            return Err(DeviceError::NoDefault {
                available: names(Direction::Output),
            });
        }
        let asked = request.name.as_deref().unwrap_or(DEFAULT_NAME);
        let c = client(asked).map_err(|why| DeviceError::CannotPlay {
            id: JACK_DEVICE.to_string(),
            source: Box::new(why),
            available: names(Direction::Output),
        })?;
        let rate = c.sample_rate();
        if rate != request.sample_rate && request.rate_pinned {
            return Err(DeviceError::stream_refused(format!(
                "the JACK server `{}` runs at {rate} Hz and the scene's `sample_rate` is {} Hz; a JACK session runs at the server's rate\n  help: start the server at {} Hz (`jackd -r {}`), or remove `sample_rate` from the scene to play at the server's",
                server_name(),
                request.sample_rate,
                request.sample_rate,
                request.sample_rate
            )));
        }
        let channels = request.channels_wanted();
        let ports = port_names(&request.channel_names, channels);
        let targets = peers(&c, request.connect.as_deref(), jack::PortFlags::IS_INPUT)?;
        let sources = peers(&c, request.connect.as_deref(), jack::PortFlags::IS_OUTPUT)?;
        let id = format!("jack:{}", c.name());
        let period = Arc::new(AtomicUsize::new(c.buffer_size() as usize));
        let capture = SharedCapture {
            channels: Arc::new(Mutex::new(0)),
            pending: Arc::new(Mutex::new(None)),
            swap: Arc::new(Mutex::new(None)),
            period: period.clone(),
        };
        if let Ok(mut c) = CAPTURE.lock() {
            *c = Some(capture.clone());
        }
        Ok(Opened {
            device: Box::new(JackDevice {
                client: Some(c),
                asked: asked.to_string(),
                channels,
                ports,
                targets,
                sources,
                period,
                server_xruns: Arc::new(AtomicU64::new(0)),
                midi: Arc::new(Mutex::new(midi_wanted())),
                capture,
            }),
            sample_rate: rate,
            channels,
            id,
            warnings: Vec::new(),
        })
    }

    fn open_input(&self, id: Option<&str>, need: Need) -> Result<InputDevice, DeviceError> {
        let Some(capture) = CAPTURE.lock().ok().and_then(|c| c.clone()) else {
            // Input ports belong to the output's client: none without it.
            let available = names(Direction::Input);
            return Err(match id {
                Some(_) => DeviceError::CannotRecord {
                    id: JACK_DEVICE.to_string(),
                    why: Box::new(JackError::NoOutputClient),
                },
                None => DeviceError::NoDefaultInput { available },
            });
        };
        let channels = need.min_channels.max(1);
        if let Ok(mut c) = capture.channels.lock() {
            *c = channels;
        }
        let source = JackCapture {
            capture,
            channels,
            id: JACK_DEVICE.to_string(),
        };
        let period = source.capture.period.load(Ordering::Relaxed);
        let shape = RingShape {
            channels,
            format: InputFormat::F32,
            capacity_frames: super::cpal::input::ring_frames(Some(period), need.block),
            block: need.block,
        };
        InputDevice::start(Box::new(source), shape, STALL)
    }
}

/// What the output's client shares with its input: the input channels
/// asked for, the writers handed to the process callback, and the
/// server's period.
#[derive(Clone)]
struct SharedCapture {
    /// Input ports to register (0: none).
    channels: Arc<Mutex<usize>>,
    /// The writer the next activation takes.
    pending: Arc<Mutex<Option<RingWriter>>>,
    /// New writers for a running callback, and the old ones back from it
    /// (dropped here, off the audio thread).
    swap: Arc<Mutex<Option<WriterSwap>>>,
    period: Arc<AtomicUsize>,
}

/// The control side of a running callback's writer handover.
struct WriterSwap {
    to_audio: rtrb::Producer<RingWriter>,
    back: rtrb::Consumer<RingWriter>,
}

/// The capture side of the JACK output opened last, if any.
static CAPTURE: Mutex<Option<SharedCapture>> = Mutex::new(None);

/// The input ports of the `--device jack` client, as a capture source:
/// the process callback pushes them into the ring before it plays.
struct JackCapture {
    capture: SharedCapture,
    channels: usize,
    id: String,
}

impl InputStreamSource for JackCapture {
    fn prepare(&mut self, _fallback: bool) -> Result<usize, DeviceError> {
        Ok(self.channels)
    }

    fn open(
        &mut self,
        writer: RingWriter,
        _events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError> {
        let mut swap = self
            .capture
            .swap
            .lock()
            .map_err(|_| DeviceError::stream_refused("the JACK capture state is poisoned"))?;
        match swap.as_mut() {
            Some(s) => {
                while s.back.pop().is_ok() {}
                if let Err(rtrb::PushError::Full(w)) = s.to_audio.push(writer) {
                    drop(w);
                    return Err(DeviceError::stream_refused(
                        "the JACK callback has not taken the last input ring yet",
                    ));
                }
            }
            None => {
                if let Ok(mut p) = self.capture.pending.lock() {
                    *p = Some(writer);
                }
            }
        }
        Ok(Box::new(NoStream))
    }

    fn id(&self) -> String {
        self.id.clone()
    }

    fn period_frames(&self) -> Option<usize> {
        Some(self.capture.period.load(Ordering::Relaxed))
    }
}

/// The input's stream is the output's client: nothing to stop here.
struct NoStream;
impl Stream for NoStream {}

/// The output ports of `channels` device channels: `out_1`, `out_2`, …,
/// or the scene's `names`, one per channel of its main bus (a mono bus,
/// which plays on two ports, names them `NAME_1` and `NAME_2`).
fn port_names(names: &[String], channels: usize) -> Vec<String> {
    match names {
        [mono] if channels == 2 => vec![format!("{mono}_1"), format!("{mono}_2")],
        names if names.len() == channels => names.to_vec(),
        _ => (1..=channels).map(|i| format!("out_{i}")).collect(),
    }
}

/// The other clients' ports on one side (`IS_INPUT`: what the output
/// ports connect to; `IS_OUTPUT`: what the input ports connect from), in
/// order: the physical ports (`None`), none (`none`), or those whose names
/// match `pattern`. A pattern that matches no input port is refused,
/// listing the input ports.
fn peers(
    c: &jack::Client,
    connect: Option<&str>,
    side: jack::PortFlags,
) -> Result<Vec<String>, DeviceError> {
    let own = format!("{}:", c.name());
    let ports = |pattern: Option<&str>, flags: jack::PortFlags| -> Vec<String> {
        c.ports(pattern, Some(AUDIO_TYPE), flags)
            .into_iter()
            .filter(|p| !p.starts_with(&own))
            .collect()
    };
    match connect {
        Some("none") => Ok(Vec::new()),
        None => Ok(ports(None, side | jack::PortFlags::IS_PHYSICAL)),
        Some(pattern) => {
            let found = ports(Some(pattern), side);
            if found.is_empty() && side == jack::PortFlags::IS_INPUT {
                let all = ports(None, side);
                return Err(DeviceError::stream_refused(format!(
                    "--connect {pattern}: no JACK input port matches it; input ports: {}",
                    if all.is_empty() {
                        "none".to_string()
                    } else {
                        all.join(", ")
                    }
                )));
            }
            Ok(found)
        }
    }
}

/// The JACK client a session plays through (see the module docs).
pub struct JackDevice {
    /// The client opened to read the server's rate, until the first
    /// stream takes it (a rebuilt stream opens a new one).
    client: Option<jack::Client>,
    /// The name asked for.
    asked: String,
    channels: usize,
    /// The names of the output ports, one per channel.
    ports: Vec<String>,
    /// The input ports `out_1`, `out_2`, … connect to, in order.
    targets: Vec<String>,
    /// The output ports `in_1`, `in_2`, … connect from, in order.
    sources: Vec<String>,
    /// The server's buffer size, as the last callback was told it.
    period: Arc<AtomicUsize>,
    /// Xruns the server reported.
    server_xruns: Arc<AtomicU64>,
    /// The ring `--midi jack` is fed through, while no client has it.
    midi: Arc<Mutex<Option<rtrb::Producer<MidiEvent>>>>,
    /// Its input side, shared with the capture input.
    capture: SharedCapture,
}

/// The running client; dropping it deactivates and closes it (JACK waits
/// for a callback in flight to return) and gives the MIDI ring back.
struct JackStream {
    client: Option<jack::AsyncClient<Notices, Process>>,
    midi: Arc<Mutex<Option<rtrb::Producer<MidiEvent>>>>,
}

impl Stream for JackStream {}

impl Drop for JackStream {
    fn drop(&mut self) {
        let Some(active) = self.client.take() else {
            return;
        };
        if let Ok((_, _, process)) = active.deactivate() {
            if let (Some(feed), Ok(mut home)) = (process.midi, self.midi.lock()) {
                *home = Some(feed.ring);
            }
        }
    }
}

/// What the server tells the client, on JACK's notification thread.
struct Notices {
    events: Arc<StreamEvents>,
    meters: Arc<Meters>,
    server_xruns: Arc<AtomicU64>,
}

impl jack::NotificationHandler for Notices {
    unsafe fn shutdown(&mut self, _status: jack::ClientStatus, _reason: &str) {
        // Async-signal-safe: one atomic store.
        self.events.report(StreamFault::DeviceNotAvailable);
    }

    fn xrun(&mut self, _: &jack::Client) -> jack::Control {
        self.server_xruns.fetch_add(1, Ordering::Relaxed);
        self.meters.xruns.fetch_add(1, Ordering::Relaxed);
        jack::Control::Continue
    }
}

/// The process callback: the player fills an interleaved buffer, which
/// is copied out to the ports. Nothing here allocates, locks or waits.
struct Process {
    cell: Arc<PlayerCell>,
    outs: Vec<jack::Port<jack::AudioOut>>,
    /// Interleaved frames: room for [`MAX_PERIOD`] frames, or more if the
    /// server ever asks (grown in the buffer-size callback, which JACK
    /// allows to allocate).
    scratch: Vec<f32>,
    period: Arc<AtomicUsize>,
    midi: Option<MidiFeed>,
    /// The input ports, when the scene reads input, their interleaved
    /// frames, the ring they go to, and the handover of a new ring.
    ins: Vec<jack::Port<jack::AudioIn>>,
    in_scratch: Vec<f32>,
    writer: Option<RingWriter>,
    writers: Option<(rtrb::Consumer<RingWriter>, rtrb::Producer<RingWriter>)>,
    /// Set once the ports are connected: until then the callback plays
    /// silence and the player does not run, so no frame is lost to ports
    /// that lead nowhere yet.
    connected: Arc<AtomicBool>,
    /// How many of the output ports (the first ones) and of the input
    /// ports are connected to a peer. The server applies a connection to
    /// the graph at the start of a later cycle, one connection at a time,
    /// so after `connected` is set the callback still plays silence until
    /// this cycle's graph holds every one of them, or for at most
    /// `link_wait` frames (a connection someone removed meanwhile does not
    /// keep the stream silent); then `linked` is set.
    outs_to_link: usize,
    ins_to_link: usize,
    linked: bool,
    link_wait: usize,
    /// The server's transport, read each cycle under `--transport follow`.
    transport: Option<jack::Transport>,
}

impl jack::ProcessHandler for Process {
    fn process(&mut self, _: &jack::Client, ps: &jack::ProcessScope) -> jack::Control {
        let n = ps.n_frames() as usize;
        let ch = self.outs.len();
        if !self.linked && self.connected.load(Ordering::Acquire) {
            self.linked = self.link_wait == 0 || self.links_in_graph();
            self.link_wait = self.link_wait.saturating_sub(n);
        }
        if !self.linked {
            for port in &mut self.outs {
                port.as_mut_slice(ps).fill(0.0);
            }
            return jack::Control::Continue;
        }
        if let Some(midi) = &mut self.midi {
            midi.read(ps, self.cell.meters().frames.load(Ordering::Relaxed));
        }
        if !self.rolling() {
            for port in &mut self.outs {
                port.as_mut_slice(ps).fill(0.0);
            }
            self.cell.hold();
            return jack::Control::Continue;
        }
        self.capture(ps, n);
        let Some(buf) = self.scratch.get_mut(..n * ch) else {
            for port in &mut self.outs {
                port.as_mut_slice(ps).fill(0.0);
            }
            return jack::Control::Continue;
        };
        self.cell.fill(buf);
        for (c, port) in self.outs.iter_mut().enumerate() {
            let out = port.as_mut_slice(ps);
            for (f, s) in out.iter_mut().enumerate() {
                *s = buf[f * ch + c];
            }
        }
        jack::Control::Continue
    }

    fn buffer_size(&mut self, _: &jack::Client, size: jack::Frames) -> jack::Control {
        let need = size as usize * self.outs.len();
        if need > self.scratch.len() {
            self.scratch.resize(need, 0.0);
        }
        let need = size as usize * self.ins.len();
        if need > self.in_scratch.len() {
            self.in_scratch.resize(need, 0.0);
        }
        self.period.store(size as usize, Ordering::Relaxed);
        jack::Control::Continue
    }
}

impl Process {
    /// Whether the graph of this cycle has every connection asked for
    /// (`jack_port_connected` reads the graph the server runs, without
    /// locking or allocating).
    fn links_in_graph(&self) -> bool {
        let linked = |n: Result<usize, jack::Error>| n.is_ok_and(|n| n > 0);
        self.outs[..self.outs_to_link]
            .iter()
            .all(|p| linked(p.connected_count()))
            && self.ins[..self.ins_to_link]
                .iter()
                .all(|p| linked(p.connected_count()))
    }

    /// Whether this cycle plays: always, unless the transport is followed
    /// and is not rolling (a stop asked for still plays its fade). Keeps
    /// the transport's tempo for [`transport_bpm`].
    fn rolling(&self) -> bool {
        let Some(Ok(now)) = self.transport.as_ref().map(jack::Transport::query) else {
            return true;
        };
        if let Some(bbt) = now.pos.bbt() {
            TRANSPORT_BPM.store(bbt.bpm.to_bits(), Ordering::Relaxed);
        }
        now.state == jack::TransportState::Rolling || self.cell.stop_requested()
    }

    /// Pushes this cycle's input ports into the capture ring (taking a
    /// new ring when the control side hands one over, and giving the old
    /// one back to be freed there).
    fn capture(&mut self, ps: &jack::ProcessScope, n: usize) {
        if let Some((new, back)) = &mut self.writers {
            if let Ok(w) = new.pop() {
                if let Some(old) = self.writer.replace(w) {
                    // Room for it: the control side drains `back` before
                    // each handover, and hands over one at a time.
                    let _ = back.push(old);
                }
            }
        }
        let (Some(writer), ch) = (&mut self.writer, self.ins.len()) else {
            return;
        };
        let Some(buf) = self.in_scratch.get_mut(..n * ch) else {
            return;
        };
        for (c, port) in self.ins.iter().enumerate() {
            for (f, s) in port.as_slice(ps).iter().enumerate() {
                buf[f * ch + c] = *s;
            }
        }
        writer.push(buf, |x: f32| x as f64);
    }
}

impl Device for JackDevice {
    fn open(
        &mut self,
        cell: Arc<PlayerCell>,
        events: Arc<StreamEvents>,
    ) -> Result<Box<dyn Stream>, DeviceError> {
        let c = match self.client.take() {
            Some(c) => c,
            None => client(&self.asked).map_err(|e| DeviceError::Backend(Box::new(e)))?,
        };
        let outs = self
            .ports
            .iter()
            .map(|name| c.register_port(name, jack::AudioOut::default()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| DeviceError::stream("cannot register the JACK output ports", e))?;
        let names: Vec<String> = outs.iter().filter_map(|p| p.name().ok()).collect();
        let in_channels = self.capture.channels.lock().map_or(0, |c| *c);
        let ins = (1..=in_channels)
            .map(|i| c.register_port(&format!("in_{i}"), jack::AudioIn::default()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| DeviceError::stream("cannot register the JACK input ports", e))?;
        let in_names: Vec<String> = ins.iter().filter_map(|p| p.name().ok()).collect();
        let writer = self.capture.pending.lock().ok().and_then(|mut p| p.take());
        let (to_audio, from_control) = rtrb::RingBuffer::new(1);
        let (to_control, back) = rtrb::RingBuffer::new(2);
        if let Ok(mut swap) = self.capture.swap.lock() {
            *swap = Some(WriterSwap { to_audio, back });
        }
        let ring = self.midi.lock().ok().and_then(|mut m| m.take());
        let midi = ring
            .map(|ring| {
                c.register_port("midi_in", jack::MidiIn::default())
                    .map(|port| MidiFeed { port, ring })
                    .map_err(|e| DeviceError::stream("cannot register the JACK MIDI port", e))
            })
            .transpose()?;
        self.period
            .store(c.buffer_size() as usize, Ordering::Relaxed);
        let connected = Arc::new(AtomicBool::new(false));
        let transport = FOLLOWING.load(Ordering::Relaxed).then(|| c.transport());
        let process = Process {
            transport,
            cell: cell.clone(),
            outs,
            scratch: vec![0.0; MAX_PERIOD.max(c.buffer_size() as usize) * self.channels],
            period: self.period.clone(),
            midi,
            in_scratch: vec![0.0; MAX_PERIOD.max(c.buffer_size() as usize) * ins.len()],
            ins,
            writer,
            writers: Some((from_control, to_control)),
            connected: connected.clone(),
            outs_to_link: names.len().min(self.targets.len()),
            ins_to_link: in_names.len().min(self.sources.len()),
            linked: false,
            // Half a second: many cycles more than the server takes to
            // apply a connection, even under load.
            link_wait: c.sample_rate() as usize / 2,
        };
        let notices = Notices {
            events,
            meters: cell.meters().clone(),
            server_xruns: self.server_xruns.clone(),
        };
        let active = c
            .activate_async(notices, process)
            .map_err(|e| DeviceError::stream("cannot activate the JACK client", e))?;
        for (from, to) in names.iter().zip(&self.targets) {
            active
                .as_client()
                .connect_ports_by_name(from, to)
                .map_err(|e| DeviceError::stream(format!("cannot connect {from} to {to}"), e))?;
        }
        for (from, to) in self.sources.iter().zip(&in_names) {
            active
                .as_client()
                .connect_ports_by_name(from, to)
                .map_err(|e| DeviceError::stream(format!("cannot connect {from} to {to}"), e))?;
        }
        connected.store(true, Ordering::Release);
        Ok(Box::new(JackStream {
            client: Some(active),
            midi: self.midi.clone(),
        }))
    }

    fn period_frames(&self) -> Option<usize> {
        Some(self.period.load(Ordering::Relaxed))
    }

    fn stall_after(&self) -> Option<std::time::Duration> {
        Some(STALL)
    }

    fn xrun_meaning(&self) -> Option<&'static str> {
        Some(XRUN_MEANING)
    }

    fn xrun_summary(&self) -> Option<&'static str> {
        Some(XRUN_SUMMARY)
    }
}

/// Set by `--transport follow`: the next client reads the transport.
static FOLLOWING: AtomicBool = AtomicBool::new(false);

/// The tempo of the transport's last bar-beat-tick position, as f64 bits
/// (0: none yet).
static TRANSPORT_BPM: AtomicU64 = AtomicU64::new(0);

/// `--transport follow`: the clients opened from here on read the JACK
/// transport (see the module docs).
pub fn follow_transport() {
    FOLLOWING.store(true, Ordering::Relaxed);
}

/// The tempo in beats a minute of the transport's last bar-beat-tick
/// position, once a followed transport has had one.
pub fn transport_bpm() -> Option<f64> {
    match TRANSPORT_BPM.load(Ordering::Relaxed) {
        0 => None,
        bits => Some(f64::from_bits(bits)),
    }
}

/// One channel message the process callback read from `midi_in`: its
/// bytes and the output frame it arrived at.
#[derive(Clone, Copy, Default)]
struct MidiEvent {
    frame: u64,
    len: u8,
    bytes: [u8; 3],
}

/// Events the ring between the process callback and the MIDI thread holds.
const MIDI_RING: usize = 4096;

/// The process callback's end of JACK MIDI.
struct MidiFeed {
    port: jack::Port<jack::MidiIn>,
    ring: rtrb::Producer<MidiEvent>,
}

impl MidiFeed {
    /// Pushes every channel message of this cycle, stamped with the
    /// output frame it arrived at (`written`: the frames the device got
    /// before this cycle). Longer messages (sysex) are not read; a full
    /// ring drops the event.
    fn read(&mut self, ps: &jack::ProcessScope, written: u64) {
        for e in self.port.iter(ps) {
            if e.bytes.is_empty() || e.bytes.len() > 3 {
                continue;
            }
            let mut bytes = [0u8; 3];
            bytes[..e.bytes.len()].copy_from_slice(e.bytes);
            let _ = self.ring.push(MidiEvent {
                frame: written + e.time as u64,
                len: e.bytes.len() as u8,
                bytes,
            });
        }
    }
}

/// The ring a `--midi jack` transport waits to be fed through, until the
/// JACK device takes it; the device gives it back when its client closes.
static MIDI_SLOT: Mutex<Option<rtrb::Producer<MidiEvent>>> = Mutex::new(None);

/// The MIDI ring, when `--midi jack` asked for one.
fn midi_wanted() -> Option<rtrb::Producer<MidiEvent>> {
    MIDI_SLOT.lock().ok().and_then(|mut s| s.take())
}

/// `--midi jack`: a [`Transport`](crate::host::live::transport::Transport)
/// fed from the JACK process callback. A thread maps each event through
/// the scene's MIDI controls and sends it to land at its output frame plus
/// one block and one period ([`When::Frame`](crate::host::remote::When)).
pub struct JackMidi {
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Opens `--midi jack`: its ring waits for the JACK device to take it
/// (the transport's start says so when no JACK device plays). A thread
/// hands `deliver` each message with its output frame; `deliver` maps it
/// and sends it on, and returns false when nothing takes messages any more.
pub fn open_midi(mut deliver: impl FnMut(&[u8], u64) -> bool + Send + 'static) -> JackMidi {
    let (producer, mut consumer) = rtrb::RingBuffer::new(MIDI_RING);
    if let Ok(mut slot) = MIDI_SLOT.lock() {
        *slot = Some(producer);
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("jack-midi".into())
        .spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                while let Ok(e) = consumer.pop() {
                    if !deliver(&e.bytes[..e.len as usize], e.frame) {
                        return;
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        })
        .ok();
    JackMidi { stop, thread }
}

impl crate::host::live::transport::Transport for JackMidi {
    fn start(&mut self) -> Result<String, crate::host::HostError> {
        if MIDI_SLOT.lock().is_ok_and(|s| s.is_some()) {
            return Err(crate::host::HostError::Usage(
                "--midi jack reads the MIDI port of the JACK client: it needs --device jack"
                    .to_string(),
            ));
        }
        Ok("MIDI: listening on the JACK client's port midi_in".to_string())
    }
}

impl Drop for JackMidi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Ok(mut slot) = MIDI_SLOT.lock() {
            slot.take();
        }
    }
}
