//! Inline suppressions: `# phasecheck: allow(rule-a, rule-b) reason`.
//!
//! The loader turns each such comment into an [`ir::Suppression`](protocols::ir::Suppression)
//! with the line of the statement it targets. A finding is suppressed when its span starts on
//! that line and its rule is named (by name or code). Every named rule that suppressed nothing,
//! and every name that is not a rule, becomes an `unused-suppression` warning at the comment,
//! so stale suppressions do not pile up.

use crate::report::Finding;
use crate::rules::{self, Rule, unused_suppression};
use protocols::SourceFile;
use protocols::ir::Program;

/// Levenshtein distance, for did-you-mean hints.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The rule whose name is closest to `name`, if it is close enough to be a typo.
pub fn did_you_mean(name: &str) -> Option<&'static Rule> {
    let name = name.to_ascii_lowercase();
    rules::ALL
        .iter()
        .copied()
        .map(|r| {
            (
                distance(&name, r.name).min(distance(&name, &r.code.to_ascii_lowercase())),
                r,
            )
        })
        .filter(|(d, _)| *d <= (name.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, r)| r)
}

/// The inline suppressions of `program` as findings that must not decide a search
/// ([`crate::goal`]): each named rule, on the line the suppression targets. Put them in
/// [`crate::CheckOptions::goal`] before the search, so that a suppressed finding does not stop
/// it (which would hide what comes after, and leave the report inconclusive once the finding
/// is dropped).
pub fn allowed(program: &Program, file: &SourceFile) -> Vec<crate::goal::Allowed> {
    let mut out = Vec::new();
    for s in &program.suppressions {
        let Some(line) = file.line_span(s.target_line) else {
            continue;
        };
        // The line break counts as the line's (`SourceFile::line_of`).
        let within = protocols::Span::new(line.start, line.end + 1);
        for name in &s.rules {
            if let Some(rule) = rules::find(name) {
                out.push(crate::goal::Allowed {
                    rule,
                    within: Some(within),
                });
            }
        }
    }
    out
}

/// The goal of a search whose report goes through [`apply_to_report`]: the first error that
/// no inline suppression allows decides it.
pub fn goal(program: &Program, file: &SourceFile) -> crate::goal::Goal {
    crate::goal::Goal {
        allowed: allowed(program, file),
        wanted: Vec::new(),
    }
}

/// Apply the inline suppressions of `program` to a checker report: suppressed findings go,
/// unused suppressions become warnings, and the verdict is recomputed. Every command that
/// reports findings (verify, lint, test, confirm) goes through here, so a suppression means
/// the same everywhere.
pub fn apply_to_report(program: &Program, file: &SourceFile, report: &mut crate::report::Report) {
    let findings = std::mem::take(&mut report.findings);
    report.findings = apply(program, file, findings, report.incomplete.is_none());
    report.verdict = report.verdict_of_findings();
}

/// Drop the suppressed findings and add an `unused-suppression` warning for every named rule
/// that suppressed nothing. `complete`: the findings come from a search that ran to its end;
/// after one that stopped early the warning says that the finding may lie in the part not
/// searched. The result is sorted by (span, rule code).
pub fn apply(
    program: &Program,
    file: &SourceFile,
    findings: Vec<Finding>,
    complete: bool,
) -> Vec<Finding> {
    // used[s][k]: rule k of suppression s suppressed something.
    let mut used: Vec<Vec<bool>> = program
        .suppressions
        .iter()
        .map(|s| vec![false; s.rules.len()])
        .collect();
    let mut kept = Vec::with_capacity(findings.len());
    for mut f in findings {
        crate::headline::name_statement(file, &mut f);
        let line = file.line_of(f.span);
        let mut suppressed = false;
        for (si, s) in program.suppressions.iter().enumerate() {
            if s.target_line != line {
                continue;
            }
            for (ki, name) in s.rules.iter().enumerate() {
                if rules::find(name).is_some_and(|r| r == f.rule) {
                    used[si][ki] = true;
                    suppressed = true;
                }
            }
        }
        if !suppressed {
            kept.push(f);
        }
    }
    for (si, s) in program.suppressions.iter().enumerate() {
        for (ki, name) in s.rules.iter().enumerate() {
            if used[si][ki] {
                continue;
            }
            let (message, help) = match rules::find(name) {
                Some(r) if complete => (
                    format!(
                        "unused suppression: no `{}` finding on line {}",
                        r.name, s.target_line
                    ),
                    "remove it, or move it to the statement the finding points at".to_string(),
                ),
                Some(r) => (
                    format!(
                        "unused suppression, as far as the search went: no `{}` finding on line \
                         {} in the interleavings it covered (it stopped early)",
                        r.name, s.target_line
                    ),
                    "`phasecheck verify --exhaustive` searches every interleaving and tells \
                     whether it is stale"
                        .to_string(),
                ),
                None => (
                    format!("`{name}` is not a phasecheck rule, so this suppresses nothing"),
                    match did_you_mean(name) {
                        Some(r) => format!("did you mean `{}`?", r.name),
                        None => "`phasecheck rules` lists the rule names".to_string(),
                    },
                ),
            };
            kept.push(super::finding(
                &unused_suppression::RULE,
                s.span,
                message,
                Vec::new(),
                Some(help),
            ));
        }
    }
    kept.sort_by(|a, b| (a.span, a.rule.code).cmp(&(b.span, b.rule.code)));
    kept
}
