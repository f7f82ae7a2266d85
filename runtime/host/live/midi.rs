//! MIDI in while `run` plays (`run --midi PORT|all|file:PATH.mid`), a
//! [`Transport`] per `--midi`: every
//! channel message from a port goes through the scene's MIDI `controls`
//! ([`crate::host::remote::midi`]) and is sent to the session as a
//! [`Message`] stamped with the instant it arrived, for the control side
//! to land at the sample that instant maps to.
//!
//! - A port name opens the MIDI input whose name is that or contains it
//!   (case-insensitive; `morphrt devices` lists them); `all` opens every
//!   input. Ports are read through midir (the ALSA sequencer on Linux);
//!   a machine without one is told so, naming the `file:` port.
//! - `file:PATH.mid` plays a standard MIDI file into the session in real
//!   time, as if a sequencer sent it: each message is stamped at the
//!   instant the port opened plus its time in the file
//!   ([`crate::host::remote::midi_file`]), and sent when that instant
//!   comes, through the same mapper and the same messages as a port. It
//!   plays a prepared sequence into a live session, and lets a session
//!   (or a test) take MIDI without any MIDI system.
//!
//! A port's timestamps (microseconds from an unspecified origin) become
//! instants by the earliest arrival seen: origin = min(arrival − stamp),
//! so the delivery delay of the callback does not move a message later
//! than its fastest sibling.
//!
//! Messages no control maps are not sent (a controller sends plenty: a
//! fader the scene does not use is no error); the monitor (`run -v`)
//! prints every message, and for an unmapped one the `controls` entry
//! that would map it ([`monitor_line`]). System messages (clock, active
//! sensing, sysex) are not sent either.

use crate::graph::ControlMap;
use crate::host::live::remote_in::Inlet;
use crate::host::live::transport::Transport;
use crate::host::remote::midi::{control_entry, decode, describe, Mapper};
use crate::host::remote::midi_file::MidiFile;
use crate::host::remote::{Command, Mappings, Message, RemoteError, Sender, TransportError, When};
use crate::host::HostError;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// `run`'s MIDI flag.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct MidiArgs {
    /// MIDI input played into the scene's MIDI `controls`: a port name
    /// (or part of one; `morphrt devices` lists them), `all`, or
    /// `file:PATH.mid` to play a MIDI file into the session in real time,
    /// or `jack` for the MIDI port `midi_in` of `--device jack`'s client.
    /// Repeatable.
    ///
    /// A port name opens the MIDI input named so, or whose name contains
    /// it; `all` opens every one. Its messages are mapped through the
    /// scene's MIDI `controls`, each stamped with the instant it arrived.
    /// An unknown name exits 2 listing the inputs; no MIDI system exits 1.
    /// `file:PATH.mid` plays a MIDI file through the same mapping, as a
    /// sequencer on a port would, with no MIDI system needed; its time 0 is
    /// when the session starts playing. A MIDI message lands at its arrival
    /// time plus a fixed latency of one block and one device period (so
    /// its timing does not jitter with the callback), is journaled with the
    /// sample it landed on, and replays there. A message no control maps is
    /// ignored (the monitor shows it); a scene with no MIDI control is
    /// warned about. `jack` reads its port in the JACK process callback:
    /// a message lands at the output frame it arrived at plus one block
    /// and one period, exactly (it needs `--device jack`). With `-v` each
    /// message is printed as it arrives, an
    /// unmapped one with the `controls` entry that would map it, ready to
    /// paste.
    #[arg(long = "midi", value_name = "SOURCE")]
    pub midi: Vec<String>,
}

/// Opens every `--midi` (ports and `file:` players), mapping through the
/// mappings of `inlet` and sending on its channel; warns when the scene
/// maps no MIDI. The ports send from now on (the hub reads them once it
/// is ready); a `file:` port plays from the session's first tick.
pub fn open(
    args: &MidiArgs,
    inlet: &Inlet,
    log: &mut dyn Write,
) -> Result<Vec<Box<dyn Transport>>, HostError> {
    let mapped = inlet
        .mappings
        .current()
        .controls
        .iter()
        .any(|c| matches!(c.source, crate::graph::ControlSource::Midi(_)));
    if !args.midi.is_empty() && !mapped {
        let _ = writeln!(
            log,
            "warning: the scene maps no MIDI (its `controls` have no `midi` source): MIDI moves nothing until an edit adds one"
        );
    }
    let controls = MidiControls::Playing {
        mappings: inlet.mappings.clone(),
        monitor: crate::host::term::verbose(),
    };
    args.midi
        .iter()
        .map(|m| match MidiSpec::parse(m) {
            MidiSpec::Jack => {
                let mut follower = controls.follower();
                let sender = inlet.sender.clone();
                let deliver = move |bytes: &[u8], frame: u64| {
                    let when = crate::host::remote::When::Frame(frame);
                    match message_when(&mut follower, "jack", bytes, when) {
                        Some(m) => sender.send(m).is_ok(),
                        None => true,
                    }
                };
                Ok(
                    Box::new(crate::host::live::device::jack::open_midi(deliver))
                        as Box<dyn Transport>,
                )
            }
            spec => open_midi(&spec, &controls, inlet.sender.clone())
                .map(|i| Box::new(i) as Box<dyn Transport>),
        })
        .collect()
}

