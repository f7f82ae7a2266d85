//! The tail extension: how long the plugin goes on sounding after its
//! input falls silent and its notes end, so that a host does not stop
//! calling `process` before a reverb has died away. The core derives it
//! from the scene's nodes ([`Engine::tail`](morphrt_core::engine::Engine::tail)):
//! the plugin's latency plus each reverb's decay and each delay's
//! echoes to −100 dB; endless when something sounds on its own.

use crate::Audio;
use clack_extensions::tail::{PluginTailImpl, TailLength};

impl PluginTailImpl for Audio<'_> {
    fn get(&self) -> TailLength {
        let latency = self.processor.latency() + self.processor.engine().latency();
        match self.processor.engine().tail(latency as u64) {
            Some(n) => TailLength::Finite(n.min(i32::MAX as u64 - 1) as u32),
            None => TailLength::Infinite,
        }
    }
}
