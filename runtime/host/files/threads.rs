//! `--threads`: the worker pool `render` and `run` give their engines.

use crate::engine::{Engine, GroupSpread, LevelKind, Workers};
use crate::host::HostError;

/// `--threads` and its threshold, as `render` and `run` take them.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct ThreadArgs {
    /// Threads that compute each block (1 to 1024): this one and N − 1
    /// workers that run independent nodes side by side (default: every
    /// core for `render`; for `run`, the count `morphrt calibrate` chose
    /// for the scene on this machine, else 1; for `bench`, 1).
    ///
    /// In every profile and at any block size, the output is the same
    /// bytes at every thread count: each node computes exactly what it
    /// computes alone, and a node's inputs are summed in the graph's fixed
    /// order. `morphrt check` shows which nodes may run side by side.
    #[arg(long, value_parser = thread_count, allow_negative_numbers = true)]
    pub threads: Option<u16>,
    /// Estimated nanoseconds of work a level of the graph must save before
    /// it is spread over the threads.
    #[arg(long = "thread-min-work-ns", hide = true)]
    pub min_work_ns: Option<u64>,
    /// A hook for tests, `K:NS`: worker K sleeps NS nanoseconds after each
    /// step it claims, as a preempted worker would.
    #[arg(long = "thread-test-delay", hide = true, value_parser = worker_delay)]
    pub test_delay: Option<(usize, u64)>,
    /// `render`: never render a part of the scene ahead on a thread of its
    /// own (every thread then works block by block in the pool).
    #[arg(long = "no-ahead", hide = true)]
    pub no_ahead: bool,
}

/// The most threads `--threads` asks for (and the most `render` takes by
/// default): far more than any level of a scene keeps busy, and few enough
/// that the system's limits on threads and memory are not the first to say
/// no.
pub const MAX_THREADS: u16 = 1024;

/// A value of `--threads`: a whole number from 1 to [`MAX_THREADS`].
pub fn thread_count(s: &str) -> Result<u16, String> {
    s.trim()
        .parse::<u16>()
        .ok()
        .filter(|n| (1..=MAX_THREADS).contains(n))
        .ok_or_else(|| {
            format!("`{s}` is not a thread count: give a whole number from 1 to {MAX_THREADS}")
        })
}

/// The longest delay `--thread-test-delay` takes: a second per step
/// already stalls a render for as long as anyone waits on a test, and a
/// stalled step holds off a stop signal until it ends.
const MAX_TEST_DELAY_NS: u64 = 1_000_000_000;

/// `K:NS` of `--thread-test-delay`.
fn worker_delay(s: &str) -> Result<(usize, u64), String> {
    let bad = || {
        format!(
            "`{s}` is not K:NS (a worker number and nanoseconds up to {MAX_TEST_DELAY_NS}, e.g. 2:20000000)"
        )
    };
    let (k, ns) = s.split_once(':').ok_or_else(bad)?;
    let ns: u64 = ns.parse().map_err(|_| bad())?;
    if ns > MAX_TEST_DELAY_NS {
        return Err(bad());
    }
    Ok((k.parse().map_err(|_| bad())?, ns))
}

impl ThreadArgs {
    /// The pool for `--threads`, or for `default` threads without it;
    /// `None` for one thread. Its workers run at normal priority, or ask
    /// for real-time scheduling when `realtime` (a live session's).
    /// A system that refuses a worker thread is an error.
    pub fn workers(&self, default: usize, realtime: bool) -> Result<Option<Workers>, HostError> {
        self.workers_of(self.count(default), realtime)
    }

    /// The thread count: `--threads`, else `default`.
    pub fn count(&self, default: usize) -> usize {
        self.threads.map_or(default, usize::from)
    }

    /// The pool of `n` threads (`None` for one) with this command's
    /// threshold and test hooks; a system that refuses a worker thread is
    /// an error, which says how many it started.
    pub fn workers_of(&self, n: usize, realtime: bool) -> Result<Option<Workers>, HostError> {
        if n <= 1 {
            return Ok(None);
        }
        let w = if realtime {
            Workers::try_new_realtime(n)
        } else {
            Workers::try_new(n)
        }
        .map_err(|e| HostError::Thread {
            what: "the worker threads",
            source: std::io::Error::new(e.kind(), format!("{e}; ask for fewer with `--threads`")),
        })?;
        if let Some(ns) = self.min_work_ns {
            w.set_min_work_ns(ns);
        }
        if let Some((k, ns)) = self.test_delay {
            w.delay_worker(k, ns);
        }
        Ok(Some(w))
    }
}

/// The line `run` says when the system kept `workers` at normal
/// priority (`None` when they run under real-time scheduling).
pub fn priority_note(workers: &Workers) -> Option<String> {
    (!workers.realtime()).then(|| {
        let who = match workers.threads() - 1 {
            1 => "the worker thread runs".to_string(),
            n => format!("the {n} worker threads run"),
        };
        format!("note: {who} at normal priority: the system does not allow real-time scheduling")
    })
}

