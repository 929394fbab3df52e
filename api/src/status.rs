//! Progress of long searches on stderr, for `verify`, `lint` and `test`.
//!
//! - stderr is a terminal: one spinner line for any search that has run for more than a second
//!   (the longest-running one, and how many others run beside it), cleared when it ends;
//! - otherwise (a pipe, a CI log): a plain line per running search every few seconds (default
//!   5 s; `PHASECHECK_STATUS_INTERVAL`, e.g. `30s`, `500ms`, or `none`), the first one when the
//!   search has run for one interval, so that quick searches print nothing:
//!
//! ```text
//! phasecheck lint: corpus/guide/pipeline_partitioned.phase: 586681 states, depth 104, memory 812 MiB of 4.0 GiB, 17.2 s (3 of 86 done)
//! ```
//!
//! Searches report through [`Search::update`] (the checker's progress callback); a thread of
//! this module prints, so a search that reports rarely still gets its line on time.

use checker::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The environment variable that sets the interval of the plain status lines.
pub const INTERVAL_VAR: &str = "PHASECHECK_STATUS_INTERVAL";
/// The interval of the plain status lines when the variable is not set.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);
/// A search shows a spinner on a terminal once it has run this long.
const BAR_AFTER: Duration = Duration::from_secs(1);

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Off,
    /// A plain line per running search every interval.
    Lines(Duration),
    /// A spinner on a terminal.
    Bar,
}

impl Mode {
    /// Plain lines unless stderr is a terminal; the interval from [`INTERVAL_VAR`].
    pub fn from_env() -> Result<Mode, String> {
        let interval = match std::env::var(INTERVAL_VAR) {
            Err(std::env::VarError::NotPresent) => Some(DEFAULT_INTERVAL),
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(format!("{INTERVAL_VAR} is not UTF-8"));
            }
            Ok(v) => {
                crate::args::parse_time_limit(&v)
                    .map_err(|e| format!("{INTERVAL_VAR}: {e}"))?
                    .0
            }
        };
        Ok(if std::io::stderr().is_terminal() {
            Mode::Bar
        } else {
            interval.map_or(Mode::Off, Mode::Lines)
        })
    }
}

struct Slot {
    id: u64,
    name: String,
    started: Instant,
    /// The search's memory limit (the estimate `Progress::memory_bytes` is measured against).
    cap: u64,
    last: Option<Progress>,
    next_line: Instant,
}

#[derive(Default)]
struct Slots {
    next_id: u64,
    active: Vec<Slot>,
    done: usize,
    stop: bool,
}

struct Shared {
    command: &'static str,
    mode: Mode,
    /// Searches expected in all (0: unknown).
    total: usize,
    slots: Mutex<Slots>,
    wake: Condvar,
    bar: Mutex<Option<ProgressBar>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The status display of one command run; dropping it stops the display.
pub struct Status {
    shared: Arc<Shared>,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Status {
    /// `command` names the lines (`phasecheck lint: ...`); `total` is the number of searches
    /// expected (0 if unknown).
    pub fn new(command: &'static str, mode: Mode, total: usize) -> Status {
        let shared = Arc::new(Shared {
            command,
            mode,
            total,
            slots: Mutex::new(Slots::default()),
            wake: Condvar::new(),
            bar: Mutex::new(None),
        });
        let ticker = (mode != Mode::Off).then(|| {
            let shared = shared.clone();
            std::thread::spawn(move || tick(&shared))
        });
        Status { shared, ticker }
    }

    /// Register a search; it is shown until the returned guard is dropped.
    pub fn search(&self, name: impl Into<String>, cap: u64) -> Search<'_> {
        let mut slots = lock(&self.shared.slots);
        let id = slots.next_id;
        slots.next_id += 1;
        let started = Instant::now();
        let interval = match self.shared.mode {
            Mode::Lines(i) => i,
            _ => BAR_AFTER,
        };
        slots.active.push(Slot {
            id,
            name: name.into(),
            started,
            cap,
            last: None,
            next_line: started + interval,
        });
        Search {
            shared: &self.shared,
            id,
        }
    }

    /// Run `f` (which prints to stdout or stderr) with the spinner out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        let bar = lock(&self.shared.bar).clone();
        match bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        lock(&self.shared.slots).stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if let Some(b) = lock(&self.shared.bar).take() {
            b.finish_and_clear();
        }
    }
}

/// One running search.
pub struct Search<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Search<'_> {
    /// The checker's progress callback.
    pub fn update(&self, p: &Progress) {
        if self.shared.mode == Mode::Off {
            return;
        }
        let mut slots = lock(&self.shared.slots);
        if let Some(s) = slots.active.iter_mut().find(|s| s.id == self.id) {
            s.last = Some(p.clone());
        }
    }
}

