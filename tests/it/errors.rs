//! A command's error keeps what caused it: [`HostError::source`] leads
//! through the wing's own error (a file, a journal, a snapshot, a report)
//! to the I/O or parse error underneath, while the message and the exit
//! code stay what the user sees.

use crate::support::{self, morphrt, stderr, temp_dir};
use clap::Parser;
use morphrt::cli::{Cli, Command};
use morphrt::host::HostError;
use std::error::Error;
use std::io;
use std::path::Path;

const TONE: &str = r#"{ "version": "1.0", "sample_rate": 48000, "duration": "4800samples",
  "nodes": [ { "id": "tone", "op": "sine", "params": { "freq": "1kHz", "amp": 0.5 } } ],
  "outputs": { "main": ["tone"] } }"#;

/// Runs a command line in-process, as the binary does, and returns its error.
fn failure(args: &[&str]) -> HostError {
    let cli = Cli::try_parse_from(std::iter::once("morphrt").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    morphrt::cli::dispatch(cli.command).expect_err("the command fails")
}

/// `e` and every error its `source` chain leads to.
fn chain(e: &HostError) -> Vec<&(dyn Error + 'static)> {
    let mut v: Vec<&(dyn Error + 'static)> = vec![e];
    let mut at: &(dyn Error + 'static) = e;
    while let Some(next) = at.source() {
        v.push(next);
        at = next;
    }
    v
}

/// The first error of type `T` in `e`'s chain.
fn cause<T: Error + 'static>(e: &HostError) -> Option<&T> {
    chain(e).into_iter().find_map(|e| e.downcast_ref::<T>())
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_render_under_a_regular_file_keeps_the_io_error_as_its_source() {
    let dir = temp_dir("under-file");
    let scene = dir.join("tone.json");
    std::fs::write(&scene, TONE).unwrap();
    std::fs::write(dir.join("plain"), "a regular file").unwrap();
    let out = dir.join("plain/sub/out.wav");
    let e = failure(&["render", s(&scene), "-o", s(&out)]);
    let io = cause::<io::Error>(&e).expect("the chain reaches the io::Error");
    assert_eq!(io.kind(), io::ErrorKind::NotADirectory, "{e}");
    assert_eq!(io.raw_os_error(), Some(libc::ENOTDIR));
    assert!(matches!(e, HostError::File(_)), "{e:?}");
    assert_eq!(e.exit_code(), 1);
    let binary = morphrt(&["render", s(&scene), "-o", s(&out)]);
    assert_eq!(binary.status.code(), Some(1));
    assert_eq!(stderr(&binary).trim_end(), e.to_string());
}

#[test]
fn a_render_into_a_missing_directory_keeps_not_found_as_its_source() {
    let dir = temp_dir("missing-dir");
    let scene = dir.join("tone.json");
    std::fs::write(&scene, TONE).unwrap();
    let out = dir.join("no-such-dir/out.wav");
    let e = failure(&["render", s(&scene), "-o", s(&out)]);
    let io = cause::<io::Error>(&e).expect("the chain reaches the io::Error");
    assert_eq!(io.kind(), io::ErrorKind::NotFound, "{e}");
    assert_eq!(e.exit_code(), 1);
    assert!(
        e.to_string().contains(&format!(
            "the directory `{}` does not exist",
            dir.join("no-such-dir").display()
        )),
        "{e}"
    );
    let binary = morphrt(&["render", s(&scene), "-o", s(&out)]);
    assert_eq!(binary.status.code(), Some(1));
    assert_eq!(stderr(&binary).trim_end(), e.to_string());
}

#[test]
fn a_journal_line_that_is_no_record_keeps_the_json_error_as_its_source() {
    let dir = temp_dir("corrupt-journal");
    let journal = dir.join("j.jsonl");
    std::fs::write(&journal, "not json\n{\"type\":\"end\",\"frames\":1}\n").unwrap();
    let out = dir.join("out.wav");
    let e = failure(&["replay", s(&journal), "-o", s(&out)]);
    let json = cause::<serde_json::Error>(&e).expect("the chain reaches the JSON error");
    assert_eq!((json.line(), json.column()), (1, 2));
    assert!(matches!(e, HostError::Journal(_)), "{e:?}");
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains(&format!("{}:1: not a journal record: ", journal.display())),
        "{e}"
    );
    let binary = morphrt(&["replay", s(&journal), "-o", s(&out)]);
    assert_eq!(binary.status.code(), Some(2));
    assert_eq!(stderr(&binary).trim_end(), e.to_string());
    assert!(!out.exists());
}

#[test]
fn a_journal_line_that_is_no_text_keeps_the_utf8_error_as_its_source() {
    let dir = temp_dir("binary-journal");
    let journal = dir.join("j.jsonl");
    std::fs::write(&journal, b"{\"type\xff\n{\"type\":\"end\",\"frames\":1}\n").unwrap();
    let e = failure(&["replay", s(&journal), "--info"]);
    let utf8 = cause::<std::str::Utf8Error>(&e).expect("the chain reaches the UTF-8 error");
    assert_eq!(utf8.valid_up_to(), 6);
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("not a journal record: byte 7 of the line is not UTF-8 text"),
        "{e}"
    );
}

#[test]
fn a_truncated_snapshot_keeps_the_json_error_as_its_source() {
    let dir = temp_dir("truncated-snapshot");
    let scene = dir.join("tone.json");
    std::fs::write(&scene, TONE).unwrap();
    let snap = dir.join("snap.json");
    let made = support::render(
        &scene,
        &dir.join("first.wav"),
        &["--snapshot-at", "2400samples", "--snapshot-out", s(&snap)],
    );
    assert!(made.status.success(), "{}", stderr(&made));
    let whole = std::fs::read(&snap).unwrap();
    std::fs::write(&snap, &whole[..whole.len() / 2]).unwrap();
    let out = dir.join("rest.wav");
    let e = failure(&["render", s(&scene), "-o", s(&out), "--resume", s(&snap)]);
    let json = cause::<serde_json::Error>(&e).expect("the chain reaches the JSON error");
    assert!(json.is_eof(), "{json}");
    assert!(matches!(e, HostError::Snapshot(_)), "{e:?}");
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("the snapshot is truncated"), "{e}");
    assert!(!out.exists());
}

/// A writer that refuses every byte, as a closed pipe does.
struct Refusing;

impl io::Write for Refusing {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_report_that_cannot_be_written_keeps_the_io_error_as_its_source() {
    let cli = Cli::try_parse_from(["morphrt", "ops", "sine"]).unwrap();
    let Command::Ops(o) = cli.command else {
        unreachable!("parsed as ops")
    };
    let e = morphrt::cli::ops::ops(&o, &mut Refusing).expect_err("the write fails");
    let io = cause::<io::Error>(&e).expect("the chain reaches the io::Error");
    assert_eq!(io.kind(), io::ErrorKind::BrokenPipe);
    assert_eq!(e.exit_code(), 1);
    assert!(
        e.to_string()
            .starts_with("error: cannot write the operator list: "),
        "{e}"
    );
}
