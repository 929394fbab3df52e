//! [`Elements`]: the Programming Guide's four-barrier producer/consumer by element (issue 24
//! point 2), as the PTX front end extracts it: a prologue in which some threads initialize the
//! barriers (thread 0 all four, threads 0..3 one each, or a loop that hands barrier `b` to
//! thread `b % block`), a `syncthreads`, then producers that each write their own elements of a
//! stage (`write buf bytes s * S + 4 * tid .. +4`) and consumers that each read one
//! (`read buf bytes s * S + 4 * (tid - NP) .. +4`), with `ready[s]` / `filled[s]` barriers that
//! every thread arrives on.
//!
//! The shape exercises the symmetry past a prologue (the threads that initialize differ from
//! the others only before the `syncthreads`; checker `symmetry.rs`, "Prologues") and byte
//! ranges whose thread part is a term of its own (range groups, `bytes.rs`), with the stage
//! loop written once (`i % 2 * S`, keys that depend on the trip) or unrolled two stages a trip
//! (constant keys per statement, as the front end writes it).

use super::{Src, pick};
use proptest::option;
use proptest::prelude::*;

/// Who initializes the four barriers before the `syncthreads`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitBy {
    /// `if tid == 0 { for b in 0..4 { init bar[b], N } }`.
    One,
    /// `if tid < 4 { init bar[tid], N }` (the guide's; blocks of 4 or more threads).
    Four,
    /// `for b in 0..4 { if tid == b % N { init bar[b], N } }` (a thread-dependent condition
    /// on a local: no symmetry before the `syncthreads`).
    Spread,
}

/// A defect of an [`Elements`] protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElementsBug {
    /// Elements of 8 bytes at a 4-byte stride: each producer's element overlaps its
    /// neighbour's (`data-race` between producers, and with the consumers).
    Overlap,
    /// The consumers read the other stage (`data-race` with the producers' next fill).
    WrongStage,
    /// The producers skip the `ready` wait (they only arrive) on this trip, counted from the
    /// third: the consumers may still read the stage from two trips before (at least three
    /// trips are run; the first two waits only follow the consumers' initial arrivals).
    MissingProducerWait(u32),
    /// Every barrier counts one arrival too many (everybody waits for good).
    CountOver,
    /// No `syncthreads` after the prologue (the barriers are used before every thread may see
    /// their init; and no prologue symmetry applies).
    MissingBootstrap,
    /// Thread 0 also arrives on `ready[0]` in the prologue: one arrival too many, made by one
    /// thread before the cut and carried past it in the barrier's state.
    PrologueArrive,
}

#[derive(Clone, Debug)]
pub struct Elements {
    /// Producer threads; twice as many consumers (each producer fills two elements a stage).
    pub producers: u32,
    /// Trips of the stage loop (the stage is `i % 2`).
    pub trips: u32,
    pub init_by: InitBy,
    /// The producers' loop unrolled two stages a trip (constant byte offsets per statement,
    /// as `phasecheck extract` writes the guide's kernel); only with an even trip count.
    pub unrolled: bool,
    pub bug: Option<ElementsBug>,
}

/// The parameters of a random [`Elements`].
pub fn elements_params() -> impl Strategy<Value = Elements> {
    (
        1..=2u32,
        1..=3u32,
        prop_oneof![Just(InitBy::One), Just(InitBy::Four), Just(InitBy::Spread)],
        any::<bool>(),
        option::weighted(
            0.5,
            prop_oneof![
                Just(ElementsBug::Overlap),
                Just(ElementsBug::WrongStage),
                (0..3u32).prop_map(ElementsBug::MissingProducerWait),
                Just(ElementsBug::CountOver),
                Just(ElementsBug::MissingBootstrap),
                Just(ElementsBug::PrologueArrive),
            ],
        ),
    )
        .prop_map(|(producers, trips, init_by, unrolled, bug)| Elements {
            producers,
            trips,
            init_by,
            unrolled,
            bug,
        })
}

/// Producer/consumer protocols by element, with a barrier-init prologue.
pub fn elements() -> impl Strategy<Value = String> {
    elements_params().prop_map(|e| e.source())
}

impl Elements {
    fn has(&self, b: ElementsBug) -> bool {
        self.bug == Some(b)
    }

    /// The trips run: 1 to 3, at least 3 with a skipped wait (and 4 unrolled).
    fn trips(&self) -> u32 {
        match self.bug {
            Some(ElementsBug::MissingProducerWait(_)) if self.unrolled => 4,
            Some(ElementsBug::MissingProducerWait(_)) => self.trips.clamp(3, 3),
            _ => self.trips.clamp(1, 3),
        }
    }

