//! The few CUPTI and driver functions and structures the capture uses, written down from their
//! C headers (cupti_callbacks.h, cupti_driver_cbid.h, cuda.h; CUDA 12.4 and later) and opened
//! with `dlopen`.

use libloading::Library;
use std::ffi::{c_char, c_void};

/// `CUPTI_CB_DOMAIN_DRIVER_API`.
pub const DOMAIN_DRIVER_API: u32 = 1;
/// `CUPTI_API_ENTER`, `CUPTI_API_EXIT`.
pub const SITE_ENTER: u32 = 0;
pub const SITE_EXIT: u32 = 1;

/// `CUPTI_DRIVER_TRACE_CBID_*` (cupti_driver_cbid.h).
pub const CBID_LAUNCH_KERNEL: u32 = 307;
pub const CBID_LAUNCH_KERNEL_PTSZ: u32 = 442;
pub const CBID_LAUNCH_COOPERATIVE_KERNEL: u32 = 477;
pub const CBID_LAUNCH_COOPERATIVE_KERNEL_PTSZ: u32 = 478;
pub const CBID_LAUNCH_KERNEL_EX: u32 = 652;
pub const CBID_LAUNCH_KERNEL_EX_PTSZ: u32 = 653;
pub const CBID_TENSOR_MAP_ENCODE_TILED: u32 = 697;

/// `CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH` (then HEIGHT, DEPTH).
pub const FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH: u32 = 11;
/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
pub const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;

/// `CUpti_CallbackData`.
#[repr(C)]
pub struct CallbackData {
    pub site: u32,
    pub function_name: *const c_char,
    pub function_params: *const c_void,
    pub return_value: *mut c_void,
    pub symbol_name: *const c_char,
    pub context: *mut c_void,
    pub context_uid: u32,
    pub correlation_data: *mut u64,
    pub correlation_id: u32,
}

type CallbackFn = unsafe extern "C" fn(*mut c_void, u32, u32, *const c_void);
type SubscribeFn = unsafe extern "C" fn(*mut *mut c_void, CallbackFn, *mut c_void) -> u32;
type EnableCallbackFn = unsafe extern "C" fn(u32, *mut c_void, u32, u32) -> u32;
type ParamInfoFn = unsafe extern "C" fn(*mut c_void, usize, *mut usize, *mut usize) -> u32;
type FuncAttributeFn = unsafe extern "C" fn(*mut i32, u32, *mut c_void) -> u32;
type FuncNameFn = unsafe extern "C" fn(*mut *const c_char, *mut c_void) -> u32;
type KernelGetFunctionFn = unsafe extern "C" fn(*mut *mut c_void, *mut c_void) -> u32;

