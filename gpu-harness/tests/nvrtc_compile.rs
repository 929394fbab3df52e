//! Every lowered fixture compiles with NVRTC for sm_90 (no GPU needed). Skipped, with a
//! message, when no NVRTC is installed (CI). Set CUDA_HOME to point at a toolkit.

use gpu_harness::cuda_env;
use gpu_harness::lower::{LowerOptions, Mode, lower};
use protocols::SourceFile;
use std::path::Path;

fn phase_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            phase_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "phase") {
            out.push(p);
        }
    }
}

/// The harness's fixtures and probes, and the project's corpus.
fn fixtures() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v = Vec::new();
    phase_files(&root.join("tests/fixtures"), &mut v);
    phase_files(&root.join("probes"), &mut v);
    phase_files(&root.join("../corpus"), &mut v);
    v.sort();
    v
}

#[test]
fn lowered_fixtures_compile_with_nvrtc() {
    let Some((nvrtc, includes)) = cuda_env::probe_nvrtc() else {
        eprintln!("skipped: no NVRTC found (set CUDA_HOME to a CUDA toolkit to run this test)");
        return;
    };
    let mut failures = Vec::new();
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let file = SourceFile::new(path.display().to_string(), text);
        let program = protocols::load(&file, &[]).expect("fixture loads");
        for mode in [Mode::Fuzz, Mode::Confirm] {
            let lowered = match lower(
                &program,
                Some(&file),
                &LowerOptions {
                    mode,
                    ..Default::default()
                },
            ) {
                Ok(l) => l,
                // Documented limits (docs/gpu.md): several kernels, waits on a peer's barrier.
                Err(e) if e.message.contains("kernels") || e.message.contains("peer block") => {
                    continue;
                }
                Err(e) => {
                    failures.push(format!("{}: lowering failed: {e}", path.display()));
                    continue;
                }
            };
            eprintln!("compiling {} ({mode:?})", path.display());
            match gpu_harness::run::compile_ptx(
                &nvrtc,
                &includes,
                &lowered.source,
                &lowered.kernel_name,
            ) {
                Err(e) => failures.push(format!("{} ({mode:?}): {e}", path.display())),
                Ok(ptx) => {
                    if let Some(err) = assemble(&ptx, &lowered.kernel_name) {
                        failures.push(format!("{} ({mode:?}): ptxas: {err}", path.display()));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Assemble the PTX with `ptxas -arch=sm_90` when a ptxas is found beside the toolkit (so that
/// instruction forms the driver's JIT would reject fail here). None: assembled or no ptxas.
fn assemble(ptx: &str, name: &str) -> Option<String> {
    let ptxas = cuda_env::toolkit_roots()
        .into_iter()
        .map(|r| r.join("bin/ptxas"))
        .find(|p| p.is_file())?;
    let dir = std::env::temp_dir().join(format!("phasecheck-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join(format!("{name}.ptx"));
    std::fs::write(&file, ptx).ok()?;
    let out = std::process::Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(dir.join(format!("{name}.cubin")))
        .arg(&file)
        .output()
        .ok()?;
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}
