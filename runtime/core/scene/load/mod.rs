//! The scene loader: JSON text → [`Scene`] (the format of
//! `scenes/README.md`), with every problem reported as a located
//! [`Diagnostic`].
//!
//! serde_json parses the text into a `Value` (syntax errors and the nesting
//! limit are reported with its line:column); [`Positions`] then locates every
//! value, and a walk over the `Value` builds the typed scene while collecting
//! all errors and warnings rather than stopping at the first.
//!
//! This file holds the entry points ([`load_str`], [`load_file`],
//! [`read_scene_text`]), JSON
//! syntax errors and the `Loader` that walks the value. The walk's parts:
//! `report.rs` says what is wrong (located errors and warnings, unknown
//! fields with a did-you-mean); `read.rs` reads one value as what the scene
//! expects there (typed readers, numbers in strings); and one file per
//! section of the scene reads that section: `top.rs` (the scene object, its
//! session fields and `edit`), `config.rs` (`profile_config` and
//! `profile_overrides`), `nodes.rs` (modules and nodes), `edges.rs`,
//! `outputs.rs` and `events.rs`.

mod config;
mod controls;
mod edges;
mod events;
mod nodes;
mod outputs;
mod read;
mod report;
#[cfg(test)]
mod testing;
mod top;

pub(crate) use config::{FFT_NORMS, MAX_ITERATIONS, PRECISIONS, TOP_LEVEL_SETTINGS};
pub(crate) use controls::{CONTROL_KEYS, MAX_BEND_SEMITONES, MIDI_KEYS, TARGET_KEYS};
pub(crate) use edges::EDGE_KEYS;
pub(crate) use events::{EVENT_KEYS, NOTE_EVENT_KEYS};
pub(crate) use nodes::{MODULE_KEYS, NODE_KEYS};
pub(crate) use read::PROFILES;
pub(crate) use top::{empty_scene, DEFAULT_SAMPLE_RATE, EDIT_KEYS, MAX_SAMPLE_RATE, TOP_KEYS};

use super::pos::Positions;
use super::{Diagnostic, Loc, Scene};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Loads a scene file. A file that cannot be read gives one diagnostic naming it.
pub fn load_file(path: &Path) -> Result<Scene, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let text = read_scene_text(path)?;
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            d.to_path_buf()
        }
    });
    load_str(&text, &file, dir)
}

/// Reads a scene file's text. Only a regular file is read: a FIFO, a
/// device, a directory or a socket is refused up front, saying what it is
/// (reading a FIFO would wait for a writer, a device might never end).
pub fn read_scene_text(path: &Path) -> Result<String, Vec<Diagnostic>> {
    let file = path.display().to_string();
    let refused = |why: String| vec![Diagnostic::error(&file, None, why)];
    super::resource::read_regular_text(path).map_err(|e| match e {
        super::resource::NotRegular::Kind(k) => refused(format!(
            "cannot read scene file `{file}`: it is {k}, not a regular file; a scene is a JSON file"
        )),
        super::resource::NotRegular::Io(e) => {
            refused(format!("cannot read scene file `{file}`: {e}"))
        }
    })
}

/// Loads a scene from text. `file` labels diagnostics; `dir` is the directory
/// `@resource:` names resolve against. On success the scene carries the
/// warnings; on failure every error is returned (warnings included).
pub fn load_str(text: &str, file: &str, dir: Option<PathBuf>) -> Result<Scene, Vec<Diagnostic>> {
    // A UTF-8 byte order mark (some editors write one) is not part of the
    // JSON; positions count from after it, as editors show them.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Err(vec![syntax_error(text, file, &e)]),
    };
    let mut loader = Loader {
        file,
        text,
        pos: Positions::scan(text),
        diags: Vec::new(),
        ids: HashMap::default(),
        tempo: None,
        tempo_bad: false,
        last_beats: None,
    };
    let scene = loader.scene(&value, dir);
    if loader.diags.iter().any(Diagnostic::is_error) {
        return Err(loader.diags);
    }
    match scene {
        Some(mut scene) => {
            scene.warnings = loader.diags;
            Ok(scene)
        }
        None => {
            // Unreachable in practice: no scene is only built after an error.
            loader.diags.push(Diagnostic::error(
                file,
                None,
                "the scene could not be loaded",
            ));
            Err(loader.diags)
        }
    }
}

