//! Helpers of the CLI tests that run the binary on machines with or without Rust (the GPU
//! machine runs prebuilt test binaries: `PHASECHECK` names the binary, `PHASECHECK_ROOT` the
//! repository). Each test file uses a part of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn root() -> PathBuf {
    std::env::var_os("PHASECHECK_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

pub fn bin() -> Command {
    Command::new(
        std::env::var_os("PHASECHECK")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_phasecheck"))),
    )
}

/// Standard output and standard error, one after the other.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Compiles instrument/tests/fixtures/handoff.cu with `NVCC` (default `nvcc`) and `args` into
/// `out`.
pub fn nvcc_handoff(args: &[&str], out: &Path) {
    let nvcc = std::env::var("NVCC").unwrap_or_else(|_| "nvcc".into());
    let st = Command::new(&nvcc)
        .args(["-arch=sm_90a", "-O3", "-lineinfo"])
        .args(args)
        .arg(root().join("instrument/tests/fixtures/handoff.cu"))
        .arg("-o")
        .arg(out)
        .status()
        .expect("nvcc runs");
    assert!(st.success(), "nvcc {args:?} failed");
}
