//! Shared by the lowering tests: a fixture of `tests/fixtures`, lowered.

use gpu_harness::lower::{LowerOptions, Lowered, lower};
use protocols::SourceFile;
use std::path::Path;

/// Load `tests/fixtures/NAME` and lower it with `options`.
pub fn lower_fixture(name: &str, options: &LowerOptions) -> Lowered {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    let file = SourceFile::new(format!("tests/fixtures/{name}"), text);
    let program = protocols::load(&file, &[]).expect("fixture loads");
    lower(&program, Some(&file), options).expect("lowers")
}
