//! What the agreement tests share: the checker's race verdict.

use checker::{CheckOptions, Class, Severity, Verdict};

/// The checker's answer: `Ok(race)` when it reports only races or nothing, `Err` when it
/// reports something else (a deadlock, UB: the program is broken) or is inconclusive.
pub fn checker_race(p: &protocols::ir::Program, max_states: u64) -> Result<bool, String> {
    let opts = CheckOptions {
        max_states,
        exhaustive: true,
        ..CheckOptions::default()
    };
    let r = checker::check(p, &opts);
    if r.verdict == Verdict::Inconclusive {
        return Err("the checker is inconclusive".into());
    }
    let errors: Vec<_> = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if let Some(f) = errors.iter().find(|f| f.rule.class != Class::Race) {
        return Err(format!("the checker reports `{}`", f.rule.name));
    }
    Ok(!errors.is_empty())
}