impl Drop for Search<'_> {
    fn drop(&mut self) {
        let mut slots = lock(&self.shared.slots);
        slots.active.retain(|s| s.id != self.id);
        slots.done += 1;
        // The last running search takes the spinner with it at once, before its report is
        // printed.
        if slots.active.is_empty()
            && let Some(b) = lock(&self.shared.bar).take()
        {
            b.finish_and_clear();
        }
    }
}

/// `812 MiB`, `4.0 GiB`.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 30 {
        format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64)
    } else if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{} KiB", n.div_ceil(1 << 10))
    }
}

/// `17.2 s`, `2 min 05 s`, `1 h 02 min`.
pub fn elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{:.1} s", d.as_secs_f64())
    } else if s < 3600 {
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        format!("{} h {:02} min", s / 3600, s % 3600 / 60)
    }
}

/// What one search has done so far, without the command and name.
fn describe(slot: &Slot, now: Instant) -> String {
    let time = elapsed(now.duration_since(slot.started));
    match &slot.last {
        None => format!("starting, {time}"),
        Some(p) => format!(
            "{} states, depth {}, memory {} of {}, {time}",
            p.states,
            p.depth,
            bytes(p.memory_bytes),
            bytes(slot.cap)
        ),
    }
}

fn done_part(shared: &Shared, slots: &Slots) -> String {
    if shared.total > 1 {
        format!(" ({} of {} done)", slots.done, shared.total)
    } else {
        String::new()
    }
}

/// The display thread: wakes every 100 ms until the status is dropped.
fn tick(shared: &Shared) {
    let mut slots = lock(&shared.slots);
    loop {
        let (guard, _) = shared
            .wake
            .wait_timeout(slots, Duration::from_millis(100))
            .unwrap_or_else(|e| e.into_inner());
        slots = guard;
        if slots.stop {
            return;
        }
        let now = Instant::now();
        match shared.mode {
            Mode::Off => return,
            Mode::Lines(interval) => {
                let done = done_part(shared, &slots);
                let mut lines = String::new();
                for s in slots.active.iter_mut().filter(|s| now >= s.next_line) {
                    s.next_line = now + interval;
                    lines.push_str(&format!(
                        "phasecheck {}: {}: {}{done}\n",
                        shared.command,
                        s.name,
                        describe(s, now)
                    ));
                }
                if !lines.is_empty() {
                    let mut err = std::io::stderr().lock();
                    let _ = err.write_all(lines.as_bytes());
                    let _ = err.flush();
                }
            }
            Mode::Bar => {
                let mut long: Vec<&Slot> = slots
                    .active
                    .iter()
                    .filter(|s| now.duration_since(s.started) >= BAR_AFTER)
                    .collect();
                long.sort_by_key(|s| s.started);
                let mut bar = lock(&shared.bar);
                match long.first() {
                    None => {
                        if let Some(b) = bar.take() {
                            b.finish_and_clear();
                        }
                    }
                    Some(first) => {
                        let b = bar.get_or_insert_with(|| {
                            let b =
                                ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                            b.set_style(
                                ProgressStyle::with_template("{spinner} {wide_msg}")
                                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                            );
                            b
                        });
                        let more = match long.len() - 1 {
                            0 => String::new(),
                            n => format!(" (+{n} more running)"),
                        };
                        b.set_message(format!(
                            "{}: {}{more}{}",
                            first.name,
                            describe(first, now),
                            done_part(shared, &slots)
                        ));
                        b.tick();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_times_read_well() {
        assert_eq!(bytes(812 << 20), "812 MiB");
        assert_eq!(bytes(4 << 30), "4.0 GiB");
        assert_eq!(bytes(1500), "2 KiB");
        assert_eq!(elapsed(Duration::from_millis(17_250)), "17.2 s");
        assert_eq!(elapsed(Duration::from_secs(125)), "2 min 05 s");
        assert_eq!(elapsed(Duration::from_secs(3720)), "1 h 02 min");
    }

    #[test]
    fn a_line_names_states_depth_memory_and_time() {
        let start = Instant::now();
        let mut slot = Slot {
            id: 0,
            name: "a.phase".into(),
            started: start,
            cap: 1 << 30,
            last: None,
            next_line: start,
        };
        let later = start + Duration::from_secs(7);
        assert_eq!(describe(&slot, later), "starting, 7.0 s");
        slot.last = Some(Progress {
            states: 586_681,
            depth: 104,
            queued: 10,
            elapsed_ms: 7000,
            memory_bytes: 812 << 20,
        });
        assert_eq!(
            describe(&slot, later),
            "586681 states, depth 104, memory 812 MiB of 1.0 GiB, 7.0 s"
        );
    }
}
