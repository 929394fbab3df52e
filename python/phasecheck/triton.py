"""Check a Triton kernel: `phasecheck.triton.verify(compiled_kernel, args, grid=...)`.

A `CompiledKernel` (from `triton.compile(...)`, which targets sm_90a without a GPU:
`triton.compile(ASTSource(fn, signature, constexprs), target=GPUTarget("cuda", 90, 32))`, or from
a launch) carries its PTX (`asm["ptx"]`), `num_warps`, its cluster size and its signature.
This module maps Triton's arguments to the PTX kernel's parameters (constexprs are compiled
in and have none; a host tensor descriptor `tensordesc<T[shape]>` becomes its 128-byte tensor
map, then one i32 per dimension of the tensor's shape, then one i64 per stride; two scratch
pointers close the list) and calls `phasecheck.verify_ptx`.

Launch hook: instead of writing the arguments by hand, record the launches a program makes,
as `phasecheck capture` does for CUDA programs, and check each with the values it ran with:

    with phasecheck.triton.capture() as launches:
        matmul[grid](a_desc, b_desc, c, M, N, K, BM=128, BN=64, BK=64)
    for launch in launches:
        assert phasecheck.triton.verify_launch(launch).verdict == "ok"

Fuzz on the GPU: run the kernel's own instrumented copy with the launch's real arguments
(`phasecheck.triton.fuzz`, module `phasecheck.triton_fuzz`; docs/gpu.md, "Triton kernels"):

    with phasecheck.triton.fuzz(repeats=100) as campaign:
        matmul[grid](a_desc, b_desc, c, M, N, K, BM=128, BN=64, BK=64)
    for report in campaign.reports:
        assert report.verdict == "clean", report
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import PhasecheckError, InputError, Report, verify_ptx as _verify_ptx

from .triton_fuzz import Fuzz, FuzzReport, StuckAt, fuzz

__all__ = [
    "Fuzz", "FuzzReport", "Launch", "StuckAt", "capture", "fuzz", "parameters", "verify",
    "verify_launch",
]

_DTYPE_BYTES = {
    "fp8e4nv": 1, "fp8e5": 1, "fp8e4b15": 1, "fp8e4b8": 1, "fp8e5b16": 1, "i8": 1, "u8": 1,
    "fp16": 2, "bf16": 2, "i16": 2, "u16": 2,
    "fp32": 4, "tf32": 4, "i32": 4, "u32": 4,
    "fp64": 8, "i64": 8, "u64": 8,
}

_TENSORDESC = re.compile(r"^tensordesc<\s*(\w+)\s*\[([\d,\s]+)\]")


def _meta(kernel: Any, name: str, default: Any = None) -> Any:
    return getattr(kernel.metadata, name, default)


def _signature(kernel: Any) -> Tuple[Dict[str, str], set]:
    src = getattr(kernel, "src", None)
    sig = getattr(src, "signature", None)
    if not isinstance(sig, Mapping):
        raise PhasecheckError(
            "this CompiledKernel has no source signature (kernel.src.signature); "
            "compile it with triton.compile(ASTSource(...)) or a launch in this process"
        )
    constexprs = getattr(src, "constexprs", None) or getattr(src, "constants", None) or {}
    names = set()
    for k in constexprs:
        # Keys are names, or tuples of argument indices in some Triton versions.
        if isinstance(k, str):
            names.add(k)
        elif isinstance(k, tuple) and len(k) == 1:
            names.add(list(sig)[k[0]])
    return dict(sig), names


def parameters(kernel: Any) -> List[Tuple[str, int]]:
    """The PTX parameter index of each Triton argument that has one, in order: `(name, index)`
    with `NAME.shapeI` / `NAME.strideI` for the shape and stride parameters of a tensor
    descriptor."""
    sig, constexprs = _signature(kernel)
    out: List[Tuple[str, int]] = []
    i = 0
    for name, ty in sig.items():
        if ty == "constexpr" or name in constexprs:
            continue
        m = _TENSORDESC.match(ty)
        if m:
            ndim = len([d for d in m.group(2).split(",") if d.strip()])
            out.append((name, i))
            i += 1
            out += [(f"{name}.shape{d}", i + d) for d in range(ndim)]
            i += ndim
            out += [(f"{name}.stride{d}", i + d) for d in range(ndim)]
            i += ndim
        else:
            out.append((name, i))
            i += 1
    return out


def _ptx_param_count(ptx: str, kernel_name: str) -> int:
    m = re.search(r"\.entry\s+" + re.escape(kernel_name) + r"\s*\((.*?)\)", ptx, re.S)
    if not m:
        raise PhasecheckError(f"the PTX has no .entry {kernel_name}")
    return len(re.findall(r"\.param\b", m.group(1)))


def _copy_bytes(kernel: Any, sig: Dict[str, str], constexprs: set) -> Dict[str, int]:
    """Bytes one TMA copy through each tensor descriptor moves: Triton's tensordesc_meta
    (the block it copies, which may be a slice of the descriptor's block) when present, else
    the block of the signature's type."""
    descs = [
        (n, t) for n, t in sig.items() if n not in constexprs and _TENSORDESC.match(str(t))
    ]
    meta = _meta(kernel, "tensordesc_meta") or []
    out = {}
    for k, (name, ty) in enumerate(descs):
        if k < len(meta) and meta[k] and "block_size" in meta[k]:
            m = meta[k]
            out[name] = math.prod(m["block_size"]) * int(m["elem_size"])
        else:
            t = _TENSORDESC.match(ty)
            dtype = t.group(1)
            if dtype not in _DTYPE_BYTES:
                raise PhasecheckError(f"{name}: unknown element type {dtype} in {ty}")
            dims = [int(d) for d in t.group(2).split(",") if d.strip()]
            out[name] = math.prod(dims) * _DTYPE_BYTES[dtype]
    return out


def _cluster(kernel: Any) -> int:
    dims = _meta(kernel, "cluster_dims")
    if dims:
        return int(math.prod(dims))
    return int(_meta(kernel, "num_ctas", 1) or 1)


def verify(
    kernel: Any,
    args: Optional[Mapping[str, Any]] = None,
    grid: Union[None, int, Sequence[int]] = None,
    **options: Any,
) -> Report:
    """Check a Triton `CompiledKernel`.

    `args`: the values of scalar arguments by Triton name (`{"K": 4096}`; those a branch, a
    loop trip count or an address depends on must be given); tensor descriptors are filled in
    from the kernel (the bytes one copy moves) and pointer arguments need no value. An int
    value of a name from `parameters(kernel)` (e.g. `"a_desc.shape0"`) may also be given.
    `grid`: the launch grid; phasecheck checks one cluster of CTAs (`num_ctas` / cluster
    dims), so the grid is only checked to be whole clusters. Other keyword `options` go to
    `phasecheck.verify_ptx` (`assume`, `max_states`, `max_time`, `exhaustive`).
    """
    ptx = kernel.asm["ptx"]
    name = getattr(kernel, "name", None) or _meta(kernel, "name")
    num_warps = int(_meta(kernel, "num_warps"))
    warp_size = int(_meta(kernel, "warp_size", 32) or 32)
    cluster = _cluster(kernel)
    if grid is not None:
        dims = [grid] if isinstance(grid, int) else list(grid)
        if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
            raise InputError(f"grid {grid!r} is not 1 to 3 positive integers")
        if dims[0] % cluster:
            raise InputError(f"grid {grid!r}: x is not a multiple of the cluster size {cluster}")
    sig, constexprs = _signature(kernel)
    params = parameters(kernel)
    index = dict(params)
    count = _ptx_param_count(ptx, name)
    # Triton appends its global and profile scratch pointers; anything else means the calling
    # convention is not the one this module knows, and a wrong index would check the wrong value.
    if count - len(params) not in (0, 1, 2):
        raise PhasecheckError(
            f"kernel {name}: {count} PTX parameters for {len(params)} mapped Triton arguments "
            f"({[n for n, _ in params]}): this Triton's calling convention is not recognized"
        )
    ptx_args: Dict[str, int] = {}
    for desc, nbytes in _copy_bytes(kernel, sig, constexprs).items():
        ptx_args[str(index[desc])] = nbytes
    for key, value in (args or {}).items():
        if key in constexprs:
            continue  # compiled in
        if key not in index:
            raise InputError(
                f"{key}: kernel {name} has no such argument (arguments: {[n for n, _ in params]})"
            )
        if isinstance(value, bool) or not isinstance(value, int):
            if sig.get(key, "").startswith("*") or _TENSORDESC.match(str(sig.get(key, ""))):
                continue  # a pointer or a tensor descriptor object: nothing to give
            raise InputError(f"{key}: {value!r} is not an integer")
        ptx_args[str(index[key])] = value
    options.setdefault("name", f"{name}.ptx")
    return _verify_ptx(
        ptx,
        block=num_warps * warp_size,
        cluster=cluster,
        args=ptx_args,
        kernel=name,
        **options,
    )


@dataclass
class Launch:
    """One launch recorded by `capture`: the compiled kernel, its grid and the values of its
    integer arguments by Triton name (pointers, tensors, tensor descriptors and floats are left
    out: `verify` fills in what it needs of them from the kernel)."""

    kernel: Any
    grid: Tuple[int, int, int]
    args: Dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return getattr(self.kernel, "name", None) or str(_meta(self.kernel, "name"))


def _int_args(kernel: Any, values: Sequence[Any]) -> Dict[str, int]:
    src = getattr(kernel, "src", None)
    fn = getattr(src, "fn", None)
    names = list(getattr(fn, "arg_names", None) or getattr(src, "signature", {}) or [])
    out: Dict[str, int] = {}
    for name, value in zip(names, values):
        if isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, int):
            out[name] = value
    return out


