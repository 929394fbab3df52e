"""The CUDA driver calls `phasecheck.triton.fuzz` makes, through ctypes on libcuda.

Only what swapping a kernel for its instrumented copy needs: load PTX in the current context
(the driver's JIT), look up a kernel and the copy's globals, write a launch's seed on the
launch's stream, poll the stream, read the stuck records back. Tests replace `CudaDriver` with a
fake of the same methods.
"""

from __future__ import annotations

import ctypes
import time
from typing import List, Optional, Tuple

from ._native import GpuError, NoGpuError

_NOT_READY = 600
_JIT_ERROR_LOG_BUFFER = 5
_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_STREAM_NON_BLOCKING = 1


def driver_ptx_version(driver_version: int) -> Optional[str]:
    """The newest PTX ISA version the driver of `cuDriverGetVersion` can JIT (the PTX ISA's
    release notes: CUDA 11.x -> 7.x, 12.0-12.5 -> 8.0-8.5, 12.6 -> 8.5, 12.8 -> 8.7, 12.9 ->
    8.8, 13.x -> 9.x); `None` for a driver this table does not know (nothing is lowered)."""
    major, minor = driver_version // 1000, (driver_version % 1000) // 10
    if major == 11:
        return f"7.{minor}"
    if major == 12:
        return {6: "8.5", 7: "8.6", 8: "8.7", 9: "8.8"}.get(minor, f"8.{minor}" if minor <= 5 else None)
    if major == 13:
        return f"9.{minor}"
    return None


class CudaDriver:
    """libcuda, for the calls of the swap (cuda.h's driver API)."""

    def __init__(self) -> None:
        try:
            self._lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise NoGpuError(f"no CUDA driver (libcuda.so.1): {e}") from e
        u64, u32, vp = ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p
        self._sig("cuDriverGetVersion", [ctypes.POINTER(ctypes.c_int)])
        self._sig("cuCtxGetCurrent", [ctypes.POINTER(vp)])
        self._sig(
            "cuModuleLoadDataEx",
            [ctypes.POINTER(vp), ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_int),
             ctypes.POINTER(vp)],
        )
        self._sig("cuModuleGetFunction", [ctypes.POINTER(vp), vp, ctypes.c_char_p])
        self._sig(
            "cuModuleGetGlobal_v2",
            [ctypes.POINTER(u64), ctypes.POINTER(ctypes.c_size_t), vp, ctypes.c_char_p],
        )
        self._sig("cuFuncSetAttribute", [vp, ctypes.c_int, ctypes.c_int])
        self._sig("cuMemsetD32Async", [u64, u32, ctypes.c_size_t, vp])
        self._sig("cuMemsetD32_v2", [u64, u32, ctypes.c_size_t])
        self._sig("cuMemcpyDtoH_v2", [vp, u64, ctypes.c_size_t])
        self._sig("cuMemcpyDtoHAsync_v2", [vp, u64, ctypes.c_size_t, vp])
        self._sig("cuStreamQuery", [vp])
        self._sig("cuStreamCreate", [ctypes.POINTER(vp), ctypes.c_uint])

    def _sig(self, name: str, args: list) -> None:
        f = getattr(self._lib, name)
        f.argtypes = args
        f.restype = ctypes.c_int

    def _check(self, r: int, what: str) -> None:
        if r != 0:
            raise GpuError(f"{what}: CUDA error {r}")

    def driver_version(self) -> int:
        v = ctypes.c_int(0)
        self._check(self._lib.cuDriverGetVersion(ctypes.byref(v)), "cuDriverGetVersion")
        return v.value

    def current_context(self) -> int:
        c = ctypes.c_void_p(0)
        self._check(self._lib.cuCtxGetCurrent(ctypes.byref(c)), "cuCtxGetCurrent")
        if not c.value:
            raise GpuError("no current CUDA context at the launch")
        return c.value

    def load(self, ptx: str) -> int:
        """Load PTX in the current context (the driver's JIT); its error log on failure."""
        module = ctypes.c_void_p(0)
        log = ctypes.create_string_buffer(8192)
        opts = (ctypes.c_int * 2)(_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
        vals = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, len(log))
        r = self._lib.cuModuleLoadDataEx(
            ctypes.byref(module), ptx.encode() + b"\0", 2, opts, vals
        )
        if r != 0:
            text = log.value.decode(errors="replace").strip()
            raise GpuError(
                f"the driver cannot load the instrumented PTX (CUDA error {r}"
                f"{'; 222: a PTX version newer than the driver' if r == 222 else ''})"
                + (f":\n{text}" if text else "")
            )
        return module.value

    def function(self, module: int, name: str) -> int:
        f = ctypes.c_void_p(0)
        self._check(
            self._lib.cuModuleGetFunction(ctypes.byref(f), module, name.encode()),
            f"the instrumented PTX has no kernel {name}",
        )
        return f.value

    def global_address(self, module: int, name: str) -> int:
        p, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
        self._check(
            self._lib.cuModuleGetGlobal_v2(ctypes.byref(p), ctypes.byref(size), module, name.encode()),
            f"the instrumented PTX has no {name}",
        )
        return p.value

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        self._check(
            self._lib.cuFuncSetAttribute(
                function, _FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes
            ),
            f"cuFuncSetAttribute(max dynamic shared memory {nbytes})",
        )

    def write_u32_async(self, address: int, value: int, stream: int) -> None:
        self._check(self._lib.cuMemsetD32Async(address, value, 1, stream), "cuMemsetD32Async")

    def zero_u32(self, address: int, count: int) -> None:
        self._check(self._lib.cuMemsetD32_v2(address, 0, count), "cuMemsetD32")

    def read_u32(self, address: int, count: int) -> List[int]:
        buf = (ctypes.c_uint32 * count)()
        self._check(self._lib.cuMemcpyDtoH_v2(buf, address, 4 * count), "cuMemcpyDtoH")
        return list(buf)

    def stream_done(self, stream: int) -> bool:
        r = self._lib.cuStreamQuery(stream)
        if r == _NOT_READY:
            return False
        self._check(r, "the instrumented kernel failed")
        return True

    def read_u32_while_running(self, address: int, count: int) -> Optional[List[int]]:
        """Read while a kernel still runs (a hang): on a stream that does not wait for the
        legacy stream, with a deadline; `None` when it does not complete."""
        s = ctypes.c_void_p(0)
        if self._lib.cuStreamCreate(ctypes.byref(s), _STREAM_NON_BLOCKING) != 0:
            return None
        buf = (ctypes.c_uint32 * count)()
        if self._lib.cuMemcpyDtoHAsync_v2(buf, address, 4 * count, s) != 0:
            return None
        start = time.monotonic()
        while self._lib.cuStreamQuery(s) == _NOT_READY:
            if time.monotonic() - start > 2.0:
                return None
            time.sleep(0.001)
        return list(buf)


__all__: Tuple[str, ...] = ("CudaDriver", "driver_ptx_version")
