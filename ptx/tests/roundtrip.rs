//! The round trip: corpus protocols lowered to CUDA (`phasecheck lower`), made plain
//! (`fixtures/roundtrip/plain.py`), compiled to PTX with nvcc (`fixtures/roundtrip/regen.sh`;
//! the PTX is committed, CI has no nvcc) and extracted back must get the corpus file's verdict.

use checker::{CheckOptions, Severity, Verdict};
use protocols::SourceFile;
use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

struct Case {
    phase: String,
    block: u32,
    cluster: u32,
    slow: bool,
}

fn cases() -> Vec<Case> {
    let m = root().join("ptx/tests/fixtures/roundtrip/manifest.txt");
    std::fs::read_to_string(&m)
        .expect("the manifest")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            Case {
                phase: w[0].to_string(),
                block: w[1].parse().expect("a block size"),
                cluster: w[2].parse().expect("a cluster size"),
                slow: w.get(3) == Some(&"slow"),
            }
        })
        .collect()
}

fn verdict(file: &SourceFile) -> (Verdict, BTreeSet<&'static str>) {
    let program = protocols::load(file, &[])
        .unwrap_or_else(|e| panic!("{}: {e:?}\n{}", file.name, file.text));
    let r = checker::check(&program, &CheckOptions::default());
    let rules = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.class.as_str())
        .collect();
    (r.verdict, rules)
}

fn run(slow: bool) {
    let mut failures = Vec::new();
    let mut n = 0;
    for c in cases().into_iter().filter(|c| slow || !c.slow) {
        n += 1;
        let path = root().join("corpus").join(&c.phase);
        let text = std::fs::read_to_string(&path).expect("the corpus file");
        let (want, want_classes) = verdict(&SourceFile::new(c.phase.clone(), text));
        let ptx_name = format!(
            "{}.ptx",
            c.phase.replace('/', "__").trim_end_matches(".phase")
        );
        let ptx_text =
            std::fs::read_to_string(root().join("ptx/tests/fixtures/roundtrip").join(&ptx_name))
                .expect("the committed PTX");
        let opts = ptx::Options {
            block: Some([c.block, 1, 1]),
            cluster: Some(c.cluster),
            args: [("0", 1), ("1", 0), ("2", 1), ("3", 1_000_000)]
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            ..Default::default()
        };
        let ex = match ptx::extract(&ptx_text, &ptx_name, &opts) {
            Ok(ex) => ex,
            Err(e) => {
                failures.push(format!("{ptx_name}: {e}"));
                continue;
            }
        };
        let (got, got_classes) = verdict(&SourceFile::new(ptx_name.clone(), &ex.text));
        // Same verdict, and a hazard of the same class (deadlock, ub, race).
        if got != want || (want == Verdict::Hazard && got_classes.is_disjoint(&want_classes)) {
            failures.push(format!(
                "{}: {want:?} {want_classes:?}, extracted from {ptx_name}: {got:?} {got_classes:?}",
                c.phase
            ));
        }
    }
    assert!(n > 0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lowered_corpus_files_keep_their_verdict() {
    run(false);
}

/// With the CUTLASS models (a few seconds each in release, minutes in debug).
#[test]
#[ignore]
fn lowered_corpus_files_keep_their_verdict_all() {
    run(true);
}