/// libcupti: `PHASECHECK_CUPTI` (set by `phasecheck capture`), else by soname.
pub fn open_cupti() -> Result<Library, String> {
    let mut tried = Vec::new();
    let named = std::env::var("PHASECHECK_CUPTI").ok();
    for name in
        named
            .iter()
            .map(String::as_str)
            .chain(["libcupti.so", "libcupti.so.13", "libcupti.so.12"])
    {
        // SAFETY: loading CUPTI runs its initializers, which expect nothing of us.
        match unsafe { Library::new(name) } {
            Ok(l) => return Ok(l),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(format!(
        "cannot load CUPTI (libcupti.so; set PHASECHECK_CUPTI to its path): {}",
        tried.join("; ")
    ))
}

pub struct Cupti {
    subscribe: SubscribeFn,
    enable: EnableCallbackFn,
}

impl Cupti {
    pub fn from(lib: &Library) -> Result<Self, String> {
        // SAFETY: the signatures of cupti_callbacks.h.
        unsafe {
            Ok(Cupti {
                subscribe: *lib
                    .get::<SubscribeFn>(b"cuptiSubscribe\0")
                    .map_err(|e| format!("CUPTI has no cuptiSubscribe: {e}"))?,
                enable: *lib
                    .get::<EnableCallbackFn>(b"cuptiEnableCallback\0")
                    .map_err(|e| format!("CUPTI has no cuptiEnableCallback: {e}"))?,
            })
        }
    }

    /// Subscribe `cb` to the launch functions and `cuTensorMapEncodeTiled`.
    pub fn subscribe(&self, cb: CallbackFn) -> Result<(), String> {
        let mut sub: *mut c_void = std::ptr::null_mut();
        // SAFETY: C calls with valid pointers.
        let r = unsafe { (self.subscribe)(&mut sub, cb, std::ptr::null_mut()) };
        if r != 0 {
            return Err(format!(
                "cuptiSubscribe failed (CUPTI error {r}; another tool may hold the subscription)"
            ));
        }
        for cbid in [
            CBID_LAUNCH_KERNEL,
            CBID_LAUNCH_KERNEL_PTSZ,
            CBID_LAUNCH_COOPERATIVE_KERNEL,
            CBID_LAUNCH_COOPERATIVE_KERNEL_PTSZ,
            CBID_LAUNCH_KERNEL_EX,
            CBID_LAUNCH_KERNEL_EX_PTSZ,
            CBID_TENSOR_MAP_ENCODE_TILED,
        ] {
            let r = unsafe { (self.enable)(1, sub, DOMAIN_DRIVER_API, cbid) };
            if r != 0 {
                return Err(format!(
                    "cuptiEnableCallback({cbid}) failed (CUPTI error {r})"
                ));
            }
        }
        Ok(())
    }
}

/// The driver functions the capture asks about a kernel.
pub struct Cuda {
    param_info: Option<ParamInfoFn>,
    attribute: Option<FuncAttributeFn>,
    name: Option<FuncNameFn>,
    kernel_function: Option<KernelGetFunctionFn>,
    _lib: Library,
}

impl Cuda {
    pub fn open() -> Result<Self, String> {
        // SAFETY: the driver is loaded already (it loaded us); this takes a reference.
        let lib = unsafe { Library::new("libcuda.so.1") }
            .map_err(|e| format!("cannot open libcuda.so.1: {e}"))?;
        // SAFETY: the signatures of cuda.h.
        let (param_info, attribute, name) = unsafe {
            (
                lib.get::<ParamInfoFn>(b"cuFuncGetParamInfo\0")
                    .ok()
                    .map(|f| *f),
                lib.get::<FuncAttributeFn>(b"cuFuncGetAttribute\0")
                    .ok()
                    .map(|f| *f),
                lib.get::<FuncNameFn>(b"cuFuncGetName\0").ok().map(|f| *f),
            )
        };
        // SAFETY: as above.
        let kernel_function = unsafe {
            lib.get::<KernelGetFunctionFn>(b"cuKernelGetFunction\0")
                .ok()
                .map(|f| *f)
        };
        if param_info.is_none() {
            crate::warn(
                "this driver has no cuFuncGetParamInfo (CUDA 12.4 and later): launches are \
                 recorded without their parameters",
            );
        }
        Ok(Cuda {
            param_info,
            attribute,
            name,
            kernel_function,
            _lib: lib,
        })
    }

    /// The `CUfunction` to ask about: the launch's handle may be a `CUkernel` (cuda.h,
    /// cuLaunchKernel: "a CUkernel handle ... cast to CUfunction"; the runtime API launches
    /// that way), which `cuFuncGetParamInfo` rejects; `cuKernelGetFunction` gives the
    /// function of the current context. A handle that is a function already is kept.
    pub(crate) fn function(&self, f: *mut c_void) -> *mut c_void {
        if f.is_null() || self.param_info(f, 0).is_some() {
            return f;
        }
        let Some(get) = self.kernel_function else {
            return f;
        };
        let mut func: *mut c_void = std::ptr::null_mut();
        // SAFETY: an out-pointer; the driver checks the handle.
        if unsafe { get(&mut func, f) } == 0 && !func.is_null() {
            func
        } else {
            f
        }
    }

    /// The error code of `cuFuncGetParamInfo(f, 0)` (0: success), for a diagnostic.
    pub(crate) fn param_info_error(&self, f: *mut c_void) -> Option<u32> {
        let get = self.param_info?;
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: as in `param_info`.
        Some(unsafe { get(f, 0, &mut off, &mut size) })
    }

    /// Offset and size of parameter `i`; `None` past the last.
    pub(crate) fn param_info(&self, f: *mut c_void, i: usize) -> Option<(usize, usize)> {
        let get = self.param_info?;
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: `f` is the launch's function; out-pointers are valid.
        (unsafe { get(f, i, &mut off, &mut size) } == 0).then_some((off, size))
    }

    /// The kernel's compile-time cluster dimensions (`__cluster_dims__`), if it has them.
    pub(crate) fn required_cluster(&self, f: *mut c_void) -> Option<[u32; 3]> {
        let get = self.attribute?;
        let mut dims = [0u32; 3];
        for (k, d) in dims.iter_mut().enumerate() {
            let mut v = 0i32;
            // SAFETY: as above.
            if unsafe { get(&mut v, FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH + k as u32, f) } != 0 {
                return None;
            }
            *d = v.max(0) as u32;
        }
        (dims[0] > 0).then_some(dims)
    }

    pub(crate) fn func_name(&self, f: *mut c_void) -> Option<String> {
        let get = self.name?;
        let mut p: *const c_char = std::ptr::null();
        // SAFETY: as above; the name is owned by the driver.
        (unsafe { get(&mut p, f) } == 0 && !p.is_null()).then(|| unsafe { crate::cstr(p) })
    }
}
