//! The scene object itself: its session fields (`version`, `profile`,
//! `seed`, `sample_rate`, `duration`) and `edit`, read here; the walk over
//! the top level that hands every other field to its section; and the
//! checks made once every field is read.

use super::read::TIME_HELP;
use super::Loader;
use crate::scene::pos::child_key;
use crate::scene::units::TimeSpec;
use crate::scene::{EditConfig, Scene, SceneConfig};
use serde_json::Value;
use std::path::PathBuf;

/// Fields of the scene object. `$schema` names the JSON Schema an editor
/// validates the file with (`morphrt schema`); the runtime ignores its value.
pub(crate) const TOP_KEYS: [&str; 18] = [
    "$schema",
    "version",
    "profile",
    "seed",
    "sample_rate",
    "duration",
    "tempo",
    "meter",
    "profile_config",
    "modules",
    "nodes",
    "edges",
    "outputs",
    "channel_names",
    "events",
    "controls",
    "edit",
    "plugin",
];
/// Fields of the top-level `edit` object (how live edits are applied).
pub(crate) const EDIT_KEYS: [&str; 2] = ["ramp", "crossfade"];

pub(crate) const DEFAULT_SAMPLE_RATE: u32 = 48_000;
pub(crate) const MAX_SAMPLE_RATE: u64 = 768_000;
const DEFAULT_VERSION: &str = "1.0";

/// A scene with nothing read yet: every field at its default.
pub(crate) fn empty_scene(file: &str, dir: Option<PathBuf>) -> Scene {
    Scene {
        file: file.to_string(),
        dir,
        version: DEFAULT_VERSION.to_string(),
        profile: None,
        seed: None,
        seed_loc: None,
        duration_loc: None,
        sample_rate: DEFAULT_SAMPLE_RATE,
        sample_rate_set: false,
        duration: None,
        tempo: None,
        config: SceneConfig::default(),
        modules: Vec::new(),
        nodes: Vec::new(),
        edges: Vec::new(),
        outputs: Vec::new(),
        outputs_loc: None,
        channel_names: Vec::new(),
        events: Vec::new(),
        notes: Vec::new(),
        controls: Vec::new(),
        edit: EditConfig::default(),
        warnings: Vec::new(),
    }
}

