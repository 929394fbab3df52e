//! Finding CUDA: the driver library (`libcuda.so.1`), NVRTC (`libnvrtc.so.*` and its builtins)
//! and the headers (libcu++ for `cuda::barrier` / `cuda::pipeline`).
//!
//! cudarc loads its libraries by name and panics when none loads. So we look first, in a fixed
//! order, and load what we found by full path; cudarc's later `dlopen` by soname then finds the
//! library already loaded. When something is missing the error names it and every place looked.
//! Order: `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda`, versioned `/usr/local/cuda-*` (newest
//! first), `/opt/cuda`; then `$LD_LIBRARY_PATH` and the standard library directories (the
//! driver usually lives there, or in `/usr/local/nvidia/lib64` in containers).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What was found.
#[derive(Clone, Debug)]
pub struct CudaEnv {
    /// The toolkit root the headers came from, if any.
    pub root: Option<PathBuf>,
    pub libcuda: PathBuf,
    pub nvrtc: PathBuf,
    /// Directories to pass to NVRTC with `-I` (toolkit headers, libcu++).
    pub include_dirs: Vec<PathBuf>,
    /// False when no `cuda/barrier` header was found (kernels using `barrier`/`pipeline` will
    /// not compile).
    pub has_libcuxx: bool,
}

/// Something required is missing. `Display` names it and lists where it was looked for.
#[derive(Clone, Debug)]
pub struct EnvError {
    pub what: String,
    pub looked_in: Vec<String>,
    pub hint: String,
}

impl std::fmt::Display for EnvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", self.what)?;
        if !self.looked_in.is_empty() {
            writeln!(f, "looked in:")?;
            for l in &self.looked_in {
                writeln!(f, "  {l}")?;
            }
        }
        write!(f, "help: {}", self.hint)
    }
}

impl std::error::Error for EnvError {}

/// Candidate toolkit roots, in search order (existing directories only).
pub fn toolkit_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            roots.push(PathBuf::from(v));
        }
    }
    roots.push(PathBuf::from("/usr/local/cuda"));
    let mut versioned: Vec<PathBuf> = std::fs::read_dir("/usr/local")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("cuda-"))
                })
                .collect()
        })
        .unwrap_or_default();
    versioned.sort_by_key(|p| std::cmp::Reverse(version_key(p)));
    roots.extend(versioned);
    roots.push(PathBuf::from("/opt/cuda"));
    let mut seen = Vec::new();
    roots.retain(|r| {
        if seen.contains(r) {
            false
        } else {
            seen.push(r.clone());
            true
        }
    });
    roots
}

fn version_key(p: &Path) -> Vec<u32> {
    p.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("cuda-"))
        .map(|v| v.split('.').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

fn lib_dirs_of(root: &Path) -> Vec<PathBuf> {
    [
        "lib64",
        "targets/x86_64-linux/lib",
        "targets/sbsa-linux/lib",
        "lib",
    ]
    .iter()
    .map(|d| root.join(d))
    .collect()
}

/// `$LD_LIBRARY_PATH` entries and the standard library directories.
fn system_lib_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .collect();
    for d in [
        "/usr/local/nvidia/lib64",
        "/usr/local/nvidia/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs
}

/// The first file in `dirs` whose name is one of `names` or starts with one of `prefixes`
/// (highest version first for prefixes).
fn find_in(dirs: &[PathBuf], names: &[&str], prefixes: &[&str]) -> Option<PathBuf> {
    for d in dirs {
        for n in names {
            let p = d.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
        let mut hits: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| prefixes.iter().any(|pre| n.starts_with(pre)))
                    })
                    .collect()
            })
            .unwrap_or_default();
        hits.sort();
        if let Some(h) = hits.pop() {
            return Some(h);
        }
    }
    None
}

