//! The user tools around scenes: `plot` (a PNG of a scene's main bus or of
//! a WAV file), `schema` (a JSON Schema of the scene format), `completions`
//! and `man`.

use crate::support as common;

use common::{morphrt, root, stderr, stdout, temp_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

// ---- schema -----------------------------------------------------------------

/// The schema as `morphrt schema` prints it, checked against the 2020-12
/// meta-schema and equal to the library's.
fn schema() -> Value {
    let o = morphrt(&["schema"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed: Value = serde_json::from_str(&stdout(&o)).expect("schema is JSON");
    assert_eq!(printed, morphrt::graph::schema::scene_schema());
    if let Err(e) = jsonschema::meta::validate(&printed) {
        panic!("not a valid JSON Schema: {e}");
    }
    printed
}

fn validator() -> jsonschema::Validator {
    jsonschema::validator_for(&schema()).expect("the schema compiles")
}

fn errors(v: &jsonschema::Validator, scene: &Value) -> Vec<String> {
    v.iter_errors(scene)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_shipped_scene_validates_against_the_schema() {
    let v = validator();
    let mut scenes = json_files(&root().join("scenes"));
    scenes.extend(json_files(&root().join("scenes/bench")));
    assert!(scenes.len() >= 14, "{scenes:?}");
    for path in scenes {
        let scene: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let errs = errors(&v, &scene);
        assert!(errs.is_empty(), "{}:\n{}", path.display(), errs.join("\n"));
    }
}

/// Note events are a branch of `event`: a note, a note-off and the pedal
/// validate; a note event with neither `note` nor `sustain`, or with a
/// velocity over 1, and a param change without `value` do not.
#[test]
fn note_events_validate_against_the_schema() {
    let v = validator();
    let scene = |events: Value| {
        serde_json::json!({ "version": "1.0",
            "modules": [ { "id": "pad", "voices": 4, "note": { "pitch": "osc.freq" },
                "nodes": [ { "id": "osc", "op": "saw" } ] } ],
            "outputs": { "main": ["pad"] }, "events": events })
    };
    let good = scene(serde_json::json!([
        { "time": "0s", "module": "pad", "note": 60, "velocity": 0.5, "duration": "1s" },
        { "time": "0s", "module": "pad", "note": "440Hz" },
        { "time": "1s", "module": "pad", "note": "440Hz", "off": true },
        { "time": "1s", "module": "pad", "sustain": true },
        { "time": "1s", "node": "other", "param": "amp", "value": 0.5 }
    ]));
    let errs = errors(&v, &good);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    for bad in [
        serde_json::json!({ "time": "0s", "module": "pad" }),
        serde_json::json!({ "time": "0s", "module": "pad", "note": 60, "velocity": 2 }),
        serde_json::json!({ "time": "0s", "node": "osc", "param": "amp" }),
    ] {
        assert!(
            !errors(&v, &scene(serde_json::json!([bad.clone()]))).is_empty(),
            "{bad}"
        );
    }
}

/// Bad fixtures the schema rejects on the text alone.
const SCHEMA_LEVEL: [&str; 12] = [
    "bad_enum",          // enum value not allowed (`lowpas`)
    "bad_id",            // node id with a space
    "bad_type",          // sample_rate is a string
    "bad_version",       // version 2.0
    "nested_modules",    // a module's own `modules`
    "no_main",           // outputs without `main`
    "out_of_range",      // q = -1
    "resource_escape",   // @resource:../secret.wav
    "scene_key_in_node", // block_size in profile_overrides
    "unknown_op",        // sinee
    "unknown_param",     // frequency
    "wrong_unit",        // freq "3ms"
];
/// Bad fixtures whose problem needs the whole graph, the files or the
/// profile: the schema accepts them and `check` reports them.
const NOT_SCHEMA_LEVEL: [&str; 14] = [
    "bad_port",
    "cast_not_allowed",
    "cycle",
    "dangling_edge",
    "duplicate_edge",
    "duplicate_id",
    "feedback_delay_fraction", // a whole number of samples depends on the rate
    "feedback_delay_zero",     // time strings are not range-checked
    "fft_provider_strict",
    "missing_resource",
    "missing_seed",
    "off_grid_event",
    "ramp_enum",
    "rate_mismatch",
];
/// Fixtures that are not JSON a validator could read.
const NOT_JSON: [&str; 2] = ["deep_nesting", "syntax"];

#[test]
fn the_schema_rejects_exactly_the_schema_level_bad_fixtures() {
    let v = validator();
    let fixtures = json_files(&root().join("tests/fixtures/bad"));
    assert!(!fixtures.is_empty());
    for path in fixtures {
        let name = common::stem(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let lists = [
            SCHEMA_LEVEL.contains(&name.as_str()),
            NOT_SCHEMA_LEVEL.contains(&name.as_str()),
            NOT_JSON.contains(&name.as_str()),
        ];
        assert_eq!(
            lists.iter().filter(|x| **x).count(),
            1,
            "fixture `{name}` must be in exactly one list of this test"
        );
        let parsed = serde_json::from_str::<Value>(&text);
        if lists[2] {
            assert!(parsed.is_err(), "{name} parses as JSON");
            continue;
        }
        let scene = parsed.unwrap_or_else(|e| panic!("{name}: {e}"));
        let errs = errors(&v, &scene);
        if lists[0] {
            assert!(!errs.is_empty(), "the schema accepts {name}");
        } else {
            assert!(
                errs.is_empty(),
                "the schema claims {name}:\n{}",
                errs.join("\n")
            );
        }
    }
}

/// A one-node scene with one param.
fn one_param_scene(op: &str, param: &str, value: &Value) -> Value {
    serde_json::json!({
        "version": "1.0",
        "nodes": [ { "id": "n", "op": op, "params": { param: value } } ],
        "outputs": { "main": ["n"] }
    })
}

#[test]
fn the_schema_judges_param_values_as_the_compiler_does() {
    // The compiler (under repro, where a wrong unit is an error) is the
    // oracle. Unit strings are not range-checked by the schema (`"-5Hz"`),
    // so the cases stay within range.
    let v = validator();
    let cases: &[(&str, &str, Value)] = &[
        ("sine", "freq", "440Hz".into()),
        ("sine", "freq", "1.5kHz".into()),
        ("sine", "freq", "69midi".into()),
        ("sine", "freq", " 220 Hz ".into()),
        ("sine", "freq", "1e3Hz".into()),
        ("sine", "freq", "440".into()),
        ("sine", "freq", 440.into()),
        ("sine", "freq", "3ms".into()),
        ("sine", "freq", "440hz".into()),
        ("sine", "freq", "fast".into()),
        ("sine", "freq", true.into()),
        ("sine", "freq", (-5).into()),
        ("sine", "amp", "-6dB".into()),
        ("sine", "amp", "-inf dB".into()),
        ("sine", "amp", "3Hz".into()),
        ("sine", "phase", "90deg".into()),
        ("sine", "phase", "1.5rad".into()),
        ("sine", "phase", "90 degrees".into()),
        ("delay", "time", "250ms".into()),
        ("delay", "time", "4800samples".into()),
        ("delay", "time", "20Hz".into()),
        ("biquad", "q", 0.707.into()),
        ("biquad", "q", "0.707".into()),
        ("biquad", "q", "0.7dB".into()),
        ("biquad", "mode", "notch".into()),
        ("biquad", "mode", "Notch".into()),
        ("spectral_gate", "fft_size", 1024.into()),
        ("spectral_gate", "fft_size", "1024".into()),
        ("saturator", "critical", true.into()),
        ("saturator", "critical", "yes".into()),
        ("mix", "gains", serde_json::json!([1.0, "-6dB"])),
        ("mix", "gains", serde_json::json!(["6Hz"])),
        ("cast", "to", "f64".into()),
        ("cast", "to", "f16".into()),
    ];
    let mut accepted = 0;
    for (op, param, value) in cases {
        let scene = one_param_scene(op, param, value);
        let by_schema = v.is_valid(&scene);
        let loaded = morphrt::scene::load_str(&scene.to_string(), "t.json", None)
            .expect("the scene's structure is fine");
        let by_compiler = morphrt::graph::compile(
            &loaded,
            &morphrt::graph::CompileOptions {
                profile: Some(morphrt::profile::Profile::Repro),
                ..Default::default()
            },
        )
        .is_ok();
        assert_eq!(
            by_schema, by_compiler,
            "{op}.{param} = {value}: schema says {by_schema}, compiler {by_compiler}"
        );
        accepted += by_compiler as usize;
    }
    // Both verdicts occur.
    assert!(accepted > 5 && accepted < cases.len() - 5, "{accepted}");
}

#[test]
fn the_shipped_schema_file_is_the_generated_one() {
    // scenes/schema/scene.schema.json is what shipped scenes name in "$schema".
    let shipped = std::fs::read_to_string(root().join("scenes/schema/scene.schema.json"))
        .expect("the shipped schema");
    let o = morphrt(&["schema"]);
    assert_eq!(
        shipped,
        stdout(&o),
        "regenerate it: morphrt schema -o scenes/schema/scene.schema.json"
    );
    let with_key: Vec<PathBuf> = json_files(&root().join("scenes"))
        .into_iter()
        .filter(|p| std::fs::read_to_string(p).unwrap().contains("\"$schema\""))
        .collect();
    assert!(!with_key.is_empty());
    for p in with_key {
        let scene: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let target = p.parent().unwrap().join(scene["$schema"].as_str().unwrap());
        assert!(target.is_file(), "{}: {}", p.display(), target.display());
        // And the key is no warning.
        let o = morphrt(&["check", p.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(!stderr(&o).contains("unknown field"), "{}", stderr(&o));
    }
}

#[test]
fn schema_output_file_follows_the_output_rules() {
    let dir = temp_dir("schema-out");
    let out = dir.join("scene.schema.json");
    let o = morphrt(&["schema", "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(written, morphrt::graph::schema::scene_schema());
    // A missing directory is refused, and nothing is left behind.
    let missing = dir.join("nope/scene.schema.json");
    let o = morphrt(&["schema", "-o", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}

// ---- completions and man ------------------------------------------------------

#[test]
fn completions_name_the_subcommands_and_their_options() {
    let o = morphrt(&["completions", "bash"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bash = stdout(&o);
    for word in [
        "render",
        "run",
        "check",
        "plot",
        "schema",
        "completions",
        "--profile",
        "--freq-scale",
    ] {
        assert!(bash.contains(word), "bash completion lacks `{word}`");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let o = morphrt(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        assert!(stdout(&o).contains("plot"), "{shell}");
    }
    let o = morphrt(&["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_prints_a_roff_page() {
    let o = morphrt(&["man"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH morphrt"), "{page}");
    assert!(page.contains("plot") && page.contains("schema"), "{page}");
}

// ---- plot ---------------------------------------------------------------------

struct Png {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Png {
    fn read(path: &Path) -> Png {
        let decoder = png::Decoder::new(std::fs::File::open(path).expect("the PNG exists"));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("a frame");
        assert_eq!(info.color_type, png::ColorType::Rgb);
        assert_eq!(info.bit_depth, png::BitDepth::Eight);
        buf.truncate(info.buffer_size());
        Png {
            width: info.width,
            height: info.height,
            rgb: buf,
        }
    }

    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y * self.width + x) as usize * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    fn brightness(&self, x: u32, y: u32) -> u32 {
        self.pixel(x, y).iter().map(|c| *c as u32).sum()
    }

    /// Text or a tick mark: grey and bright (no colour of the panels'
    /// data, the waveform's or viridis', is grey).
    fn is_ink(&self, x: u32, y: u32) -> bool {
        let [r, g, b] = self.pixel(x, y);
        r == g && g == b && r > 100
    }

    /// The margins: their background (the top-left corner's colour) or ink.
    fn is_margin(&self, x: u32, y: u32) -> bool {
        self.pixel(x, y) == self.pixel(0, 0) || self.is_ink(x, y)
    }

    /// Whether the rectangle `xs` × `ys` holds any ink.
    fn has_ink(&self, xs: std::ops::Range<u32>, ys: std::ops::Range<u32>) -> bool {
        ys.clone().any(|y| xs.clone().any(|x| self.is_ink(x, y)))
    }
}

/// The panels, found from the picture alone: the leftmost run of columns
/// that hold anything but margin, and within those columns the runs of
/// rows that do (per channel a waveform, then a spectrogram).
struct Panels {
    x: u32,
    width: u32,
    /// (top, height) of each panel, top to bottom.
    rows: Vec<(u32, u32)>,
}

impl Panels {
    fn find(png: &Png) -> Panels {
        let column = |x: u32| (0..png.height).any(|y| !png.is_margin(x, y));
        let x = (0..png.width).find(|x| column(*x)).expect("a panel");
        let end = (x..png.width).find(|x| !column(*x)).unwrap_or(png.width);
        let row = |y: u32| (x..end).any(|x| !png.is_margin(x, y));
        let mut rows = Vec::new();
        let mut y = 0;
        while y < png.height {
            let top = y;
            while y < png.height && row(y) {
                y += 1;
            }
            if y > top {
                rows.push((top, y - top));
            }
            y += 1;
        }
        Panels {
            x,
            width: end - x,
            rows,
        }
    }

    fn columns(&self) -> std::ops::Range<u32> {
        self.x..self.x + self.width
    }

    fn wave(&self, c: usize) -> (u32, u32) {
        self.rows[2 * c]
    }

    fn spec(&self, c: usize) -> (u32, u32) {
        self.rows[2 * c + 1]
    }
}

/// Where `text`, drawn with the font8x8 crate's glyphs at `scale` in one
/// colour on the margins' background, stands in the rectangle `xs` × `ys`
/// of the picture: the top-left corners of every exact match.
fn find_text(
    png: &Png,
    text: &str,
    scale: u32,
    xs: std::ops::Range<u32>,
    ys: std::ops::Range<u32>,
) -> Vec<(u32, u32)> {
    use font8x8::UnicodeFonts;
    let glyphs: Vec<[u8; 8]> = text
        .chars()
        .map(|c| {
            font8x8::BASIC_FONTS
                .get(c)
                .expect("a basic Latin character")
        })
        .collect();
    let (w, h) = (8 * scale * glyphs.len() as u32, 8 * scale);
    let lit = |dx: u32, dy: u32| {
        let g = glyphs[(dx / (8 * scale)) as usize];
        g[(dy / scale) as usize] >> (dx / scale % 8) & 1 == 1
    };
    let background = png.pixel(0, 0);
    let first_lit = (0..h * w)
        .map(|i| (i % w, i / w))
        .find(|&(dx, dy)| lit(dx, dy))
        .expect("text with ink");
    let mut found = Vec::new();
    for y in ys.start..ys.end.min(png.height).saturating_sub(h - 1) {
        for x in xs.start..xs.end.min(png.width).saturating_sub(w - 1) {
            let ink = png.pixel(x + first_lit.0, y + first_lit.1);
            let matches = (0..h).all(|dy| {
                (0..w).all(|dx| {
                    let p = png.pixel(x + dx, y + dy);
                    if lit(dx, dy) {
                        p == ink && png.is_ink(x + dx, y + dy)
                    } else {
                        p == background
                    }
                })
            });
            if matches {
                found.push((x, y));
            }
        }
    }
    found
}

fn plot(args: &[&str]) -> std::process::Output {
    let mut all = vec!["plot"];
    all.extend_from_slice(args);
    morphrt(&all)
}

/// Half a second of scenes/pan-sweep.json (stereo) plotted at 300 × 120
/// panel pixels a channel into `dir`: the PNG and what the command printed.
fn plot_pan_sweep(dir: &Path) -> (PathBuf, std::process::Output) {
    let out = dir.join("pan.png");
    let o = plot(&[
        "scenes/pan-sweep.json",
        "-o",
        out.to_str().unwrap(),
        "-d",
        "0.5s",
        "--width",
        "300",
        "--height",
        "120",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    (out, o)
}

#[test]
fn plot_of_a_scene_has_the_requested_size_per_channel() {
    let dir = temp_dir("plot-size");
    let (out, o) = plot_pan_sweep(&dir);
    // The oracle for the channel count is the scene's main bus.
    let scene: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("scenes/pan-sweep.json")).unwrap(),
    )
    .unwrap();
    let channels = scene["outputs"]["main"].as_array().unwrap().len() as u32;
    let png = Png::read(&out);
    let panels = Panels::find(&png);
    assert_eq!(panels.width, 300);
    assert_eq!(
        panels.rows.len(),
        2 * channels as usize,
        "{:?}",
        panels.rows
    );
    for c in 0..channels as usize {
        assert_eq!(
            panels.wave(c).1 + panels.spec(c).1,
            120,
            "{:?}",
            panels.rows
        );
    }
    assert!(
        png.width > 300 && png.height > 120 * channels,
        "margins hold the labels"
    );
    assert!(stderr(&o).contains("time ticks every"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "no temporary file left"
    );
}

/// A mono scene that clicks once a second, at 0 s, 1 s, 2 s (full scale).
const CLICKS: &str = r#"{
  "version": "1.0",
  "profile": "strict",
  "duration": "2s",
  "nodes": [ { "id": "click", "op": "impulse", "params": { "freq": "1Hz", "amp": 1.0 } } ],
  "outputs": { "main": ["click"] }
}"#;

/// Waveform rows of a 100-pixel-high channel: the top 40 (2/5).
const WAVE_ROWS: u32 = 40;

/// Columns of the first waveform, counted from its left edge, that reach
/// its top rows (a stroke up to +1).
fn columns_reaching_the_top(png: &Png) -> Vec<u32> {
    let panels = Panels::find(png);
    let top = panels.wave(0).0;
    panels
        .columns()
        .filter(|x| (top..top + 3).any(|y| png.brightness(*x, y) > 300))
        .map(|x| x - panels.x)
        .collect()
}

#[test]
fn plot_range_shows_a_click_where_it_is() {
    let dir = temp_dir("plot-click");
    let scene = dir.join("clicks.json");
    std::fs::write(&scene, CLICKS).unwrap();
    let with = dir.join("with.png");
    let without = dir.join("without.png");
    for (out, from, to) in [(&with, "0.9s", "1.1s"), (&without, "0.2s", "0.4s")] {
        let o = plot(&[
            scene.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--from",
            from,
            "--to",
            to,
            "--width",
            "200",
            "--height",
            "100",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let a = Png::read(&with);
    let b = Png::read(&without);
    let panels = Panels::find(&a);
    assert_eq!(panels.width, 200);
    assert_eq!(panels.wave(0).1, WAVE_ROWS);
    // 1.0 s is the middle of 0.9 … 1.1 s: column 100 of 200.
    assert_eq!(columns_reaching_the_top(&a), [100]);
    assert!(columns_reaching_the_top(&b).is_empty());
    // A click is broadband: the spectrogram is brighter in its column
    // than away from it, at every height.
    let (top, rows) = panels.spec(0);
    let (click, away) = (panels.x + 100, panels.x + 20);
    for y in (top..top + rows).step_by(7) {
        assert!(
            a.brightness(click, y) > a.brightness(away, y) + 60,
            "row {y}: {:?} vs {:?}",
            a.pixel(click, y),
            a.pixel(away, y)
        );
    }
}

/// A mono WAV of `frames` silent samples at 48 kHz with a full-scale click
/// at `click`.
fn click_wav(path: &Path, frames: u32, click: u32) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 48000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..frames {
        w.write_sample(if i == click { i16::MAX } else { 0 })
            .unwrap();
    }
    w.finalize().unwrap();
}

#[test]
fn plot_reads_a_wav_file() {
    let dir = temp_dir("plot-wav");
    let wav = dir.join("in.wav");
    click_wav(&wav, 4800, 1200);
    let out = dir.join("in.png");
    let o = plot(&[
        wav.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--width",
        "400",
        "--height",
        "100",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let png = Png::read(&out);
    let panels = Panels::find(&png);
    assert_eq!(panels.width, 400);
    let title = "in.wav: WAV file, 48000 Hz, 1 ch, 0.000 - 0.100 s";
    let above = 0..panels.wave(0).0;
    assert_eq!(
        find_text(&png, title, 1, 0..png.width, above),
        [(panels.x, 4)]
    );
    // Sample 1200 of 4800 is a quarter of the way: column 100.
    assert_eq!(columns_reaching_the_top(&png), [100]);
}

/// The first of `found` whose top is `y`.
fn at_row(found: &[(u32, u32)], y: u32) -> Option<(u32, u32)> {
    found.iter().copied().find(|p| p.1 == y)
}

#[test]
fn plot_labels_stand_in_the_margins_and_never_over_the_panels() {
    let dir = temp_dir("plot-labels");
    let (out, _) = plot_pan_sweep(&dir);
    let png = Png::read(&out);
    let p = Panels::find(&png);
    assert_eq!(p.rows.len(), 4, "{:?}", p.rows);
    let right = p.x + p.width..png.width;
    for &(top, h) in &p.rows {
        assert!(
            !png.has_ink(p.columns(), top..top + h),
            "ink over rows {top}.."
        );
        assert!(
            png.has_ink(0..p.x, top..top + h),
            "labels left of rows {top}.."
        );
        assert!(
            png.has_ink(right.clone(), top..top + h),
            "labels right of rows {top}.."
        );
    }
    assert!(png.has_ink(0..png.width, 0..p.rows[0].0), "a title");
    let (last, h) = p.rows[3];
    assert!(
        png.has_ink(0..png.width, last + h..png.height),
        "time labels"
    );
    // The text is the font's glyphs, where each label belongs.
    let left = 0..p.x;
    for (c, name) in ["L", "R"].into_iter().enumerate() {
        let (top, h) = p.wave(c);
        let found = find_text(&png, name, 1, right.clone(), top..top + h);
        assert_eq!(
            found.iter().map(|f| f.1).collect::<Vec<_>>(),
            [top],
            "{name}"
        );
        // Full scale at the top and bottom of the waveform, right-aligned
        // close to its left edge.
        let plus = at_row(&find_text(&png, "+1", 1, left.clone(), top..top + h), top);
        let minus = at_row(
            &find_text(&png, "-1", 1, left.clone(), top..top + h),
            top + h - 8,
        );
        for (label, found) in [("+1", plus), ("-1", minus)] {
            let (x, _) = found.unwrap_or_else(|| panic!("{label} beside waveform {c}"));
            assert!(
                (p.x - 16..p.x).contains(&(x + 16)),
                "{label} ends at {}",
                x + 16
            );
        }
        // The colour bar's scale: 0 dB at its top, -120 dB at its bottom.
        let (top, h) = p.spec(c);
        let zero = find_text(&png, "0 dB", 1, right.clone(), top..top + h);
        assert!(at_row(&zero, top).is_some(), "0 dB at row {top}: {zero:?}");
        let floor = find_text(&png, "-120 dB", 1, right.clone(), top..top + h);
        assert!(at_row(&floor, top + h - 8).is_some(), "-120 dB: {floor:?}");
    }
    // The first time label, "0.0 s", centred under the panels' left edge.
    let found = find_text(&png, "0.0 s", 1, 0..png.width, last + h..png.height);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0 + 20, p.x);
    let title = find_text(&png, "pan-sweep.json: ", 1, 0..png.width, 0..p.rows[0].0);
    assert_eq!(title, [(p.x, 4)]);
}

#[test]
fn plot_draws_the_same_bytes_every_time_with_text_doubled_at_its_default_size() {
    let dir = temp_dir("plot-same");
    let outs = [dir.join("a.png"), dir.join("b.png")];
    for out in &outs {
        let o = plot(&[
            "scenes/ping-pong.json",
            "-o",
            out.to_str().unwrap(),
            "-d",
            "1s",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let a = std::fs::read(&outs[0]).unwrap();
    assert_eq!(a, std::fs::read(&outs[1]).unwrap(), "the same PNG bytes");
    let png = Png::read(&outs[0]);
    let p = Panels::find(&png);
    assert_eq!((p.width, p.rows.len()), (1200, 4));
    let title = "ping-pong.json: repro profile, 48000 Hz, 2 ch, 0.000 - 1.000 s";
    let found = find_text(&png, title, 2, 0..png.width, 0..p.rows[0].0);
    assert_eq!(found, [(p.x, 8)]);
    let (last, h) = p.rows[3];
    let found = find_text(&png, "0.0 s", 2, 0..png.width, last + h..png.height);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0 + 40, p.x);
    let found = find_text(&png, "1.0 s", 2, 0..png.width, last + h..png.height);
    assert_eq!(found.len(), 1, "the last tick is labelled too: {found:?}");
}

#[test]
fn plot_refuses_a_bad_range_with_exit_2() {
    let dir = temp_dir("plot-range");
    let wav = dir.join("in.wav");
    click_wav(&wav, 4800, 1200); // 0.1 s
    let scene = dir.join("clicks.json");
    std::fs::write(&scene, CLICKS).unwrap();
    let out = dir.join("x.png");
    let cases: &[(&Path, &[&str], &str)] = &[
        (&wav, &["--from", "50ms", "--to", "20ms"], "is not before"),
        (&wav, &["--from", "50ms", "--to", "50ms"], "is not before"),
        (&wav, &["--to", "1s"], "beyond the end"),
        (&wav, &["--from", "0.2s"], "is not before"),
        (&wav, &["--from", "-1s"], "negative"),
        (
            &wav,
            &["--from", "soon"],
            "invalid value 'soon' for '--from",
        ),
        (&scene, &["--to", "3s"], "beyond the end"),
        (&scene, &["-d", "1s", "--from", "1.5s"], "is not before"),
        (&wav, &["--profile", "strict"], "applies to a scene"),
        (&scene, &["-d", "700s"], "more than one picture shows"),
    ];
    for (input, args, needle) in cases {
        let mut all = vec![input.to_str().unwrap(), "-o", out.to_str().unwrap()];
        all.extend_from_slice(args);
        let o = plot(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
    assert!(!out.exists());
}

#[test]
fn plot_output_follows_the_render_output_rules() {
    let dir = temp_dir("plot-out");
    let wav = dir.join("in.wav");
    click_wav(&wav, 4800, 1200);
    let before = std::fs::read(&wav).unwrap();
    // Not a PNG name.
    let o = plot(&[
        wav.to_str().unwrap(),
        "-o",
        dir.join("x.jpg").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains(".png"), "{}", stderr(&o));
    // The input under another name (a hard link) is never written over.
    let link = dir.join("same.png");
    std::fs::hard_link(&wav, &link).unwrap();
    let o = plot(&[wav.to_str().unwrap(), "-o", link.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the WAV file"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&wav).unwrap(), before);
    // A missing directory is refused up front.
    let o = plot(&[
        wav.to_str().unwrap(),
        "-o",
        dir.join("nope/x.png").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["in.wav", "same.png"]);
}
