//! Edits and their refusal: a change of the scene file (or a resource it
//! reads) or a profile switch is read, parsed, validated, compiled and
//! built here, off the audio thread, and queued as a handover job; one
//! that fails to compile, reads an input the session lacks, or whose
//! engine the nominal estimate puts over [`HANDOVER_BUDGET`] is refused
//! with the reason, and the engine playing keeps playing.

use super::{EditError, Job, LiveSession, Phase, Reason, Rejected};
use crate::engine::incoming::{only_fixed_differ, parent_dir, Asked, Incoming};
use crate::profile::Profile;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

impl LiveSession {
    /// The scene file or a resource changed: re-read and, if it compiles,
    /// queue the handover. `force` reloads even if the text is unchanged
    /// (a resource changed).
    pub fn file_changed(&mut self, force: bool, log: &mut dyn Write) {
        let since = self.changed_at();
        // Never a FIFO or a device put in the scene's place: reading it
        // would stall the control loop.
        let text = match crate::scene::resource::read_regular_text(&self.path) {
            Ok(t) => t,
            // Deleted before being recreated: the next save will tell.
            Err(crate::scene::resource::NotRegular::Io(e))
                if e.kind() == std::io::ErrorKind::NotFound =>
            {
                return
            }
            Err(e) => {
                let _ = writeln!(log, "\nwarning: cannot read {}: {e}", self.path.display());
                return;
            }
        };
        let text = self.with_followed_tempo(text);
        if !force && self.last_text.as_deref().is_some_and(|t| *t == text) {
            return;
        }
        let text = Arc::new(text);
        self.last_text = Some(text.clone());
        if !force && text == self.good_text {
            // Back to what is playing (or queued), e.g. after a bad save.
            let _ = writeln!(
                log,
                "\nthe file matches the running scene again; nothing to apply"
            );
            return;
        }
        // A change of the file's `profile` switches the session to it. The
        // rest compiles under the profile queued last (a key switch that
        // has not landed yet), which coalescing then keeps.
        let (queued, queued_file) = self.queued_profiles();
        let (profile, switched) = match peek_profile(&text) {
            Some(p) if Some(p) != queued_file && p != queued => (p, true),
            _ => (queued, false),
        };
        match self.build(&text, profile) {
            Ok(inc) => {
                if !inc.warnings.is_empty() {
                    let _ = writeln!(log, "\n{}", crate::scene::Shown::new(&inc.warnings));
                }
                if !self.report_unapplied(&inc.asked, &text, force, log) {
                    return;
                }
                let reason = if switched {
                    Reason::Switch {
                        from: self.queued_profile(),
                        to: profile,
                    }
                } else {
                    Reason::Edit
                };
                self.good_text = text.clone();
                self.good_asked = inc.asked.clone();
                self.queue(Job {
                    incoming: inc,
                    reason,
                    text,
                    since,
                    at: None,
                });
            }
            Err(error) => {
                let _ = writeln!(
                    log,
                    "\nedit rejected; the running graph keeps playing:\n{error}"
                );
                self.last_result = "last edit rejected (see above)".to_string();
                self.rejected.push(Rejected {
                    text,
                    error: error.to_string(),
                    at: self.meters.clock.load(Ordering::Relaxed),
                });
            }
        }
    }

    /// When the change happened: the newest modification time of the scene
    /// and the resources it reads (the file just saved), never later than
    /// now.
    fn changed_at(&self) -> SystemTime {
        let now = SystemTime::now();
        self.watched_files()
            .iter()
            .filter_map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
            .max()
            .map_or(now, |t| t.min(now))
    }

    /// Warns about the fixed settings an edit to `text` (asking `asked`)
    /// changes, saying whether the rest of it applies. Returns whether
    /// there is anything to hand over: not when only fixed settings
    /// changed (and no resource, `force`).
    fn report_unapplied(
        &mut self,
        asked: &Asked,
        text: &str,
        force: bool,
        log: &mut dyn Write,
    ) -> bool {
        let unapplied = self.fixed.unapplied(&self.good_asked, asked);
        if unapplied.is_empty() {
            return true;
        }
        let _ = writeln!(log);
        for w in &unapplied {
            let _ = writeln!(log, "warning: {w}");
        }
        if !force && only_fixed_differ(&self.good_text, text) {
            let _ = writeln!(log, "nothing else in the edit changed; nothing applied");
            self.last_result = "edit not applied: the session's settings are fixed".to_string();
            return false;
        }
        let _ = writeln!(log, "the rest of the edit is applied");
        true
    }

    /// Switches the session to `to` (a key): the last good scene text is
    /// rebuilt under the other profile.
    pub fn switch_profile(&mut self, to: Profile, log: &mut dyn Write) {
        self.switch_profile_at(to, None, log);
    }

