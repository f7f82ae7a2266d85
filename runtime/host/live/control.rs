//! Real-time playback: the control side of `morphrt run`.
//!
//! The engine runs only inside the device callback ([`PlayerCell::fill`]).
//! This thread watches the callback through atomics: it prints the status
//! line, detects a stalled device or a stream error, rebuilds the stream
//! with the same engine (state and sample clock continue), and stops
//! cleanly on request.

use crate::host::live::device::{Device, DeviceError, Stream, StreamEvents, StreamFault};
use crate::host::live::player::{Meters, Player, PlayerCell};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the control loop reports.
#[derive(Clone, Copy, Debug)]
pub enum StatusMode {
    /// Refresh one line ~10×/s (stderr is a terminal).
    Live,
    /// A plain log line every `every`.
    Log {
        every: Duration,
    },
    Quiet,
}

/// Settings of the control loop.
pub struct LoopConfig {
    pub status: StatusMode,
    /// The watchdog fires after this many periods without a callback …
    pub stall_periods: u32,
    /// … and never sooner than this.
    pub stall_min: Duration,
    /// Attempts to rebuild a failed stream before giving up …
    pub max_rebuilds: u32,
    /// … or, set, before waiting for the device to return (`run
    /// --reconnect`): a new attempt every half second, the player held,
    /// until one opens or a stop is asked for.
    pub reconnect: bool,
    /// Text for the status line: profile, block size, rate, seed…
    pub label: String,
    /// Frames of latency the FIFO adds (reported).
    pub fifo_latency: usize,
}

/// What happened during a run.
#[derive(Debug, Default, Clone)]
pub struct RunReport {
    pub frames: u64,
    pub xruns: u64,
    /// Of `xruns`: late starts (gap > 1.5 periods) and budget overruns.
    pub late: u64,
    pub overruns: u64,
    pub stalls: u32,
    pub faults: u32,
    pub rebuilds: u32,
    pub nan_events: u64,
    /// DSP load (callback time / real-time budget): mean over the run, the
    /// 99th percentile over callbacks, and the worst callback.
    pub load_mean: f64,
    pub load_p99: f64,
    pub load_max: f64,
    /// The engine clock at the end (continues across rebuilds).
    pub clock: u64,
}

/// Why playback stopped beyond recovery.
#[derive(Debug)]
pub enum Stop {
    /// The device's stream could not be opened.
    Device(Box<DeviceError>),
    /// The audio callback did not hand the player back.
    Stuck,
    /// The device failed and could not be reopened in `attempts` tries.
    Lost { attempts: u32 },
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Device(e) => write!(f, "{e}"),
            Stop::Stuck => f.write_str("the audio callback did not return; cannot recover"),
            Stop::Lost { attempts } => write!(
                f,
                "the audio device failed and could not be reopened after {attempts} attempts"
            ),
        }
    }
}

/// Playback that failed beyond recovery, with what had happened until then.
#[derive(Debug)]
pub struct RunFailure {
    pub cause: Stop,
    pub report: RunReport,
}

impl RunFailure {
    fn new(cause: Stop, report: RunReport) -> RunFailure {
        RunFailure { cause, report }
    }
}

impl std::fmt::Display for RunFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.cause)
    }
}

impl std::error::Error for RunFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.cause {
            Stop::Device(e) => Some(&**e),
            Stop::Stuck | Stop::Lost { .. } => None,
        }
    }
}

/// What the control loop drives besides the device: hot reload, keys,
/// profile switches. Called from the control thread, never the callback.
pub trait Driver {
    /// Called every loop iteration (about every 5 ms, sooner when a
    /// control message arrives).
    fn tick(&mut self, log: &mut dyn Write);
    /// Waits before the next iteration: `max`, or less if there is work
    /// (a control message) already.
    fn wait(&mut self, max: Duration) {
        std::thread::sleep(max);
    }
    /// Text for the status line (the active profile, the last edit's result).
    fn status(&self) -> String {
        String::new()
    }
    /// Called once at the end with the player back from the audio side
    /// (no stream runs any more), before it is dropped: a last look at the
    /// engine that played, e.g. its per-node times.
    fn finished(&mut self, _player: &Player) {}
}

