//! `run --osc`: a session on the clock device driven over UDP loopback.
//! Mapped addresses and the `/morphrt/` namespace move params where the
//! journal says they landed (read back from the capture), a timetagged
//! bundle lands at exactly its sample under repro, bad packets are answered
//! and counted without stopping playback, a flood of 10 000 messages lands
//! in full, and the journal replays to the capture bit for bit.

use crate::support as common;

use common::{assert_replays, run_clock, stderr, wait_line, KillOnDrop};
use rosc::{OscBundle, OscMessage, OscPacket, OscType};
use std::net::UdpSocket;
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::time::{Duration, SystemTime};

/// A scene of one `dc` whose value `/level` maps 0…1 onto 0…1.
const SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.1}}],
  "outputs": {"main": ["d"]},
  "controls": [{"osc": "/level", "node": "d", "param": "value", "min": 0, "max": 1}]}"#;

/// A sender on loopback that reads the session's replies.
struct Client {
    socket: UdpSocket,
    port: u16,
}

impl Client {
    fn new(port: u16) -> Client {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        Client { socket, port }
    }

    fn send_bytes(&self, bytes: &[u8]) {
        self.socket
            .send_to(bytes, ("127.0.0.1", self.port))
            .unwrap();
    }

    fn send(&self, packet: &OscPacket) {
        self.send_bytes(&rosc::encoder::encode(packet).unwrap());
    }

    /// The next reply: `("ok" | "error", text)`.
    fn reply(&self) -> (String, String) {
        let mut buf = [0u8; 4096];
        let n = common::recv_within(&self.socket, &mut buf, Duration::from_secs(20))
            .expect("a reply in time");
        reply_of(&buf[..n])
    }

    /// Sends `packet` and returns its reply.
    fn ask(&self, packet: &OscPacket) -> (String, String) {
        self.send(packet);
        self.reply()
    }
}

fn reply_of(bytes: &[u8]) -> (String, String) {
    let (_, p) = rosc::decoder::decode_udp(bytes).unwrap();
    let OscPacket::Message(m) = p else {
        panic!("a reply is a message: {p:?}")
    };
    assert_eq!(m.addr, "/morphrt/reply");
    match &m.args[..] {
        [OscType::String(s), OscType::String(t)] => (s.clone(), t.clone()),
        other => panic!("reply arguments {other:?}"),
    }
}

fn msg(addr: &str, args: Vec<OscType>) -> OscPacket {
    OscPacket::Message(OscMessage {
        addr: addr.to_string(),
        args,
    })
}

fn param(node: &str, p: &str, value: OscType) -> OscPacket {
    msg(
        "/morphrt/param",
        vec![
            OscType::String(node.into()),
            OscType::String(p.into()),
            value,
        ],
    )
}

/// The sample an ok reply says its change landed at.
fn landed(reply: &(String, String)) -> u64 {
    assert_eq!(reply.0, "ok", "{reply:?}");
    reply
        .1
        .rsplit("at sample ")
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no sample in {reply:?}"))
}

