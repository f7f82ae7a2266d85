//! How long a scene may go on sounding once its input is silent and its
//! notes have ended: what a plugin host reads as the tail, so that it
//! does not cut a reverb off.
//!
//! **The rule.** The tail is the scene's latency plus, for every node
//! that holds sound, the time that sound takes to fall 100 dB (the
//! level a voice counts as silent at), added up over the nodes (a bound
//! for any graph: a path through them never takes longer):
//! - `reverb`: its predelay plus its longer decay time (`rt60_low`,
//!   `rt60_high`) × 100/60;
//! - `delay`: its `time` × the echoes it takes to fall 100 dB,
//!   ⌈ln 10⁻⁵ / ln |feedback|⌉ (1 without feedback);
//! - every other node: nothing (filters and dynamics ring for far less
//!   than a block).
//!
//! It is endless when a node outside the voice modules makes sound from
//! nothing (it has no audio input and is not an `input`), when a
//! `delay` feeds back with |feedback| ≥ 1, or when the scene has a
//! feedback edge. The values are each node's params as they are when
//! asked.

use super::Engine;

impl Engine {
    /// The tail in samples (see the module docs), or `None` for an
    /// endless one.
    pub fn tail(&self, latency: u64) -> Option<u64> {
        if !self.feeds.is_empty() {
            return None;
        }
        let rate = self.sample_rate() as f64;
        let mut secs = 0.0f64;
        for slot in &self.slots {
            let op = crate::ops::lookup(slot.op)?;
            let value = |name: &str| {
                op.param_index(name)
                    .and_then(|i| slot.params.get(i))
                    .map_or(0.0, |p| p.value)
            };
            match slot.op {
                "reverb" => {
                    let rt60 = value("rt60_low").max(value("rt60_high"));
                    secs += value("predelay") + rt60 * 100.0 / 60.0;
                }
                "delay" => {
                    let g = value("feedback").abs();
                    if g >= 1.0 {
                        return None;
                    }
                    let echoes = if g == 0.0 {
                        1.0
                    } else {
                        libm::ceil(libm::log(1e-5) / libm::log(g))
                    };
                    secs += value("time") * echoes;
                }
                "input" => {}
                _ if op.inputs.is_empty() && slot.voice.is_none() => return None,
                _ => {}
            }
        }
        Some(latency + libm::ceil(secs * rate) as u64)
    }
}