/// A serde_json error as a diagnostic, with a character column.
fn syntax_error(text: &str, file: &str, e: &serde_json::Error) -> Diagnostic {
    let (line, col) = (e.line(), e.column());
    let mut msg = e.to_string();
    let suffix = format!(" at line {line} column {col}");
    if let Some(stripped) = msg.strip_suffix(&suffix) {
        msg = stripped.to_string();
    }
    let help = if msg.contains("recursion limit") {
        "arrays and objects may be nested at most 128 levels deep".to_string()
    } else if msg.contains("number out of range") {
        "numbers must fit in a 64-bit float (about ±1.8e308)".to_string()
    } else {
        match e.classify() {
            serde_json::error::Category::Eof => {
                "the text ends before the JSON is complete: look for a missing `}`, `]` or `\"`"
                    .to_string()
            }
            _ => "a scene is one JSON object: look for a missing or trailing comma, an unquoted key or string, or a comment (JSON has none)".to_string(),
        }
    };
    let loc = (line > 0).then(|| Loc::new("", line as u32, char_column(text, line, col)));
    Diagnostic::error(file, loc, format!("invalid JSON: {msg}")).with_help(help)
}

/// serde_json counts columns in bytes; diagnostics count characters.
fn char_column(text: &str, line: usize, byte_col: usize) -> u32 {
    match text.split('\n').nth(line.saturating_sub(1)) {
        Some(l) => l.char_indices().take_while(|&(i, _)| i < byte_col).count() as u32,
        None => byte_col as u32,
    }
}
struct Loader<'a> {
    file: &'a str,
    text: &'a str,
    pos: Positions,
    diags: Vec<Diagnostic>,
    /// Every node id declared so far, with where.
    ids: HashMap<String, Loc, foldhash::fast::RandomState>,
    /// The scene's `tempo` and `meter`, read before anything else.
    tempo: Option<super::Tempo>,
    /// The `tempo` or `meter` is written but wrong (already reported).
    tempo_bad: bool,
    /// The beats of the last time [`Loader::time`] read, when it was
    /// written in beats or bars.
    last_beats: Option<super::Rational>,
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;
    use crate::dsp::Precision;
    use crate::profile::{Overrides, Profile};
    use crate::scene::{Endpoint, Rational, RawValue, TimeSpec};

    /// A scene touching most of the format: a pinned module, a node
    /// override, a resource, modulation, a cast, a stereo `main` and a
    /// ramped event.
    const EXAMPLE: &str = r#"{
  "version": "1.0",
  "profile": "repro",
  "seed": 42,
  "sample_rate": 48000,
  "duration": "20s",
  "profile_config": { "block_size": 128 },
  "modules": [
    { "id": "room", "profile": "strict",
      "nodes": [
        { "id": "verb", "op": "convolution", "params": { "ir": "@resource:hall.wav", "mix": 0.3 },
          "profile_overrides": { "precision": "f64" } } ] }
  ],
  "nodes": [
    { "id": "lfo", "op": "sine", "params": { "freq": "0.2Hz", "amp": 400 } },
    { "id": "osc", "op": "saw", "params": { "freq": "110Hz", "amp": "-12dB" } },
    { "id": "lp",  "op": "biquad", "params": { "mode": "lowpass", "cutoff": "900Hz", "q": 0.707 } },
    { "id": "up",  "op": "cast", "params": { "to": "f64" } }
  ],
  "edges": [ { "from": "osc", "to": "lp" }, { "from": "lfo", "to": "lp:cutoff" },
             { "from": "lp", "to": "up" }, { "from": "up", "to": "verb" } ],
  "outputs": { "main": ["verb:out", "verb:out_r"] },
  "events": [ { "time": "1.5s", "node": "osc", "param": "freq", "value": "220Hz", "ramp": "10ms" } ]
}"#;

    #[test]
    fn design_example_loads() {
        let s = load_str(EXAMPLE, "ex.json", Some(PathBuf::from("/scenes"))).unwrap();
        assert!(s.warnings.is_empty(), "{:#?}", s.warnings);
        assert_eq!(s.file, "ex.json");
        assert_eq!(s.dir, Some(PathBuf::from("/scenes")));
        assert_eq!(s.version, "1.0");
        assert_eq!(s.profile, Some(Profile::Repro));
        assert_eq!(s.seed, Some(42));
        assert_eq!(s.seed_loc, Some(Loc::new("seed", 4, 11)));
        assert_eq!(s.sample_rate, 48000);
        assert_eq!(s.duration, Some(TimeSpec::Seconds(Rational::from_int(20))));
        assert_eq!(s.config.block_size, Some(128));
        assert_eq!(s.config.flush_to_zero, None);
        assert_eq!(s.config.overrides, Overrides::default());

        assert_eq!(s.modules.len(), 1);
        assert_eq!(s.modules[0].id, "room");
        assert_eq!(s.modules[0].overrides.profile, Some(Profile::Strict));
        assert_eq!(s.modules[0].loc, Loc::new("modules[0]", 9, 5));

        let ids: Vec<&str> = s.nodes.iter().map(|n| n.id.as_str()).collect();
        assert_eq!(ids, ["verb", "lfo", "osc", "lp", "up"]);
        let verb = s.node("verb").unwrap();
        assert_eq!(verb.module, Some(0));
        assert_eq!(verb.op, "convolution");
        assert_eq!(verb.overrides.precision, Some(Precision::F64));
        assert_eq!(
            verb.overrides_loc,
            Some(Loc::new("modules[0].nodes[0].profile_overrides", 12, 32))
        );
        assert_eq!(verb.params[0].name, "ir");
        assert_eq!(
            verb.params[0].value,
            RawValue::Text("@resource:hall.wav".into())
        );
        assert_eq!(
            verb.params[1].value,
            RawValue::Number {
                value: 0.3,
                literal: "0.3".into()
            }
        );
        assert_eq!(
            verb.params[1].loc,
            Loc::new("modules[0].nodes[0].params.mix", 11, 93)
        );
        let lfo = s.node("lfo").unwrap();
        assert_eq!(lfo.module, None);
        assert_eq!(lfo.loc, Loc::new("nodes[0]", 15, 5));
        assert_eq!(lfo.op_loc, Loc::new("nodes[0].op", 15, 26));
        assert_eq!(
            lfo.params[1].value,
            RawValue::Number {
                value: 400.0,
                literal: "400".into()
            }
        );
        let lp = s.node("lp").unwrap();
        let names: Vec<&str> = lp.params.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["mode", "cutoff", "q"]);

        assert_eq!(s.edges.len(), 4);
        assert_eq!(s.edges[1].from.to_string(), "lfo");
        assert_eq!(
            s.edges[1].to,
            Endpoint {
                node: "lp".into(),
                port: Some("cutoff".into())
            }
        );
        assert_eq!(s.edges[3].loc, Loc::new("edges[3]", 21, 44));

        assert_eq!(s.outputs.len(), 1);
        assert_eq!(s.outputs[0].name, "main");
        let ch: Vec<String> = s.outputs[0]
            .channels
            .iter()
            .map(|c| c.0.to_string())
            .collect();
        assert_eq!(ch, ["verb:out", "verb:out_r"]);
        assert_eq!(
            s.outputs[0].channels[1].1,
            Loc::new("outputs.main[1]", 22, 37)
        );
        assert_eq!(s.outputs_loc, Some(Loc::new("outputs", 22, 14)));

        assert_eq!(s.events.len(), 1);
        let e = &s.events[0];
        assert_eq!(e.time, TimeSpec::Seconds(Rational::new(3, 2).unwrap()));
        assert_eq!(e.node, "osc");
        assert_eq!(e.param, "freq");
        assert_eq!(e.value, RawValue::Text("220Hz".into()));
        assert_eq!(
            e.ramp,
            Some(TimeSpec::Seconds(Rational::new(1, 100).unwrap()))
        );
        assert_eq!(e.index, 0);
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let e = one_error(
            "{\n  \"version\": \"1.0\",\n  \"nodes\": [,]\n}",
            "invalid JSON",
        );
        assert_eq!(at(&e), (3, 13));
        assert!(e.help.is_some());
        let e = one_error("{\"version\": \"1.0\"", "EOF");
        assert_eq!(e.loc.as_ref().unwrap().line, 1);
        assert!(e.help.unwrap().contains("ends before"));
        // Columns count characters.
        let e = one_error("{\"é\": \"é\" x}", "invalid JSON");
        assert_eq!(at(&e), (1, 11));
        let e = one_error("", "invalid JSON");
        assert!(e.help.is_some());
        let e = one_error("[1, 2]", "must be a JSON object");
        assert_eq!(at(&e), (1, 1));
    }

    #[test]
    fn deep_nesting_is_a_clean_error() {
        for text in [
            "[".repeat(10_000),
            "{\"a\":".repeat(10_000),
            format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)),
        ] {
            let e = one_error(&text, "recursion limit");
            assert!(e.help.unwrap().contains("128"));
        }
        let text = scene_with(&format!(
            ", \"extra\": {}{}",
            "[".repeat(100),
            "]".repeat(100)
        ));
        assert!(load(&text).is_ok());
    }

    #[test]
    fn all_errors_are_collected() {
        let text = r#"{"version": "1.0", "profile": "fast", "sample_rate": 0,
            "nodes": [{"id": "a", "op": 1}, {"id": "a", "op": "x"}],
            "edges": [{"from": "", "to": "a"}],
            "outputs": {"aux": "a"}, "typo_field": 1}"#;
        let errs = load(text).unwrap_err();
        let n_err = errs.iter().filter(|d| d.is_error()).count();
        assert_eq!(n_err, 6, "{errs:#?}");
        assert!(errs.iter().any(|d| !d.is_error()));
        for d in errs.iter().filter(|d| d.is_error()) {
            let l = d.loc.as_ref().unwrap();
            assert!(l.line > 0 && l.col > 0, "{d}");
        }
    }

    #[test]
    fn load_file_reads_and_names_the_file() {
        let dir = std::env::temp_dir().join(format!("morphrt-load-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("scene.json");
        std::fs::write(&f, EXAMPLE).unwrap();
        let s = load_file(&f).unwrap();
        assert_eq!(s.dir.as_deref(), Some(dir.as_path()));
        assert_eq!(s.file, f.display().to_string());
        let missing = dir.join("missing.json");
        let errs = load_file(&missing).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].message.contains("missing.json"), "{}", errs[0]);
        std::fs::write(&f, b"{\"version\": \"1.0\", \xff}").unwrap();
        assert_eq!(load_file(&f).unwrap_err().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// xorshift64: a tiny deterministic generator for the mutation test.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    /// Splits JSON text into rough tokens (strings, numbers/words, punctuation, spaces).
    fn tokens(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let start = i;
            let c = chars[i];
            if c == '"' {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i = (i + 1).min(chars.len());
            } else if c.is_alphanumeric() || c == '-' || c == '.' {
                while i < chars.len() && (chars[i].is_alphanumeric() || "-.+".contains(chars[i])) {
                    i += 1;
                }
            } else {
                i += 1;
            }
            out.push(chars[start..i.min(chars.len())].iter().collect());
        }
        out
    }

    fn mutate(base: &str, rng: &mut XorShift) -> String {
        const PIECES: [&str; 24] = [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"",
            "\\",
            "-",
            "0",
            "1e999",
            "-1",
            "null",
            "true",
            "\"profle\"",
            "\"id\"",
            "\"main\"",
            "\"1.5s\"",
            "é",
            "\u{0}",
            "\n",
            "18446744073709551616",
            "\"@resource:../x\"",
            "[[[[[[[[",
        ];
        let mut text = base.to_string();
        for _ in 0..1 + rng.below(4) {
            let chars: Vec<char> = text.chars().collect();
            let n = chars.len();
            let i = rng.below(n + 1);
            text = match rng.below(6) {
                0 if n > 0 => {
                    let len = 1 + rng.below(8);
                    chars[..i.min(n)]
                        .iter()
                        .chain(chars[(i + len).min(n)..].iter())
                        .collect()
                }
                1 => {
                    let piece = PIECES[rng.below(PIECES.len())];
                    let mut s: String = chars[..i].iter().collect();
                    s.push_str(piece);
                    s.extend(&chars[i..]);
                    s
                }
                2 if n > 0 => {
                    let mut c = chars.clone();
                    let j = i.min(n - 1);
                    c[j] = char::from(b" {}[],:\"0a-.e\\"[rng.below(14)]);
                    c.into_iter().collect()
                }
                3 => {
                    let mut t = tokens(&text);
                    if t.len() > 1 {
                        let a = rng.below(t.len());
                        let b = rng.below(t.len());
                        t.swap(a, b);
                    }
                    t.concat()
                }
                4 => {
                    let mut t = tokens(&text);
                    if !t.is_empty() {
                        let a = rng.below(t.len());
                        let b = rng.below(t.len());
                        t[a] = t[b].clone();
                    }
                    t.concat()
                }
                _ => chars[..i].iter().collect(),
            };
        }
        text
    }

    #[test]
    fn mutation_fuzz_never_panics() {
        let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
        let bases = [EXAMPLE.to_string(), scene_with(", \"events\": [{\"time\": 0.5, \"node\": \"a\", \"param\": \"f\", \"value\": [1, \"2Hz\"]}]")];
        let mut ok = 0;
        for round in 0..2000 {
            let base = &bases[round % bases.len()];
            let text = mutate(base, &mut rng);
            let result = std::panic::catch_unwind(|| load_str(&text, "fuzz.json", None));
            match result {
                Ok(Ok(_)) => ok += 1,
                Ok(Err(diags)) => {
                    assert!(!diags.is_empty(), "round {round}: Err without diagnostics");
                    assert!(
                        diags.iter().any(Diagnostic::is_error),
                        "round {round}: Err without an error"
                    );
                }
                Err(_) => panic!("load_str panicked on mutation round {round}; input:\n{text}"),
            }
        }
        // The mutations should not all be rejected outright.
        assert!(ok > 10, "only {ok} mutated scenes loaded");
    }
}
