//! The CUDA injection library of `phasecheck capture` (docs/ptx.md, "Launch capture").
//!
//! The CUDA driver loads the library named by `CUDA_INJECTION64_PATH` when it initializes and
//! calls its `InitializeInjection`. That subscribes to CUPTI's driver-API callbacks for the
//! launch functions (`cuLaunchKernel`, `cuLaunchKernelEx`, `cuLaunchCooperativeKernel` and
//! their per-thread-stream forms; the runtime API's launches go through them) and for
//! `cuTensorMapEncodeTiled`, and appends one line per launch to the file named by
//! `PHASECHECK_CAPTURE_FILE` (format: crate `capture`). CUPTI and the driver are opened with
//! `dlopen` at run time (`PHASECHECK_CUPTI` names libcupti), so nothing links against CUDA
//! and the crate builds and tests without it.
//!
//! The structures read here are the driver's and CUPTI's C ABI (cuda.h, cupti_callbacks.h,
//! generated_cuda_meta.h of CUDA 12.4 and later); [`ffi`] writes down the few that are used.

pub mod ffi;
mod launch;
mod swap;

pub use launch::{Api, ParamInfo, launch_from, tensor_map_encode};

use capture::tensor_map::Encoded;
use std::ffi::{CStr, c_char, c_void};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

struct State {
    out: Mutex<Out>,
    cuda: ffi::Cuda,
    /// Kept loaded for the life of the process (the callback lives in it).
    _cupti: libloading::Library,
}

