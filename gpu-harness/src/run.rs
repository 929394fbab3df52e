//! NVRTC compilation and kernel launches through cudarc.
//!
//! Unsafe code is confined to kernel launches (`run/launch.rs`: argument lists must match the kernel's
//! signature, which the lowering writes) and to loading libraries (`cuda_env`).

use crate::cuda_env::{self, CudaEnv, EnvError};
use crate::decode::{LaunchResult, OutLayout};
use crate::lower::Lowered;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{CompileOptions, Ptx};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod launch;
mod stuck;

use stuck::{Pinned, StuckBuffers};
pub use stuck::{StuckLaunch, StuckReadback};

/// Why a GPU step failed.
#[derive(Debug)]
pub enum RunError {
    /// CUDA (driver, NVRTC or a GPU) is missing: exit 2.
    Env(EnvError),
    /// NVRTC rejected the kernel.
    Compile { log: String },
    /// A driver call failed (including a kernel that trapped).
    Driver { what: String, error: String },
    /// A launch did not finish in time: a hardware barrier that cannot be bounded is stuck.
    /// The kernel still runs; [`Gpu::read_stuck`] reads what it wrote so far, and only the
    /// end of the process frees the GPU ([`end_process`]).
    Stuck(Box<StuckLaunch>),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Env(e) => write!(f, "{e}"),
            RunError::Compile { log } => write!(f, "NVRTC could not compile the kernel:\n{log}"),
            RunError::Driver { what, error } => {
                write!(f, "CUDA driver error while {what}: {error}")
            }
            RunError::Stuck(s) => write!(
                f,
                "the kernel did not finish within {:.1} s: a hardware barrier that cannot be \
                 bounded (syncthreads, bar.sync, barrier.cluster) is stuck",
                s.seconds
            ),
        }
    }
}

impl std::error::Error for RunError {}

fn driver(what: &str) -> impl Fn(cudarc::driver::DriverError) -> RunError + '_ {
    move |e| RunError::Driver {
        what: what.to_string(),
        error: driver_error_text(&e),
    }
}

/// `CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)`: the code and the driver's words
/// (cudarc's own Display is its Debug form).
fn driver_error_text(e: &cudarc::driver::DriverError) -> String {
    let name = format!("{:?}", e.0);
    match e.error_string() {
        Ok(words) => format!("{name} ({})", words.to_string_lossy()),
        Err(_) => name,
    }
}

thread_local! {
    /// This thread is inside [`no_panic`]: its panics are turned into errors, not printed.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f`, turning a panic (cudarc panics when a library or symbol cannot be loaded) into an
/// error naming `what`. Safe to call from several threads at once: the panic hook is wrapped
/// once (silent on threads inside `no_panic`, the previous hook elsewhere) instead of being
/// swapped per call, which would race.
fn no_panic<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, RunError> {
    static WRAP_HOOK: std::sync::Once = std::sync::Once::new();
    WRAP_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                previous(info);
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    QUIET.with(|q| q.set(false));
    r.map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        RunError::Env(EnvError {
            what: format!("{what} failed: {msg}"),
            looked_in: Vec::new(),
            hint: "check the CUDA installation (CUDA_HOME / CUDA_PATH) and the driver".into(),
        })
    })
}