impl Loader<'_> {
    /// The whole scene: its top-level fields in file order, each read by its
    /// section, then the checks that need every field.
    pub(super) fn scene(&mut self, root: &Value, dir: Option<PathBuf>) -> Option<Scene> {
        let Value::Object(top) = root else {
            let found = self.found(root, "");
            self.error(
                "",
                None,
                format!("a scene must be a JSON object, found {found}"),
                "a scene looks like `{ \"version\": \"1.0\", \"nodes\": [...], \"outputs\": { \"main\": [...] } }`".to_string(),
            );
            return None;
        };
        let mut scene = empty_scene(self.file, dir);
        let mut rng_seed = None;

        self.unknown_fields(top, "", &TOP_KEYS, "the scene", None);
        for dup in self.pos.duplicates().to_vec() {
            let loc = self.pos.key_loc(&dup);
            self.warning(
                loc,
                None,
                format!("`{dup}` is written more than once; only the last value is used"),
                "remove the earlier one".to_string(),
            );
        }

        // Beats and bars anywhere in the scene are read at its tempo, so
        // the tempo is read first, wherever it is written.
        self.tempo(top.get("tempo"), top.get("meter"));
        scene.tempo = self.tempo;

        for (key, v) in top {
            let path = child_key("", key);
            let p = path.as_str();
            match key.as_str() {
                "version" => self.version(v, p, &mut scene),
                "profile" => scene.profile = self.profile(v, p, None),
                "seed" => {
                    scene.seed = self.seed(v, p, "seed");
                    scene.seed_loc = Some(self.pos.loc(p));
                }
                "sample_rate" => {
                    if let Some(n) = self.int(v, p, "sample_rate", 1, MAX_SAMPLE_RATE, None) {
                        scene.sample_rate = n as u32;
                        scene.sample_rate_set = true;
                    }
                }
                "duration" => self.duration(v, p, &mut scene),
                "profile_config" => rng_seed = self.profile_config(v, p, &mut scene.config),
                "modules" => self.modules(v, p, &mut scene),
                "nodes" => self.nodes(v, p, &mut scene.nodes),
                "edges" => self.edges(v, p, &mut scene.edges),
                "outputs" => self.outputs(v, p, &mut scene),
                "edit" => scene.edit = self.edit(v, p),
                "events" => self.events(v, p, &mut scene.events, &mut scene.notes),
                "controls" => self.controls(v, p, &mut scene.controls),
                "tempo" | "meter" => {} // read first, above
                "channel_names" => {}   // read after `outputs`, below
                "$schema" => {}         // for editors: which JSON Schema validates the file
                "plugin" => {}          // read by `morphrt plugin`: the CLAP descriptor
                _ => {}                 // warned above
            }
        }

        if !top.contains_key("version") {
            let loc = self.pos.loc("");
            self.warning(
                loc,
                None,
                format!("the scene has no `version`; assuming \"{DEFAULT_VERSION}\""),
                format!("add `\"version\": \"{DEFAULT_VERSION}\"`"),
            );
        }
        self.rng_seed_alias(rng_seed, &mut scene);
        self.main_bus(top.get("outputs"));
        if let Some(v) = top.get("channel_names") {
            self.channel_names(v, &mut scene);
        }
        Some(scene)
    }

    /// `version`: the scene format, which must be 1.x.
    fn version(&mut self, v: &Value, p: &str, scene: &mut Scene) {
        if let Some(s) = self.string(v, p, "version", None) {
            if s.starts_with("1.") {
                scene.version = s.to_string();
            } else {
                self.error(
                    p,
                    None,
                    format!("unsupported scene format version `{s}`"),
                    "this runtime reads scene format 1.x (e.g. `\"1.0\"`)".to_string(),
                );
            }
        }
    }

    /// `tempo` (`"120bpm"`) and `meter` (`"4/4"`, the default): the beat
    /// grid. A meter without a tempo is an error (it would mean nothing).
    fn tempo(&mut self, tempo: Option<&Value>, meter: Option<&Value>) {
        use crate::scene::units::{Tempo, METER_HELP, TEMPO_HELP};
        let mut bpm = None;
        if let Some(v) = tempo {
            let p = "tempo";
            let text = match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(_) => {
                    let lit = self.pos.literal(p, self.text).unwrap_or("").to_string();
                    Some(format!("{lit}bpm"))
                }
                _ => None,
            };
            match text.as_deref().map(Tempo::parse_bpm) {
                Some(Ok(r)) => bpm = Some(r),
                Some(Err(e)) => {
                    let found = self.found(v, p);
                    let msg = if e.contains("out of range") {
                        e
                    } else {
                        format!("`tempo` must be a tempo in bpm, found {found}")
                    };
                    self.error(p, None, msg, TEMPO_HELP.to_string());
                    self.tempo_bad = true;
                }
                None => {
                    let found = self.found(v, p);
                    self.error(
                        p,
                        None,
                        format!("`tempo` must be a tempo in bpm, found {found}"),
                        TEMPO_HELP.to_string(),
                    );
                    self.tempo_bad = true;
                }
            }
        }
        let mut m = (4, 4);
        if let Some(v) = meter {
            let p = "meter";
            match v {
                Value::String(s) => match Tempo::parse_meter(s) {
                    Ok(x) => m = x,
                    Err(e) => {
                        self.error(p, None, e, METER_HELP.to_string());
                        self.tempo_bad = true;
                    }
                },
                _ => {
                    let found = self.found(v, p);
                    self.error(
                        p,
                        None,
                        format!("`meter` must be a string such as \"4/4\", found {found}"),
                        METER_HELP.to_string(),
                    );
                    self.tempo_bad = true;
                }
            }
            if tempo.is_none() {
                self.error(
                    p,
                    None,
                    "a `meter` without a `tempo` means nothing".to_string(),
                    "add `\"tempo\": \"120bpm\"` beside it".to_string(),
                );
            }
        }
        self.tempo = bpm.map(|bpm| Tempo { bpm, meter: m });
    }

    /// `duration`: how long the scene lasts; greater than zero.
    fn duration(&mut self, v: &Value, p: &str, scene: &mut Scene) {
        scene.duration_loc = Some(self.pos.loc(p));
        if let Some(t) = self.time(v, p, "duration", None) {
            let (TimeSpec::Seconds(r) | TimeSpec::Samples(r)) = t;
            if r.num > 0 {
                scene.duration = Some(t);
            } else {
                let found = self.found(v, p);
                self.error(
                    p,
                    None,
                    format!("`duration` must be greater than zero, found {found}"),
                    TIME_HELP.to_string(),
                );
            }
        }
    }

    /// `edit`: how a live edit of the file is applied while playing.
    fn edit(&mut self, v: &Value, p: &str) -> EditConfig {
        let mut edit = EditConfig::default();
        if let Some(obj) = self.object(v, p, "edit", None) {
            self.unknown_fields(obj, p, &EDIT_KEYS, "`edit`", None);
            for (k, val) in obj {
                let kp = child_key(p, k);
                match k.as_str() {
                    "ramp" => edit.ramp = self.time(val, &kp, k, None),
                    "crossfade" => edit.crossfade = self.time(val, &kp, k, None),
                    _ => {}
                }
            }
        }
        edit
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::scene::{Rational, RawValue};

    #[test]
    fn defaults_and_numeric_times() {
        let s = load(&scene_with(
            ", \"duration\": 2.5, \"events\": [{\"time\": 0.1, \"node\": \"a\", \"param\": \"freq\", \"value\": 1e3, \"ramp\": 0}]",
        ))
        .unwrap();
        assert_eq!(s.sample_rate, DEFAULT_SAMPLE_RATE);
        assert_eq!(s.profile, None);
        assert_eq!(s.seed, None);
        assert_eq!(
            s.duration,
            Some(TimeSpec::Seconds(Rational::new(5, 2).unwrap()))
        );
        let e = &s.events[0];
        assert_eq!(e.time.to_samples(48000), Some(Rational::from_int(4800)));
        assert_eq!(
            e.value,
            RawValue::Number {
                value: 1000.0,
                literal: "1e3".into()
            }
        );
        assert_eq!(e.ramp, Some(TimeSpec::Seconds(Rational::ZERO)));
        assert_eq!(s.outputs[0].channels[0].0.to_string(), "a");
    }

    #[test]
    fn values_out_of_range() {
        let e = one_error(
            &scene_with(",\n  \"sample_rate\": 0"),
            "`sample_rate` is out of range",
        );
        assert_eq!(at(&e), (3, 18));
        assert!(e.help.unwrap().contains("1 to 768000"));
        one_error(&scene_with(", \"sample_rate\": 768001"), "out of range");
        one_error(&scene_with(", \"sample_rate\": -48000"), "out of range");
        one_error(
            &scene_with(", \"sample_rate\": 44100.5"),
            "must be an integer",
        );
        one_error(
            &scene_with(", \"sample_rate\": \"48kHz\""),
            "must be an integer",
        );
        assert_eq!(
            load(&scene_with(", \"sample_rate\": 768000"))
                .unwrap()
                .sample_rate,
            768000
        );
        one_error(
            &scene_with(", \"profile\": \"strcit\""),
            "did you mean `strict`?",
        );
        one_error(
            &scene_with(", \"version\": \"2.0\""),
            "unsupported scene format version `2.0`",
        );
        one_error(&scene_with(", \"duration\": \"0s\""), "greater than zero");
        one_error(&scene_with(", \"duration\": -1"), "must not be negative");
        one_error(&scene_with(", \"duration\": \"20x\""), "not a valid time");
        one_error(&scene_with(", \"duration\": \"20Hz\""), "not a valid time");
    }

    #[test]
    fn missing_version_and_duplicate_keys_warn() {
        let s = load("{\"outputs\": {\"main\": \"a\"}, \"seed\": 1, \"seed\": 2}").unwrap();
        assert_eq!(s.version, DEFAULT_VERSION);
        assert_eq!(s.seed, Some(2));
        let msgs: Vec<&str> = s.warnings.iter().map(|w| w.message.as_str()).collect();
        assert!(msgs.iter().any(|m| m.contains("no `version`")), "{msgs:?}");
        assert!(
            msgs.iter()
                .any(|m| m.contains("`seed` is written more than once")),
            "{msgs:?}"
        );
    }

    #[test]
    fn a_schema_key_is_known() {
        // `"$schema"` (for editors) was an unknown field with a warning.
        let s = load(&scene_with(",\n\"$schema\": \"schema/scene.schema.json\"")).unwrap();
        assert!(s.warnings.is_empty(), "{:#?}", s.warnings);
        let s = load(&scene_with(",\n\"$schemas\": \"x\"")).unwrap();
        assert_eq!(s.warnings.len(), 1, "{:#?}", s.warnings);
        assert!(s.warnings[0]
            .to_string()
            .contains("did you mean `$schema`?"));
    }

    #[test]
    fn tempo_and_beat_times() {
        let s = load(&scene_with(
            ",\n\"tempo\": \"120bpm\", \"meter\": \"3/4\", \"events\": [{\"time\": \"2bars\", \"node\": \"a\", \"param\": \"freq\", \"value\": 1, \"ramp\": \"1/2beat\"}], \"duration\": \"4bars\"",
        ))
        .unwrap();
        let t = s.tempo.unwrap();
        assert_eq!((t.bpm, t.meter), (Rational::from_int(120), (3, 4)));
        let e = &s.events[0];
        assert_eq!(e.time.to_samples(48_000), Some(Rational::from_int(144_000)));
        assert_eq!(e.beat, Some(Rational::from_int(6)));
        assert_eq!(
            e.ramp.unwrap().to_samples(48_000),
            Some(Rational::from_int(12_000))
        );
        assert_eq!(
            s.duration.unwrap().to_samples(48_000),
            Some(Rational::from_int(288_000))
        );
    }

    #[test]
    fn bad_tempos_and_beats_without_a_tempo_are_located() {
        for (tempo, needle) in [
            ("0", "out of range"),
            ("\"0bpm\"", "out of range"),
            (
                "\"fast\"",
                "`tempo` must be a tempo in bpm, found the string \"fast\"",
            ),
            ("true", "`tempo` must be a tempo in bpm"),
        ] {
            let e = one_error(&scene_with(&format!(",\n\"tempo\": {tempo}")), needle);
            assert_eq!(at(&e), (3, 10), "{tempo}");
            assert!(e.help.unwrap().contains("120bpm"));
        }
        for (meter, needle) in [
            ("\"4/0\"", "note value 0"),
            ("\"x\"", "`x` is not a meter"),
            ("4", "must be a string"),
        ] {
            let e = one_error(
                &scene_with(&format!(",\n\"tempo\": \"120bpm\", \"meter\": {meter}")),
                needle,
            );
            assert_eq!(at(&e), (3, 29), "{meter}");
            assert!(e.help.unwrap().contains("6/8"));
        }
        // Beats without a tempo: at the value, saying what to add.
        let e = one_error(
            &scene_with(",\n\"events\": [{\"time\": \"1.5beats\", \"node\": \"a\", \"param\": \"freq\", \"value\": 1}]"),
            "`1.5beats` is in beats or bars, but the scene has no `tempo`",
        );
        assert_eq!(path(&e), "events[0].time");
        assert!(e.help.unwrap().contains("add `\"tempo\": \"120bpm\"`"));
        one_error(&scene_with(",\n\"meter\": \"4/4\""), "without a `tempo`");
        // A bad tempo is said once, not again at every time in beats.
        one_error(
            &scene_with(",\n\"tempo\": \"fast\", \"duration\": \"2bars\""),
            "found the string \"fast\"",
        );
    }
}
