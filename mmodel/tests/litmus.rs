//! The litmus suite (`mmodel/litmus/*.phase`): on every file, the oracle's verdict equals the
//! file's `expect` line, and so does the checker's race verdict, except on the files listed
//! in `mmodel/litmus/known-gaps.txt`, where the checker must still disagree (a listed gap
//! that starts agreeing fails the test, so the list can only shrink).

mod common;

use common::checker_race;
use std::path::{Path, PathBuf};

const DIR: &str = "litmus";
const GAPS: &str = "litmus/known-gaps.txt";

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(DIR)
        .expect("mmodel/litmus is readable (cargo test runs in the crate directory)")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "phase"))
        .collect();
    v.sort();
    v
}

/// `FILE  # why` lines of the known-gaps list.
fn known_gaps() -> Vec<String> {
    std::fs::read_to_string(GAPS)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn load(path: &Path) -> protocols::ir::Program {
    let text = std::fs::read_to_string(path).expect("readable");
    let file = protocols::SourceFile::new(path.display().to_string(), text);
    match protocols::load(&file, &[]) {
        Ok(p) => p,
        Err(e) => panic!(
            "{} does not load: {:?}",
            path.display(),
            e.errors.iter().map(|x| &x.message).collect::<Vec<_>>()
        ),
    }
}

/// The file's single `expect ok` / `expect race` line: true for race.
fn expected_race(path: &Path, p: &protocols::ir::Program) -> bool {
    use protocols::ir::ExpectVerdict;
    let lines: Vec<_> = p.expects.iter().collect();
    assert!(
        lines.len() == 1 && lines[0].overrides.is_empty() && lines[0].rule.is_none(),
        "{}: a litmus file has exactly one `expect ok` or `expect race` line",
        path.display()
    );
    match lines[0].verdict {
        ExpectVerdict::Ok => false,
        ExpectVerdict::Race => true,
        v => panic!("{}: expect {v:?} is not a race question", path.display()),
    }
}

#[test]
fn litmus_suite_oracle_and_checker_agree() {
    let gaps = known_gaps();
    let files = files();
    assert!(files.len() >= 40, "the suite has {} files", files.len());
    let mut problems = Vec::new();
    let mut listed_seen = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let p = load(path);
        let expect = expected_race(path, &p);
        let word = |r: bool| if r { "race" } else { "ok" };
        match mmodel::decide(&p) {
            Err(e) => problems.push(format!("{name}: the oracle refuses it: {e}")),
            Ok(v) if v.deadlock => problems.push(format!("{name}: the oracle finds a deadlock")),
            Ok(v) if v.any_race() != expect => problems.push(format!(
                "{name}: expect {}, the oracle says {} {:?} {:?}",
                word(expect),
                word(v.any_race()),
                v.race,
                v.flag_race
            )),
            Ok(_) => {}
        }
        let gap = gaps.contains(&name);
        if gap {
            listed_seen.push(name.clone());
        }
        match checker_race(&p, 3_000_000) {
            Err(e) => problems.push(format!("{name}: {e}")),
            Ok(c) if (c == expect) == gap => problems.push(if gap {
                format!("{name}: listed in {GAPS}, but the checker now agrees: remove it")
            } else {
                format!(
                    "{name}: expect {}, the checker says {}",
                    word(expect),
                    word(c)
                )
            }),
            Ok(_) => {}
        }
    }
    for g in &gaps {
        if !listed_seen.contains(g) {
            problems.push(format!("{GAPS}: `{g}` names no litmus file"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
