//! A tempo from outside (`--transport follow`): the scene is handed over
//! to a text that sets it, as an edit of its `tempo` would be, so the
//! beat grid re-anchors at the swap sample and the journal keeps the text
//! and the sample. Every scene text the session reads afterwards (a saved
//! edit of the file) plays at that tempo too.

use super::{Job, LiveSession, Reason};
use std::io::Write;
use std::sync::Arc;
use std::time::SystemTime;

/// The highest tempo a scene takes, in beats a minute.
const MAX_BPM: f64 = 10_000.0;

impl LiveSession {
    /// The scene plays at `bpm` beats a minute from a swap soon after
    /// (nothing when it does already). A tempo no scene can have (0, or
    /// over 10000) is said and left.
    pub fn follow_tempo(&mut self, bpm: f64, log: &mut dyn Write) {
        if !(bpm > 0.0 && bpm <= MAX_BPM) {
            let _ = writeln!(
                log,
                "\nwarning: the JACK transport's tempo {bpm} bpm is not one a scene can have (greater than 0, at most 10000); the scene keeps its tempo"
            );
            return;
        }
        // f64's shortest decimal that reads back as it: `140`, `97.5`.
        let tempo = format!("{bpm}bpm");
        self.tempo = Some(tempo.clone());
        let text = Arc::new(self.with_followed_tempo(self.good_text.to_string()));
        if text == self.good_text {
            return;
        }
        match self.build(&text, self.queued_profile()) {
            Ok(inc) => {
                self.good_text = text.clone();
                self.good_asked = inc.asked.clone();
                self.queue(Job {
                    incoming: inc,
                    reason: Reason::Tempo(tempo),
                    text,
                    since: SystemTime::now(),
                    at: None,
                });
            }
            Err(error) => {
                let _ = writeln!(
                    log,
                    "\nthe transport's tempo {tempo} cannot be applied; the scene keeps playing:\n{error}"
                );
            }
        }
    }

    /// `text` with the followed tempo, if any: its `tempo` set to it
    /// (the text as it is when it has that tempo already, or is not a
    /// JSON object, which the compiler then refuses as it would anyway).
    pub(super) fn with_followed_tempo(&self, text: String) -> String {
        match &self.tempo {
            Some(tempo) => with_tempo(text, tempo),
            None => text,
        }
    }
}

/// `text` with its top-level `tempo` set to `tempo` (`140bpm`), unless it
/// has one of the same number of beats a minute already.
fn with_tempo(text: String, tempo: &str) -> String {
    let Ok(serde_json::Value::Object(mut scene)) = serde_json::from_str(&text) else {
        return text;
    };
    if scene.get("tempo").and_then(bpm_of) == bpm_of(&serde_json::Value::from(tempo)) {
        return text;
    }
    scene.insert("tempo".to_string(), tempo.into());
    serde_json::to_string_pretty(&scene).unwrap_or(text)
}

/// The beats a minute of a `tempo` value: `"120bpm"`, `"96.5 bpm"`, 120.
fn bpm_of(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => {
            let t = s.trim();
            let n = t.strip_suffix("bpm").or_else(|| t.strip_suffix("BPM"))?;
            n.trim().parse().ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tempo_is_set_in_the_text_only_when_it_differs() {
        let scene = r#"{"version": "1.0", "tempo": "120bpm", "nodes": []}"#.to_string();
        assert_eq!(with_tempo(scene.clone(), "120bpm"), scene);
        let set = with_tempo(scene, "97.5bpm");
        let v: serde_json::Value = serde_json::from_str(&set).unwrap();
        assert_eq!(v["tempo"], "97.5bpm");
        // The other keys stay, in their order.
        assert!(set.find("version").unwrap() < set.find("nodes").unwrap());
        let numeric = r#"{"tempo": 140}"#.to_string();
        assert_eq!(with_tempo(numeric, "140bpm"), r#"{"tempo": 140}"#);
    }
}