    /// One stage's fill by the producers: `ready` wait, two elements, `filled` arrive. `stage`
    /// is the stage expression, `trip` the trip expression (for the skipped wait).
    fn fill(&self, w: &mut Src, stage: &str, trip: &str) {
        let wait = format!("arrive_and_wait bar[{stage}]");
        match self.bug {
            Some(ElementsBug::MissingProducerWait(x)) => {
                let skip = 2 + pick(x, self.trips() - 2);
                w.line(format!(
                    "if {trip} != {skip} {{ {wait} }} else {{ arrive bar[{stage}] }}"
                ))
            }
            _ => w.line(wait),
        }
        let len = if self.has(ElementsBug::Overlap) { 8 } else { 4 };
        w.line(format!("write buf bytes {stage} * S + 4 * tid .. +{len}"));
        w.line(format!(
            "write buf bytes {stage} * S + 4 * NP + 4 * tid .. +{len}"
        ));
        w.line(format!("arrive bar[2 + {stage}]"));
    }

    /// Render the protocol.
    pub fn source(&self) -> String {
        let np = self.producers.clamp(1, 2);
        let k = self.trips();
        let n = 3 * np;
        // `if tid < 4` needs four threads.
        let init_by = if self.init_by == InitBy::Four && n < 4 {
            InitBy::One
        } else {
            self.init_by
        };
        let mut w = Src::new("gen_elements");
        w.param("NP", np);
        w.param("K", k);
        // Bytes of a stage: 2 * NP floats.
        w.param("S", 8 * np);
        w.line("block 3 * NP");
        w.blank();
        w.line("mbarrier bar[4]                 # ready[0], ready[1], filled[0], filled[1]");
        w.line("buffer buf");
        w.blank();
        let count = if self.has(ElementsBug::CountOver) {
            "3 * NP + 1"
        } else {
            "3 * NP"
        };
        match init_by {
            InitBy::One => {
                w.open("if tid == 0");
                w.open("for b in 0..4");
                w.line(format!("init bar[b], {count}"));
                w.close();
                w.close();
            }
            InitBy::Four => {
                w.open("if tid < 4");
                w.line(format!("init bar[tid], {count}"));
                w.close();
            }
            InitBy::Spread => {
                w.open("for b in 0..4");
                w.open("if tid == b % (3 * NP)");
                w.line(format!("init bar[b], {count}"));
                w.close();
                w.close();
            }
        }
        if self.has(ElementsBug::PrologueArrive) {
            // Thread 0 initialized `bar[0]` in every variant, so its arrival is no init
            // visibility error: one arrival too many in phase 0, made before the cut.
            w.line("if tid == 0 { arrive bar[0] }");
        }
        if !self.has(ElementsBug::MissingBootstrap) {
            w.line("syncthreads");
        }
        w.blank();
        w.open("role producer when tid < NP");
        if self.unrolled && k.is_multiple_of(2) {
            w.open("for j in 0..K / 2");
            self.fill(&mut w, "0", "2 * j");
            self.fill(&mut w, "1", "2 * j + 1");
            w.close();
        } else {
            w.open("for i in 0..K");
            self.fill(&mut w, "i % 2", "i");
            w.close();
        }
        w.close();
        w.open("role consumer when tid >= NP");
        w.line("arrive bar[0]");
        w.line("arrive bar[1]");
        w.open("for i in 0..K");
        w.line("arrive_and_wait bar[2 + i % 2]");
        let stage = if self.has(ElementsBug::WrongStage) {
            "(i + 1) % 2"
        } else {
            "i % 2"
        };
        w.line(format!("read buf bytes {stage} * S + 4 * (tid - NP) .. +4"));
        w.line("arrive bar[i % 2]");
        w.close();
        w.close();
        w.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guides_shape_renders_with_its_prologue_and_byte_ranges() {
        let e = Elements {
            producers: 2,
            trips: 2,
            init_by: InitBy::Four,
            unrolled: true,
            bug: None,
        };
        let src = e.source();
        assert!(
            src.contains("if tid < 4 {\n  init bar[tid], 3 * NP\n}\nsyncthreads"),
            "{src}"
        );
        assert!(
            src.contains("write buf bytes 1 * S + 4 * NP + 4 * tid .. +4"),
            "{src}"
        );
        assert!(
            src.contains("read buf bytes i % 2 * S + 4 * (tid - NP) .. +4"),
            "{src}"
        );
    }
}