/// Look for CUDA without loading anything.
pub fn probe() -> Result<CudaEnv, EnvError> {
    let roots = toolkit_roots();
    let mut toolkit_dirs = Vec::new();
    for r in &roots {
        toolkit_dirs.extend(lib_dirs_of(r));
    }
    let system = system_lib_dirs();
    let mut all_dirs = toolkit_dirs.clone();
    all_dirs.extend(system.iter().cloned());

    let nvrtc = find_in(
        &all_dirs,
        &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"],
        &["libnvrtc.so."],
    );
    // The driver is normally in a system directory; the toolkit's lib64/stubs holds only a stub.
    let mut driver_dirs = system.clone();
    driver_dirs.extend(toolkit_dirs.iter().cloned());
    let libcuda = find_in(&driver_dirs, &["libcuda.so.1"], &[]);
    let (nvrtc, libcuda) = match (nvrtc, libcuda) {
        (Some(n), Some(c)) => (n, c),
        (n, c) => {
            let mut what = Vec::new();
            let mut hint = Vec::new();
            if c.is_none() {
                what.push(
                    "the CUDA driver library (libcuda.so.1) was not found: is there an NVIDIA \
                     GPU and driver on this machine?",
                );
                hint.push(
                    "install the NVIDIA driver, or add the directory holding libcuda.so.1 to \
                     LD_LIBRARY_PATH",
                );
            }
            if n.is_none() {
                what.push(
                    "NVRTC (libnvrtc.so) was not found: the GPU harness compiles kernels with it",
                );
                hint.push(
                    "install the CUDA toolkit (or its nvrtc component) under /usr/local/cuda, or \
                     set CUDA_HOME (or CUDA_PATH) to the toolkit's root",
                );
            }
            return Err(EnvError {
                what: what.join("\n"),
                looked_in: all_dirs.iter().map(|d| d.display().to_string()).collect(),
                hint: hint.join("; "),
            });
        }
    };

    // Headers: prefer the root NVRTC came from.
    let nvrtc_root = nvrtc
        .parent()
        .and_then(|d| {
            roots
                .iter()
                .find(|r| lib_dirs_of(r).iter().any(|l| l == d))
                .cloned()
        })
        .or_else(|| {
            // e.g. a pip layout `.../lib/libnvrtc.so.13` beside `.../include`
            nvrtc
                .parent()
                .and_then(|d| d.parent())
                .map(Path::to_path_buf)
        });
    let mut header_roots: Vec<PathBuf> = nvrtc_root.iter().cloned().collect();
    header_roots.extend(roots.iter().cloned());
    let mut include_dirs = Vec::new();
    let mut root = None;
    for r in &header_roots {
        let inc = r.join("include");
        if inc.join("cuda_runtime.h").is_file() || inc.join("cuda.h").is_file() {
            root = Some(r.clone());
            for d in [
                inc.join("cccl"),
                inc.clone(),
                r.join("targets/x86_64-linux/include"),
            ] {
                if d.is_dir() && !include_dirs.contains(&d) {
                    include_dirs.push(d);
                }
            }
            break;
        }
    }
    let has_libcuxx = include_dirs
        .iter()
        .any(|d| d.join("cuda/barrier").is_file());
    Ok(CudaEnv {
        root,
        libcuda,
        nvrtc,
        include_dirs,
        has_libcuxx,
    })
}

/// Only NVRTC and headers (for compiling without a GPU, e.g. in tests).
pub fn probe_nvrtc() -> Option<(PathBuf, Vec<PathBuf>)> {
    match probe() {
        Ok(env) => Some((env.nvrtc, env.include_dirs)),
        Err(_) => {
            // No driver is fine for compiling; look again for NVRTC alone.
            let roots = toolkit_roots();
            let mut dirs = Vec::new();
            for r in &roots {
                dirs.extend(lib_dirs_of(r));
            }
            dirs.extend(system_lib_dirs());
            let nvrtc = find_in(
                &dirs,
                &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"],
                &["libnvrtc.so."],
            )?;
            let root = nvrtc.parent()?.parent()?.to_path_buf();
            let mut inc = Vec::new();
            for r in std::iter::once(root).chain(roots) {
                let i = r.join("include");
                if i.join("cuda.h").is_file() || i.join("cuda_runtime.h").is_file() {
                    if i.join("cccl").is_dir() {
                        inc.push(i.join("cccl"));
                    }
                    inc.push(i);
                    break;
                }
            }
            Some((nvrtc, inc))
        }
    }
}

static LOADED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Load the libraries found by full path (once each per process), so that cudarc's loader
/// finds them by soname. NVRTC's builtins library beside it is loaded too (NVRTC opens it by
/// name, and would not find it outside the loader's search path).
pub fn preload(nvrtc: &Path, libcuda: Option<&Path>) -> Result<(), String> {
    let mut paths = Vec::new();
    if let Some(b) = nvrtc
        .parent()
        .and_then(|dir| find_in(&[dir.to_path_buf()], &[], &["libnvrtc-builtins.so."]))
    {
        paths.push(b);
    }
    paths.push(nvrtc.to_path_buf());
    if let Some(c) = libcuda {
        paths.push(c.to_path_buf());
    }
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    for p in paths {
        if loaded.contains(&p) {
            continue;
        }
        // SAFETY: loading a shared library runs its initialisers; these are NVIDIA's CUDA
        // libraries, found above, which is what cudarc would load anyway.
        match unsafe { libloading::Library::new(&p) } {
            Ok(lib) => std::mem::forget(lib), // stays loaded for the life of the process
            Err(e) => return Err(format!("cannot load {}: {e}", p.display())),
        }
        loaded.push(p);
    }
    Ok(())
}
