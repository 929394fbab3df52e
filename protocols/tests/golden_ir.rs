//! Golden IR: the readable dump (protocols::ir_display) of a few files, snapshot-tested.

use protocols::ir_display::dump;
use protocols::{SourceFile, load};

fn golden(rel: &str, overrides: &[(String, i64)]) -> String {
    let path = format!("{}/tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let file = SourceFile::new(rel, text);
    match load(&file, overrides) {
        Ok(p) => dump(&p, Some(&file)),
        Err(e) => panic!("{rel}: {:#?}", e.errors),
    }
}

#[test]
fn double_buffer() {
    insta::assert_snapshot!(golden("lang/double_buffer.phase", &[]));
}

#[test]
fn double_buffer_with_override() {
    insta::assert_snapshot!(golden("lang/double_buffer.phase", &[("K".into(), 64)]));
}

#[test]
fn multicast_pair() {
    insta::assert_snapshot!(golden("lang/multicast_pair.phase", &[]));
}

#[test]
fn domains() {
    insta::assert_snapshot!(golden("lang/domains.phase", &[]));
}

#[test]
fn all_statements() {
    insta::assert_snapshot!(golden("all_statements.phase", &[]));
}

#[test]
fn suppressions() {
    insta::assert_snapshot!(golden("suppressions.phase", &[]));
}

/// The JSON form of the IR (serde) is stable too: the other back ends may consume it.
#[test]
fn multicast_pair_json() {
    let rel = "lang/multicast_pair.phase";
    let path = format!("{}/tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    let p = load(&SourceFile::new(rel, text), &[]).expect("loads");
    insta::assert_json_snapshot!(p);
}
