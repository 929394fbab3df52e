//! What a search looks for, and so when it may stop early ([`crate::CheckOptions::goal`]).
//!
//! A search that is not exhaustive stops a while after it is *decided*. By default that is its
//! first error: the verdict is `hazard` whatever else it would find. Two things change that:
//!
//! - **Allowed findings** (an inline `# phasecheck: allow(RULE)` at the statement, `lint -A
//!   RULE`, a configuration level `allow`, or a rule lowered to a warning) are dropped from the
//!   report afterwards, so they must not decide the search: a real deadlock behind an allowed
//!   finding would stay hidden, and the search would end `inconclusive` with nothing to show.
//! - **Wanted findings** (`phasecheck test`): an `expect race data-race` line is judged on
//!   whether a data race is found, so a search that first meets a UB goes on until it has
//!   found a data race too, or has searched everything (within its limits).
//!
//! A finding that ends its interleaving (the step's effect is undefined: `count-range`,
//! `remote-cta-exited`, ...) still ends it when it is allowed; the other interleavings are
//! searched.

use crate::rules::{Class, Rule, Severity};
use protocols::Span;

/// Findings of `rule` that must not decide a search.
#[derive(Clone, Debug)]
pub struct Allowed {
    pub rule: &'static Rule,
    /// Only those whose span starts in this range (the line an inline suppression names);
    /// `None`: everywhere.
    pub within: Option<Span>,
}

/// A kind of finding that the caller looks for: of `class` (if given), of `rule` (if given),
/// of warning severity only when `warning` (`expect warning RULE`).
#[derive(Clone, Debug)]
pub struct Wanted {
    pub class: Option<Class>,
    pub rule: Option<&'static Rule>,
    pub warning: bool,
}

/// Most [`Wanted`] entries a goal tracks; later ones are ignored (the search is then decided
/// by the first 64).
pub const MAX_WANTED: usize = 64;

/// When a search is decided.
#[derive(Clone, Debug, Default)]
pub struct Goal {
    pub allowed: Vec<Allowed>,
    /// Empty: the first error that is not allowed decides. Otherwise the search is decided once
    /// each entry has a finding that is not allowed.
    pub wanted: Vec<Wanted>,
}

impl Goal {
    /// Whether a finding of `rule` at `span` is allowed.
    pub fn allows(&self, rule: &Rule, span: Span) -> bool {
        self.allowed.iter().any(|a| {
            a.rule == rule
                && a.within
                    .is_none_or(|w| w.start <= span.start && span.start < w.end.max(w.start + 1))
        })
    }

    /// The goals a finding (rule, span, severity) meets, one bit each ([`Goal::all`]).
    pub fn meets(&self, rule: &'static Rule, span: Span, severity: Severity) -> u64 {
        if self.allows(rule, span) {
            return 0;
        }
        if self.wanted.is_empty() {
            return u64::from(severity == Severity::Error);
        }
        let mut bits = 0;
        for (i, w) in self.wanted.iter().take(MAX_WANTED).enumerate() {
            let hit = w.class.is_none_or(|c| c == rule.class)
                && w.rule.is_none_or(|r| r == rule)
                && (!w.warning || severity == Severity::Warning);
            if hit {
                bits |= 1 << i;
            }
        }
        bits
    }

    /// The goal left for the search once `found` (the static lints' findings, which no search
    /// produces, and those of the initial state) are known: the wanted entries they meet are
    /// dropped. When none is left, the search falls back to the default (its first error that
    /// is not allowed decides it): what the caller looks for is there already.
    pub fn left_after(
        &self,
        found: impl IntoIterator<Item = (&'static Rule, Span, Severity)>,
    ) -> Goal {
        let mut met = 0u64;
        for (rule, span, severity) in found {
            met |= self.meets(rule, span, severity);
        }
        if self.wanted.is_empty() {
            return self.clone();
        }
        Goal {
            allowed: self.allowed.clone(),
            wanted: self
                .wanted
                .iter()
                .take(MAX_WANTED)
                .enumerate()
                .filter(|(i, _)| met & (1 << i) == 0)
                .map(|(_, w)| w.clone())
                .collect(),
        }
    }

    /// Every goal's bit: the search is decided when its findings meet all of them.
    pub fn all(&self) -> u64 {
        match self.wanted.len().min(MAX_WANTED) {
            0 => 1,
            MAX_WANTED => u64::MAX,
            n => (1 << n) - 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{data_race, deadlock, parity_not_bit, remote_cta_exited};

    fn span(start: u32) -> Span {
        Span::new(start, start + 3)
    }

    #[test]
    fn the_first_error_decides_by_default() {
        let g = Goal::default();
        assert_eq!(g.all(), 1);
        assert_eq!(g.meets(&deadlock::RULE, span(0), Severity::Error), 1);
        assert_eq!(
            g.meets(&parity_not_bit::RULE, span(0), Severity::Warning),
            0
        );
    }

    #[test]
    fn allowed_findings_decide_nothing() {
        let g = Goal {
            allowed: vec![
                Allowed {
                    rule: &remote_cta_exited::RULE,
                    within: Some(Span::new(10, 20)),
                },
                Allowed {
                    rule: &data_race::RULE,
                    within: None,
                },
            ],
            wanted: Vec::new(),
        };
        let ub = &remote_cta_exited::RULE;
        assert_eq!(g.meets(ub, span(12), Severity::Error), 0);
        // The same rule on another line still decides.
        assert_eq!(g.meets(ub, span(20), Severity::Error), 1);
        assert_eq!(g.meets(ub, span(9), Severity::Error), 1);
        assert_eq!(g.meets(&data_race::RULE, span(99), Severity::Error), 0);
        assert_eq!(g.meets(&deadlock::RULE, span(12), Severity::Error), 1);
    }

    #[test]
    fn wanted_findings_decide_together() {
        let g = Goal {
            allowed: Vec::new(),
            wanted: vec![
                Wanted {
                    class: Some(Class::Race),
                    rule: Some(&data_race::RULE),
                    warning: false,
                },
                Wanted {
                    class: Some(Class::Deadlock),
                    rule: None,
                    warning: false,
                },
                Wanted {
                    class: None,
                    rule: Some(&parity_not_bit::RULE),
                    warning: true,
                },
            ],
        };
        assert_eq!(g.all(), 0b111);
        assert_eq!(
            g.meets(&remote_cta_exited::RULE, span(0), Severity::Error),
            0
        );
        assert_eq!(g.meets(&data_race::RULE, span(0), Severity::Error), 0b001);
        assert_eq!(g.meets(&deadlock::RULE, span(0), Severity::Error), 0b010);
        assert_eq!(
            g.meets(&parity_not_bit::RULE, span(0), Severity::Warning),
            0b100
        );
        assert_eq!(g.meets(&parity_not_bit::RULE, span(0), Severity::Error), 0);

        // A static lint's warning is there before the search: the search looks for the rest.
        let lint = (&parity_not_bit::RULE, span(0), Severity::Warning);
        let left = g.left_after([lint]);
        assert_eq!(left.wanted.len(), 2);
        assert_eq!(left.meets(&deadlock::RULE, span(0), Severity::Error), 0b10);
        // Everything found already: back to the default (the first error decides).
        let only = Goal {
            allowed: Vec::new(),
            wanted: vec![g.wanted[2].clone()],
        };
        let left = only.left_after([lint]);
        assert!(left.wanted.is_empty());
        assert_eq!(left.all(), 1);
        assert_eq!(left.meets(&deadlock::RULE, span(0), Severity::Error), 1);
    }
}