struct Out {
    file: std::fs::File,
    next: u32,
    encoded: Vec<Encoded>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// `phasecheck fuzz --app`'s mode ([`swap`]): set instead of [`STATE`].
struct Fuzzing {
    swap: swap::Swap,
    cuda: ffi::Cuda,
    _cupti: libloading::Library,
}

static FUZZING: OnceLock<Fuzzing> = OnceLock::new();

fn warn(msg: &str) {
    eprintln!("phasecheck capture: {msg}");
}

/// Called by the CUDA driver at initialization (CUDA_INJECTION64_PATH). Returns 1 when the
/// callbacks are installed.
#[unsafe(no_mangle)]
pub extern "C" fn InitializeInjection() -> i32 {
    match std::panic::catch_unwind(init) {
        Ok(Ok(())) => 1,
        Ok(Err(e)) => {
            warn(&e);
            0
        }
        Err(_) => {
            warn("internal error while starting");
            0
        }
    }
}

fn init() -> Result<(), String> {
    if STATE.get().is_some() || FUZZING.get().is_some() {
        return Ok(());
    }
    if let Some(swap) = swap::Swap::from_env()? {
        let cupti = ffi::open_cupti()?;
        let api = ffi::Cupti::from(&cupti)?;
        let f = Fuzzing {
            swap,
            cuda: ffi::Cuda::open()?,
            _cupti: cupti,
        };
        if FUZZING.set(f).is_err() {
            return Ok(());
        }
        return api.subscribe(callback);
    }
    let path = std::env::var("PHASECHECK_CAPTURE_FILE")
        .map_err(|_| "PHASECHECK_CAPTURE_FILE is not set: nothing is recorded".to_string())?;
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .map_err(|e| format!("cannot open {path}: {e}"))?;
    let cupti = ffi::open_cupti()?;
    let cuda = ffi::Cuda::open()?;
    let api = ffi::Cupti::from(&cupti)?;
    let state = State {
        out: Mutex::new(Out {
            file,
            next: 0,
            encoded: Vec::new(),
        }),
        cuda,
        _cupti: cupti,
    };
    if STATE.set(state).is_err() {
        return Ok(());
    }
    api.subscribe(callback)
}

unsafe extern "C" fn callback(_user: *mut c_void, domain: u32, cbid: u32, data: *const c_void) {
    // Never unwind into the driver.
    let _ = std::panic::catch_unwind(|| {
        if domain != ffi::DOMAIN_DRIVER_API || data.is_null() {
            return;
        }
        // SAFETY: CUPTI passes a `CUpti_CallbackData` for the driver-API domain.
        let data = unsafe { &*(data as *const ffi::CallbackData) };
        if let Some(f) = FUZZING.get() {
            unsafe { on_fuzz_call(f, cbid, data) };
            return;
        }
        let Some(state) = STATE.get() else { return };
        unsafe { on_call(state, cbid, data) };
    });
}

/// # Safety
/// `data` is CUPTI's callback data for driver function `cbid`.
unsafe fn on_fuzz_call(f: &Fuzzing, cbid: u32, data: &ffi::CallbackData) {
    let Some(api) = Api::of_cbid(cbid) else {
        return;
    };
    if data.site == ffi::SITE_ENTER {
        let name = if data.symbol_name.is_null() {
            None
        } else {
            // SAFETY: a NUL-terminated name owned by the driver for the call.
            Some(unsafe { cstr(data.symbol_name) })
        };
        let name = name.or_else(|| {
            let handle = unsafe { launch::function_of(api, data.function_params) };
            f.cuda.func_name(f.cuda.function(handle))
        });
        if let Some(name) = name {
            // SAFETY: the parameters of driver function `api`, during the call.
            unsafe {
                f.swap
                    .on_enter(api, data.function_params, &name, data.context as usize)
            };
        }
    } else if data.site == ffi::SITE_EXIT {
        // SAFETY: the call has returned; its result is readable.
        let result = unsafe { (data.return_value as *const u32).as_ref() }.copied();
        unsafe { f.swap.on_exit(api, data.function_params, result) };
    }
}

/// # Safety
/// `data` is CUPTI's callback data for driver function `cbid`.
unsafe fn on_call(state: &State, cbid: u32, data: &ffi::CallbackData) {
    if let Some(api) = Api::of_cbid(cbid) {
        if data.site != ffi::SITE_ENTER {
            return;
        }
        let name = if data.symbol_name.is_null() {
            None
        } else {
            // SAFETY: a NUL-terminated name owned by the driver for the call.
            Some(unsafe { cstr(data.symbol_name) })
        };
        let cuda = &state.cuda;
        let handle = unsafe { launch::function_of(api, data.function_params) };
        let func = cuda.function(handle);
        if std::env::var_os("PHASECHECK_CAPTURE_DEBUG").is_some() {
            warn(&format!(
                "launch {:?}: handle {handle:?} -> function {func:?}, cuFuncGetParamInfo(0) = {:?}",
                data.symbol_name,
                cuda.param_info_error(func)
            ));
        }
        let name = name
            .or_else(|| cuda.func_name(func))
            .unwrap_or_else(|| "?".into());
        let info = |i: usize| cuda.param_info(func, i);
        let required = cuda.required_cluster(func);
        let mut out = match state.out.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        let index = out.next;
        out.next += 1;
        // SAFETY: the parameters of driver function `api`, valid during the call.
        let launch = unsafe {
            launch_from(
                api,
                data.function_params,
                index,
                name,
                &info,
                required,
                &out.encoded,
            )
        };
        let line = capture::format::line(&launch);
        let file = &mut out.file;
        if writeln!(file, "{line}").and_then(|_| file.flush()).is_err() {
            warn("cannot write the capture file");
        }
    } else if cbid == ffi::CBID_TENSOR_MAP_ENCODE_TILED && data.site == ffi::SITE_EXIT {
        if std::env::var_os("PHASECHECK_CAPTURE_DEBUG").is_some() {
            warn("cuTensorMapEncodeTiled returned");
        }
        // SAFETY: the call has returned; its result and its written map are readable.
        let ok = unsafe { (data.return_value as *const u32).as_ref() } == Some(&0);
        if !ok {
            return;
        }
        if let Some(e) = unsafe { tensor_map_encode(data.function_params) } {
            let mut out = match state.out.lock() {
                Ok(o) => o,
                Err(p) => p.into_inner(),
            };
            out.encoded.push(e);
        }
    }
}

/// # Safety
/// `p` is a NUL-terminated string.
unsafe fn cstr(p: *const c_char) -> String {
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}