/// The xruns the workers caused, worker by worker: `3 on worker 2, 1 on
/// worker 3`, each a callback the worker kept past its deadline (it
/// finished its work after the callback's budget ran out); `None` when no
/// worker was late. Reads atomics only.
pub fn worker_xruns_text(workers: &Workers) -> Option<String> {
    let late: Vec<String> = (1..workers.threads())
        .filter(|&k| workers.xruns(k) > 0)
        .map(|k| format!("{} on worker {k}", workers.xruns(k)))
        .collect();
    (!late.is_empty()).then(|| late.join(", "))
}

/// Every core of the machine (1 when it cannot be told), at most
/// [`MAX_THREADS`].
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(usize::from(MAX_THREADS)))
}

/// The plan at `threads` threads, as text: what `engine` would spread
/// over a pool of that size and threshold ([`Engine::threads_report`]), level by level
/// (each node as `id@thread`, the thread it is dealt to first; a lane
/// group's line says how it runs; a level nothing of which is spread is
/// marked as run on one thread), then the critical path and the promised
/// speed-up. `whence` says where the threshold comes from (`the default`).
pub fn threads_text(engine: &Engine, threads: usize, min_work_ns: u64, whence: &str) -> String {
    let t = engine.threads_report(threads, min_work_ns);
    let us = |ns: f64| ns / 1000.0;
    let mut s = format!(
        "\nthreads: {threads}, {} levels (for a {}-frame block; the pool's threshold {:.1} µs, {whence})\n",
        t.levels.len(),
        t.frames,
        us(t.min_work_ns as f64)
    );
    for (l, level) in t.levels.iter().enumerate() {
        let id = |i: usize| engine.node_id(i);
        let mut dealt: Vec<String> = Vec::new();
        for g in &level.groups {
            for (&i, &w) in g.members.iter().zip(&g.threads) {
                match g.how {
                    GroupSpread::Spans { .. } => dealt.push(format!("{}@*", id(i))),
                    _ => dealt.push(format!("{}@{w}", id(i))),
                }
            }
        }
        for (&i, &w) in level.nodes.iter().zip(&level.threads) {
            dealt.push(format!("{}@{w}", id(i)));
        }
        let count = level.nodes.len() + level.groups.iter().map(|g| g.members.len()).sum::<usize>();
        let split = level.groups.iter().any(|g| g.how != GroupSpread::OneThread);
        let note = match level.kind {
            LevelKind::Schedule => " (in schedule order, one thread)",
            LevelKind::Voices if level.spread => " (the voices, one per step, each in order)",
            LevelKind::Voices => " (the voices, one thread: under the threshold)",
            LevelKind::Level if count > 1 && !split && !level.spread => {
                " (one thread: under the threshold)"
            }
            LevelKind::Level => "",
        };
        s.push_str(&format!("  level {l}{note}: {}\n", dealt.join(" ")));
        for g in &level.groups {
            let (first, last) = (g.members[0], g.members[g.members.len() - 1]);
            let into = g
                .sum
                .map_or(String::new(), |c| format!(", summed into `{}`", id(c)));
            let how = match g.how {
                GroupSpread::OneThread => format!(
                    "one thread (spreading it would save {:.1} µs a block, under the {:.1} µs its level needs)",
                    us(g.saves_ns),
                    us(level.threshold_ns)
                ),
                GroupSpread::Parts { per, parts } => {
                    format!("{parts} parts of up to {per}, each one kernel call")
                }
                GroupSpread::Spans { spans } => format!(
                    "while steady, the block cut into {spans} spans of frames, each summing every member (@*); otherwise one thread"
                ),
            };
            s.push_str(&format!(
                "    lane group `{}`..`{}` ({} nodes{into}): {how}\n",
                id(first),
                id(last),
                g.members.len()
            ));
        }
    }
    s.push_str(&format!(
        "critical path: {:.1} of {:.1} ns/sample; expected speed-up at {threads} thread{}: {:.2}x\n",
        t.critical_ns,
        t.total_ns,
        if threads == 1 { "" } else { "s" },
        t.speedup()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_delay_is_a_worker_and_at_most_a_second() {
        assert_eq!(worker_delay("2:20000000"), Ok((2, 20_000_000)));
        assert_eq!(worker_delay("1:1000000000"), Ok((1, MAX_TEST_DELAY_NS)));
        for bad in ["1:1000000001", "1:18446744073709551615", "1", "x:5", "1:-5"] {
            let e = worker_delay(bad).expect_err(bad);
            assert!(e.contains("up to 1000000000"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_priority_note_is_said_exactly_when_the_workers_are_not_real_time() {
        let w = Workers::new_realtime(3);
        match priority_note(&w) {
            Some(line) => {
                assert!(!w.realtime());
                assert!(line.starts_with("note: the 2 worker threads run at normal priority"));
                assert_eq!(line.lines().count(), 1);
            }
            None => assert!(w.realtime()),
        }
    }
}
