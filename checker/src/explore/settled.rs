//! What the walk of a round takes from one expanded state, boiled down by a worker.

use super::{Expansion, Move};

/// What the walk of a round needs from one expanded state, made by the worker that settles
/// its claims: the findings and the new states in the order the sequential search takes
/// them, and counts. Nearly every state of a reduced search has at most one new state, kept
/// inline (`winners` allocates only from the second on), so the walk on the calling thread
/// frees nothing that a worker allocated.
pub(super) struct Settled<S, F> {
    /// Findings of the state itself (`None`), then of each move (its action), in order.
    pub(super) found: Vec<(Option<u32>, F)>,
    /// (action, new state, its `state_bytes`), in action order: the claims that won.
    pub(super) winners: Winners<S>,
    /// Their bytes, summed.
    pub(super) new_bytes: u64,
    /// Transitions taken: every move, and an ample action that stopped.
    pub(super) transitions: u64,
    /// The first search bound a move hit.
    pub(super) bound: Option<String>,
    pub(super) hit: bool,
    pub(super) analysed: bool,
}

/// A list of new states that holds its first entry inline.
pub(super) struct Winners<S> {
    first: Option<(u32, S, u64)>,
    rest: Vec<(u32, S, u64)>,
}

impl<S> Winners<S> {
    fn push(&mut self, w: (u32, S, u64)) {
        if self.first.is_none() {
            self.first = Some(w);
        } else {
            self.rest.push(w);
        }
    }
}

impl<S> IntoIterator for Winners<S> {
    type Item = (u32, S, u64);
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<(u32, S, u64)>, std::vec::IntoIter<(u32, S, u64)>>;
    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl<S, F> Settled<S, F> {
    /// `wins(j, fingerprint, state)`: the size of the new state if move `j`'s claim wins,
    /// `None` if it lost (the state is then dropped here).
    pub(super) fn of(ex: Expansion<S, F>, wins: impl Fn(usize, u64, &S) -> Option<u64>) -> Self {
        let mut found: Vec<(Option<u32>, F)> = ex.found.into_iter().map(|f| (None, f)).collect();
        let mut winners = Winners {
            first: None,
            rest: Vec::new(),
        };
        let (mut new_bytes, mut bound) = (0u64, None);
        let transitions = ex.discarded + ex.moves.len() as u64;
        for (j, (a, m, fs)) in ex.moves.into_iter().enumerate() {
            found.extend(fs.into_iter().map(|f| (Some(a), f)));
            match m {
                Move::Next { state, fingerprint } => {
                    if let Some(bytes) = wins(j, fingerprint, &state) {
                        new_bytes += bytes;
                        winners.push((a, state, bytes));
                    }
                }
                Move::Duplicate | Move::Stop => {}
                Move::Bound(why) => {
                    bound.get_or_insert(why);
                }
            }
        }
        Settled {
            found,
            winners,
            new_bytes,
            transitions,
            bound,
            hit: ex.hit,
            analysed: ex.analysed,
        }
    }
}
