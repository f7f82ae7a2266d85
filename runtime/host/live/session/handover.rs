//! The handover job's phases, driven by [`LiveSession::tick`]: a queued
//! job asks the audio thread for a save; the saved state is migrated
//! into the new engine, which is placed (`place.rs`) and offered; the
//! audio thread swaps it in (or refuses it, having passed the swap sample,
//! and it is placed again), and the old engine comes back to be dropped
//! here. A job that cannot be placed is dropped and said.

use super::place::Unplaced;
use super::{HandoverRecord, Job, LiveSession, Offered, Phase, Playing, Reason, Rejected};
use crate::engine::incoming::{fade_for, past_events, switch_warning, EventKey};
use crate::engine::{fold_voice_copies, voices_suffix, EngineState, Notice};
use crate::host::live::player::{FromAudio, ToAudio};
use crate::profile::Profile;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

impl LiveSession {
    /// Drives the handover: serves the audio thread's replies, starts the
    /// next queued change when idle. Call every few milliseconds.
    pub fn tick(&mut self, log: &mut dyn Write) {
        while let Some(msg) = self.link.receive() {
            match msg {
                FromAudio::Saved { state, at } => self.saved(state, at, log),
                FromAudio::Swapped { at } => self.swapped(at, log),
                FromAudio::Refused { engine, clock } => self.refused(engine, clock, log),
                FromAudio::Retired(old) => {
                    // Dropped here, on the control thread.
                    drop(old);
                    if matches!(self.phase, Phase::Retiring) {
                        self.phase = Phase::Idle;
                    }
                }
            }
        }
        self.start_snapshot();
        self.start_queued();
    }

    /// Starts the queued job when nothing is in flight: asks the audio
    /// thread for the save it migrates from (the job stays queued while
    /// the save buffer is out, or the request does not get through).
    fn start_queued(&mut self) {
        if !matches!(self.phase, Phase::Idle) {
            return;
        }
        let Some(job) = self.queued.take() else {
            return;
        };
        // A timed switch is saved a little before its sample,
        // so that the new engine is placed there in time: a fifth
        // of a second at least, which a busy control thread still
        // migrates and fast-forwards through in time; two leads
        // for an engine that reads the input (the audio thread
        // catches it up, then keeps it in step until the sample).
        let ahead = if self.reads_history(&job.incoming.engine) {
            2 * self.lead
        } else {
            (2 * self.lead).max(self.fixed.sample_rate as u64 / 5)
        };
        let from = job.at.map(|at| at.saturating_sub(ahead));
        match self.saved.take() {
            Some(buf) => match self.link.send(save_request(buf, from)) {
                Ok(()) => self.phase = Phase::Saving(job),
                Err(ToAudio::Save(buf) | ToAudio::SaveFrom { state: buf, .. }) => {
                    self.saved = Some(buf);
                    self.queued = Some(job);
                }
                Err(_) => unreachable!("pushed a capture"),
            },
            None => self.queued = Some(job),
        }
    }

    fn saved(&mut self, state: Box<EngineState>, at: u64, log: &mut dyn Write) {
        let job = match std::mem::replace(&mut self.phase, Phase::Idle) {
            Phase::Saving(job) => job,
            Phase::Snapshotting(stem) => {
                self.write_snapshot(&state, at, &stem, log);
                self.saved = Some(state);
                return;
            }
            other => {
                self.phase = other;
                self.saved = Some(state);
                return;
            }
        };
        let Job {
            mut incoming,
            reason,
            text,
            since,
            at: wanted,
        } = job;
        let t0 = Instant::now();
        let migration = incoming.engine.migrate(&state, at);
        let migrate_time = t0.elapsed();
        // The buffer shaped for the playing engine stays ours until the
        // swap happens.
        let t1 = Instant::now();
        let catching_up = self.reads_history(&incoming.engine);
        let wanted = wanted.map(|w| self.landing(w, at));
        let s = match self.place_any(&mut incoming.engine, at, wanted, catching_up) {
            Ok(s) => s,
            Err(why) => {
                self.saved = Some(state);
                self.dropped(&reason, incoming.profile, &text, why, log);
                return;
            }
        };
        let ff_time = t1.elapsed();
        let fade = fade_for(&migration, &incoming.engine);
        incoming.retime_keys();
        let past = self.past_event_warnings(&incoming.events, at);
        let (engine, next) = Playing::split(incoming);
        if let Err(e) = self.link.send(offer(engine, s, wanted, fade, catching_up)) {
            // The queue holds 16 and a handover uses 2: cannot happen; keep
            // the session consistent anyway.
            drop(e);
            self.saved = Some(state);
            let _ = writeln!(
                log,
                "\nwarning: the audio thread is not taking requests; edit dropped"
            );
            return;
        }
        self.saved = Some(state);
        self.phase = Phase::Offered(Offered {
            reason,
            text,
            next,
            past,
            saved_at: at,
            at: s,
            fade,
            migration,
            since,
            migrate_time,
            ff_time,
            refusals: 0,
            catching_up,
        });
    }