/// No control: the scene plays as loaded.
struct NoDriver;
impl Driver for NoDriver {
    fn tick(&mut self, _log: &mut dyn Write) {}
}

/// Runs `player` on `device` until it finishes (duration or stop) or the
/// device fails beyond recovery.
pub fn run_loop(
    device: &mut dyn Device,
    player: Player,
    meters: Arc<Meters>,
    origin: Instant,
    cfg: &LoopConfig,
    log: &mut dyn Write,
) -> Result<RunReport, RunFailure> {
    run_loop_with(device, player, meters, origin, cfg, log, &mut NoDriver)
}

/// [`run_loop`] with a [`Driver`] ticked on every iteration.
pub fn run_loop_with(
    device: &mut dyn Device,
    player: Player,
    meters: Arc<Meters>,
    origin: Instant,
    cfg: &LoopConfig,
    log: &mut dyn Write,
    control: &mut dyn Driver,
) -> Result<RunReport, RunFailure> {
    let mut playing = Playing::open(device, player, meters, origin, cfg)?;
    loop {
        control.wait(Duration::from_millis(5));
        control.tick(log);
        if playing.waiting.is_some() {
            if stopping(&playing.cell) {
                break;
            }
            playing.retry(log);
            continue;
        }
        let period = playing.period_s();
        let health = playing.health(period);
        if playing.meters.finished.load(Ordering::Acquire) {
            break;
        }
        if playing.meters.callback_panics.load(Ordering::Acquire) > 0 {
            let _ = writeln!(
                log,
                "error: the audio callback panicked outside every node; the output is silence and the session stops"
            );
            break;
        }
        if !matches!(health, Health::Playing) {
            if stopping(&playing.cell) {
                // The user asked to stop; a failing device only ends it sooner.
                break;
            }
            playing.rebuild(health, log)?;
        }
        playing
            .windows
            .update(&playing.meters, playing.sample_rate, period);
        playing.note_first_xrun(log);
        playing.status_if_due(control, log);
    }
    Ok(playing.finish(control, log))
}

/// What one look at the callback found.
enum Health {
    Playing,
    /// No callback for this long (past the watchdog's bound).
    Stalled(Duration),
    /// The stream reported an error.
    Fault(StreamFault),
}

/// The DSP load of a window, as shares of real time: the mean over the
/// window, and the worst callback's share of its device period.
#[derive(Clone, Copy, Default)]
struct Load {
    mean: f64,
    worst: f64,
}

/// One-second windows of DSP load, measured between the control loop's
/// iterations.
struct LoadWindows {
    start: Instant,
    busy: u64,
    frames: u64,
    loads: Vec<f64>,
    /// The last window's load, for the status line; until the first
    /// window closes, the open window's so far.
    now: Load,
    /// The worst callback of the open window so far.
    open_worst: f64,
    worst_callback: f64,
}

impl LoadWindows {
    fn new(meters: &Meters) -> LoadWindows {
        LoadWindows {
            start: Instant::now(),
            busy: meters.busy_ns.load(Ordering::Relaxed),
            frames: 0,
            loads: Vec::new(),
            now: Load::default(),
            open_worst: 0.0,
            worst_callback: 0.0,
        }
    }

    /// Closes the window once a second has passed; `period` is the
    /// device period in seconds.
    fn update(&mut self, meters: &Meters, sample_rate: f64, period: f64) {
        let longest = meters.take_busy_max_ns() as f64 / 1e9 / period.max(1e-9);
        self.open_worst = self.open_worst.max(longest);
        self.worst_callback = self.worst_callback.max(longest);
        let busy = meters.busy_ns.load(Ordering::Relaxed);
        let frames = meters.frames.load(Ordering::Relaxed);
        let audio = frames.saturating_sub(self.frames) as f64 / sample_rate;
        let open = Load {
            mean: busy.saturating_sub(self.busy) as f64 / 1e9 / audio,
            worst: self.open_worst,
        };
        if self.start.elapsed() >= Duration::from_secs(1) {
            if audio > 0.0 {
                self.loads.push(open.mean);
                self.now = open;
            }
            self.start = Instant::now();
            self.busy = busy;
            self.frames = frames;
            self.open_worst = 0.0;
        } else if self.loads.is_empty() && audio > 0.0 {
            self.now = open;
        }
    }
}