/// The journal's change records: (at, value, from).
fn journaled(journal: &Path) -> Vec<(u64, f64, String)> {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "control")
        .map(|v| {
            (
                v["at"].as_u64().unwrap(),
                v["value"]["number"].as_f64().unwrap(),
                v["from"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Starts the scene with `--osc 0` (a port the system chooses) and the
/// given files; waits until it plays.
fn start(
    dir: &Path,
    scene: &str,
    extra: &[&str],
) -> (KillOnDrop, Receiver<String>, Vec<String>, u16) {
    let path = dir.join("scene.json");
    std::fs::write(&path, scene).unwrap();
    let cap = dir.join("cap.wav");
    let journal = dir.join("j.jsonl");
    let mut args = vec![
        "--capture",
        cap.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--osc",
        "0",
    ];
    args.extend_from_slice(extra);
    let (child, lines) = run_clock(&path, &args);
    let mut log = Vec::new();
    wait_line(&lines, "playing", &mut log);
    let port = common::osc_port(&log);
    (child, lines, log, port)
}

/// Waits for the session to end, successfully; its whole log.
fn ended(mut child: KillOnDrop, lines: &Receiver<String>, mut log: Vec<String>) -> String {
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    let all = log.join("\n");
    assert!(status.success(), "{all}");
    all
}

#[test]
fn a_session_over_osc_lands_every_change_where_the_journal_says_and_replays() {
    let dir = common::temp_dir("osc-session");
    let (child, lines, log, port) = start(&dir, SCENE, &["--profile", "repro"]);
    let c = Client::new(port);
    // A mapped address, then the namespace with a unit string.
    let a = landed(&c.ask(&msg("/level", vec![OscType::Float(0.5)])));
    let b = landed(&c.ask(&param("d", "value", OscType::String("0.25".into()))));
    // Bundles two seconds ahead land at the samples their times map to:
    // two a millisecond (48 samples) apart, in one packet, land 48 samples
    // apart, not snapped to their 128-sample block (0 or 128 apart).
    let ahead = SystemTime::now() + Duration::from_millis(2000);
    let bundle = |t: SystemTime, v: f64| {
        OscPacket::Bundle(OscBundle {
            timetag: morphrt::host::remote::osc::timetag(t),
            content: vec![param("d", "value", OscType::Double(v))],
        })
    };
    c.send(&OscPacket::Bundle(OscBundle {
        timetag: rosc::OscTime::from((0, 1)),
        content: vec![
            bundle(ahead, 0.625),
            bundle(ahead + Duration::from_millis(1), 0.75),
        ],
    }));
    let (t0, t) = (landed(&c.reply()), landed(&c.reply()));
    // (One reading of the audio clock maps both; a tick between them could
    // shift the second by the callback's jitter, far less than 48.)
    assert!(t.abs_diff(t0 + 48) <= 24, "landed at {t0} and {t}");
    // What cannot be done is answered, and playback goes on.
    let bad = [
        c.ask_bytes(b"not osc at all"),
        c.ask(&msg("/nope", vec![OscType::Float(1.0)])),
        c.ask(&msg("/level", vec![OscType::String("x".into())])),
    ];
    for (r, says) in bad.iter().zip([
        "malformed OSC packet",
        "unknown OSC address /nope",
        "takes a number",
    ]) {
        assert_eq!(r.0, "error", "{r:?}");
        assert!(r.1.contains(says), "{r:?}");
    }
    // A flood: every change lands, in order.
    let flood = 10_000;
    let (oks, errors) = flood_of(&c, flood);
    assert!(
        oks > 0 && errors == 0,
        "{oks} ok and {errors} error replies"
    );
    let stop = c.ask(&msg("/morphrt/stop", vec![]));
    assert_eq!(stop, ("ok".to_string(), "stopping".to_string()));
    let all = ended(child, &lines, log);
    assert!(
        all.contains(&format!(
            // Not OSC: malformed; an unknown address and a wrong type:
            // refused.
            "control: {} messages received; {} changes applied, 2 refused, 0 dropped; 1 malformed",
            flood + 8,
            flood + 4
        )),
        "{all}"
    );
    let j = dir.join("j.jsonl");
    let records = journaled(&j);
    assert_eq!(records.len(), flood + 4);
    // The journal is in the order changes landed: the flood's last is last.
    let f = records.last().unwrap().0;
    let cap = dir.join("cap.wav");
    let played = common::read_f32(&cap);
    let at = |s: u64| played[2 * s as usize];
    for (s, v) in [
        (a, 0.5),
        (b, 0.25),
        (t0, 0.625),
        (t, 0.75),
        (f, last_value(flood)),
    ] {
        assert_eq!(at(s), v as f32, "at {s}; log:\n{all}");
        // A message the hub takes before the first block lands at sample
        // 0: there is no sample before it.
        if s > 0 {
            assert_ne!(
                at(s - 1),
                v as f32,
                "changed at {s}, not before; log:\n{all}"
            );
        }
    }
    // Under repro the timetagged change is not snapped to its block: the
    // capture steps at its sample, which is its journaled one.
    assert!(records
        .iter()
        .any(|r| r.0 == t && r.1 == 0.75 && r.2.contains("/morphrt/param")));
    assert_replays(&j, &cap, &all);
}

impl Client {
    fn ask_bytes(&self, bytes: &[u8]) -> (String, String) {
        self.send_bytes(bytes);
        self.reply()
    }
}

/// The value flooded message `i` sets.
fn value_of(i: usize) -> f64 {
    (i % 1000) as f64 / 1000.0 + 0.0005
}

fn last_value(n: usize) -> f64 {
    value_of(n - 1)
}

/// Sends `n` changes of `d.value` (in bursts, as a fast controller does)
/// while a thread reads the replies until they stop coming; returns how
/// many were ok and how many errors. The session's own counts are what
/// the test holds it to: a reply the test's socket had no room for is
/// lost on the way, not by the session.
fn flood_of(c: &Client, n: usize) -> (usize, usize) {
    let reader = c.socket.try_clone().unwrap();
    grow_receive_buffer(&reader);
    let counting = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let (mut oks, mut errors) = (0, 0);
        while oks + errors < n {
            let Some(len) = common::recv_within(&reader, &mut buf, Duration::from_secs(3)) else {
                break;
            };
            match reply_of(&buf[..len]).0.as_str() {
                "ok" => oks += 1,
                _ => errors += 1,
            }
        }
        (oks, errors)
    });
    for i in 0..n {
        c.send(&param("d", "value", OscType::Double(value_of(i))));
        if i % 100 == 99 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    counting.join().unwrap()
}

/// A receive buffer that holds a flood's replies (as root beyond the
/// system's limit; the tests run as root in CI).
fn grow_receive_buffer(socket: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let size: libc::c_int = 8 << 20;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    let ptr = &size as *const libc::c_int as *const libc::c_void;
    // SAFETY: an open socket and a c_int that outlives the call.
    unsafe {
        if libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            ptr,
            len,
        ) != 0
        {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                ptr,
                len,
            );
        }
    }
}

#[test]
fn osc_switches_the_profile_takes_a_snapshot_follows_an_edit_and_stops() {
    let dir = common::temp_dir("osc-commands");
    let (child, lines, mut log, port) = start(&dir, SCENE, &["--profile", "repro"]);
    let c = Client::new(port);
    let r = c.ask(&msg(
        "/morphrt/profile",
        vec![OscType::String("live".into())],
    ));
    assert_eq!(r.0, "ok", "{r:?}");
    wait_line(&lines, "switched repro → live", &mut log);
    let r = c.ask(&msg("/morphrt/snapshot", vec![]));
    assert_eq!(r.0, "ok", "{r:?}");
    wait_line(&lines, "snapshot at", &mut log);
    // An edit of `controls` moves the address; the old one is unknown then.
    let edited = SCENE.replace("\"/level\"", "\"/gain\"");
    common::save_as_editor(&dir.join("scene.json"), &edited, Duration::from_millis(100));
    wait_line(&lines, "edit applied", &mut log);
    let r = c.ask(&msg("/gain", vec![OscType::Float(0.5)]));
    let at = landed(&r);
    assert!(r.1.starts_with("d.value = 0.5 at"), "{r:?}");
    let r = c.ask(&msg("/level", vec![OscType::Float(0.5)]));
    assert!(
        r.0 == "error" && r.1.contains("unknown OSC address /level"),
        "{r:?}"
    );
    let r = c.ask(&msg(
        "/morphrt/profile",
        vec![OscType::String("loud".into())],
    ));
    assert!(
        r.0 == "error" && r.1.contains("strict, repro, live"),
        "{r:?}"
    );
    assert_eq!(c.ask(&msg("/morphrt/stop", vec![])).0, "ok");
    let all = ended(child, &lines, log);
    let cap = dir.join("cap.wav");
    let x = common::read_f32(&cap)[2 * at as usize];
    assert!((x - 0.5).abs() < 1e-3, "{x} at {at}; log:\n{all}");
    assert_replays(&dir.join("j.jsonl"), &cap, &all);
}

/// `morphrt run SCENE --device clock --no-journal ARGS…`, to its end.
fn unjournaled(scene: &Path, args: &[&str]) -> std::process::Output {
    let mut all = vec![
        "run",
        scene.to_str().unwrap(),
        "--device",
        "clock",
        "--no-journal",
    ];
    all.extend_from_slice(args);
    common::morphrt(&all)
}

#[test]
fn a_port_in_use_is_refused_before_anything_plays() {
    let dir = common::temp_dir("osc-in-use");
    let scene = dir.join("scene.json");
    std::fs::write(&scene, SCENE).unwrap();
    let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let cap = dir.join("cap.wav");
    let o = unjournaled(
        &scene,
        &["--capture", cap.to_str().unwrap(), "--osc", &port],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot listen for OSC on 127.0.0.1:{port}"))
            && err.contains("in use"),
        "{err}"
    );
    assert!(!err.contains("playing"), "{err}");
    assert!(!cap.exists(), "nothing was captured");
    // Not an address at all.
    let o = unjournaled(&scene, &["--osc", "nine"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--osc takes a port"), "{}", stderr(&o));
}

#[test]
fn a_non_loopback_address_is_warned_about() {
    let dir = common::temp_dir("osc-any");
    let scene = dir.join("scene.json");
    std::fs::write(&scene, SCENE).unwrap();
    let spec = "0.0.0.0:0".to_string();
    let o = unjournaled(&scene, &["--duration", "100ms", "--osc", &spec]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("anyone who can reach this machine on the network can control the session"),
        "{}",
        stderr(&o)
    );
}

/// A player of `SCENE` (not called back unless the test does) and a hub
/// feeding it, its clock read from meters no callback writes.
fn hub_of_scene() -> (
    morphrt::host::live::player::Player,
    morphrt::host::live::remote_in::RemoteHub,
) {
    hub_of_scene_from(std::time::Instant::now())
}

/// [`hub_of_scene`] with the player's times counted from `origin`.
fn hub_of_scene_from(
    origin: std::time::Instant,
) -> (
    morphrt::host::live::player::Player,
    morphrt::host::live::remote_in::RemoteHub,
) {
    use morphrt::host::live::player::Meters;
    use morphrt::host::live::remote_in::{AudioClock, RemoteHub};
    use morphrt::host::live::session::PlayingControls;
    use std::sync::Arc;
    let incoming = morphrt::engine::incoming::Incoming::from_plan(
        common::plan(SCENE, None, 64),
        None,
        Vec::new(),
    );
    let controls = PlayingControls::of(&incoming);
    let mut player = common::player(*incoming.engine, 64);
    let clock = AudioClock {
        meters: Arc::new(Meters::default()),
        origin,
        sample_rate: 48_000,
        stamped_latency: 0,
        first_sample: 0,
    };
    let hub = RemoteHub::new(player.control_link(), controls, clock);
    (player, hub)
}

/// When the audio thread takes nothing (its ring full), changes wait in
/// the hub's backlog up to its bound; those beyond are dropped, counted
/// and answered with an error, and the hub never blocks.
#[test]
fn the_backlog_is_bounded_and_what_it_drops_is_counted_and_answered() {
    use morphrt::host::live::remote_in::BACKLOG;
    use morphrt::host::remote::{Change, Command, Message, When};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let (player, mut hub) = hub_of_scene();
    let refused = Arc::new(AtomicUsize::new(0));
    let tx = hub.sender();
    let ring = morphrt::host::live::player::CHANGE_RING;
    let sent = ring + BACKLOG + 1000;
    for i in 0..sent {
        let refused = refused.clone();
        tx.send(Message {
            command: Ok(Command::Changes(vec![Change {
                node: "d".into(),
                param: "value".into(),
                value: morphrt::graph::ControlValue::Number(0.5),
                ramp: 0,
            }])),
            when: When::Now,
            from: format!("test {i}"),
            reply: Some(Box::new(move |r: Result<String, String>| {
                if r.is_err_and(|e| e.contains("dropped")) {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
            })),
            batch_rest: 0,
        })
        .unwrap();
    }
    let mut log = Vec::new();
    hub.tick(&mut log);
    assert_eq!(hub.counts.received, sent as u64);
    // The ring took its fill after the backlog had filled: what came
    // after the backlog's bound was dropped.
    assert_eq!(hub.counts.dropped, (sent - BACKLOG) as u64);
    assert_eq!(refused.load(Ordering::Relaxed), sent - BACKLOG);
    hub.tick(&mut log);
    assert_eq!(hub.counts.dropped, (sent - BACKLOG) as u64, "nothing more");
    drop(player);
}

/// A bundle timetagged more than `MAX_AHEAD` ahead is refused and
/// answered at once (a sender with a wrong clock hears why), counted as
/// refused; one within it is held and lands.
#[test]
fn a_timetag_too_far_ahead_is_refused_at_once() {
    use morphrt::host::live::remote_in::MAX_AHEAD;
    use morphrt::host::remote::{Change, Command, Message, When};
    use std::sync::{Arc, Mutex};
    let (mut player, mut hub) = hub_of_scene();
    let answers: Arc<Mutex<Vec<Result<String, String>>>> = Arc::default();
    let send = |ahead: Duration| {
        let answers = answers.clone();
        hub.sender()
            .send(Message {
                command: Ok(Command::Changes(vec![Change {
                    node: "d".into(),
                    param: "value".into(),
                    value: morphrt::graph::ControlValue::Number(0.5),
                    ramp: 0,
                }])),
                when: When::At(SystemTime::now() + ahead),
                from: "test".into(),
                reply: Some(Box::new(move |r| answers.lock().unwrap().push(r))),
                batch_rest: 0,
            })
            .unwrap();
    };
    send(MAX_AHEAD + Duration::from_secs(3600));
    send(Duration::from_millis(2));
    let mut log = Vec::new();
    hub.tick(&mut log);
    {
        let got = answers.lock().unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        let e = got[0].as_ref().unwrap_err();
        assert!(e.contains("s ahead: at most 10 s ahead is held"), "{e}");
    }
    assert_eq!((hub.counts.refused, hub.counts.malformed), (1, 0));
    // The near one lands once the audio thread plays past its sample.
    let mut out = vec![0.0f32; 128];
    for _ in 0..100 {
        player.fill(&mut out);
        hub.tick(&mut log);
    }
    assert_eq!(hub.counts.applied, 1, "{:?}", answers.lock().unwrap());
    drop(player);
}

/// The journal's records of `kind`, as JSON.
fn records_of(journal: &Path, kind: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(journal)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == kind)
        .collect()
}

/// The number after `word ` in `text`.
fn number_after(text: &str, word: &str) -> u64 {
    text.split(&format!("{word} "))
        .nth(1)
        .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `{word} N` in {text:?}"))
}

/// A sine whose phase tells one sample from the next, at block 100.
const SINE: &str = r#"{"version": "1.0", "sample_rate": 48000, "seed": 1,
  "profile_config": {"block_size": 100},
  "nodes": [{"id": "s", "op": "sine", "params": {"freq": "441Hz", "amp": 0.5}}],
  "outputs": {"main": ["s"]}}"#;

/// Under `profile`, at block 100: a snapshot 2 s ahead, a switch to `to`
/// 2.25 s ahead and a stop 2.5 s ahead, each in its own bundle; the
/// snapshot's and the switch's bundles also set the sine's amp to the
/// value it has (no audible change), whose replies say the sample their
/// timetag landed at. Checks where each landed (`exact`: at that sample;
/// else at the start of its block), the journal, the replay, and that the
/// snapshot resumes to the audio the session played from its sample.
fn timed_commands(profile: &str, to: &str, exact: bool) {
    let dir = common::temp_dir(&format!("osc-timed-{profile}"));
    let (child, lines, log, port) = start(&dir, SINE, &["--profile", profile]);
    let c = Client::new(port);
    let now = SystemTime::now();
    let tagged = |ms: u64, content: Vec<OscPacket>| {
        OscPacket::Bundle(OscBundle {
            timetag: morphrt::host::remote::osc::timetag(now + Duration::from_millis(ms)),
            content,
        })
    };
    let same_amp = || param("s", "amp", OscType::Double(0.5));
    c.send(&OscPacket::Bundle(OscBundle {
        timetag: rosc::OscTime::from((0, 1)),
        content: vec![
            tagged(2_000, vec![msg("/morphrt/snapshot", vec![]), same_amp()]),
            tagged(
                2_250,
                vec![
                    msg("/morphrt/profile", vec![OscType::String(to.into())]),
                    same_amp(),
                ],
            ),
            tagged(2_500, vec![msg("/morphrt/stop", vec![])]),
        ],
    }));
    let replies: Vec<(String, String)> = (0..5).map(|_| c.reply()).collect();
    let find = |prefix: &str| {
        let r: Vec<&(String, String)> =
            replies.iter().filter(|r| r.1.starts_with(prefix)).collect();
        for r in &r {
            assert_eq!(r.0, "ok", "{replies:?}");
        }
        r
    };
    let snapshot = find("snapshot at sample")[0].1.clone();
    let switch = find("switching to")[0].1.clone();
    let stop = find("stopping at sample")[0].1.clone();
    let mut amps: Vec<u64> = find("s.amp = 0.5").iter().map(|r| landed(r)).collect();
    amps.sort();
    let [tag_snap, tag_switch] = amps[..] else {
        panic!("{replies:?}")
    };
    let stop_at = number_after(&stop, "sample");
    let all = ended(child, &lines, log);
    let j = dir.join("j.jsonl");
    let block = records_of(&j, "header")[0]["block_size"].as_u64().unwrap();
    assert_eq!(block, 100);
    // Params land at their timetag's sample (under live at its block's
    // start, the session having started at 0): the snapshot and the
    // switch land where the params of their bundles did.
    if !exact {
        assert_eq!(
            (tag_snap % block, tag_switch % block),
            (0, 0),
            "{replies:?}"
        );
    }
    let snaps = records_of(&j, "snapshot");
    assert_eq!(snaps.len(), 1, "{all}");
    assert_eq!(snaps[0]["at"].as_u64().unwrap(), tag_snap, "{all}");
    assert_eq!(number_after(&snapshot, "sample"), tag_snap, "{snapshot}");
    let handovers = records_of(&j, "handover");
    assert_eq!(handovers.len(), 1, "{all}");
    assert_eq!(handovers[0]["profile"], to);
    assert_eq!(
        handovers[0]["swap_at"].as_u64().unwrap(),
        tag_switch,
        "{all}"
    );
    assert_eq!(number_after(&switch, "sample"), tag_switch, "{switch}");
    // The stop fades from exactly its sample, in every profile.
    let stops = records_of(&j, "stop");
    assert_eq!(stops[0]["at"].as_u64().unwrap(), stop_at, "{all}");
    let cap = dir.join("cap.wav");
    let played = common::read_f32(&cap);
    let fade = stops[0]["fade"].as_u64().unwrap();
    assert_eq!(played.len() as u64, 2 * (stop_at + fade), "{all}");
    assert_replays(&j, &cap, &all);
    // The snapshot holds the state at its sample: resumed, it plays what
    // the session played from there up to the switch.
    let file = snaps[0]["file"].as_str().unwrap();
    let resumed = dir.join("resumed.wav");
    let frames = tag_switch - tag_snap;
    let o = common::morphrt(&[
        "render",
        dir.join("scene.json").to_str().unwrap(),
        "--profile",
        profile,
        "--resume",
        file,
        "-d",
        &format!("{frames}samples"),
        "-o",
        resumed.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let resumed = common::read_f32(&resumed);
    assert_eq!(resumed.len() as u64, frames);
    let live: Vec<f32> = (tag_snap..tag_switch)
        .map(|n| played[2 * n as usize])
        .collect();
    assert!(
        resumed == live,
        "the snapshot does not resume to what played from {tag_snap}"
    );
}

#[test]
fn a_timetagged_snapshot_switch_and_stop_land_at_exactly_their_samples_under_strict() {
    timed_commands("strict", "repro", true);
}

#[test]
fn a_timetagged_snapshot_switch_and_stop_land_at_exactly_their_samples_under_repro() {
    timed_commands("repro", "strict", true);
}

#[test]
fn a_timetagged_snapshot_and_switch_land_at_their_blocks_start_under_live() {
    timed_commands("live", "repro", false);
}

/// A scene that reads the session's input, through a gain into a delay,
/// at block 100.
const THROUGH: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "profile_config": {"block_size": 100},
  "nodes": [{"id": "mic", "op": "input", "params": {"channel": 0}},
            {"id": "g", "op": "gain", "params": {"gain": 1.0}},
            {"id": "echo", "op": "delay", "params": {"time": "3ms", "max_time": "10ms", "feedback": 0.5}}],
  "edges": [{"from": "mic", "to": "g"}, {"from": "g", "to": "echo"}],
  "outputs": {"main": ["echo"]}}"#;

#[test]
fn a_timetagged_switch_of_a_scene_reading_the_input_lands_at_exactly_its_sample() {
    let dir = common::temp_dir("osc-timed-input");
    let input = dir.join("in.wav");
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48_000,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut w = hound::WavWriter::create(&input, spec).unwrap();
    for n in 0..5 * 48_000 {
        w.write_sample((libm::sin(n as f64 * 0.031) * 0.5) as f32)
            .unwrap();
    }
    w.finalize().unwrap();
    let (child, lines, log, port) = start(
        &dir,
        THROUGH,
        &["--profile", "strict", "--input", input.to_str().unwrap()],
    );
    let c = Client::new(port);
    let tagged = |ms: u64, content: Vec<OscPacket>| {
        OscPacket::Bundle(OscBundle {
            timetag: morphrt::host::remote::osc::timetag(
                SystemTime::now() + Duration::from_millis(ms),
            ),
            content,
        })
    };
    // The switch's bundle also sets the gain to the value it has: its
    // reply says the sample the timetag landed at. Three and a half
    // seconds ahead: the new engine compiles and catches up through the
    // input before then, also on a machine busy with other work.
    c.send(&tagged(
        3_500,
        vec![
            msg("/morphrt/profile", vec![OscType::String("repro".into())]),
            param("g", "gain", OscType::Double(1.0)),
        ],
    ));
    let replies = [c.reply(), c.reply()];
    let gain = replies
        .iter()
        .find(|r| r.1.starts_with("g.gain"))
        .unwrap_or_else(|| panic!("{replies:?}"));
    let at = landed(gain);
    c.send(&tagged(300, vec![msg("/morphrt/stop", vec![])]));
    // The stop is answered at once; the switch has landed by then.
    let _ = c.reply();
    let all = ended(child, &lines, log);
    let j = dir.join("j.jsonl");
    let handovers = records_of(&j, "handover");
    assert_eq!(handovers.len(), 1, "{all}");
    assert_eq!(handovers[0]["swap_at"].as_u64().unwrap(), at, "{all}");
    assert_replays(&j, &dir.join("cap.wav"), &all);
}

#[test]
fn patterns_land_where_journaled_and_a_bundle_with_malformed_ends_applies_its_middle() {
    let dir = common::temp_dir("osc-patterns");
    let (child, lines, log, port) = start(&dir, SCENE, &["--profile", "repro"]);
    let c = Client::new(port);
    let r = c.ask(&msg("/l[a-f]v?{l,x}", vec![OscType::Float(0.5)]));
    let a = landed(&r);
    let r = c.ask(&msg("/x*", vec![OscType::Float(0.5)]));
    assert!(
        r.0 == "error" && r.1.starts_with("no OSC address matches the pattern /x*"),
        "{r:?}"
    );
    // A bundle: an element that is no message, a good one, and one whose
    // size runs past the end.
    let good = rosc::encoder::encode(&msg("/level", vec![OscType::Float(0.25)])).unwrap();
    let mut bundle = b"#bundle\0\0\0\0\0\0\0\0\x01".to_vec();
    for e in [&b"\xff\xff\xff\xff"[..], &good[..]] {
        bundle.extend_from_slice(&(e.len() as u32).to_be_bytes());
        bundle.extend_from_slice(e);
    }
    bundle.extend_from_slice(&100u32.to_be_bytes());
    c.send_bytes(&bundle);
    let replies: Vec<_> = (0..3).map(|_| c.reply()).collect();
    let b = replies
        .iter()
        .find(|r| r.0 == "ok")
        .map(landed)
        .unwrap_or_else(|| panic!("{replies:?}"));
    assert_eq!(
        replies
            .iter()
            .filter(|r| r.1.starts_with("malformed"))
            .count(),
        2,
        "{replies:?}"
    );
    assert_eq!(c.ask(&msg("/morphrt/stop", vec![])).0, "ok");
    let all = ended(child, &lines, log);
    assert!(
        all.contains(
            "control: 6 messages received; 2 changes applied, 1 refused, 0 dropped; 2 malformed"
        ),
        "{all}"
    );
    let j = dir.join("j.jsonl");
    let records = journaled(&j);
    assert!(
        records
            .iter()
            .any(|r| r.0 == a && r.1 == 0.5 && r.2.contains("pattern")),
        "{records:?}"
    );
    assert!(
        records.iter().any(|r| r.0 == b && r.1 == 0.25),
        "{records:?}"
    );
    let cap = dir.join("cap.wav");
    let played = common::read_f32(&cap);
    assert_eq!(played[2 * a as usize], 0.5);
    assert_eq!(played[2 * b as usize], 0.25);
    assert_replays(&j, &cap, &all);
}

/// A change setting an oscillator's `freq` above Nyquist plays its alias
/// (30 kHz at 48 kHz sounds at 18 kHz): the control thread warns the
/// first one it lands, once for the node however many follow (100 here,
/// and others above Nyquist), and nothing for a value in range.
#[test]
fn a_control_setting_a_frequency_above_nyquist_is_warned_once_per_node() {
    let dir = common::temp_dir("osc-alias");
    let scene = r#"{"version": "1.0", "sample_rate": 48000,
      "nodes": [{"id": "o", "op": "sine", "params": {"freq": "440Hz", "amp": 0.1}},
                {"id": "fine", "op": "sine", "params": {"freq": "440Hz", "amp": 0.1}}],
      "outputs": {"main": ["o", "fine"]}}"#;
    let (child, lines, log, port) = start(&dir, scene, &["--profile", "repro"]);
    let c = Client::new(port);
    for i in 0..100 {
        let hz = if i % 2 == 0 { 30_000.0 } else { 40_000.0 };
        let r = c.ask(&param("o", "freq", OscType::Double(hz)));
        assert_eq!(r.0, "ok", "{r:?}");
    }
    let r = c.ask(&param("fine", "freq", OscType::Double(20_000.0)));
    assert_eq!(r.0, "ok", "{r:?}");
    assert_eq!(c.ask(&msg("/morphrt/stop", vec![])).0, "ok");
    let all = ended(child, &lines, log);
    assert!(
        all.contains("101 changes applied, 0 refused"),
        "every change lands: {all}"
    );
    assert_eq!(all.matches("a control sets").count(), 1, "{all}");
    assert!(
        all.contains(
            "warning: node `o`: a control sets `freq` 30000 Hz is above Nyquist (24000 Hz at 48000 Hz): the oscillator plays its alias, 18000 Hz"
        ),
        "{all}"
    );
    assert!(all.contains("/morphrt/param"), "{all}");
    assert!(!all.contains("node `fine`"), "{all}");
}

/// A step (`d`, 0 until set) into a delay whose buffer holds 0.5 s and
/// into a lowpass biquad: left is the delay, right the filter.
const HELD_SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000, "profile": "strict",
  "nodes": [
    {"id": "d", "op": "dc", "params": {"value": 0}},
    {"id": "echo", "op": "delay", "params": {"time": 0.1, "max_time": 0.5, "mix": 1}},
    {"id": "f", "op": "biquad", "params": {"mode": "lowpass", "cutoff": 1000, "q": 0.7}}],
  "edges": [{"from": "d", "to": "echo"}, {"from": "d", "to": "f"}],
  "outputs": {"main": ["echo", "f"]}}"#;

/// The number after `name = ` in a reply, with the unit after it.
fn stated(text: &str, name: &str) -> (f64, String) {
    let rest = text
        .split(&format!("{name} = "))
        .nth(1)
        .unwrap_or_else(|| panic!("no `{name}` in {text:?}"));
    let mut words = rest.split(' ');
    let v = words.next().unwrap().parse().unwrap();
    (v, words.next().unwrap().trim_end_matches(';').to_string())
}

#[test]
fn a_reply_states_the_delay_and_cutoff_that_play_and_why_they_differ_from_the_asked() {
    let dir = common::temp_dir("osc-held");
    let (child, lines, log, port) = start(&dir, HELD_SCENE, &[]);
    let c = Client::new(port);
    // A delay past its buffer, a cutoff above Nyquist and the step that
    // shows both (to 0.5: the filter's ringing stays under the 1.0 the
    // session holds its output to), in one bundle a little ahead: all
    // land at one sample.
    let ahead = SystemTime::now() + Duration::from_millis(300);
    c.send(&OscPacket::Bundle(OscBundle {
        timetag: morphrt::host::remote::osc::timetag(ahead),
        content: vec![
            param("echo", "time", OscType::Double(2.0)),
            param("f", "cutoff", OscType::Double(30_000.0)),
            param("d", "value", OscType::Double(0.5)),
        ],
    }));
    let replies = [c.reply(), c.reply(), c.reply()];
    let at = landed(&replies[0]);
    let text = |name: &str| {
        replies
            .iter()
            .find(|r| r.1.starts_with(name))
            .map(|r| r.1.clone())
            .unwrap_or_else(|| panic!("no reply for {name}: {replies:?}"))
    };
    for r in &replies {
        assert_eq!(landed(r), at, "{replies:?}");
    }
    // What plays: the scene's max_time, and the biquad's design limit of
    // 0.49 × the rate (both stated in the operators' docs).
    let (time, unit) = stated(&text("echo.time"), "echo.time");
    assert_eq!((time, unit.as_str()), (0.5, "s"), "{replies:?}");
    assert_eq!(
        text("echo.time"),
        format!("echo.time = 0.5 s (asked 2 s; max_time is 0.5 s) at sample {at}")
    );
    let (cutoff, unit) = stated(&text("f.cutoff"), "f.cutoff");
    assert_eq!(
        (cutoff, unit.as_str()),
        (0.49 * 48_000.0, "Hz"),
        "{replies:?}"
    );
    assert_eq!(
        text("f.cutoff"),
        format!(
            "f.cutoff = 23520 Hz (asked 30000 Hz; above Nyquist, 24000 Hz at 48000 Hz) at sample {at}"
        )
    );
    assert_eq!(text("d.value"), format!("d.value = 0.5 at sample {at}"));
    // Past the stated delay, a value in range: its reply is as before.
    std::thread::sleep(Duration::from_millis(800));
    let r = c.ask(&param("echo", "time", OscType::Double(0.25)));
    assert_eq!(r.1, format!("echo.time = 0.25 s at sample {}", landed(&r)));
    assert_eq!(c.ask(&msg("/morphrt/stop", vec![])).0, "ok");
    let all = ended(child, &lines, log);
    let played = common::read_f32(&dir.join("cap.wav"));
    // The step leaves the delay `time` seconds after it entered, at the
    // delay the reply stated.
    let step = at as usize + (time * 48_000.0) as usize;
    assert!(played.len() > 2 * (step + 1), "{all}");
    assert_eq!(played[2 * (step - 1)], 0.0, "{all}");
    assert_eq!(played[2 * step], 0.5, "{all}");
    // The filter's step response is the one of a biquad rendered at the
    // stated cutoff.
    let scene = dir.join("stated.json");
    std::fs::write(
        &scene,
        HELD_SCENE
            .replace(r#""value": 0}"#, r#""value": 0.5}"#)
            .replace(r#""cutoff": 1000"#, &format!(r#""cutoff": {cutoff}"#)),
    )
    .unwrap();
    let out = dir.join("stated.wav");
    let o = common::morphrt(&[
        "render",
        scene.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-d",
        "0.05s",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rendered = common::read_f32(&out);
    let n = rendered.len() / 2;
    assert!(played.len() / 2 > at as usize + n, "{all}");
    let live: Vec<f32> = (0..n).map(|i| played[2 * (at as usize + i) + 1]).collect();
    let offline: Vec<f32> = (0..n).map(|i| rendered[2 * i + 1]).collect();
    assert_eq!(live, offline, "{all}");
    assert_replays(&dir.join("j.jsonl"), &dir.join("cap.wav"), &all);
}

/// The messages of one packet (an OSC bundle) are taken in one tick even
/// when the rest of the packet reaches the hub after the tick began, so
/// the packet is published whole and lands at one block.
#[test]
fn a_packets_messages_are_taken_in_one_tick_when_the_rest_comes_late() {
    use morphrt::host::remote::{Change, Command, Message, When};
    let (player, mut hub) = hub_of_scene();
    let message = |value: f64, batch_rest: usize| Message {
        command: Ok(Command::Changes(vec![Change {
            node: "d".into(),
            param: "value".into(),
            value: morphrt::graph::ControlValue::Number(value),
            ramp: 0,
        }])),
        when: When::Now,
        from: format!("test {value}"),
        reply: None,
        batch_rest,
    };
    let tx = hub.sender();
    tx.send(message(0.5, 1)).unwrap();
    let late = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(10));
        tx.send(message(0.25, 0)).unwrap();
    });
    let mut log = Vec::new();
    hub.tick(&mut log);
    assert_eq!(hub.counts.received, 2, "the packet's second message");
    late.join().unwrap();
    drop(player);
}

/// Once a link publishes, the callback takes only records and notes up
/// to the last published `seq`: a record pushed but not yet published
/// waits, so a batch pushed one record at a time is never split by a
/// block that starts between two pushes.
#[test]
fn records_pushed_but_not_published_wait_for_the_publish() {
    use morphrt::engine::{ChangeRecord, Outcome};
    use morphrt::graph::ControlValue;
    let engine = common::engine(SCENE, None, 64);
    let (node, param) = engine.find_param("d", "value").unwrap();
    let id = engine.id();
    let mut player = common::player(engine, 64);
    let mut link = player.control_link();
    let record = |seq: u64, value: f64| ChangeRecord {
        sample: 0,
        node: node as u32,
        param: param as u16,
        value: ControlValue::Number(value),
        ramp: 0,
        engine: id,
        seq,
    };
    let mut out = vec![0.0f32; 128];
    let applied = |link: &mut morphrt::host::live::player::ChangeLink| {
        let mut landed = Vec::new();
        while let Ok(r) = link.reports.pop() {
            match r.outcome {
                Outcome::Applied { at, .. } => landed.push((r.seq, at)),
                other => panic!("{other:?}"),
            }
        }
        landed
    };
    // Unpublished: every record passes as it is pushed.
    link.records.push(record(1, 0.2)).unwrap();
    player.fill(&mut out);
    player.fill(&mut out);
    assert_eq!(applied(&mut link), [(1, 0)]);
    // Published up to 1: records 2 and 3 wait until 3 is published.
    link.publish(1);
    link.records.push(record(2, 0.3)).unwrap();
    player.fill(&mut out);
    link.records.push(record(3, 0.4)).unwrap();
    player.fill(&mut out);
    player.fill(&mut out);
    assert_eq!(applied(&mut link), [], "held back");
    link.publish(3);
    player.fill(&mut out);
    player.fill(&mut out);
    let landed = applied(&mut link);
    assert_eq!(landed.len(), 2, "{landed:?}");
    assert_eq!(landed[0].1, landed[1].1, "in one block: {landed:?}");
}

/// A message stamped before the first callback lands at the first
/// blocks, however long after the player's origin the device started:
/// the clock's sample 0 plays no earlier than the first callback.
#[test]
fn a_message_stamped_before_the_first_callback_lands_at_the_first_blocks() {
    use morphrt::host::remote::{Change, Command, Message, When};
    use std::time::Instant;
    // The device took a second to start after the origin.
    let origin = Instant::now() - Duration::from_secs(1);
    let (mut player, mut hub) = hub_of_scene_from(origin);
    hub.sender()
        .send(Message {
            command: Ok(Command::Changes(vec![Change {
                node: "d".into(),
                param: "value".into(),
                value: morphrt::graph::ControlValue::Number(0.5),
                ramp: 0,
            }])),
            when: When::Stamped(Instant::now()),
            from: "test".into(),
            reply: None,
            batch_rest: 0,
        })
        .unwrap();
    let mut log = Vec::new();
    hub.tick(&mut log);
    let mut out = vec![0.0f32; 128];
    for _ in 0..4 {
        player.fill(&mut out);
        hub.tick(&mut log);
    }
    assert_eq!(hub.counts.applied, 1, "landed within 512 samples");
}
