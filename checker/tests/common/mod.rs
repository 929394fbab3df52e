//! Helpers: load a `.phase` source string and check it with the reductions on and off
//! (symmetry and partial-order reduction together, each alone); every run must report the
//! same (rule, statement) pairs and the same verdict.

#![allow(dead_code)]

use checker::{CheckOptions, Report, Severity};
use protocols::SourceFile;
use std::collections::BTreeSet;

pub fn load(src: &str) -> protocols::ir::Program {
    let f = SourceFile::new("test.phase", src);
    match protocols::load(&f, &[]) {
        Ok(p) => p,
        Err(e) => panic!(
            "test source does not load: {:?}",
            e.errors.iter().map(|x| &x.message).collect::<Vec<_>>()
        ),
    }
}

fn keys(r: &Report) -> BTreeSet<(String, u32)> {
    r.findings
        .iter()
        .map(|f| (f.rule.name.to_string(), f.span.start))
        .collect()
}

/// Check with every combination of the reductions; assert they agree; return the fully
/// reduced run.
pub fn check(src: &str) -> Report {
    let p = load(src);
    // Exhaustive: a search that stops after its first error reports what it met first, which
    // depends on the order the reductions explore in.
    let full = CheckOptions {
        exhaustive: true,
        ..CheckOptions::default()
    };
    let on = checker::check(&p, &full);
    for (symmetry, partial_order) in [(false, false), (true, false), (false, true)] {
        let off = checker::check(
            &p,
            &CheckOptions {
                symmetry,
                partial_order,
                ..full.clone()
            },
        );
        assert_eq!(
            keys(&on),
            keys(&off),
            "the reductions changed the findings (symmetry {symmetry}, partial order {partial_order})"
        );
        assert_eq!(on.verdict, off.verdict);
    }
    on
}

pub fn rules(r: &Report) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.rule.name).collect()
}

pub fn errors(r: &Report) -> Vec<&'static str> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.name)
        .collect()
}

#[track_caller]
pub fn assert_flags(src: &str, rule: &str) -> Report {
    let r = check(src);
    assert!(
        rules(&r).contains(&rule),
        "expected `{rule}`, got {:?}\n{:#?}",
        rules(&r),
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    r
}

#[track_caller]
pub fn assert_ok(src: &str) -> Report {
    let r = check(src);
    assert!(
        errors(&r).is_empty(),
        "expected no error, got {:?}\n{:#?}",
        errors(&r),
        r.findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    assert_eq!(r.verdict, checker::Verdict::Ok);
    r
}

/// Every `.phase` file of the repository's `corpus/`, sorted.
pub fn corpus_files() -> Vec<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut files = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "phase") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}