/// The control loop's side of a playing stream: the device, the cell the
/// player is in, and what has been measured so far.
struct Playing<'a> {
    device: &'a mut dyn Device,
    meters: Arc<Meters>,
    origin: Instant,
    cfg: &'a LoopConfig,
    sample_rate: f64,
    block: usize,
    report: RunReport,
    events: Arc<StreamEvents>,
    cell: Arc<PlayerCell>,
    stream: Option<Box<dyn Stream>>,
    started: Instant,
    last_status: Instant,
    windows: LoadWindows,
    /// Whether the device's meaning of an xrun has been said.
    xrun_noted: bool,
    /// `--reconnect`: the player while no stream can be opened, and when
    /// the wait began and the last attempt was made.
    waiting: Option<(Player, Instant, Instant)>,
}

impl<'a> Playing<'a> {
    /// Opens the first stream.
    fn open(
        device: &'a mut dyn Device,
        player: Player,
        meters: Arc<Meters>,
        origin: Instant,
        cfg: &'a LoopConfig,
    ) -> Result<Playing<'a>, RunFailure> {
        let sample_rate = player.engine().sample_rate() as f64;
        let block = player.engine().block_size();
        let report = RunReport::default();
        let events = Arc::new(StreamEvents::default());
        let cell = PlayerCell::new(player);
        let stream = Some(
            device
                .open(cell.clone(), events.clone())
                .map_err(|e| RunFailure::new(Stop::Device(Box::new(e)), report.clone()))?,
        );
        let started = Instant::now();
        let last_status = Instant::now();
        let windows = LoadWindows::new(&meters);
        Ok(Playing {
            device,
            meters,
            origin,
            cfg,
            sample_rate,
            block,
            report,
            events,
            cell,
            stream,
            started,
            last_status,
            windows,
            xrun_noted: false,
            waiting: None,
        })
    }

    /// The device period in seconds (the block when the device has no
    /// fixed period).
    fn period_s(&self) -> f64 {
        self.device.period_frames().unwrap_or(self.block) as f64 / self.sample_rate
    }

    /// Whether the callback is late beyond the watchdog's bound or the
    /// stream reported an error (taking the report).
    fn health(&self, period: f64) -> Health {
        let cfg = self.cfg;
        let now_ns = self.origin.elapsed().as_nanos() as u64;
        let last = self.meters.last_callback_ns.load(Ordering::Acquire);
        let stall_after = self.device.stall_after().unwrap_or_else(|| {
            Duration::from_secs_f64(period * cfg.stall_periods as f64).max(cfg.stall_min)
        });
        let since = if last == 0 {
            self.started.elapsed()
        } else {
            Duration::from_nanos(now_ns.saturating_sub(last))
        };
        let fault = self.events.take();
        let stalled = since > stall_after;
        match fault {
            _ if stalled => Health::Stalled(since),
            Some(f) => Health::Fault(f),
            None => Health::Playing,
        }
    }

    /// Drops the failed stream and opens a new one with the same player
    /// (its engine, state and clock continue).
    fn rebuild(&mut self, health: Health, log: &mut dyn Write) -> Result<(), RunFailure> {
        match health {
            Health::Stalled(since) => {
                self.report.stalls += 1;
                let _ = writeln!(
                    log,
                    "\nwarning: no audio callback for {} ms; rebuilding the stream",
                    since.as_millis()
                );
            }
            Health::Fault(fault) => {
                self.report.faults += 1;
                let _ = writeln!(
                    log,
                    "\nwarning: audio stream error ({fault:?}); rebuilding the stream"
                );
            }
            Health::Playing => return Ok(()),
        }
        drop(self.stream.take());
        let Some(p) = take_player(&self.cell) else {
            return Err(RunFailure::new(
                Stop::Stuck,
                std::mem::take(&mut self.report),
            ));
        };
        let mut p = p;
        p.reset_timing();
        match self.reopen(p, log) {
            Ok(s) => {
                self.report.rebuilds += 1;
                self.stream = Some(s);
                self.meters
                    .last_callback_ns
                    .store(self.origin.elapsed().as_nanos() as u64, Ordering::Release);
                Ok(())
            }
            Err(Some(p)) if self.cfg.reconnect => {
                let _ = writeln!(
                    log,
                    "warning: the audio device is gone; waiting for it to return (--reconnect), the session's clock held"
                );
                let now = Instant::now();
                self.waiting = Some((*p, now, now));
                Ok(())
            }
            Err(_) => {
                self.report.frames = self.meters.frames.load(Ordering::Relaxed);
                self.report.clock = self.meters.clock.load(Ordering::Relaxed);
                Err(RunFailure::new(
                    Stop::Lost {
                        attempts: self.cfg.max_rebuilds,
                    },
                    std::mem::take(&mut self.report),
                ))
            }
        }
    }

    /// `--reconnect`: every half second, one attempt to open a stream for
    /// the player held; once one opens the session plays on.
    fn retry(&mut self, log: &mut dyn Write) {
        let Some((player, since, last)) = self.waiting.take() else {
            return;
        };
        if last.elapsed() < Duration::from_millis(500) {
            self.waiting = Some((player, since, last));
            return;
        }
        let c = PlayerCell::new(player);
        match self.device.open(c.clone(), self.events.clone()) {
            Ok(s) => {
                let _ = writeln!(
                    log,
                    "the audio device is back after {:.1} s; playing on",
                    since.elapsed().as_secs_f64()
                );
                self.cell = c;
                self.stream = Some(s);
                self.report.rebuilds += 1;
                self.meters
                    .last_callback_ns
                    .store(self.origin.elapsed().as_nanos() as u64, Ordering::Release);
            }
            Err(_) => match take_player(&c) {
                Some(p) => self.waiting = Some((p, since, Instant::now())),
                None => self.cell = c,
            },
        }
    }

    /// Up to `max_rebuilds` attempts to open a stream for `player`, waiting
    /// longer after each failure; on success the new cell is the one
    /// playing, else the player comes back (unless a callback kept it).
    fn reopen(
        &mut self,
        player: Player,
        log: &mut dyn Write,
    ) -> Result<Box<dyn Stream>, Option<Box<Player>>> {
        let mut player = Some(player);
        for attempt in 0..self.cfg.max_rebuilds {
            let c = PlayerCell::new(player.take().expect("player present"));
            match self.device.open(c.clone(), self.events.clone()) {
                Ok(s) => {
                    self.cell = c;
                    return Ok(s);
                }
                Err(e) => {
                    let _ = writeln!(
                        log,
                        "warning: reopening the device failed (attempt {}): {e}",
                        attempt + 1
                    );
                    player = take_player(&c);
                    std::thread::sleep(Duration::from_millis(100 * (attempt as u64 + 1)));
                }
            }
        }
        Err(player.map(Box::new))
    }

    /// At the first xrun, what an xrun means on this device, if it says.
    fn note_first_xrun(&mut self, log: &mut dyn Write) {
        if self.xrun_noted || self.meters.xruns.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.xrun_noted = true;
        if let Some(meaning) = self.device.xrun_meaning() {
            if !matches!(self.cfg.status, StatusMode::Quiet) {
                let _ = writeln!(log, "\nnote: {meaning}");
            }
        }
    }

    /// The status line, when the mode says one is due.
    fn status_if_due(&mut self, control: &dyn Driver, log: &mut dyn Write) {
        let due = match self.cfg.status {
            StatusMode::Live => self.last_status.elapsed() >= Duration::from_millis(100),
            StatusMode::Log { every } => self.last_status.elapsed() >= every,
            StatusMode::Quiet => false,
        };
        if due {
            self.last_status = Instant::now();
            let line = self.status(control);
            let _ = match self.cfg.status {
                StatusMode::Live => write!(log, "\r{line}\x1b[K"),
                _ => writeln!(log, "{line}"),
            };
            let _ = log.flush();
        }
    }

    /// The status line followed by the control's text.
    fn status(&self, control: &dyn Driver) -> String {
        let period = self.device.period_frames();
        let line = status_line(
            &self.meters,
            self.cfg,
            self.sample_rate,
            self.windows.now,
            period,
        );
        format!("{line}{}", control.status())
    }

    /// Stops the stream, hands the player to `control`, and reports the run
    /// (with a last status line).
    fn finish(mut self, control: &mut dyn Driver, log: &mut dyn Write) -> RunReport {
        drop(self.stream.take());
        if let Some((p, _, _)) = &self.waiting {
            control.finished(p);
        } else if let Some(p) = take_player(&self.cell) {
            control.finished(&p);
        }
        let meters = &self.meters;
        let mut report = std::mem::take(&mut self.report);
        report.frames = meters.frames.load(Ordering::Relaxed);
        report.xruns = meters.xruns.load(Ordering::Relaxed);
        report.late = meters.late.load(Ordering::Relaxed);
        report.overruns = meters.overruns.load(Ordering::Relaxed);
        report.nan_events = meters.nan_events.load(Ordering::Relaxed);
        report.clock = meters.clock.load(Ordering::Relaxed);
        let device_frames = meters.device_frames.load(Ordering::Relaxed);
        if device_frames > 0 {
            report.load_mean = meters.busy_ns.load(Ordering::Relaxed) as f64
                / 1e9
                / (device_frames as f64 / self.sample_rate);
        }
        let period_s = self.period_s();
        report.load_max = self
            .windows
            .worst_callback
            .max(meters.take_busy_max_ns() as f64 / 1e9 / period_s);
        // Per callback, from the histogram (1 % resolution, upper bucket
        // edge), and no more than the slowest callback measured.
        report.load_p99 = meters.load_quantile(0.99).min(report.load_max);
        // The last line gives the whole session's figures, as the summary
        // does (a session shorter than a window has no window of its own).
        self.windows.now = Load {
            mean: report.load_mean,
            worst: report.load_max,
        };
        if matches!(self.cfg.status, StatusMode::Live) {
            let _ = writeln!(log);
        }
        let line = self.status(control);
        if !matches!(self.cfg.status, StatusMode::Quiet) {
            let _ = writeln!(log, "{line}");
        }
        report
    }
}