/// What `--midi` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MidiSpec {
    /// The input whose name is this or contains it.
    Port(String),
    /// Every MIDI input.
    All,
    /// A MIDI file played in real time (`file:PATH.mid`).
    File(PathBuf),
    /// The JACK MIDI input port of the `--device jack` client.
    Jack,
}

impl MidiSpec {
    /// Reads `--midi`'s value: `all`, `file:PATH`, or a port name.
    pub fn parse(text: &str) -> MidiSpec {
        if text == "all" {
            MidiSpec::All
        } else if text == "jack" {
            MidiSpec::Jack
        } else if let Some(path) = text.strip_prefix("file:") {
            MidiSpec::File(PathBuf::from(path))
        } else {
            MidiSpec::Port(text.to_string())
        }
    }
}

/// The controls MIDI messages map through.
#[derive(Clone)]
pub enum MidiControls<'a> {
    /// These, for good.
    Fixed(&'a [ControlMap]),
    /// Those of the engine playing now (an edit of `controls` applies at
    /// its swap), and whether each message is printed as it arrives (the
    /// monitor, `run -v`).
    Playing { mappings: Mappings, monitor: bool },
}

impl MidiControls<'_> {
    /// A mapper over these controls, for one port.
    pub fn follower(&self) -> Follower {
        match self {
            MidiControls::Fixed(c) => Follower {
                mappings: None,
                seen: Arc::new(c.to_vec()),
                mapper: Mapper::new(c),
                monitor: false,
            },
            MidiControls::Playing { mappings, monitor } => {
                let seen = mappings.current().controls.clone();
                Follower {
                    mapper: Mapper::new(&seen),
                    seen,
                    mappings: Some(mappings.clone()),
                    monitor: *monitor,
                }
            }
        }
    }
}

/// A port's mapper over the controls playing now: rebuilt when an edit
/// swaps other controls in (its held notes and 14-bit halves are then
/// forgotten).
pub struct Follower {
    mappings: Option<Mappings>,
    seen: Arc<Vec<ControlMap>>,
    mapper: Mapper,
    monitor: bool,
}

impl Follower {
    /// A follower of fixed `controls` (no monitor).
    pub fn fixed(controls: &[ControlMap]) -> Follower {
        MidiControls::Fixed(controls).follower()
    }

    fn mapper(&mut self) -> &mut Mapper {
        if let Some(m) = &self.mappings {
            let now = m.current().controls.clone();
            if !Arc::ptr_eq(&now, &self.seen) {
                self.mapper = Mapper::new(&now);
                self.seen = now;
            }
        }
        &mut self.mapper
    }
}

/// Open MIDI inputs; dropping it closes the ports and stops a file
/// playing (its thread is joined).
pub struct MidiInput {
    connections: Vec<midir::MidiInputConnection<()>>,
    file: Option<FilePlayer>,
    /// The names of the open ports (`file:take.mid` for a file).
    pub names: Vec<String>,
}

impl std::fmt::Debug for MidiInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MidiInput")
            .field("names", &self.names)
            .finish()
    }
}

impl Transport for MidiInput {
    fn start(&mut self) -> Result<String, HostError> {
        Ok(format!("MIDI: listening on {}", self.names.join(", ")))
    }

    fn tick(&mut self) {
        self.start_file();
    }
}

impl MidiInput {
    /// Starts a `file:` port playing (its time 0 is now): `run` calls it
    /// once the session plays, so the file's first message is not sent
    /// before the first block. Again: nothing. Ports play from the start.
    pub fn start_file(&mut self) {
        if let Some(f) = &mut self.file {
            if f.start.is_none() {
                let now = Instant::now();
                f.start = Some(now);
                if let Some(go) = &f.stop {
                    let _ = go.send(now);
                }
            }
        }
    }

    /// For a `file:` port that started: the instant its time 0 is at.
    pub fn file_start(&self) -> Option<Instant> {
        self.file.as_ref().and_then(|f| f.start)
    }
}

