//! Per-node timing in `run`: off by default (the summary says how to turn
//! it on), `t` turns it on, a second `t` turns it off and prints where the
//! time went meanwhile.

use crate::support as common;

use common::{stderr_lines, wait_line, KillOnDrop};
use std::io::Write;
use std::process::Stdio;

/// `morphrt run scenes/drone.json --device clock`, commands on stdin.
fn start() -> KillOnDrop {
    common::bin()
        .args([
            "run",
            "scenes/drone.json",
            "--device",
            "clock",
            "--no-watch",
            "--no-journal",
        ])
        .current_dir(common::root())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map(KillOnDrop)
        .expect("run morphrt")
}

/// Sends one command line.
fn send(child: &mut KillOnDrop, line: &str) {
    writeln!(child.stdin.as_mut().unwrap(), "{line}").unwrap();
}

/// Quits and returns the rest of stderr, after what `log` already holds.
fn quit(mut child: KillOnDrop, lines: std::sync::mpsc::Receiver<String>, log: &mut Vec<String>) {
    send(&mut child, "q");
    let status = child.wait().unwrap();
    log.extend(lines.iter());
    assert!(status.success(), "{}", log.join("\n"));
}

#[test]
fn t_turns_per_node_timing_on_and_a_second_t_prints_the_table() {
    let mut child = start();
    let lines = stderr_lines(&mut child);
    let mut log = Vec::new();
    wait_line(&lines, "playing ", &mut log);
    send(&mut child, "t");
    wait_line(&lines, "per-node timing on", &mut log);
    // Some audio with timing on (no timing is asserted).
    std::thread::sleep(std::time::Duration::from_millis(500));
    send(&mut child, "t");
    wait_line(&lines, "per-node timing off after ", &mut log);
    wait_line(&lines, "", &mut log);
    let table = log.last().unwrap().clone();
    assert!(table.starts_with("nodes by time: "), "{}", log.join("\n"));
    let entries: Vec<&str> = table["nodes by time: ".len()..].split(", ").collect();
    assert!(entries.len() >= 3, "{table}");
    assert!(
        entries.iter().all(|e| e.ends_with(" ns/sample)")),
        "{table}"
    );
    quit(child, lines, &mut log);
    // Off again at the end: the summary says so instead of a table.
    let all = log.join("\n");
    assert!(all.contains("per-node timing was off; `t`"), "{all}");
}

#[test]
fn without_t_the_summary_says_timing_was_off_and_how_to_turn_it_on() {
    let mut child = start();
    let lines = stderr_lines(&mut child);
    let mut log = Vec::new();
    wait_line(&lines, "playing ", &mut log);
    std::thread::sleep(std::time::Duration::from_millis(300));
    quit(child, lines, &mut log);
    let all = log.join("\n");
    assert!(
        all.contains(
            "per-node timing was off; `t` while playing turns it on (a second `t` shows the table)"
        ),
        "{all}"
    );
    assert!(!all.contains("nodes by time"), "{all}");
}