/// Whether the player was asked to stop (read through the cell without
/// taking it: the flag is an atomic shared with the control side).
fn stopping(cell: &Arc<PlayerCell>) -> bool {
    cell.stop_requested()
}

/// The player back from a cell whose stream has been dropped.
fn take_player(cell: &Arc<PlayerCell>) -> Option<Player> {
    for _ in 0..200 {
        if let Some(p) = cell.take() {
            return Some(p);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

fn status_line(m: &Meters, cfg: &LoopConfig, sr: f64, load: Load, period: Option<usize>) -> String {
    let frames = m.frames.load(Ordering::Relaxed);
    let t = frames as f64 / sr;
    let peak = m.take_peak();
    let peak_db = if peak > 0.0 {
        format!("{:6.1} dBFS", 20.0 * libm::log10(peak as f64))
    } else {
        "  -inf dBFS".to_string()
    };
    let latency = cfg.fifo_latency + period.unwrap_or(0);
    format!(
        "{:>4}:{:05.2}  {}  latency {:.1} ms  load {:4.1}% (max {:4.1}%)  xruns {}  peak {}  nan {}",
        (t / 60.0) as u64,
        t % 60.0,
        cfg.label,
        latency as f64 / sr * 1e3,
        load.mean * 100.0,
        load.worst * 100.0,
        m.xruns.load(Ordering::Relaxed),
        peak_db,
        m.nan_events.load(Ordering::Relaxed),
    )
}
