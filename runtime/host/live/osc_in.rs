//! `run --osc`, a [`Transport`]: the UDP socket OSC arrives on and the
//! thread that reads it. Each packet is decoded ([`crate::host::remote::osc`]) against the
//! mapping of the engine playing now and sent to the control hub
//! ([`super::remote_in`]) as [`Message`]s whose reply goes back to the
//! sender's address from the bound socket (`/morphrt/reply ok|error
//! "…"`). A packet that cannot be read is a message with an error, never
//! the end of the thread.

use crate::host::live::remote_in::Inlet;
use crate::host::live::transport::Transport;
use crate::host::remote::osc::{decode, reply_packet, REPLY_ADDRESS};
use crate::host::remote::{Mappings, Message, TransportError};
use crate::host::HostError;
use std::io::{ErrorKind, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The largest UDP payload: a packet is read whole.
const MAX_PACKET: usize = 65_536;

/// The receive buffer asked of the kernel, so that a burst of messages
/// (a controller's flood) waits there rather than being dropped.
const RECEIVE_BUFFER: libc::c_int = 4 << 20;

/// How often the reading thread looks whether it should stop.
const POLL: Duration = Duration::from_millis(50);

/// `run`'s OSC flag.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct OscArgs {
    /// Listen for OSC on this UDP port of 127.0.0.1, or on ADDRESS:PORT
    /// (a non-loopback address lets anyone on the network control the
    /// session): the scene's `controls` addresses and `/morphrt/…`.
    ///
    /// `--osc 0.0.0.0:9000` listens on every interface, with a warning:
    /// anyone who can reach the machine can then control the session. A
    /// port in use exits 2 before anything plays. The addresses, their
    /// arguments, the replies and the counters: GUIDE.md, "Driving a
    /// session over OSC".
    #[arg(long, value_name = "PORT|ADDR:PORT")]
    pub osc: Option<String>,
}

/// Binds `--osc`, if given: the socket is bound now (a port in use stops
/// `run` here) and read once the session starts, sending to `inlet`.
pub fn open(
    args: &OscArgs,
    inlet: &Inlet,
    log: &mut dyn Write,
) -> Result<Vec<Box<dyn Transport>>, HostError> {
    let Some(spec) = &args.osc else {
        return Ok(Vec::new());
    };
    let socket = bind(spec, log)?;
    Ok(vec![Box::new(OscTransport {
        socket: Some(socket),
        sender: inlet.sender.clone(),
        mappings: inlet.mappings.clone(),
        server: None,
    })])
}

/// `--osc` as a transport: the bound socket until it starts, then the
/// thread reading it.
struct OscTransport {
    socket: Option<OscSocket>,
    sender: Sender<Message>,
    mappings: Mappings,
    server: Option<OscServer>,
}

impl Transport for OscTransport {
    fn start(&mut self) -> Result<String, HostError> {
        let Some(socket) = self.socket.take() else {
            return Err(TransportError::StartedTwice("OSC").into());
        };
        let server = socket.start(self.sender.clone(), self.mappings.clone())?;
        let said = format!(
            "OSC: listening on {} (answers go to the sender as {REPLY_ADDRESS})",
            server.addr
        );
        self.server = Some(server);
        Ok(said)
    }
}

/// The socket `--osc` bound, before its thread starts.
pub struct OscSocket {
    socket: UdpSocket,
    /// Where it listens.
    pub addr: SocketAddr,
}

