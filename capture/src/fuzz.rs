//! What `phasecheck fuzz --app` and its injection library share (issue 27): the names of the
//! globals that an instrumented kernel (crate `instrument`) carries, the layout of its stuck
//! records, and the report file the injection library writes (JSON Lines, one [`Event`] a line,
//! written as things happen so that a run that hangs still leaves what came before).

use serde::{Deserialize, Serialize};

/// `.u32[4]`: the seed of the current launch, the chance of a delay at each point (of 256),
/// the mask of a delay's length in nanoseconds, the bound of a blocking wait in microseconds.
/// The host writes the seed before each launch; the rest are the instrumenter's initializers.
pub const CFG_SYMBOL: &str = "__phasecheck_cfg";
/// `.u32`: how many threads hit a wait bound (may exceed [`STUCK_CAPACITY`]).
pub const STUCK_COUNT_SYMBOL: &str = "__phasecheck_stuck_count";
/// `.u32[STUCK_CAPACITY * RECORD_WORDS]`: the first stuck threads' records.
pub const STUCK_SYMBOL: &str = "__phasecheck_stuck";
/// Words of one stuck record: `%ctaid.x/y/z`, `%tid.x/y/z`, the point's id, the launch's seed.
pub const RECORD_WORDS: usize = 8;
/// Records kept per read-back.
pub const STUCK_CAPACITY: u32 = 4096;
/// `.u32[4]` of a kernel instrumented to replay a counterexample (`phasecheck confirm --app`):
/// word 0 is the ticket, the number of the trace's steps done so far; word 1 is one more than
/// the step at which a thread held for its turn gave up (0: none). The host zeroes it before
/// each launch when the module has it.
pub const SEQ_STATE_SYMBOL: &str = "__phasecheck_seq_state";
/// Words of [`SEQ_STATE_SYMBOL`].
pub const SEQ_STATE_WORDS: usize = 4;
/// Set in a stuck record's point when the thread was held by the sequencer for its turn (not
/// stuck at a wait of the kernel); the record's seed word is then the turn it waited for.
pub const SEQ_HELD: u32 = 1 << 31;

/// A thread whose bounded wait expired: where it was (the instrumented point, crate
/// `instrument`) and in which launch (its seed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StuckThread {
    pub block: [u32; 3],
    pub thread: [u32; 3],
    pub point: u32,
    pub seed: u32,
}

/// The records in `words` (whole records only).
pub fn decode_stuck(words: &[u32]) -> Vec<StuckThread> {
    words
        .chunks_exact(RECORD_WORDS)
        .map(|w| StuckThread {
            block: [w[0], w[1], w[2]],
            thread: [w[3], w[4], w[5]],
            point: w[6],
            seed: w[7],
        })
        .collect()
}

/// One line of the report file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The instrumented module was loaded in a context and swaps the kernel from now on.
    Loaded { kernel: String },
    /// Launches `first..first + launches` of the instrumented kernel ran to completion.
    Batch {
        first: u64,
        launches: u64,
        /// Blocks of each launch (the grid's size).
        blocks: u64,
        /// Threads that hit a wait bound in these launches (the first ones are in `stuck`).
        stuck_total: u32,
        stuck: Vec<StuckThread>,
        seconds: f64,
    },
    /// The launches from `first` on did not complete within the watchdog's time: a wait the
    /// instrumentation cannot bound (`bar.sync`, `barrier.cluster.wait`) or a bound longer
    /// than the watchdog. `stuck` as read while the kernel still ran.
    Hang {
        first: u64,
        launches: u64,
        after_seconds: f64,
        stuck_total: u32,
        stuck: Vec<StuckThread>,
    },
    /// The injection library could not do its work (the kernel ran unmodified, or not at all).
    Error { message: String },
}

impl Event {
    pub fn to_line(&self) -> String {
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!("{{\"event\":\"error\",\"message\":\"{e}\"}}"))
    }
}

/// The events of a report file; a line that does not parse is an error naming it.
pub fn parse_report(text: &str) -> Result<Vec<Event>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("report line {}: {e}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_decode_in_their_word_order() {
        let words = [1, 2, 3, 4, 5, 6, 7, 8, 9, 9];
        let r = decode_stuck(&words);
        assert_eq!(r.len(), 1, "a partial record is left out");
        assert_eq!(r[0].block, [1, 2, 3]);
        assert_eq!(r[0].thread, [4, 5, 6]);
        assert_eq!((r[0].point, r[0].seed), (7, 8));
    }

    #[test]
    fn events_round_trip_through_lines() {
        let e = Event::Batch {
            first: 3,
            launches: 2,
            blocks: 16,
            stuck_total: 1,
            stuck: decode_stuck(&[0, 0, 0, 128, 0, 0, 5, 42]),
            seconds: 0.5,
        };
        let text = format!(
            "{}\n{}\n",
            e.to_line(),
            Event::Error {
                message: "x".into()
            }
            .to_line()
        );
        let back = parse_report(&text).unwrap();
        assert_eq!(back[0], e);
        assert!(matches!(&back[1], Event::Error { message } if message == "x"));
        assert!(
            parse_report("{\"event\":\"nope\"}")
                .unwrap_err()
                .contains("line 1")
        );
    }
}
