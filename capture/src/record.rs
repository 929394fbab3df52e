//! `phasecheck capture [-o FILE] -- PROGRAM ARGS`: run the program with the injection library
//! (`capture-inject`, through `CUDA_INJECTION64_PATH`) and keep the launches it records.

use crate::format::{self, Header, VERSION};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The injection library's file name, as cargo builds it.
pub const INJECT_LIB: &str = "libcapture_inject.so";

/// The injection library: `PHASECHECK_INJECT`, else next to the running executable (where
/// `cargo build -p capture-inject` puts it beside `phasecheck`).
pub fn find_inject() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("PHASECHECK_INJECT") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find phasecheck itself: {e}"))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let mut tried = Vec::new();
    for d in [dir.to_path_buf(), dir.join("deps")] {
        let p = d.join(INJECT_LIB);
        if p.is_file() {
            return Ok(p);
        }
        tried.push(p.display().to_string());
    }
    Err(format!(
        "the injection library {INJECT_LIB} is not beside phasecheck (looked at {}): build it \
         with `cargo build --release -p capture-inject`, or set PHASECHECK_INJECT to its path",
        tried.join(", ")
    ))
}

/// libcupti: `PHASECHECK_CUPTI`, else the usual toolkit folders; `None`: left to `dlopen`'s
/// search (LD_LIBRARY_PATH).
pub fn find_cupti() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("PHASECHECK_CUPTI") {
        return Some(PathBuf::from(p));
    }
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut versioned: Vec<PathBuf> = std::fs::read_dir("/usr/local")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("cuda-"))
        })
        .collect();
    versioned.sort();
    versioned.reverse();
    roots.extend(versioned);
    for r in roots {
        for sub in ["extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib"] {
            let p = r.join(sub).join("libcupti.so");
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// What a capture run left.
#[derive(Debug)]
pub struct Outcome {
    /// The program's exit code (`None`: killed by a signal).
    pub exit_code: Option<i32>,
    pub launches: usize,
    /// Launches per kernel, in order of first launch.
    pub kernels: Vec<(String, usize)>,
}

/// Run `command` with the capture on, writing the launches to `out`.
pub fn run(command: &[String], out: &Path) -> Result<Outcome, String> {
    let (program, args) = command.split_first().ok_or_else(|| {
        "no program to run: `phasecheck capture -o FILE -- ./app ARGS`".to_string()
    })?;
    let inject = find_inject()?;
    let inject = inject
        .canonicalize()
        .map_err(|e| format!("{}: {e}", inject.display()))?;
    let header = Header {
        phasecheck_capture: VERSION,
        command: command.to_vec(),
    };
    std::fs::write(out, format!("{}\n", format::line(&header)))
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let out_abs = out
        .canonicalize()
        .map_err(|e| format!("{}: {e}", out.display()))?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("CUDA_INJECTION64_PATH", &inject)
        .env("PHASECHECK_CAPTURE_FILE", &out_abs);
    if let Some(c) = find_cupti() {
        cmd.env("PHASECHECK_CUPTI", c);
    }
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let text =
        std::fs::read_to_string(out).map_err(|e| format!("cannot read {}: {e}", out.display()))?;
    let cap = format::parse(&text, &out.display().to_string())?;
    let mut kernels: Vec<(String, usize)> = Vec::new();
    for l in &cap.launches {
        match kernels.iter_mut().find(|(k, _)| *k == l.kernel) {
            Some((_, n)) => *n += 1,
            None => kernels.push((l.kernel.clone(), 1)),
        }
    }
    Ok(Outcome {
        exit_code: status.code(),
        launches: cap.launches.len(),
        kernels,
    })
}
