//! `--max-memory`: one memory budget for a whole run of `verify`, `lint` or `test`, shared by
//! the searches that run at once.
//!
//! The checker bounds each search by an estimate of its own memory (the visited set and the
//! queued states, `CheckOptions::max_memory_bytes`). The resident size of a large search is
//! about 1.1 times that estimate, up to 1.3 times where many threads share their state
//! (docs/performance.md); the process itself (the binary, the loaded files, the results, the
//! allocator's slack) takes some tens of MiB more. So a run with budget `B` and `J` searches at
//! once keeps [`RESERVE`] for the process, gives each search an equal share of the rest, and
//! lets each search's estimate grow to [`ESTIMATE_SHARE`] of its share: the resident size of
//! the whole run stays below `B`.
//!
//! The share is fixed (not lent between searches as they finish) so that whether a file's search
//! is inconclusive depends on the budget and `--jobs`, not on timing.

use checker::Report;

/// Bytes kept for the process besides its searches.
pub const RESERVE: u64 = 64 << 20;
/// The part of a search's share that its memory estimate may reach (3/4: the resident size
/// of a large search is up to about 1.3 times its estimate).
pub const ESTIMATE_SHARE: (u64, u64) = (3, 4);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// `--max-memory`: bytes for the whole run.
    pub total: u64,
    /// Searches that run at once.
    pub jobs: usize,
}

impl Budget {
    pub fn new(total: u64, jobs: usize) -> Budget {
        Budget {
            total,
            jobs: jobs.max(1),
        }
    }

    /// The resident bytes one search may take.
    pub fn share(&self) -> u64 {
        self.total.saturating_sub(RESERVE) / self.jobs as u64
    }

    /// The memory estimate one search may reach (`CheckOptions::max_memory_bytes`), given its
    /// own limit in resident bytes if it has one (`[limits] max-memory`).
    pub fn search_limit(&self, own: Option<u64>) -> u64 {
        let resident = own.map_or(self.share(), |o| o.min(self.share()));
        resident / ESTIMATE_SHARE.1 * ESTIMATE_SHARE.0
    }

    /// Restate a search's stop at the memory limit (`limit`, as [`Budget::search_limit`] gave
    /// it) in terms of the run's budget and the options that raise it.
    pub fn explain(&self, report: &mut Report, limit: u64) {
        let Some(inc) = &mut report.incomplete else {
            return;
        };
        if report.stats.peak_memory_bytes < limit {
            return;
        }
        let total = crate::status::bytes(self.total);
        inc.reason = if self.jobs > 1 {
            format!(
                "max-memory reached: --max-memory {total} is shared by {} searches at once ({} \
                 each, after {} for the process); raise it with --max-memory, or run fewer \
                 searches at once with --jobs",
                self.jobs,
                crate::status::bytes(self.share()),
                crate::status::bytes(RESERVE)
            )
        } else {
            format!("max-memory ({total}) reached; raise it with --max-memory")
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_stay_within_the_budget() {
        let b = Budget::new(4 << 30, 2);
        assert_eq!(b.share(), ((4u64 << 30) - RESERVE) / 2);
        // Even at 1.3 times the estimate, the searches and the reserve fit.
        let limit = b.search_limit(None);
        assert!(limit * 13 / 10 * 2 + RESERVE <= 4 << 30);
        // A smaller limit of a file's own wins; a larger one does not.
        assert_eq!(b.search_limit(Some(1 << 30)), (1u64 << 30) / 4 * 3);
        assert_eq!(b.search_limit(Some(64 << 30)), limit);
        // A budget below the reserve leaves nothing to search with, without underflow.
        assert_eq!(Budget::new(1024, 4).search_limit(None), 0);
        assert_eq!(Budget::new(1 << 30, 0).jobs, 1);
    }
}
