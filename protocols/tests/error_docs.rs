//! Every load-error code is in the registry (protocols/src/codes.rs) and documented in
//! docs/errors.md with an example that really produces it.

use protocols::codes::{ERROR_CODES, lookup};
use protocols::{SourceFile, load};

const DOCS: &str = include_str!("../../docs/errors.md");

/// `E0xxx` string literals in the crate's sources.
fn codes_in_sources() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src"
    ))];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("src readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("utf-8 source");
                for (i, _) in text.match_indices("\"E0") {
                    let lit = &text[i + 1..(i + 6).min(text.len())];
                    if lit.len() == 5 && lit[1..].bytes().all(|b| b.is_ascii_digit()) {
                        out.push(lit.to_string());
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// (code, example text) for each `## E0xxx` section with a ```phase block.
fn documented_examples() -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut lines = DOCS.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("## ") {
            out.push((rest[..5].to_string(), Vec::new()));
        } else if line == "```phase" {
            let mut block = String::new();
            for l in lines.by_ref() {
                if l == "```" {
                    break;
                }
                block.push_str(l);
                block.push('\n');
            }
            out.last_mut()
                .expect("example under a heading")
                .1
                .push(block);
        }
    }
    out
}

#[test]
fn every_code_in_the_sources_is_registered() {
    for code in codes_in_sources() {
        assert!(
            lookup(&code).is_some(),
            "{code} is used but not in codes.rs"
        );
    }
    let mut sorted: Vec<_> = ERROR_CODES.iter().map(|c| c.code).collect();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ERROR_CODES.len(), "duplicate codes");
}

#[test]
fn every_registered_code_is_documented_with_a_working_example() {
    let docs = documented_examples();
    for entry in ERROR_CODES {
        let (_, examples) = docs
            .iter()
            .find(|(c, _)| c == entry.code)
            .unwrap_or_else(|| panic!("{} has no section in docs/errors.md", entry.code));
        if entry.code == "E0009" || entry.code == "E0004" {
            // Described in words: see too_many_errors_are_capped and
            // non_utf8_bytes_are_e0004 (a ```phase example is UTF-8 text).
            continue;
        }
        assert!(!examples.is_empty(), "{} has no example", entry.code);
        for text in examples {
            let overrides: Vec<(String, i64)> = text
                .lines()
                .next()
                .and_then(|l| l.split("--param ").nth(1))
                .and_then(|nv| nv.split_whitespace().next())
                .and_then(|nv| nv.split_once('='))
                .map(|(n, v)| vec![(n.to_string(), v.parse().expect("integer"))])
                .unwrap_or_default();
            let errors = load(&SourceFile::new("doc.phase", text), &overrides)
                .expect_err("documented example must fail");
            assert!(
                errors.errors.iter().any(|e| e.code == entry.code),
                "example for {} gives {:?}",
                entry.code,
                errors.errors
            );
        }
    }
}

#[test]
fn too_many_errors_are_capped() {
    let text = "$".repeat(101);
    let errors = load(&SourceFile::new("d.phase", &text), &[]).expect_err("bad");
    assert_eq!(errors.errors.len(), 101);
    let last = errors.errors.last().expect("one");
    assert_eq!(last.code, "E0009");
    assert!(last.message.contains("more not shown"), "{}", last.message);
}

#[test]
fn non_utf8_bytes_are_e0004() {
    let errors = SourceFile::from_bytes("d.phase", b"protocol p\nblock 32 # \xff\n".to_vec())
        .expect_err("not UTF-8");
    assert_eq!(errors.errors[0].code, "E0004");
    assert!(DOCS.contains("## E0004"));
}
