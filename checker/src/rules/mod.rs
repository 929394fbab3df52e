//! The rule catalogue: one module per rule, one registry.
//!
//! Each rule module declares its rule with [`declare_rule!`]; the module's doc comment on the
//! rule is its `phasecheck explain` text, its SARIF help and its section of docs/rules.md. A
//! doc has the sections `What`, `Why`, `Example` (a failing protocol), `Fix` (the passing twin)
//! and `Source`: the sentences the rule rests on, quoted word for word in `> "..."` blocks, each
//! after a line naming its document, version and section (`PTX ISA 9.1, §9.7.13.15.10
//! *mbarrier.inval*:`), or a line `Not an ISA rule: ...` naming what it rests on instead; then
//! the other references. docs/semantics.md quotes the same sentences (tests/rule_sources.rs
//! checks both). Codes are stable: never renumber.

use serde::Serialize;

/// Violation class, semantics.md §0.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Deadlock,
    Ub,
    Race,
    Perf,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Deadlock => "deadlock",
            Class::Ub => "ub",
            Class::Race => "race",
            Class::Perf => "perf",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One rule of the catalogue.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Rule {
    /// Stable code, `PC` + three digits; the hundreds digit is the class.
    pub code: &'static str,
    /// Stable kebab-case name, used in `expect`, configuration and suppressions.
    pub name: &'static str,
    pub class: Class,
    pub default_severity: Severity,
    /// One line, for `phasecheck rules` and SARIF `shortDescription`.
    pub summary: &'static str,
    /// The full Markdown doc (the rule's doc comment).
    pub doc: &'static str,
}

/// Declares a rule constant `RULE` whose `doc` is the doc comment written on it.
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        code: $code:literal,
        name: $name:literal,
        class: $class:ident,
        severity: $severity:ident,
        summary: $summary:literal $(,)?
    ) => {
        pub const RULE: $crate::rules::Rule = $crate::rules::Rule {
            code: $code,
            name: $name,
            class: $crate::rules::Class::$class,
            default_severity: $crate::rules::Severity::$severity,
            summary: $summary,
            doc: concat!($($doc, "\n"),*),
        };
    };
}
pub(crate) use declare_rule;

pub mod after_quit;
pub mod arrive_on_zero_pending;
pub mod barrier_divergence;
pub mod count_range;
pub mod data_race;
pub mod deadlock;
pub mod drop_to_zero;
pub mod expect_after_completion;
pub mod expect_without_arrival;
pub mod init_not_visible;
pub mod inval_in_use;
pub mod missing_proxy_fence;
pub mod model_error;
pub mod named_barrier_count;
pub mod named_barrier_rearrive;
pub mod parity_not_bit;
pub mod pipeline_role;
pub mod proxy_fence_after_sync;
pub mod reinit;
pub mod remote_cta_exited;
pub mod remote_op;
pub mod same_value_store;
pub mod stale_phase;
pub mod stale_token;
pub mod syncthreads_would_do;
pub mod tx_range;
pub mod unified_pipeline;
pub mod unobserved_phase;
pub mod unused_suppression;
pub mod use_before_init;
pub mod wait_phase_behind;
pub mod wait_prior_over_8;
pub mod warp_entanglement;

/// Every rule, in code order.
pub static ALL: &[&Rule] = &[
    &deadlock::RULE,
    &use_before_init::RULE,
    &init_not_visible::RULE,
    &reinit::RULE,
    &inval_in_use::RULE,
    &count_range::RULE,
    &tx_range::RULE,
    &arrive_on_zero_pending::RULE,
    &unobserved_phase::RULE,
    &drop_to_zero::RULE,
    &stale_token::RULE,
    &wait_phase_behind::RULE,
    &barrier_divergence::RULE,
    &named_barrier_rearrive::RULE,
    &remote_cta_exited::RULE,
    &remote_op::RULE,
    &pipeline_role::RULE,
    &after_quit::RULE,
    &expect_without_arrival::RULE,
    &model_error::RULE,
    &named_barrier_count::RULE,
    &data_race::RULE,
    &missing_proxy_fence::RULE,
    &stale_phase::RULE,
    &expect_after_completion::RULE,
    &warp_entanglement::RULE,
    &unified_pipeline::RULE,
    &wait_prior_over_8::RULE,
    &syncthreads_would_do::RULE,
    &parity_not_bit::RULE,
    &same_value_store::RULE,
    &proxy_fence_after_sync::RULE,
    &unused_suppression::RULE,
];

/// Look a rule up by name (`stale-token`) or code (`PC209`), case-insensitively.
pub fn find(name_or_code: &str) -> Option<&'static Rule> {
    ALL.iter().copied().find(|r| {
        r.name.eq_ignore_ascii_case(name_or_code) || r.code.eq_ignore_ascii_case(name_or_code)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut codes = std::collections::BTreeSet::new();
        let mut names = std::collections::BTreeSet::new();
        for r in ALL {
            assert!(codes.insert(r.code), "duplicate code {}", r.code);
            assert!(names.insert(r.name), "duplicate name {}", r.name);
            assert!(
                r.code.len() == 5 && r.code.starts_with("PC"),
                "bad code {}",
                r.code
            );
            assert!(
                r.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c.is_ascii_digit())
            );
            let class_digit = match r.class {
                Class::Deadlock => '1',
                Class::Ub => '2',
                Class::Race => '3',
                Class::Perf => '4',
            };
            assert_eq!(
                r.code.as_bytes()[2] as char,
                class_digit,
                "{} class digit",
                r.code
            );
            assert_eq!(
                r.class == Class::Perf,
                r.default_severity == Severity::Warning
            );
            assert!(r.doc.contains("# What"), "{} has no doc", r.name);
        }
        let sorted: Vec<_> = ALL.iter().map(|r| r.code).collect();
        let mut again = sorted.clone();
        again.sort();
        assert_eq!(sorted, again, "ALL is in code order");
    }

    #[test]
    fn find_by_name_or_code() {
        assert_eq!(find("stale-token").unwrap().code, "PC209");
        assert_eq!(find("pc209").unwrap().name, "stale-token");
        assert!(find("no-such-rule").is_none());
    }
}