/// Compile CUDA C++ to PTX with the NVRTC at `nvrtc` (no GPU needed).
pub fn compile_ptx(
    nvrtc: &std::path::Path,
    include_dirs: &[std::path::PathBuf],
    source: &str,
    name: &str,
) -> Result<String, RunError> {
    cuda_env::preload(nvrtc, None).map_err(|e| {
        RunError::Env(EnvError {
            what: e,
            looked_in: Vec::new(),
            hint: "check the NVRTC installation".into(),
        })
    })?;
    let opts = CompileOptions {
        arch: Some("sm_90"),
        include_paths: include_dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect(),
        // Line info costs nothing at run time and lets compute-sanitizer name the line of
        // the generated kernel that faulted.
        options: vec![
            "-std=c++17".into(),
            "-default-device".into(),
            "-lineinfo".into(),
        ],
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    let src = source.to_string();
    // NVRTC compiles on the calling thread and its front end can recurse deeply (libcu++
    // templates): give it a thread with a large stack.
    let res = std::thread::Builder::new()
        .name("nvrtc".into())
        .stack_size(256 << 20)
        .spawn(move || {
            no_panic("loading NVRTC", move || {
                cudarc::nvrtc::compile_ptx_with_opts(src, opts)
            })
        })
        .map_err(|e| RunError::Compile {
            log: format!("cannot start the compiler thread: {e}"),
        })?
        .join()
        .map_err(|_| RunError::Compile {
            log: "the NVRTC thread panicked".into(),
        })??;
    match res {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(cudarc::nvrtc::CompileError::CompileError { log, .. }) => Err(RunError::Compile {
            log: log.to_string_lossy().into_owned(),
        }),
        Err(e) => Err(RunError::Compile {
            log: format!("{e:?}"),
        }),
    }
}

/// End the process now, with `code`, after flushing stdout and stderr: the way to free the
/// GPU of a stuck kernel. No CUDA call can end a kernel stuck in a hardware barrier, and the
/// driver's own teardown at `exit` could wait for it; `_exit` skips that teardown, and the
/// kernel driver frees the context when the process's device files close, exactly as when a
/// parent process kills it.
pub fn end_process(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    #[cfg(unix)]
    // SAFETY: `_exit` ends the process at once; nothing of this process runs afterwards.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// A deadline for the rest of a stuck run: if [`Watchdog::claim`] has not been called within
/// `after`, a thread runs `fallback` (which prints the report without what could not be read)
/// and ends the process with `code`. Guards the read-back of a stuck launch, whose driver calls
/// should not block but might.
pub struct Watchdog {
    claimed: Arc<std::sync::atomic::AtomicBool>,
}

impl Watchdog {
    pub fn arm(after: Duration, code: i32, fallback: impl FnOnce() + Send + 'static) -> Watchdog {
        let claimed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let c = claimed.clone();
        let spawned = std::thread::Builder::new()
            .name("stuck-watchdog".into())
            .spawn(move || {
                std::thread::sleep(after);
                if !c.swap(true, std::sync::atomic::Ordering::SeqCst) {
                    fallback();
                    end_process(code);
                }
            });
        if spawned.is_err() {
            // No thread: nothing guards the read-back, which has its own deadline.
            claimed.store(false, std::sync::atomic::Ordering::SeqCst);
        }
        Watchdog { claimed }
    }

    /// Take over from the watchdog (before printing the full report). If it has already
    /// fired, it is printing the fallback and ending the process: wait for that.
    pub fn claim(self) {
        if self.claimed.swap(true, std::sync::atomic::Ordering::SeqCst) {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// An open GPU.
pub struct Gpu {
    pub env: CudaEnv,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// A non-blocking stream of our own (not cudarc's, so that it adds no event tracking)
    /// that copies a stuck launch's buffers back while the kernel runs on `stream`.
    side: cudarc::driver::sys::CUstream,
    pinned: std::sync::Mutex<Option<Pinned>>,
    /// Set when a launch did not finish in time: a kernel of this context may be stuck in a
    /// hardware collective for good. Unloading a module then waits for that kernel (the
    /// driver's module unload spins until the module's kernels are done), so from then on
    /// [`LoadedKernel`]s leak their module instead of unloading it; the process ends soon
    /// after (`end_process`), which frees everything.
    stuck: Arc<std::sync::atomic::AtomicBool>,
    pub device_name: String,
    pub ordinal: usize,
    pub multiprocessors: u32,
    pub compute_capability: (i32, i32),
}

/// A compiled, loaded kernel (several for a file with several `kernel` blocks).
pub struct LoadedKernel {
    func: CudaFunction,
    /// Every kernel of the module, in [`Lowered::kernels`] order (`func` alone for one kernel).
    funcs: Vec<CudaFunction>,
    pub ptx_bytes: usize,
    /// The context's stuck flag ([`Gpu`]'s `stuck`).
    gpu_stuck: Arc<std::sync::atomic::AtomicBool>,
}

impl Drop for LoadedKernel {
    fn drop(&mut self) {
        if self.gpu_stuck.load(std::sync::atomic::Ordering::SeqCst) {
            // A kernel of the context is stuck: the module's unload (when its last function
            // goes) would wait for it forever. One leaked reference keeps the module loaded
            // until the process ends. (Measured: `fuzz` of a stuck named barrier hung here,
            // before it printed its report, until this leak.)
            std::mem::forget(self.func.clone());
        }
    }
}

/// Settings of one launch.
#[derive(Clone, Copy, Debug)]
pub struct LaunchParams {
    pub blocks: u32,
    pub seed: u64,
    pub delay_max_ns: u32,
    /// One delay in every this many delay points (1: before every statement).
    pub delay_every: u32,
    /// Clock cycles a bounded wait spins before it counts as a hang.
    pub budget_cycles: i64,
    /// Host-side limit for one launch (a stuck hardware barrier).
    pub timeout: Duration,
}

impl Gpu {
    /// Find CUDA, load it, open device `ordinal`.
    pub fn open(ordinal: usize) -> Result<Gpu, RunError> {
        let env = cuda_env::probe().map_err(RunError::Env)?;
        cuda_env::preload(&env.nvrtc, Some(&env.libcuda)).map_err(|e| {
            RunError::Env(EnvError {
                what: e,
                looked_in: vec![
                    env.libcuda.display().to_string(),
                    env.nvrtc.display().to_string(),
                ],
                hint: "check the driver and toolkit installation".into(),
            })
        })?;
        let count =
            no_panic("loading the CUDA driver", CudaContext::device_count)?.map_err(|e| {
                RunError::Env(EnvError {
                    what: format!("the CUDA driver found no usable GPU ({e})"),
                    looked_in: vec![env.libcuda.display().to_string()],
                    hint: "run on a machine with an NVIDIA GPU (compute capability 9.0, Hopper)"
                        .into(),
                })
            })?;
        if ordinal >= count.max(0) as usize {
            return Err(RunError::Env(EnvError {
                what: format!("there is no GPU {ordinal}: the driver reports {count} device(s)"),
                looked_in: Vec::new(),
                hint: "pick a device with --device N".into(),
            }));
        }
        let ctx = no_panic("creating a CUDA context", || CudaContext::new(ordinal))?
            .map_err(driver("creating a CUDA context"))?;
        let stream = ctx.default_stream();
        let device_name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
        use cudarc::driver::sys::CUdevice_attribute as A;
        let attr = |a| ctx.attribute(a).unwrap_or(0);
        let multiprocessors = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) as u32;
        let compute_capability = (
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        );
        if compute_capability.0 < 9 {
            return Err(RunError::Env(EnvError {
                what: format!(
                    "{device_name} has compute capability {}.{}; the stress kernels use Hopper \
                     instructions (sm_90: mbarrier tx counts, cp.async.bulk, clusters)",
                    compute_capability.0, compute_capability.1
                ),
                looked_in: Vec::new(),
                hint: "run on an H100 or H200 (or a newer GPU)".into(),
            }));
        }
        let side = Self::side_stream(&ctx)?;
        Ok(Gpu {
            env,
            ctx,
            stream,
            side,
            pinned: std::sync::Mutex::new(None),
            stuck: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            device_name,
            ordinal,
            multiprocessors,
            compute_capability,
        })
    }

    /// Compile with NVRTC and load `kernel_name`.
    pub fn load(&self, source: &str, kernel_name: &str) -> Result<LoadedKernel, RunError> {
        let ptx = compile_ptx(&self.env.nvrtc, &self.env.include_dirs, source, kernel_name)?;
        let ptx_bytes = ptx.len();
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(driver("loading the compiled module (PTX JIT)"))?;
        let func = module
            .load_function(kernel_name)
            .map_err(driver("finding the kernel in the module"))?;
        Ok(LoadedKernel {
            funcs: vec![func.clone()],
            func,
            ptx_bytes,
            gpu_stuck: self.stuck.clone(),
        })
    }

    /// Compile a lowered file with NVRTC and load every one of its kernels.
    pub fn load_lowered(&self, lowered: &Lowered) -> Result<LoadedKernel, RunError> {
        let ptx = compile_ptx(
            &self.env.nvrtc,
            &self.env.include_dirs,
            &lowered.source,
            &lowered.kernel_name,
        )?;
        let ptx_bytes = ptx.len();
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(driver("loading the compiled module (PTX JIT)"))?;
        let funcs = lowered
            .kernels
            .iter()
            .map(|k| {
                module
                    .load_function(&k.function)
                    .map_err(driver("finding the kernel in the module"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LoadedKernel {
            func: funcs[0].clone(),
            funcs,
            ptx_bytes,
            gpu_stuck: self.stuck.clone(),
        })
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        use cudarc::driver::sys;
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        if let Some(p) = self
            .pinned
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            // SAFETY: allocated by cuMemAllocHost in `ensure_pinned`; no copy is in flight
            // (a stuck run ends the process instead of dropping the GPU).
            let _ = unsafe { sys::cuMemFreeHost(p.ptr) };
        }
        // SAFETY: our own stream, created in `open`, with nothing in flight.
        let _ = unsafe { sys::cuStreamDestroy_v2(self.side) };
    }
}

#[derive(Clone, Copy, Debug)]
pub struct BaselineResult {
    pub seconds: f64,
    pub hangs: u64,
    pub races: u64,
    pub threads_done: u64,
    pub phases: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_inside_no_panic_is_an_error_on_every_thread() {
        let errors: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|i| {
                    scope.spawn(move || {
                        no_panic("loading a library", || -> u32 {
                            panic!("library {i} not found")
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| match h.join().expect("no_panic caught it") {
                    Err(RunError::Env(e)) => e.what,
                    other => panic!("expected an environment error, got {other:?}"),
                })
                .collect()
        });
        for (i, e) in errors.iter().enumerate() {
            assert_eq!(
                e,
                &format!("loading a library failed: library {i} not found")
            );
        }
        // Outside no_panic the thread is not quiet, and a value comes back as is.
        assert!(!QUIET.with(|q| q.get()));
        assert_eq!(no_panic("x", || 7).ok(), Some(7));
    }
}
