//! Helpers shared by the fixture tests (`fixtures.rs`, `real_kernels.rs`): the committed
//! fixtures' folder, reading one, and finding a source line by a marker.

#![allow(dead_code)]

use std::path::PathBuf;

pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn read(name: &str) -> String {
    std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The 1-based line of fixture `cu` that contains `marker`.
pub fn line_of(cu: &str, marker: &str) -> u32 {
    read(cu)
        .lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("no `{marker}` in {cu}")) as u32
        + 1
}
