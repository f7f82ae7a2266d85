//! Commands while playing. When stdin is a terminal, single keys act without
//! Enter (raw-ish mode via termios, restored on drop); otherwise stdin is
//! read one command per line, so a script can drive playback through a pipe.
//! `q` sets the stop flag that the callback reads (Ctrl-C and the other stop
//! signals are caught by `run`, whose control loop sets the same flag); every
//! command also reaches the control thread through a channel, never the
//! audio thread.

use crate::host::live::player::Switches;
use std::io::{BufRead, IsTerminal, Read};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A command for the control thread while playing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Switch to the strict profile (`s`).
    Strict,
    /// Switch to the repro profile (`r`).
    Repro,
    /// Switch to the live profile (`l`).
    Live,
    /// Write a snapshot of the engine state (`w`).
    Snapshot,
    /// Turn per-node timing on, or off and show where the time went (`t`).
    Timing,
    /// Fade out and stop (`q`). The stop flag is already set when this
    /// arrives: the callback stops on the flag, the message only informs.
    Quit,
}

impl Command {
    /// The command a single key stands for (either case, so Caps Lock does
    /// not stop `q` from working); `None` for any other key.
    pub fn from_key(c: char) -> Option<Command> {
        match c.to_ascii_lowercase() {
            's' => Some(Command::Strict),
            'r' => Some(Command::Repro),
            'l' => Some(Command::Live),
            'w' => Some(Command::Snapshot),
            't' => Some(Command::Timing),
            'q' => Some(Command::Quit),
            _ => None,
        }
    }

    /// The command a line of piped input names: its key, or its word
    /// (`strict`, `repro`, `live`, `snapshot`, `timing`, `quit`), in either
    /// case, surrounding whitespace ignored. `None` for an empty line or
    /// anything else.
    pub fn parse_line(s: &str) -> Option<Command> {
        let s = s.trim();
        let mut chars = s.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            return Command::from_key(c);
        }
        match s.to_ascii_lowercase().as_str() {
            "strict" => Some(Command::Strict),
            "repro" => Some(Command::Repro),
            "live" => Some(Command::Live),
            "snapshot" => Some(Command::Snapshot),
            "timing" => Some(Command::Timing),
            "quit" => Some(Command::Quit),
            _ => None,
        }
    }
}

/// A line of piped input that names no command. Reported rather than
/// ignored, so a typo in a script is seen; `Display` is the message to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCommand {
    /// The line, trimmed and cut to [`UnknownCommand::MAX_CHARS`] characters.
    pub line: String,
}

impl UnknownCommand {
    /// Longer lines are cut, so that piping in the wrong file cannot flood
    /// the terminal with it.
    pub const MAX_CHARS: usize = 40;

    fn new(line: &str) -> UnknownCommand {
        UnknownCommand {
            line: line.chars().take(UnknownCommand::MAX_CHARS).collect(),
        }
    }
}

impl std::fmt::Display for UnknownCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown command `{}`: expected s (strict), r (repro), l (live), w (snapshot), t (timing) or q (quit)",
            self.line
        )
    }
}

/// What the readers send: a command, or a line that named none.
pub type Input = Result<Command, UnknownCommand>;

/// Restores the terminal when dropped.
pub struct KeyListener {
    #[cfg(unix)]
    saved: Option<libc::termios>,
}

impl KeyListener {
    /// Starts reading commands from stdin (keys on a terminal, lines
    /// otherwise). Commands arrive on the returned receiver, for the control
    /// thread to poll.
    pub fn start(controls: Arc<Switches>) -> (KeyListener, Receiver<Input>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            // `Stdin` (unlike its lock) can move to the reader thread.
            spawn_line_reader(std::io::BufReader::new(stdin), tx, controls);
            let listener = KeyListener {
                #[cfg(unix)]
                saved: None,
            };
            return (listener, rx);
        }
        #[cfg(unix)]
        let saved = unsafe {
            // SAFETY: plain termios calls on fd 0, which is a terminal.
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) == 0 {
                let saved = t;
                t.c_lflag &= !(libc::ICANON | libc::ECHO);
                t.c_cc[libc::VMIN] = 1;
                t.c_cc[libc::VTIME] = 0;
                libc::tcsetattr(0, libc::TCSANOW, &t);
                Some(saved)
            } else {
                None
            }
        };
        spawn_key_reader(stdin, tx, controls);
        let listener = KeyListener {
            #[cfg(unix)]
            saved,
        };
        (listener, rx)
    }
}