    /// [`switch_profile`](Self::switch_profile), swapping at sample `at`
    /// when one is given (a timetagged switch; see [`place`](Self::place)).
    pub fn switch_profile_at(&mut self, to: Profile, at: Option<u64>, log: &mut dyn Write) {
        let from = self.queued_profile();
        if from == to {
            let _ = writeln!(log, "\nalready {to}");
            return;
        }
        let text = self.good_text.clone();
        match self.build(&text, to) {
            Ok(inc) => self.queue(Job {
                incoming: inc,
                reason: Reason::Switch { from, to },
                text,
                since: SystemTime::now(),
                at,
            }),
            Err(error) => {
                let _ = writeln!(
                    log,
                    "\ncannot switch to {to}; {from} keeps playing:\n{error}"
                );
                self.last_result = format!("switch to {to} refused (see above)");
            }
        }
    }

    /// The profile the session will have once what is queued has run.
    pub(super) fn queued_profile(&self) -> Profile {
        self.queued_profiles().0
    }

    /// The session profile and the file's `profile` once what is queued
    /// (or in flight) has run.
    fn queued_profiles(&self) -> (Profile, Option<Profile>) {
        if let Some(j) = &self.queued {
            return (j.incoming.profile, j.incoming.file_profile);
        }
        match &self.phase {
            Phase::Saving(j) => (j.incoming.profile, j.incoming.file_profile),
            Phase::Offered(o) => (o.next.profile, o.next.file_profile),
            _ => (self.profile, self.file_profile),
        }
    }

    pub(super) fn queue(&mut self, job: Job) {
        // Rapid changes coalesce: only the latest waits. A switch that the
        // replaced job carried is still a switch.
        let job = match (self.queued.take(), job) {
            (Some(old), mut new) => {
                if let (Reason::Switch { from, .. }, Reason::Edit) = (&old.reason, &new.reason) {
                    if *from != new.incoming.profile {
                        new.reason = Reason::Switch {
                            from: *from,
                            to: new.incoming.profile,
                        };
                    }
                }
                new
            }
            (None, new) => new,
        };
        self.queued = Some(job);
    }
}

impl LiveSession {
    /// Parses and compiles scene text read from the session's file.
    pub(super) fn compile_plan(
        &self,
        text: &str,
        opts: &crate::graph::CompileOptions,
    ) -> Result<(crate::scene::Scene, crate::graph::Plan), EditError> {
        let file = self.path.display().to_string();
        let scene = crate::scene::load_str(text, &file, Some(parent_dir(&self.path)))
            .map_err(EditError::Scene)?;
        let plan = crate::graph::compile(&scene, opts).map_err(EditError::Scene)?;
        Ok((scene, plan))
    }

    /// Parses, validates, compiles and builds scene text under `profile`
    /// (every stage off the audio thread), as [`Incoming::compile`] does,
    /// and refuses an engine whose estimate is over the handover budget
    /// unless `run --force`. The error's text is the message to show.
    pub(super) fn build(&self, text: &str, profile: Profile) -> Result<Incoming, EditError> {
        let (scene, mut plan) = self.compile_plan(text, &self.fixed.options(profile))?;
        self.check_input(&plan)?;
        let reads_input = plan
            .nodes
            .iter()
            .any(|n| crate::ops::is_session_input(n.op));
        if !self.force && self.history.is_some() && reads_input {
            if let Some(why) = catch_up_over_budget(&plan, self.playing_cost_ns()) {
                return Err(EditError::OverBudget(why));
            }
        }
        if !self.force {
            if let Some(why) = over_budget(&plan) {
                // A session that plays over the budget already (started so,
                // or forced) still takes edits that cost no more.
                if crate::graph::plan_cost_ns(&plan) > self.playing_cost_ns() * 1.05 {
                    return Err(EditError::OverBudget(why));
                }
            }
        }
        let warnings = std::mem::take(&mut plan.warnings);
        let mut incoming =
            Incoming::from_plan(plan, scene.profile, warnings).asking(Asked::of(&scene));
        incoming.engine.set_workers(self.fixed.workers.clone());
        Ok(incoming)
    }

    /// Refuses `plan` when an `input` node of it reads a channel the
    /// session's input does not have, or reads any input when the session
    /// started without one: the check `run` makes of a scene at start-up
    /// (there an exit 2), so that an edit never silences the input.
    fn check_input(&self, plan: &crate::graph::Plan) -> Result<(), EditError> {
        let Some(first) = plan.inputs().into_iter().next() else {
            return Ok(());
        };
        match &self.history {
            None => Err(EditError::NoInput {
                file: plan.file.clone(),
                node: first.node,
            }),
            Some(h) => crate::host::files::wav_in::check_fits(
                "the session's input",
                h.width(),
                plan,
                &mut std::io::sink(),
            )
            .map_err(|source| EditError::InputChannels {
                file: plan.file.clone(),
                source,
            }),
        }
    }