/// A MIDI file playing on its own thread.
struct FilePlayer {
    /// When it started ([`MidiInput::start_file`]).
    start: Option<Instant>,
    /// Sends the start; dropped to stop the thread.
    stop: Option<mpsc::Sender<Instant>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for FilePlayer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Opens what `spec` names, mapping through `controls` and sending every
/// message on `sender`. Errors: a `file:` that cannot be read (exit 2);
/// an unknown port name (exit 2, listing the inputs); no MIDI system or
/// no input at all (exit 1).
pub fn open_midi(
    spec: &MidiSpec,
    controls: &MidiControls<'_>,
    sender: Sender,
) -> Result<MidiInput, HostError> {
    match spec {
        MidiSpec::File(path) => {
            let file = MidiFile::read(path)?;
            let name = format!("file:{}", path.display());
            let player = play_file(file, name.clone(), controls.follower(), sender);
            Ok(MidiInput {
                connections: Vec::new(),
                file: Some(player),
                names: vec![name],
            })
        }
        MidiSpec::All | MidiSpec::Port(_) | MidiSpec::Jack => open_ports(spec, controls, sender),
    }
}

/// Plays `file` from its start ([`MidiInput::start_file`]): each message sent
/// when its instant comes.
fn play_file(file: MidiFile, port: String, mut mapper: Follower, sender: Sender) -> FilePlayer {
    let (stop, stopped) = mpsc::channel::<Instant>();
    let thread = std::thread::Builder::new()
        .name("midi-file".into())
        .spawn(move || {
            let Ok(start) = stopped.recv() else {
                return;
            };
            // Messages of one instant (a note's on and off in one tick,
            // a chord) go as one batch, so the hub resolves them in one
            // tick against one clock reading: they land on one sample.
            let mut batch = Vec::new();
            let mut first = 0;
            while first < file.messages.len() {
                let num = file.messages[first].num;
                let last = file.messages[first..]
                    .iter()
                    .position(|m| m.num != num)
                    .map_or(file.messages.len(), |n| first + n);
                let at = start + file.duration(num);
                loop {
                    let wait = at.saturating_duration_since(Instant::now());
                    if wait == Duration::ZERO {
                        break;
                    }
                    match stopped.recv_timeout(wait) {
                        Err(mpsc::RecvTimeoutError::Timeout) | Ok(_) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                batch.clear();
                batch.extend(
                    file.messages[first..last]
                        .iter()
                        .filter_map(|m| message(&mut mapper, &port, m.message(), at)),
                );
                let n = batch.len();
                for (i, mut msg) in batch.drain(..).enumerate() {
                    msg.batch_rest = n - 1 - i;
                    if sender.send(msg).is_err() {
                        return;
                    }
                }
                first = last;
            }
        })
        .ok();
    FilePlayer {
        start: None,
        stop: Some(stop),
        thread,
    }
}

/// The message a MIDI message becomes, stamped `at`; `None` for a
/// system message or one no control maps.
pub fn message(follower: &mut Follower, port: &str, bytes: &[u8], at: Instant) -> Option<Message> {
    message_when(follower, port, bytes, When::Stamped(at))
}

/// The message a MIDI message becomes, landing `when`; `None` for a
/// system message or one no control maps.
pub fn message_when(
    follower: &mut Follower,
    port: &str,
    bytes: &[u8],
    when: When,
) -> Option<Message> {
    // A system message has no channel: not sent.
    decode(bytes).0?;
    let what = describe(bytes);
    let mapped = follower.mapper().map(bytes);
    if follower.monitor {
        // The port's own thread, never the audio thread.
        eprintln!("{}", monitor_line(port, bytes, mapped.matched));
    }
    let command = if let Some(e) = RemoteError::joined(mapped.errors) {
        Err(e)
    } else if mapped.matched && mapped.notes.is_empty() {
        Ok(Command::Changes(mapped.changes))
    } else if mapped.matched {
        Ok(Command::Notes {
            notes: mapped.notes,
            changes: mapped.changes,
        })
    } else {
        // A controller sends much no control maps: not an error.
        return None;
    };
    Some(Message {
        command,
        when,
        from: format!("midi {port} {what}"),
        reply: None,
        batch_rest: 0,
    })
}

/// What the monitor (`run -v`) prints for a message that arrived: the
/// message, and for one no control maps the `controls` entry that would.
pub fn monitor_line(port: &str, bytes: &[u8], mapped: bool) -> String {
    let what = format!("midi {port} {}", describe(bytes));
    match control_entry(bytes).filter(|_| !mapped) {
        Some(entry) => format!("{what} (unmapped; to map it: {entry})"),
        None => what,
    }
}

/// The MIDI system's input names, or why there are none to list.
pub fn list_inputs() -> Result<Vec<String>, TransportError> {
    let midi = system()?;
    Ok(midi
        .ports()
        .iter()
        .filter_map(|p| midi.port_name(p).ok())
        .collect())
}

/// The MIDI system, or a clear error.
fn system() -> Result<midir::MidiInput, TransportError> {
    crate::host::live::device::cpal::quiet_alsa();
    let mut midi = midir::MidiInput::new("morphrt").map_err(|source| {
        let seq = std::path::Path::new("/dev/snd/seq");
        let why = if cfg!(target_os = "linux") && !seq.exists() {
            " (no ALSA sequencer: /dev/snd/seq does not exist; `modprobe snd-seq` loads it)"
                .to_string()
        } else {
            String::new()
        };
        TransportError::MidiSystem { source, why }
    })?;
    midi.ignore(midir::Ignore::All);
    Ok(midi)
}

/// Connects to the named port(s).
fn open_ports(
    spec: &MidiSpec,
    controls: &MidiControls<'_>,
    sender: Sender,
) -> Result<MidiInput, HostError> {
    let probe = system()?;
    let ports: Vec<(midir::MidiInputPort, String)> = probe
        .ports()
        .into_iter()
        .filter_map(|p| probe.port_name(&p).ok().map(|n| (p, n)))
        .collect();
    let chosen = choose(spec, &ports)?;
    let mut input = MidiInput {
        connections: Vec::new(),
        file: None,
        names: Vec::new(),
    };
    for port in chosen {
        let midi = system()?;
        let conn = connect(midi, port, controls.follower(), sender.clone())?;
        input.connections.push(conn);
        input.names.push(port.1.clone());
    }
    Ok(input)
}

/// The ports `spec` names among `ports`.
fn choose<'a>(
    spec: &MidiSpec,
    ports: &'a [(midir::MidiInputPort, String)],
) -> Result<Vec<&'a (midir::MidiInputPort, String)>, HostError> {
    let names: Vec<&str> = ports.iter().map(|(_, n)| n.as_str()).collect();
    let listed = if names.is_empty() {
        "there are no MIDI inputs".to_string()
    } else {
        format!("MIDI inputs: {}", names.join(", "))
    };
    let wanted = match spec {
        MidiSpec::All if ports.is_empty() => {
            return Err(TransportError::NoMidiInputs { listed }.into())
        }
        MidiSpec::All => return Ok(ports.iter().collect()),
        MidiSpec::Port(w) => w,
        MidiSpec::File(_) | MidiSpec::Jack => return Ok(Vec::new()),
    };
    let exact: Vec<_> = ports.iter().filter(|(_, n)| n == wanted).collect();
    if !exact.is_empty() {
        return Ok(exact);
    }
    let low = wanted.to_lowercase();
    let near: Vec<_> = ports
        .iter()
        .filter(|(_, n)| n.to_lowercase().contains(&low))
        .collect();
    match near.len() {
        1 => Ok(near),
        0 => Err(HostError::Usage(format!(
            "no MIDI input `{wanted}`; {listed} (or `all`, or `file:PATH.mid`)"
        ))),
        _ => Err(HostError::Usage(format!(
            "MIDI input `{wanted}` is ambiguous: it names {}; give more of the name",
            near.iter()
                .map(|(_, n)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Opens one port: its callback maps and sends each message.
fn connect(
    midi: midir::MidiInput,
    (port, name): &(midir::MidiInputPort, String),
    mut mapper: Follower,
    sender: Sender,
) -> Result<midir::MidiInputConnection<()>, HostError> {
    let label = name.clone();
    let mut origin: Option<Instant> = None;
    midi.connect(
        port,
        "morphrt-in",
        move |stamp_us, bytes, _| {
            let now = Instant::now();
            let since = Duration::from_micros(stamp_us);
            let base = now.checked_sub(since).unwrap_or(now);
            let o = *origin.get_or_insert(base);
            let o = if base < o { base } else { o };
            origin = Some(o);
            let at = (o + since).min(now);
            if let Some(m) = message(&mut mapper, &label, bytes, at) {
                let _ = sender.send(m);
            }
        },
        (),
    )
    .map_err(|e| {
        TransportError::MidiPort {
            name: name.clone(),
            source: midir::ConnectError::new(e.kind(), ()),
        }
        .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_monitor_lines() {
        assert_eq!(MidiSpec::parse("all"), MidiSpec::All);
        assert_eq!(
            MidiSpec::parse("file:a.mid"),
            MidiSpec::File("a.mid".into())
        );
        assert_eq!(
            MidiSpec::parse("Launchkey"),
            MidiSpec::Port("Launchkey".into())
        );
        assert_eq!(
            monitor_line("kb", &[0xb0, 74, 64], false),
            r#"midi kb cc 74 = 64 ch 1 (unmapped; to map it: {"midi": {"cc": 74, "channel": 1}, "node": "NODE", "param": "PARAM"})"#
        );
        assert_eq!(
            monitor_line("kb", &[0xb0, 74, 64], true),
            "midi kb cc 74 = 64 ch 1"
        );
        let mut m = Follower::fixed(&[]);
        assert!(message(&mut m, "kb", &[0xf8], Instant::now()).is_none());
    }
}