impl Drop for KeyListener {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(t) = self.saved {
            // SAFETY: restores the attributes read in `start`.
            unsafe {
                libc::tcsetattr(0, libc::TCSANOW, &t);
            }
        }
    }
}

/// Hands a command over: `q` sets the stop flag first, so the callback
/// stops even if no one reads the channel. Returns whether to read on
/// (not after `q`: playback is ending). A closed channel is not an error,
/// so `q` keeps working when the receiver is gone.
fn deliver(cmd: Command, tx: &Sender<Input>, controls: &Switches) -> bool {
    if cmd == Command::Quit {
        controls.stop.store(true, Ordering::Relaxed);
    }
    let _ = tx.send(Ok(cmd));
    cmd != Command::Quit
}

/// Reads single keys (a terminal in raw-ish mode) on a new thread; keys
/// that name no command are ignored, since arrow keys and the like arrive
/// as bytes too. Ends after `q`, at end of input or on a read error. Takes
/// any reader so tests can feed it bytes.
pub fn spawn_key_reader<R: Read + Send + 'static>(
    mut input: R,
    tx: Sender<Input>,
    controls: Arc<Switches>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut b = [0u8; 1];
        loop {
            match input.read(&mut b) {
                Ok(0) => return,
                Ok(_) => {
                    if let Some(cmd) = Command::from_key(b[0] as char) {
                        if !deliver(cmd, &tx, &controls) {
                            return;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    })
}

/// Reads one command per line (piped stdin) on a new thread: empty lines
/// are skipped, a line naming no command is sent as [`UnknownCommand`].
/// End of input only ends the reading, never playback, since a script may
/// close stdin and let the scene play on. Also ends after `q` or on a read
/// error. Takes any reader so tests can feed it text.
pub fn spawn_line_reader<R: BufRead + Send + 'static>(
    mut input: R,
    tx: Sender<Input>,
    controls: Arc<Switches>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match input.read_until(b'\n', &mut buf) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
            // Lossy: a stray byte makes an unknown command, not a dead reader.
            let line = String::from_utf8_lossy(&buf);
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            match Command::parse_line(line) {
                Some(cmd) => {
                    if !deliver(cmd, &tx, &controls) {
                        return;
                    }
                }
                None => {
                    let _ = tx.send(Err(UnknownCommand::new(line)));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    const ALL: [(char, &str, Command); 6] = [
        ('s', "strict", Command::Strict),
        ('r', "repro", Command::Repro),
        ('l', "live", Command::Live),
        ('w', "snapshot", Command::Snapshot),
        ('t', "timing", Command::Timing),
        ('q', "quit", Command::Quit),
    ];

    fn unknown(line: &str) -> Input {
        Err(UnknownCommand { line: line.into() })
    }

    /// `spawn_line_reader` or `spawn_key_reader` over test bytes.
    type Spawn = fn(Cursor<Vec<u8>>, Sender<Input>, Arc<Switches>) -> JoinHandle<()>;

    /// Runs a reader over `input` to its end and returns what it sent and
    /// whether the stop flag is set.
    fn run(spawn: Spawn, input: &[u8]) -> (Vec<Input>, bool) {
        let controls = Arc::new(Switches::default());
        let (tx, rx) = std::sync::mpsc::channel();
        spawn(Cursor::new(input.to_vec()), tx, controls.clone())
            .join()
            .unwrap();
        (
            rx.try_iter().collect(),
            controls.stop.load(Ordering::Relaxed),
        )
    }

    #[test]
    fn keys_and_words_name_the_commands() {
        for (key, word, cmd) in ALL {
            assert_eq!(Command::from_key(key), Some(cmd));
            assert_eq!(Command::from_key(key.to_ascii_uppercase()), Some(cmd));
            assert_eq!(Command::parse_line(&key.to_string()), Some(cmd));
            assert_eq!(Command::parse_line(word), Some(cmd));
            assert_eq!(Command::parse_line(&format!(" \t{word}\r\n")), Some(cmd));
            assert_eq!(Command::parse_line(&word.to_uppercase()), Some(cmd));
        }
        for c in ['x', 'Q', ' ', '\n', '\u{1b}', 'é'] {
            assert_eq!(Command::from_key(c).is_some(), c == 'Q', "{c:?}");
        }
        for line in ["", "   ", "x", "sr", "s r", "stricter", "qu", "é"] {
            assert_eq!(Command::parse_line(line), None, "{line:?}");
        }
    }

    #[test]
    fn the_line_reader_sends_commands_in_order_and_eof_is_not_quit() {
        let (got, stop) = run(
            spawn_line_reader,
            b"s\n\n  r  \r\nlive\nbogus\nw\n\tt\nStrict",
        );
        assert_eq!(
            got,
            [
                Ok(Command::Strict),
                Ok(Command::Repro),
                Ok(Command::Live),
                unknown("bogus"),
                Ok(Command::Snapshot),
                Ok(Command::Timing),
                Ok(Command::Strict),
            ]
        );
        assert!(!stop, "end of input must not stop playback");
    }

    #[test]
    fn q_on_a_line_sets_the_stop_flag_and_ends_the_reading() {
        for q in ["q", "quit", " Q "] {
            let (got, stop) = run(spawn_line_reader, format!("r\n{q}\nl\n").as_bytes());
            assert_eq!(got, [Ok(Command::Repro), Ok(Command::Quit)], "{q:?}");
            assert!(stop, "{q:?}");
        }
    }

    #[test]
    fn stray_bytes_and_long_lines_are_reported_not_fatal() {
        let long = "x".repeat(500);
        let input = format!("\u{fffd}\n{long}\ns\n");
        let mut bytes = input.into_bytes();
        bytes[..3].copy_from_slice(&[0xff, 0xfe, b'!']);
        let (got, stop) = run(spawn_line_reader, &bytes);
        assert_eq!(
            got,
            [
                unknown("\u{fffd}\u{fffd}!"),
                unknown(&"x".repeat(UnknownCommand::MAX_CHARS)),
                Ok(Command::Strict),
            ]
        );
        assert!(!stop);
    }

    #[test]
    fn q_still_stops_when_no_one_reads_the_channel() {
        let controls = Arc::new(Switches::default());
        let (tx, rx) = std::sync::mpsc::channel();
        drop(rx);
        spawn_line_reader(Cursor::new(b"s\nq\n".to_vec()), tx, controls.clone())
            .join()
            .unwrap();
        assert!(controls.stop.load(Ordering::Relaxed));
    }

    #[test]
    fn the_key_reader_ignores_other_keys_and_ends_after_q() {
        let (got, stop) = run(spawn_key_reader, b"x\x1b[As\nRtq l");
        assert_eq!(
            got,
            [
                Ok(Command::Strict),
                Ok(Command::Repro),
                Ok(Command::Timing),
                Ok(Command::Quit),
            ]
        );
        assert!(stop);
        let (got, stop) = run(spawn_key_reader, b"lw");
        assert_eq!(got, [Ok(Command::Live), Ok(Command::Snapshot)]);
        assert!(!stop, "end of input is not q");
    }

    #[test]
    fn an_unknown_command_says_what_is_expected() {
        assert_eq!(
            UnknownCommand::new("bogus").to_string(),
            "unknown command `bogus`: expected s (strict), r (repro), l (live), w (snapshot), t (timing) or q (quit)"
        );
    }
}