    /// Whether `engine` is handed over through the input history: it reads
    /// the input, and the session has one.
    fn reads_history(&self, engine: &crate::engine::Engine) -> bool {
        self.history.is_some() && engine.input_channels() > 0
    }

    /// The offered engine's events (`keys`) against the playing one's, for
    /// a handover saved at `at`: a warning for each the edit added
    /// before it, which never fires.
    fn past_event_warnings(&self, keys: &[EventKey], at: u64) -> Vec<String> {
        let sr = self.fixed.sample_rate as f64;
        past_events(keys, &self.events, at, self.fixed.block_size as u64)
            .into_iter()
            .map(|e| {
                format!(
                    "event at {} on `{}.{}` is in the past (now {}) and will not fire",
                    seconds(e.sample, sr),
                    e.node,
                    e.param,
                    seconds(at, sr)
                )
            })
            .collect()
    }

    /// A handover that could not be placed: the new engine is dropped (the
    /// save buffer is back), one that could not keep up is said and
    /// recorded as rejected, and the text playing is the latest good one
    /// again unless a newer change waits.
    fn dropped(
        &mut self,
        reason: &Reason,
        profile: Profile,
        text: &Arc<String>,
        why: Unplaced,
        log: &mut dyn Write,
    ) {
        self.phase = Phase::Idle;
        if self.queued.is_none() {
            self.good_text = self.playing_text.clone();
            self.good_asked = self.playing_asked.clone();
        }
        let Unplaced::Behind(why) = why else {
            return;
        };
        let what = match reason {
            Reason::Edit => format!("the edit under {profile}"),
            Reason::Switch { to, .. } => format!("the switch to {to}"),
            Reason::Tempo(t) => format!("the transport's tempo {t}"),
        };
        let _ = writeln!(
            log,
            "\n{what} was dropped: {profile} cannot keep up with this scene on this machine ({why}); {} keeps playing",
            self.profile
        );
        self.last_result = format!("{what} dropped: cannot keep up");
        self.rejected.push(Rejected {
            text: text.clone(),
            error: format!("{profile} cannot keep up: {why}"),
            at: self.meters.clock.load(Ordering::Relaxed),
        });
    }

    fn refused(&mut self, mut engine: Box<crate::engine::Engine>, clock: u64, log: &mut dyn Write) {
        let Phase::Offered(o) = &self.phase else {
            drop(engine);
            return;
        };
        let (fade, reason, profile, text) =
            (o.fade, o.reason.clone(), o.next.profile, o.text.clone());
        let catching_up = o.catching_up;
        if !catching_up {
            // The audio thread was faster than expected: keep more headroom
            // from now on (at most half a second).
            let block = self.fixed.block_size as u64;
            self.lead = (self.lead * 2)
                .min(self.fixed.sample_rate as u64 / 2)
                .div_ceil(block)
                * block;
        }
        let t = Instant::now();
        let s = match self.place_any(&mut engine, clock, None, catching_up) {
            Ok(s) => s,
            Err(why) => {
                drop(engine);
                self.dropped(&reason, profile, &text, why, log);
                return;
            }
        };
        if let Phase::Offered(o) = &mut self.phase {
            o.at = s;
            o.refusals += 1;
            o.ff_time += t.elapsed();
        }
        if self
            .link
            .send(offer(engine, s, None, fade, catching_up))
            .is_err()
        {
            let _ = writeln!(
                log,
                "\nwarning: the audio thread is not taking requests; edit dropped"
            );
            self.phase = Phase::Idle;
        }
    }

