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
    // (file, variant, kernel source, kernel name): lowered first, compiled on every core after
    // (about 260 compilations of 1-2 s each; one after the other they take minutes).
    let mut jobs = Vec::new();
    for path in fixtures() {
        let text = std::fs::read_to_string(&path).expect("read fixture");
        let file = SourceFile::new(path.display().to_string(), text);
        let program = protocols::load(&file, &[]).expect("fixture loads");
        // The proxy-window kernel (confirm's replay of a `missing-proxy-fence` race) too,
        // for the files that bulk-store.
        let window = file.text.contains("tma_store");
        for (mode, proxy_window) in [
            (Mode::Fuzz, false),
            (Mode::Confirm, false),
            (Mode::Fuzz, true),
        ] {
            if proxy_window && !window {
                continue;
            }
            let label = if proxy_window {
                "proxy window".to_string()
            } else {
                format!("{mode:?}")
            };
            match lower(
                &program,
                Some(&file),
                &LowerOptions {
                    mode,
                    proxy_window,
                    ..Default::default()
                },
            ) {
                Ok(l) => jobs.push((path.display().to_string(), label, l.source, l.kernel_name)),
                // Documented limits (docs/gpu.md): several kernels, waits on a peer's barrier.
                Err(e) if e.message.contains("kernels") || e.message.contains("peer block") => {}
                Err(e) => failures.push(format!("{}: lowering failed: {e}", path.display())),
            }
        }
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(4, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((path, mode, source, name)) = jobs.get(i) else {
                        break;
                    };
                    eprintln!("compiling {path} ({mode})");
                    let failure =
                        match gpu_harness::run::compile_ptx(&nvrtc, &includes, source, name) {
                            Err(e) => Some(format!("{path} ({mode}): {e}")),
                            Ok(ptx) => assemble(&ptx, i)
                                .map(|err| format!("{path} ({mode}): ptxas: {err}")),
                        };
                    if let Some(f) = failure {
                        found.lock().expect("no panics while held").push(f);
                    }
                }
            });
        }
    });
    failures.extend(found.into_inner().expect("no panics while held"));
    eprintln!("{} kernels compiled on {workers} threads", jobs.len());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Assemble the PTX with `ptxas -arch=sm_90` when a ptxas is found beside the toolkit (so that
/// instruction forms the driver's JIT would reject fail here). None: assembled or no ptxas.
/// `job` names the files (the variants of a file share a kernel name).
fn assemble(ptx: &str, job: usize) -> Option<String> {
    let ptxas = cuda_env::toolkit_roots()
        .into_iter()
        .map(|r| r.join("bin/ptxas"))
        .find(|p| p.is_file())?;
    let dir = std::env::temp_dir().join(format!("phasecheck-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let file = dir.join(format!("job{job}.ptx"));
    std::fs::write(&file, ptx).ok()?;
    let out = std::process::Command::new(ptxas)
        .args(["-arch=sm_90", "-o"])
        .arg(dir.join(format!("job{job}.cubin")))
        .arg(&file)
        .output()
        .ok()?;
    (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
}
