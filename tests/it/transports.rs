//! The transport seam: a transport written here, outside the crate,
//! delivers into the control hub through its inlet, decodes against the
//! mappings the hub keeps current, and what it sends lands, is answered
//! and is journaled as OSC's messages are.

use crate::support as common;

use morphrt::graph::ControlValue;
use morphrt::host::live::player::Meters;
use morphrt::host::live::remote_in::{AudioClock, Inlet, RemoteHub};
use morphrt::host::live::session::PlayingControls;
use morphrt::host::live::transport::Transport;
use morphrt::host::record::journal::Record;
use morphrt::host::remote::{Change, Command, Mappings, Message, When};
use morphrt::host::HostError;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

/// A dc node the scene's one control moves over OSC at `/level`.
const SCENE: &str = r#"{"version": "1.0", "sample_rate": 48000,
  "nodes": [{"id": "d", "op": "dc", "params": {"value": 0.1}}],
  "outputs": {"main": ["d"]},
  "controls": [{"osc": "/level", "node": "d", "param": "value", "min": 0, "max": 1}]}"#;

/// A transport that, once started, sends one change of `d.value`; the
/// replies it hears are kept. It needs no tick.
struct Fake {
    sender: Sender<Message>,
    mappings: Mappings,
    replies: Arc<Mutex<Vec<Result<String, String>>>>,
}

impl Fake {
    /// Opened as a transport is, before the hub: with the hub's inlet.
    fn open(inlet: &Inlet) -> Fake {
        Fake {
            sender: inlet.sender.clone(),
            mappings: inlet.mappings.clone(),
            replies: Arc::default(),
        }
    }
}

impl Transport for Fake {
    fn start(&mut self) -> Result<String, HostError> {
        // It decodes against what the hub keeps current: the engine
        // playing, whose nodes the hub filled in.
        let table = self.mappings.current().table.clone();
        if table.op("d").is_none() {
            return Err(HostError::Runtime("the mappings lack node d".into()));
        }
        let replies = self.replies.clone();
        self.sender
            .send(Message {
                command: Ok(Command::Changes(vec![Change {
                    node: "d".into(),
                    param: "value".into(),
                    value: ControlValue::Number(0.5),
                    ramp: 0,
                }])),
                when: When::Now,
                from: "fake d.value 0.5".into(),
                reply: Some(Box::new(move |r| replies.lock().unwrap().push(r))),
                batch_rest: 0,
            })
            .map_err(|e| HostError::Runtime(e.to_string()))?;
        Ok("fake: listening".into())
    }
}

#[test]
fn a_transport_written_outside_the_crate_delivers_into_the_hub_and_is_journaled_as_osc_is() {
    let incoming = morphrt::engine::incoming::Incoming::from_plan(
        common::plan(SCENE, None, 64),
        None,
        Vec::new(),
    );
    let inlet = Inlet::new(&incoming.controls, 48_000);
    let mut transports: Vec<Box<dyn Transport>> = vec![Box::new(Fake::open(&inlet))];
    let fake_replies = {
        let f = Fake::open(&inlet);
        let r = f.replies.clone();
        transports.push(Box::new(f));
        r
    };
    let mut player = common::player(*incoming.engine, 64);
    let clock = AudioClock {
        meters: Arc::new(Meters::default()),
        origin: std::time::Instant::now(),
        sample_rate: 48_000,
        stamped_latency: 0,
        first_sample: 0,
    };
    let controls = PlayingControls {
        maps: incoming.controls.clone(),
        table: incoming.table.clone(),
    };
    let mut hub = RemoteHub::with_inlet(inlet, player.control_link(), controls, clock);
    for t in &mut transports {
        assert_eq!(t.start().unwrap(), "fake: listening");
    }
    // The same change over OSC, decoded as the OSC transport decodes it.
    let packet = rosc::encoder::encode(&rosc::OscPacket::Message(rosc::OscMessage {
        addr: "/level".into(),
        args: vec![rosc::OscType::Float(0.5)],
    }))
    .unwrap();
    for d in morphrt::host::remote::osc::decode(&packet, "127.0.0.1:9", &hub.mappings().current()) {
        hub.sender()
            .send(Message {
                command: d.command,
                when: d.when,
                from: d.from,
                reply: None,
                batch_rest: 0,
            })
            .unwrap();
    }
    let mut log = Vec::new();
    let mut out = vec![0.0f32; 128];
    let mut journal = Vec::new();
    for _ in 0..20 {
        transports.iter_mut().for_each(|t| t.tick());
        hub.tick(&mut log);
        player.fill(&mut out);
        journal.extend(hub.take_journal());
    }
    assert_eq!(hub.counts.received, 3);
    assert_eq!(hub.counts.applied, 3, "{}", String::from_utf8_lossy(&log));
    let controls: Vec<&Record> = journal
        .iter()
        .filter(|r| matches!(r, Record::Control { .. }))
        .collect();
    assert_eq!(controls.len(), 3, "{journal:?}");
    let Record::Control {
        at,
        node,
        param,
        value,
        ramp,
        from,
    } = controls
        .iter()
        .find(|r| matches!(r, Record::Control { from, .. } if from.starts_with("osc ")))
        .expect("OSC's record")
    else {
        unreachable!()
    };
    let fakes: Vec<&&Record> = controls
        .iter()
        .filter(|r| matches!(r, Record::Control { from, .. } if from == "fake d.value 0.5"))
        .collect();
    assert_eq!(fakes.len(), 2, "{journal:?}");
    for r in fakes {
        assert_eq!(
            **r,
            Record::Control {
                at: *at,
                node: node.clone(),
                param: param.clone(),
                value: *value,
                ramp: *ramp,
                from: "fake d.value 0.5".into(),
            },
            "as OSC's ({from})"
        );
    }
    let replies = fake_replies.lock().unwrap();
    assert_eq!(replies.len(), 1);
    let reply = replies[0].as_ref().unwrap();
    assert!(
        reply.starts_with("d.value = 0.5") && reply.contains(&format!("at sample {at}")),
        "{reply}"
    );
    drop(player);
}
