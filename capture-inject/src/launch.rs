//! Reading a launch out of the driver function's parameter structure
//! (`cuLaunchKernel_params` and friends, generated_cuda_meta.h), and a tensor map out of
//! `cuTensorMapEncodeTiled_params`. Pure pointer reading: the tests build the structures.

use crate::ffi;
use capture::format::{Launch, Param, to_hex};
use capture::tensor_map::{self, Encoded};
use std::ffi::c_void;

/// Which launch function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    LaunchKernel,
    LaunchCooperativeKernel,
    LaunchKernelEx,
}

impl Api {
    pub fn of_cbid(cbid: u32) -> Option<Api> {
        Some(match cbid {
            ffi::CBID_LAUNCH_KERNEL | ffi::CBID_LAUNCH_KERNEL_PTSZ => Api::LaunchKernel,
            ffi::CBID_LAUNCH_COOPERATIVE_KERNEL | ffi::CBID_LAUNCH_COOPERATIVE_KERNEL_PTSZ => {
                Api::LaunchCooperativeKernel
            }
            ffi::CBID_LAUNCH_KERNEL_EX | ffi::CBID_LAUNCH_KERNEL_EX_PTSZ => Api::LaunchKernelEx,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Api::LaunchKernel => "cuLaunchKernel",
            Api::LaunchCooperativeKernel => "cuLaunchCooperativeKernel",
            Api::LaunchKernelEx => "cuLaunchKernelEx",
        }
    }
}

/// `cuLaunchKernel_params` (`cuLaunchCooperativeKernel_params` is the same without `extra`).
#[repr(C)]
pub struct LaunchKernelParams {
    pub f: *mut c_void,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem_bytes: u32,
    pub stream: *mut c_void,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// `cuLaunchKernelEx_params`.
#[repr(C)]
pub struct LaunchKernelExParams {
    pub config: *const LaunchConfig,
    pub f: *mut c_void,
    pub kernel_params: *mut *mut c_void,
    pub extra: *mut *mut c_void,
}

/// `CUlaunchConfig`.
#[repr(C)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem_bytes: u32,
    pub stream: *mut c_void,
    pub attrs: *const LaunchAttribute,
    pub num_attrs: u32,
}

/// `CUlaunchAttribute`: an id, padding to 8 bytes, and a 64-byte value union.
#[repr(C)]
pub struct LaunchAttribute {
    pub id: u32,
    pub pad: [u8; 4],
    pub value: [u32; 16],
}

/// `cuTensorMapEncodeTiled_params`.
#[repr(C)]
pub struct EncodeTiledParams {
    pub tensor_map: *mut u8,
    pub data_type: u32,
    pub rank: u32,
    pub global_address: *mut c_void,
    pub global_dim: *const u64,
    pub global_strides: *const u64,
    pub box_dim: *const u32,
    pub element_strides: *const u32,
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
}

/// Offset and size of a kernel's parameter `i` (`cuFuncGetParamInfo`); `None` past the last.
pub type ParamInfo<'a> = &'a dyn Fn(usize) -> Option<(usize, usize)>;

/// The launched function.
///
/// # Safety
/// `params` points to the parameter structure of `api`.
pub unsafe fn function_of(api: Api, params: *const c_void) -> *mut c_void {
    if params.is_null() {
        return std::ptr::null_mut();
    }
    unsafe {
        match api {
            Api::LaunchKernel | Api::LaunchCooperativeKernel => {
                (*(params as *const LaunchKernelParams)).f
            }
            Api::LaunchKernelEx => (*(params as *const LaunchKernelExParams)).f,
        }
    }
}

/// The launch that `params` (the structure of `api`) describes.
///
/// # Safety
/// `params` points to the parameter structure of `api`, with its pointers valid (as during the
/// driver call); `info` describes the launched function.
pub unsafe fn launch_from(
    api: Api,
    params: *const c_void,
    index: u32,
    kernel: String,
    info: ParamInfo,
    required_cluster: Option<[u32; 3]>,
    encoded: &[Encoded],
) -> Launch {
    let mut l = Launch {
        index,
        kernel,
        api: api.name().to_string(),
        grid: [0; 3],
        block: [0; 3],
        cluster: required_cluster,
        dynamic_shared: 0,
        params: Vec::new(),
    };
    if params.is_null() {
        return l;
    }
    let (kernel_params, extra) = unsafe {
        match api {
            Api::LaunchKernel | Api::LaunchCooperativeKernel => {
                let p = &*(params as *const LaunchKernelParams);
                l.grid = p.grid;
                l.block = p.block;
                l.dynamic_shared = p.shared_mem_bytes;
                // The cooperative structure ends before `extra`.
                let extra = if api == Api::LaunchKernel {
                    p.extra
                } else {
                    std::ptr::null_mut()
                };
                (p.kernel_params, extra)
            }
            Api::LaunchKernelEx => {
                let p = &*(params as *const LaunchKernelExParams);
                if let Some(c) = p.config.as_ref() {
                    l.grid = c.grid;
                    l.block = c.block;
                    l.dynamic_shared = c.shared_mem_bytes;
                    if !c.attrs.is_null() {
                        for k in 0..c.num_attrs as usize {
                            let a = &*c.attrs.add(k);
                            if a.id == ffi::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION {
                                l.cluster = Some([a.value[0], a.value[1], a.value[2]]);
                            }
                        }
                    }
                }
                (p.kernel_params, p.extra)
            }
        }
    };
    let buffer = unsafe { extra_buffer(extra) };
    // cuFuncGetParamInfo's offsets are those of the parameter space (the first parameter of a
    // kernel on an H100 is at 112, measured); the `extra` buffer starts with the first.
    let base = info(0).map_or(0, |(off, _)| off);
    let mut i = 0usize;
    while let Some((off, size)) = info(i) {
        let bytes: Vec<u8> = if !kernel_params.is_null() {
            let p = unsafe { *kernel_params.add(i) } as *const u8;
            if p.is_null() {
                Vec::new()
            } else {
                unsafe { std::slice::from_raw_parts(p, size) }.to_vec()
            }
        } else if let Some(buf) = buffer {
            let at = off.saturating_sub(base);
            buf.get(at..at + size)
                .map(<[u8]>::to_vec)
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        l.params.push(Param {
            offset: off as u64,
            size: size as u64,
            tensor_maps: tensor_map::find(&bytes, encoded, false),
            bytes: to_hex(&bytes),
        });
        i += 1;
        if i > 4096 {
            break;
        }
    }
    l
}

/// `extra`'s argument buffer (`CU_LAUNCH_PARAM_BUFFER_POINTER` with `..._SIZE`).
///
/// # Safety
/// `extra` is null or a `CU_LAUNCH_PARAM_END`-terminated list as the driver takes it.
unsafe fn extra_buffer<'a>(extra: *mut *mut c_void) -> Option<&'a [u8]> {
    if extra.is_null() {
        return None;
    }
    let (mut ptr, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
    let mut k = 0usize;
    loop {
        let key = unsafe { *extra.add(k) } as usize;
        match key {
            0 => break,
            1 => ptr = unsafe { *extra.add(k + 1) } as *const u8,
            2 => size = unsafe { (*extra.add(k + 1) as *const usize).as_ref() }.copied(),
            _ => return None,
        }
        k += 2;
        if k > 64 {
            return None;
        }
    }
    match (ptr.is_null(), size) {
        (false, Some(n)) => Some(unsafe { std::slice::from_raw_parts(ptr, n) }),
        _ => None,
    }
}

/// The arguments and result of a `cuTensorMapEncodeTiled` call that returned success.
///
/// # Safety
/// `params` points to its `cuTensorMapEncodeTiled_params`, with valid pointers.
pub unsafe fn tensor_map_encode(params: *const c_void) -> Option<Encoded> {
    let p = unsafe { (params as *const EncodeTiledParams).as_ref()? };
    let rank = p.rank as usize;
    if p.tensor_map.is_null() || !(1..=5).contains(&rank) {
        return None;
    }
    let read64 = |ptr: *const u64, n: usize| -> Vec<u64> {
        if ptr.is_null() {
            Vec::new()
        } else {
            unsafe { std::slice::from_raw_parts(ptr, n) }.to_vec()
        }
    };
    let read32 = |ptr: *const u32, n: usize| -> Vec<u32> {
        if ptr.is_null() {
            Vec::new()
        } else {
            unsafe { std::slice::from_raw_parts(ptr, n) }.to_vec()
        }
    };
    let mut bytes = [0u8; 128];
    bytes.copy_from_slice(unsafe { std::slice::from_raw_parts(p.tensor_map, 128) });
    Some(Encoded {
        data_type: p.data_type,
        rank: p.rank,
        global_dims: read64(p.global_dim, rank),
        global_strides: read64(p.global_strides, rank - 1),
        box_dims: read32(p.box_dim, rank),
        element_strides: read32(p.element_strides, rank),
        interleave: p.interleave,
        swizzle: p.swizzle,
        bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info_of(params: &'static [(usize, usize)]) -> impl Fn(usize) -> Option<(usize, usize)> {
        move |i| params.get(i).copied()
    }

    #[test]
    fn launch_kernel_reads_dims_and_each_parameter() {
        let mut map = [0u8; 128];
        for (i, b) in map.iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut tiles = 4i32;
        let mut out = 0xdead_beef_u64;
        let mut args: [*mut c_void; 3] = [
            map.as_mut_ptr().cast(),
            (&mut tiles as *mut i32).cast(),
            (&mut out as *mut u64).cast(),
        ];
        let p = LaunchKernelParams {
            f: std::ptr::null_mut(),
            grid: [3, 2, 1],
            block: [64, 1, 1],
            shared_mem_bytes: 1024,
            stream: std::ptr::null_mut(),
            kernel_params: args.as_mut_ptr(),
            extra: std::ptr::null_mut(),
        };
        let info = info_of(&[(0, 128), (128, 4), (136, 8)]);
        let enc = Encoded {
            data_type: 7,
            rank: 2,
            global_dims: vec![32, 256],
            global_strides: vec![128],
            box_dims: vec![32, 32],
            element_strides: vec![1, 1],
            interleave: 0,
            swizzle: 0,
            bytes: map,
        };
        let l = unsafe {
            launch_from(
                Api::LaunchKernel,
                (&p as *const LaunchKernelParams).cast(),
                5,
                "k".into(),
                &info,
                None,
                std::slice::from_ref(&enc),
            )
        };
        assert_eq!(
            (l.index, l.grid, l.block, l.dynamic_shared),
            (5, [3, 2, 1], [64, 1, 1], 1024)
        );
        assert_eq!(l.cluster, None);
        assert_eq!(l.params.len(), 3);
        assert_eq!(l.params[1].bytes, "04000000");
        assert_eq!(l.params[2].bytes, "efbeadde00000000");
        assert_eq!((l.params[2].offset, l.params[2].size), (136, 8));
        let m = &l.params[0].tensor_maps;
        assert_eq!(m.len(), 1);
        assert_eq!((m[0].offset, m[0].box_bytes), (0, Some(4096)));
        assert!(l.params[1].tensor_maps.is_empty());
    }

    #[test]
    fn launch_kernel_ex_reads_the_cluster_attribute_and_extra_buffer() {
        let mut attrs = [
            LaunchAttribute {
                id: 2,
                pad: [0; 4],
                value: [1; 16],
            },
            LaunchAttribute {
                id: ffi::LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                pad: [0; 4],
                value: [0; 16],
            },
        ];
        attrs[1].value[..3].copy_from_slice(&[2, 1, 1]);
        let cfg = LaunchConfig {
            grid: [4, 1, 1],
            block: [128, 1, 1],
            shared_mem_bytes: 0,
            stream: std::ptr::null_mut(),
            attrs: attrs.as_ptr(),
            num_attrs: 2,
        };
        let mut buf = [7u8, 0, 0, 0, 9, 0, 0, 0];
        let mut size = buf.len();
        let mut extra: [*mut c_void; 5] = [
            std::ptr::without_provenance_mut(1),
            buf.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(2),
            (&mut size as *mut usize).cast(),
            std::ptr::null_mut(),
        ];
        let p = LaunchKernelExParams {
            config: &cfg,
            f: std::ptr::null_mut(),
            kernel_params: std::ptr::null_mut(),
            extra: extra.as_mut_ptr(),
        };
        let info = info_of(&[(112, 4), (116, 4)]);
        let l = unsafe {
            launch_from(
                Api::LaunchKernelEx,
                (&p as *const LaunchKernelExParams).cast(),
                0,
                "k".into(),
                &info,
                Some([1, 1, 1]),
                &[],
            )
        };
        assert_eq!(
            l.cluster,
            Some([2, 1, 1]),
            "the attribute wins over __cluster_dims__"
        );
        assert_eq!((l.grid, l.block), ([4, 1, 1], [128, 1, 1]));
        assert_eq!(l.params[0].bytes, "07000000");
        assert_eq!(l.params[1].bytes, "09000000");
    }

    #[test]
    fn encode_tiled_keeps_the_arguments_and_the_written_bytes() {
        let mut map = [0u8; 128];
        map[0] = 0x5a;
        let dims = [64u64, 128, 4];
        let strides = [128u64, 16384];
        let boxd = [64u32, 32, 1];
        let es = [1u32, 1, 1];
        let p = EncodeTiledParams {
            tensor_map: map.as_mut_ptr(),
            data_type: 9,
            rank: 3,
            global_address: std::ptr::null_mut(),
            global_dim: dims.as_ptr(),
            global_strides: strides.as_ptr(),
            box_dim: boxd.as_ptr(),
            element_strides: es.as_ptr(),
            interleave: 0,
            swizzle: 3,
            l2_promotion: 2,
            oob_fill: 0,
        };
        let e = unsafe { tensor_map_encode((&p as *const EncodeTiledParams).cast()).unwrap() };
        assert_eq!(e.global_strides, vec![128, 16384]);
        assert_eq!(e.box_dims, vec![64, 32, 1]);
        assert_eq!(e.bytes[0], 0x5a);
        assert_eq!(e.at(64).box_bytes, Some(64 * 32 * 2));
    }

    #[test]
    fn layouts_match_the_c_headers() {
        use std::mem::{offset_of, size_of};
        assert_eq!(offset_of!(ffi::CallbackData, function_params), 16);
        assert_eq!(offset_of!(ffi::CallbackData, symbol_name), 32);
        assert_eq!(offset_of!(ffi::CallbackData, correlation_id), 64);
        assert_eq!(offset_of!(LaunchKernelParams, stream), 40);
        assert_eq!(offset_of!(LaunchKernelParams, extra), 56);
        assert_eq!(offset_of!(LaunchConfig, stream), 32);
        assert_eq!(offset_of!(LaunchConfig, num_attrs), 48);
        assert_eq!(size_of::<LaunchAttribute>(), 72);
        assert_eq!(offset_of!(EncodeTiledParams, interleave), 56);
        assert_eq!(offset_of!(EncodeTiledParams, oob_fill), 68);
    }
}