    fn swapped(&mut self, at: u64, log: &mut dyn Write) {
        let Phase::Offered(Offered {
            reason,
            text,
            next,
            past,
            saved_at,
            at: offered,
            fade,
            migration,
            since,
            migrate_time,
            ff_time,
            refusals,
            catching_up,
        }) = std::mem::replace(&mut self.phase, Phase::Retiring)
        else {
            return;
        };
        // One caught up through the history swaps where it reached the clock.
        debug_assert!(at == offered || (catching_up && at > offered));
        let latency = SystemTime::now().duration_since(since).ok();
        let sr = self.fixed.sample_rate as f64;
        let mut line = match &reason {
            Reason::Edit => format!("edit applied at {:.3} s", at as f64 / sr),
            Reason::Switch { from, to } => {
                if let Some(w) = switch_warning(*from, *to) {
                    let _ = writeln!(log, "\nwarning: {w}");
                }
                format!("switched {from} → {to} at {:.3} s", at as f64 / sr)
            }
            Reason::Tempo(t) => format!("tempo {t} applied at {:.3} s", at as f64 / sr),
        };
        if fade > 0 {
            line += &format!(", crossfade {:.0} ms", fade as f64 / sr * 1e3);
        }
        if let Some(l) = latency {
            line += &format!(", {:.0} ms after the change", l.as_secs_f64() * 1e3);
        }
        let _ = writeln!(log, "\n{line}");
        for w in &past {
            let _ = writeln!(log, "warning: {w}");
        }
        let notices = fold_voice_copies(&migration.notices);
        for (n, copies) in &notices {
            if !matches!(n, Notice::Ramped { .. } | Notice::Switched { .. }) || notices.len() <= 8 {
                let _ = writeln!(log, "  {n}{}", voices_suffix(*copies));
            }
        }
        self.last_result = line;
        let Playing {
            profile,
            file_profile,
            saved,
            resources,
            asked,
            events,
            controls,
        } = next;
        self.profile = profile;
        self.file_profile = file_profile;
        self.playing_text = text.clone();
        self.playing_asked = asked;
        self.events = events;
        self.saved = Some(saved);
        self.controls = controls;
        self.applied.push(HandoverRecord {
            reason,
            text,
            profile,
            saved_at,
            swap_at: at,
            fade,
            migration,
            latency,
            migrate_time,
            fast_forward_time: ff_time,
            refusals,
            resources: resources.clone(),
        });
        self.resources = resources;
    }
}

/// The request for a handover's save into `buf`: at the next block
/// boundary, or at the first one at or after `from`.
fn save_request(buf: Box<EngineState>, from: Option<u64>) -> ToAudio {
    match from {
        Some(at) => ToAudio::SaveFrom { state: buf, at },
        None => ToAudio::Save(buf),
    }
}

/// The request that hands `engine` over at `at`: a swap at S = `at`
/// ahead of the clock, or, `catching_up`, the catch-up from M = `at`
/// through the input history, swapping at `swap_at` when one is asked
/// (a timetagged switch).
fn offer(
    engine: Box<crate::engine::Engine>,
    at: u64,
    swap_at: Option<u64>,
    fade: u64,
    catching_up: bool,
) -> ToAudio {
    if catching_up {
        ToAudio::CatchUp {
            engine,
            from: at,
            fade,
            at: swap_at,
        }
    } else {
        ToAudio::Offer { engine, at, fade }
    }
}

/// A sample as seconds for messages: `1 s`, `3.25 s` (to the millisecond).
fn seconds(sample: u64, sample_rate: f64) -> String {
    let ms = (sample as f64 / sample_rate * 1e3).round() / 1e3;
    format!("{ms} s")
}