@contextlib.contextmanager
def capture() -> Iterator[List[Launch]]:
    """Record every Triton kernel launch made inside the `with` block (the launch hook).

    Triton computes a kernel's launch metadata on every launch, by `kernel[grid](...)` or a
    `@triton.jit` function's call, before it runs it; the hook wraps that step, so it sees the
    compiled kernel, the grid and the argument values, and then lets the launch go on as it
    would. The list yielded fills as launches happen. Not thread-safe: one capture at a time.
    """
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError as e:  # pragma: no cover - only without Triton
        raise PhasecheckError(f"phasecheck.triton.capture needs Triton: {e}") from e
    launches: List[Launch] = []
    original = CompiledKernel.launch_metadata

    def recording(self: Any, grid: Any, stream: Any, *args: Any) -> Any:
        dims = tuple(int(d) for d in grid) + (1,) * (3 - len(tuple(grid)))
        launches.append(Launch(self, dims[:3], _int_args(self, args)))
        return original(self, grid, stream, *args)

    CompiledKernel.launch_metadata = recording
    try:
        yield launches
    finally:
        CompiledKernel.launch_metadata = original


def verify_launch(launch: Launch, args: Optional[Mapping[str, Any]] = None, **options: Any) -> Report:
    """Check a recorded launch with the values it ran with (`args` adds or overrides some);
    other keyword `options` go to `verify`."""
    values: Dict[str, Any] = dict(launch.args)
    values.update(args or {})
    _, constexprs = _signature(launch.kernel)
    index = dict(parameters(launch.kernel))
    # Only arguments that have a PTX parameter: constexprs are compiled in.
    given = {k: v for k, v in values.items() if k in index and k not in constexprs}
    return verify(launch.kernel, given, grid=launch.grid, **options)
