//! Rendered load errors (miette, no colour) for malformed inputs, snapshot-tested with insta.
//!
//! Each fixture in tests/fixtures/bad/ names on its first line the error codes it must
//! produce (and, optionally, `--param NAME=VALUE` to load it with).

use protocols::{SourceFile, load, render};

fn first_line_codes(text: &str) -> Vec<String> {
    let first = text.lines().next().unwrap_or("");
    first
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            w.len() == 5 && w.starts_with('E') && w[1..].bytes().all(|b| b.is_ascii_digit())
        })
        .map(str::to_string)
        .collect()
}

fn first_line_params(text: &str) -> Vec<(String, i64)> {
    let first = text.lines().next().unwrap_or("");
    let mut out = Vec::new();
    let mut words = first.split_whitespace();
    while let Some(w) = words.next() {
        if w == "--param"
            && let Some((n, v)) = words
                .next()
                .and_then(|nv| nv.trim_end_matches(')').split_once('='))
        {
            out.push((n.to_string(), v.parse().expect("integer")));
        }
    }
    out
}

#[test]
fn malformed_inputs_render() {
    let mut count = 0;
    insta::glob!("fixtures/bad/*.phase", |path| {
        count += 1;
        let text = std::fs::read_to_string(path).expect("readable");
        let name = format!(
            "bad/{}",
            path.file_name().expect("file name").to_string_lossy()
        );
        let file = SourceFile::new(name, &text);
        let errors = match load(&file, &first_line_params(&text)) {
            Ok(_) => panic!("{} loaded without errors", path.display()),
            Err(e) => e,
        };
        for code in first_line_codes(&text) {
            assert!(
                errors.errors.iter().any(|e| e.code == code),
                "{}: expected {code}, got {:?}",
                path.display(),
                errors.errors
            );
        }
        insta::assert_snapshot!(render::render(&errors, false, 100));
    });
    assert!(count >= 25, "only {count} malformed fixtures");
}

#[test]
fn many_errors_are_all_reported() {
    let text = include_str!("fixtures/bad/many_errors.phase");
    let errors = load(&SourceFile::new("many.phase", text), &[]).expect_err("bad file");
    let codes: Vec<_> = errors.errors.iter().map(|e| e.code).collect();
    for want in [
        "E0305", "E0206", "E0203", "E0212", "E0101", "E0201", "E0503",
    ] {
        assert!(codes.contains(&want), "missing {want} in {codes:?}");
    }
    assert!(errors.errors.len() >= 8, "{codes:?}");
}