    /// The estimated cost per sample of the engine playing (0 if its text
    /// no longer compiles, e.g. a resource went away).
    fn playing_cost_ns(&self) -> f64 {
        let mut opts = self.fixed.options(self.profile);
        opts.skip_build = true;
        self.compile_plan(&self.playing_text, &opts)
            .map_or(0.0, |(_, plan)| crate::graph::plan_cost_ns(&plan))
    }
}

/// The share of the block deadline a handed-over engine may take by the
/// nominal estimate (`morphrt check`'s): the new engine fast-forwards to the
/// swap sample while the old one keeps playing, so it must run well ahead
/// of real time, on a machine that may be slower or busier than the
/// nominal one. Half the deadline is twice real time.
pub const HANDOVER_BUDGET: f64 = 0.5;

/// Why `plan`'s engine, which reads the session's input, would make the
/// callback miss its deadline while it catches up through the input
/// history: for up to [`CATCH_UP_LIMIT`] blocks the audio thread runs
/// [`CATCH_UP_PER_BLOCK`] of its blocks beside each block of the engine
/// playing (`playing_ns` a sample), and by the nominal estimate that sum
/// must fit the block's deadline. `None` when it fits.
///
/// [`CATCH_UP_LIMIT`]: crate::host::live::player::CATCH_UP_LIMIT
fn catch_up_over_budget(plan: &crate::graph::Plan, playing_ns: f64) -> Option<String> {
    use crate::host::live::player::CATCH_UP_PER_BLOCK;
    let block = plan.block_size as f64;
    let deadline_us = block / plan.sample_rate as f64 * 1e6;
    let new_us = crate::graph::plan_cost_ns(plan) * block / 1e3;
    let playing_us = playing_ns * block / 1e3;
    let sum_us = CATCH_UP_PER_BLOCK as f64 * new_us + playing_us;
    if sum_us <= deadline_us {
        return None;
    }
    Some(format!(
        "error: {}: the new engine reads the input, so it catches up with the audio clock on the audio thread, {CATCH_UP_PER_BLOCK} of its blocks ({new_us:.0} µs each, estimated) beside each block of the engine playing ({playing_us:.0} µs): {sum_us:.0} µs, {:.0} % of the {deadline_us:.0} µs deadline\n  help: lighten the scene, use a larger --block-size, or pass `run --force` to hand over anyway",
        plan.file,
        sum_us / deadline_us * 1e2,
    ))
}

/// Why `plan` cannot be handed over in a live session, as an error message:
/// its estimated cost per block over [`HANDOVER_BUDGET`] of the block's
/// deadline, or (under live) a node whose worst case misses the deadline,
/// which `run` refuses at start-up too. `None` when it fits.
fn over_budget(plan: &crate::graph::Plan) -> Option<String> {
    let profile = plan.session_profile;
    let deadline_us = plan.block_size as f64 / plan.sample_rate as f64 * 1e6;
    let cost_ns = crate::graph::plan_cost_ns(plan);
    let block_us = cost_ns * plan.block_size as f64 / 1e3;
    let mut why = Vec::new();
    if block_us > HANDOVER_BUDGET * deadline_us {
        let top = plan
            .nodes
            .iter()
            .max_by(|a, b| crate::graph::node_cost_ns(a).total_cmp(&crate::graph::node_cost_ns(b)));
        why.push(format!(
            "estimated {block_us:.0} µs per block of {} frames, {:.0} % of its {deadline_us:.0} µs deadline; a handover needs at most {:.0} % (the new engine catches up with the audio clock while the old one plays){}",
            plan.block_size,
            block_us / deadline_us * 1e2,
            HANDOVER_BUDGET * 1e2,
            top.map_or(String::new(), |n| format!(
                "; node `{}` ({}) is {:.0} % of the estimate",
                n.id,
                n.op.name,
                crate::graph::node_cost_ns(n) / cost_ns.max(1e-9) * 1e2
            ))
        ));
    }
    if profile == Profile::Live {
        why.extend(
            crate::graph::deadline_risks(plan)
                .iter()
                .map(|r| r.to_string()),
        );
    }
    if why.is_empty() {
        return None;
    }
    Some(format!(
        "error: {}: {profile} cannot keep up with this scene in a live session:\n  {}\n  help: keep a profile whose estimate fits (`morphrt check --profile P` shows each), lighten that node, or pass `run --force` to hand over anyway",
        plan.file,
        why.join("\n  ")
    ))
}

/// The top-level `"profile"` of scene text, if it parses and names one.
fn peek_profile(text: &str) -> Option<Profile> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Profile::parse(v.get("profile")?.as_str()?)
}
