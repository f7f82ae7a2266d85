//! The user tools around scenes: `plot` (a PNG of a scene's main bus or of
//! a WAV file), `schema` (a JSON Schema of the scene format), `completions`
//! and `man` (issue 11).

mod common;

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
fn issue11_every_shipped_scene_validates_against_the_schema() {
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
fn issue11_the_schema_rejects_exactly_the_schema_level_bad_fixtures() {
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
fn issue11_the_schema_judges_param_values_as_the_compiler_does() {
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
fn issue11_the_shipped_schema_file_is_the_generated_one() {
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
fn issue11_schema_output_file_follows_the_output_rules() {
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
fn issue11_completions_name_the_subcommands_and_their_options() {
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
fn issue11_man_prints_a_roff_page() {
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
}

fn plot(args: &[&str]) -> std::process::Output {
    let mut all = vec!["plot"];
    all.extend_from_slice(args);
    morphrt(&all)
}

#[test]
fn issue11_plot_of_a_scene_has_the_requested_size_per_channel() {
    let dir = temp_dir("plot-size");
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
    // The oracle for the channel count is the scene's main bus.
    let scene: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("scenes/pan-sweep.json")).unwrap(),
    )
    .unwrap();
    let channels = scene["outputs"]["main"].as_array().unwrap().len() as u32;
    let png = Png::read(&out);
    assert_eq!((png.width, png.height), (300, 120 * channels));
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

/// Columns whose waveform reaches the top rows (a stroke up to +1).
fn columns_reaching_the_top(png: &Png) -> Vec<u32> {
    (0..png.width)
        .filter(|x| (0..3).any(|y| png.brightness(*x, y) > 300))
        .collect()
}

#[test]
fn issue11_plot_range_shows_a_click_where_it_is() {
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
    assert_eq!((a.width, a.height), (200, 100));
    // 1.0 s is the middle of 0.9 … 1.1 s: column 100 of 200.
    assert_eq!(columns_reaching_the_top(&a), [100]);
    assert!(columns_reaching_the_top(&b).is_empty());
    // A click is broadband: the spectrogram is brighter in its column
    // than away from it, at every height (above the tick marks, which are
    // the bottom 6 rows of each panel).
    for y in (WAVE_ROWS + 2..94).step_by(7) {
        assert!(
            a.brightness(100, y) > a.brightness(20, y) + 60,
            "row {y}: {:?} vs {:?}",
            a.pixel(100, y),
            a.pixel(20, y)
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
fn issue11_plot_reads_a_wav_file() {
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
    assert_eq!((png.width, png.height), (400, 100));
    // Sample 1200 of 4800 is a quarter of the way: column 100.
    assert_eq!(columns_reaching_the_top(&png), [100]);
}

#[test]
fn issue11_plot_refuses_a_bad_range_with_exit_2() {
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
fn issue11_plot_output_follows_the_render_output_rules() {
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