/// Binds `spec`: a port (on 127.0.0.1) or `ADDR:PORT`. An address that is
/// not loopback is warned about on `log`: anyone on the network can then
/// control the session. A port in use, or one that cannot be bound, is
/// an error before anything plays (exit 2).
pub fn bind(spec: &str, log: &mut dyn Write) -> Result<OscSocket, HostError> {
    let addr = parse_addr(spec)?;
    let socket = UdpSocket::bind(addr).map_err(|source| TransportError::Bind {
        spec: spec.to_string(),
        addr,
        source,
    })?;
    let addr = socket.local_addr().unwrap_or(addr);
    socket
        .set_read_timeout(Some(POLL))
        .map_err(|source| TransportError::Socket {
            spec: spec.to_string(),
            source,
        })?;
    grow_receive_buffer(&socket);
    if !addr.ip().is_loopback() {
        let _ = writeln!(
            log,
            "warning: OSC listens on {addr}: anyone who can reach this machine on the network can control the session (`--osc PORT` listens on 127.0.0.1 only)"
        );
    }
    Ok(OscSocket { socket, addr })
}

/// `9000` → 127.0.0.1:9000; `0.0.0.0:9000`, `[::1]:9000`, `localhost:9000`
/// as written.
fn parse_addr(spec: &str) -> Result<SocketAddr, HostError> {
    if let Ok(port) = spec.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let bad = |why: String| {
        HostError::Usage(format!(
            "--osc takes a port (9000, on 127.0.0.1) or ADDRESS:PORT (0.0.0.0:9000), not `{spec}`{why}"
        ))
    };
    if let Ok(a) = spec.parse::<SocketAddr>() {
        return Ok(a);
    }
    match spec.to_socket_addrs() {
        Ok(mut addrs) => addrs.next().ok_or_else(|| bad(String::new())),
        Err(e) => Err(bad(format!(": {e}"))),
    }
}

/// Asks for a larger receive buffer (as root beyond the system's limit);
/// the default is kept when neither is granted.
fn grow_receive_buffer(socket: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let fd = socket.as_raw_fd();
    let size = RECEIVE_BUFFER;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    let ptr = &size as *const libc::c_int as *const libc::c_void;
    // SAFETY: `fd` is the open socket's; the option value is a c_int that
    // outlives the calls.
    unsafe {
        if libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, ptr, len) != 0 {
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, ptr, len);
        }
    }
}

/// The reading thread, stopped and joined when dropped.
pub struct OscServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl OscSocket {
    /// Starts reading: every message goes to `tx`, resolved against what
    /// `mappings` holds when its packet arrives.
    pub fn start(self, tx: Sender<Message>, mappings: Mappings) -> Result<OscServer, HostError> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let addr = self.addr;
        let socket = Arc::new(self.socket);
        let thread = std::thread::Builder::new()
            .name("morphrt-osc".to_string())
            .spawn(move || serve(&socket, &tx, &mappings, &flag))
            .map_err(|source| TransportError::Thread {
                what: "OSC",
                source,
            })?;
        Ok(OscServer {
            stop,
            thread: Some(thread),
            addr,
        })
    }
}

/// Reads packets until `stop` is set or the hub is gone.
fn serve(socket: &Arc<UdpSocket>, tx: &Sender<Message>, mappings: &Mappings, stop: &AtomicBool) {
    let mut buf = vec![0u8; MAX_PACKET];
    while !stop.load(Ordering::Relaxed) {
        let (n, peer) = match socket.recv_from(&mut buf) {
            Ok(got) => got,
            // A timeout, to look at `stop`.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
            // An ICMP error a reply to a closed port left behind, or worse:
            // never the end of the thread, never a busy loop.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        let mapping = mappings.current();
        let decoded = decode(&buf[..n], &peer.to_string(), &mapping);
        let count = decoded.len();
        for (i, d) in decoded.into_iter().enumerate() {
            let replies = socket.clone();
            let message = Message {
                command: d.command,
                when: d.when,
                from: d.from,
                reply: Some(Box::new(move |r| {
                    // Best effort: a sender that went away misses its answer.
                    let _ = replies.send_to(&reply_packet(&r), peer);
                })),
                batch_rest: count - 1 - i,
            };
            if tx.send(message).is_err() {
                return;
            }
        }
    }
}

impl Drop for OscServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
