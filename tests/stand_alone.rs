//! The repository stands alone (issue #14): nothing a reader meets in it points to files
//! outside the clone, and the language reference (docs/language.md) covers the language the
//! parser knows, with examples that hold.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Paths into the material the project was started from, which is not part of the repository
/// (written in two halves so that this file does not name them itself).
const OUTSIDE: [[&str; 2]; 3] = [["shared", "/spec"], ["shared", "/bench"], ["..", "/shared"]];

/// Tracked files (plus untracked ones that are not ignored, so a new file is checked before it
/// is committed), relative to the repository root; outside a git checkout, every file below
/// the root except `target/` and `.git/`.
fn repository_files() -> Vec<PathBuf> {
    let git = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output();
    match git {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| PathBuf::from(String::from_utf8_lossy(p).into_owned()))
            .collect(),
        _ => {
            let mut files = Vec::new();
            walk(Path::new("."), &mut files);
            files
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, out),
            Ok(t) if t.is_file() => out.push(path.strip_prefix(".").unwrap_or(&path).to_path_buf()),
            _ => {}
        }
    }
}

#[test]
fn no_tracked_file_points_outside_the_repository() {
    let files = repository_files();
    assert!(
        files.iter().any(|f| f == Path::new("docs/language.md")),
        "run from the repository root (cargo test does)"
    );
    let outside: Vec<String> = OUTSIDE.iter().map(|[a, b]| format!("{a}{b}")).collect();
    let mut hits = Vec::new();
    for file in &files {
        // Deleted but not yet committed files are still listed by git.
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        // Text files only: binary files cannot point anywhere a reader follows.
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        for (i, line) in text.lines().enumerate() {
            if let Some(p) = outside.iter().find(|p| line.contains(p.as_str())) {
                hits.push(format!(
                    "{}:{}: `{p}`: {}",
                    file.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "files point outside the repository (use docs/language.md, docs/semantics.md, bench/):\n{}",
        hits.join("\n")
    );
}

/// The words of the parser's keyword tables (`protocols/src/parser/keywords.rs`): every string
/// literal there that is a lowercase word.
fn parser_keywords() -> BTreeSet<String> {
    let path = "protocols/src/parser/keywords.rs";
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut words = BTreeSet::new();
    for (i, part) in text.split('"').enumerate() {
        // Odd parts are inside quotes.
        if i % 2 == 1
            && !part.is_empty()
            && part.chars().all(|c| c.is_ascii_lowercase() || c == '_')
        {
            words.insert(part.to_string());
        }
    }
    for sure in ["protocol", "wait", "tma", "arrive_expect_tx", "fence"] {
        assert!(
            words.contains(sure),
            "{path} no longer lists `{sure}`: update parser_keywords() to its new layout"
        );
    }
    words
}

/// Every whole word that appears inside a `code span` or a fenced code block of `text`.
fn code_words(text: &str) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    let mut add = |code: &str| {
        for w in code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if !w.is_empty() {
                words.insert(w.to_string());
            }
        }
    };
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            add(line);
        } else {
            for (i, part) in line.split('`').enumerate() {
                if i % 2 == 1 {
                    add(part);
                }
            }
        }
    }
    words
}

#[test]
fn every_keyword_of_the_parser_is_documented() {
    let doc = std::fs::read_to_string("docs/language.md").expect("docs/language.md exists");
    let documented = code_words(&doc);
    let missing: Vec<String> = parser_keywords()
        .into_iter()
        .filter(|k| !documented.contains(k))
        .collect();
    assert!(
        missing.is_empty(),
        "keywords of the parser that docs/language.md never shows as code: {}",
        missing.join(", ")
    );
}

/// The fenced `phase` blocks of a Markdown file that are whole files (they start with
/// `protocol`, after comments), with the line each starts on.
fn phase_examples(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match current.take() {
            Some(block) if fence => out.push(block),
            Some((start, mut body)) => {
                body.push_str(line);
                body.push('\n');
                current = Some((start, body));
            }
            None if fence && line.trim_start().trim_start_matches('`') == "phase" => {
                current = Some((i + 2, String::new()));
            }
            None => {}
        }
    }
    out.retain(|(_, body)| {
        body.lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"))
            .is_some_and(|l| l.starts_with("protocol "))
    });
    out
}

#[test]
fn the_examples_of_the_language_reference_hold() {
    let doc = std::fs::read_to_string("docs/language.md").expect("docs/language.md exists");
    let examples = phase_examples(&doc);
    assert!(
        examples.len() >= 3,
        "docs/language.md should have its whole-file examples in ```phase blocks"
    );
    let dir = std::env::temp_dir().join(format!("phasecheck-language-md-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let mut failures = Vec::new();
    for (line, body) in &examples {
        let file = dir.join(format!("language_md_line_{line}.phase"));
        std::fs::write(&file, body).expect("write example");
        assert!(
            body.lines().any(|l| l.trim_start().starts_with("expect ")),
            "docs/language.md:{line}: a whole-file example should state its verdict with `expect`"
        );
        let out = Command::new(env!("CARGO_BIN_EXE_phasecheck"))
            .arg("test")
            .arg(&file)
            .output()
            .expect("phasecheck runs");
        if !out.status.success() {
            failures.push(format!(
                "docs/language.md:{line}:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "examples of docs/language.md that do not hold:\n{}",
        failures.join("\n")
    );
}
