"""phasecheck.triton.fuzz on a GPU: real Triton kernels, unmodified (clean) and with a bug
injected in their PTX (stuck, at the kernel's source lines). Skipped without torch, Triton and
a CUDA device. Also a script, for the runs recorded in docs/gpu.md:

    python3 python/tests/test_triton_fuzz_gpu.py [--launches L] [--repeats R] [--dump-ptx DIR]
    python3 python/tests/test_triton_fuzz_gpu.py --plain KERNEL   # no hook: for fuzz --app

Kernels: `matmul_tma`, a TMA-pipelined matmul (host tensor descriptors, `num_stages=3`: each
stage's mbarrier armed with `mbarrier.arrive.expect_tx` for both tiles' bytes, the warps wait
with `mbarrier.try_wait.parity`), and `matmul_ws`, the same with `warp_specialize=True` (a
producer partition loads, consumer partitions run the WGMMAs; the fixture
ptx/tests/fixtures/triton/matmul_ws.py). The bug doubles the byte count of the first
`expect_tx`: that barrier's phase can never complete, so its waiters must be reported stuck.
"""

import argparse
import re
import sys

try:
    import pytest
except ImportError:  # the script, on a machine without pytest
    pytest = None

try:
    import torch
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    HAVE_GPU = torch.cuda.is_available()
    WHY = "" if HAVE_GPU else "no CUDA device for torch"
except ImportError as e:  # pragma: no cover - depends on the machine
    HAVE_GPU, WHY = False, f"needs torch and Triton with a CUDA device: {e}"

import phasecheck.triton

BM, BN, BK, STAGES = 128, 128, 64, 3
SIZE = 1024

if HAVE_GPU:

    @triton.jit
    def matmul_tma(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, STAGES: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.float16))

    @triton.jit
    def matmul_ws(a_desc, b_desc, c_ptr, K, N, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, STAGES: tl.constexpr):
        # C through pointers: Triton 3.6's warp specialization on sm_90 rejects this kernel
        # with a descriptor store of C (NVGPUWarpSpecialization, "tensor descriptor block and
        # tensor types must match"; H200, 2026-11-27).
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES, warp_specialize=True):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            acc = tl.dot(a, b.T, acc)
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_n = pid_n * BN + tl.arange(0, BN)
        tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))

    KERNELS = {"matmul_tma": matmul_tma, "matmul_ws": matmul_ws}


def problem():
    torch.manual_seed(0)
    a = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    b = torch.randn(SIZE, SIZE, device="cuda", dtype=torch.float16)
    c = torch.empty(SIZE, SIZE, device="cuda", dtype=torch.float16)
    descs = (
        TensorDescriptor.from_tensor(a, [BM, BK]),
        TensorDescriptor.from_tensor(b, [BN, BK]),
        TensorDescriptor.from_tensor(c, [BM, BN]),
    )
    return a, b, c, descs


def launch(fn, descs):
    grid = (SIZE // BM, SIZE // BN)
    if fn is matmul_ws:
        return fn[grid](descs[0], descs[1], descs[2].base, SIZE, SIZE, BM=BM, BN=BN, BK=BK,
                        STAGES=STAGES, num_warps=4)
    return fn[grid](*descs, SIZE, BM=BM, BN=BN, BK=BK, STAGES=STAGES, num_warps=4)


def expect_tx_bug(ptx):
    """Double the byte count of the first `expect_tx` (an immediate in Triton's PTX)."""
    pat = re.compile(r"(mbarrier\.(?:arrive\.)?expect_tx[^;\n]*,\s*)(\d+)(\s*;)")
    m = pat.search(ptx)
    if not m:
        raise AssertionError("no expect_tx with an immediate byte count in the PTX")
    line = ptx.count("\n", 0, m.start()) + 1
    return ptx[: m.start(2)] + str(2 * int(m.group(2))) + ptx[m.end(2):], line, int(m.group(2))


def run_clean(name, launches, repeats):
    fn = KERNELS[name]
    a, b, c, descs = problem()
    ref = (a.float() @ b.float().T).half()
    with phasecheck.triton.fuzz(repeats=repeats, seed=1) as campaign:
        for _ in range(launches):
            c.zero_()
            launch(fn, descs)
            torch.cuda.synchronize()
            # The first launch of each batch is the copy's: its result is checked.
            assert torch.allclose(c.float(), ref.float(), atol=0.5, rtol=0.02), "wrong result"
    [report] = campaign.reports
    return report


def run_bug(name, repeats, launches=3):
    fn = KERNELS[name]
    _, _, _, descs = problem()
    compiled = launch(fn, descs)  # the CompiledKernel, compiled and run unmodified
    torch.cuda.synchronize()
    original = compiled.asm["ptx"]
    buggy, line, nbytes = expect_tx_bug(original)
    compiled.asm["ptx"] = buggy
    try:
        with phasecheck.triton.fuzz(repeats=repeats, wait_bound_ms=50, watchdog_s=20) as campaign:
            for _ in range(launches):
                launch(fn, descs)
        [report] = campaign.reports
    finally:
        compiled.asm["ptx"] = original
    return report, line, nbytes


def kernel_lines(name):
    import inspect

    src, first = inspect.getsourcelines(KERNELS[name].fn)
    return range(first, first + len(src))


def check_clean(name, launches, repeats):
    r = run_clean(name, launches, repeats)
    print(r, flush=True)
    assert r.verdict == "clean", r
    assert r.launches == launches * repeats
    return r


def check_bug(name, repeats):
    r, line, nbytes = run_bug(name, repeats)
    print(f"(bug: expect_tx {nbytes} -> {2 * nbytes} bytes at PTX line {line})")
    print(r, flush=True)
    assert r.verdict == "stuck", r
    # Each batch is read back once, and the first stuck launch of a batch can fill the record
    # buffer (STUCK_CAPACITY): at least one stuck launch per batch is seen.
    assert r.stuck_launches >= 3, r
    here = __file__.rsplit("/", 1)[-1]
    lines = kernel_lines(name)
    at_kernel = []
    for s in r.stuck:
        m = re.match(r"(\S+):(\d+)", s.source or "")
        if m and m.group(1).endswith(here) and int(m.group(2)) in lines:
            at_kernel.append(s)
    assert at_kernel, f"no stuck thread at a line of {name} ({here}:{lines.start}-{lines.stop})"
    return r


if pytest is not None:
    gpu = pytest.mark.skipif(not HAVE_GPU, reason=WHY or "no GPU")

    @gpu
    @pytest.mark.parametrize("name", ["matmul_tma", "matmul_ws"])
    def test_the_unmodified_kernel_runs_clean(name):
        check_clean(name, launches=4, repeats=8)

    @gpu
    @pytest.mark.parametrize("name", ["matmul_tma", "matmul_ws"])
    def test_a_wrong_expect_tx_count_is_stuck_at_the_kernels_lines(name):
        check_bug(name, repeats=2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launches", type=int, default=50)
    p.add_argument("--repeats", type=int, default=100)
    p.add_argument("--kernels", default="matmul_tma,matmul_ws")
    p.add_argument("--dump-ptx", metavar="DIR")
    p.add_argument("--plain", metavar="KERNEL", help="launch KERNEL 3 times, no hook")
    p.add_argument("--bug", metavar="KERNEL", help="only the bug run of KERNEL")
    a = p.parse_args()
    if not HAVE_GPU:
        print(f"skipped: {WHY}")
        return 0
    print(f"torch {torch.__version__}, triton {triton.__version__}, "
          f"{torch.cuda.get_device_name()}", flush=True)
    if a.plain:
        a_, b_, c, descs = problem()
        for _ in range(3):
            launch(KERNELS[a.plain], descs)
        torch.cuda.synchronize()
        ok = torch.allclose(c.float(), (a_.float() @ b_.float().T), atol=0.5, rtol=0.02)
        print("plain:", "correct" if ok else "WRONG")
        return 0 if ok else 1
    if a.bug:
        check_bug(a.bug, repeats=2)
        return 0
    failed = 0
    names = a.kernels.split(",")
    for name in names:
        try:
            if a.dump_ptx:
                _, _, _, descs = problem()
                k = launch(KERNELS[name], descs)
                ptx = k.asm["ptx"]
                open(f"{a.dump_ptx}/{name}.ptx", "w").write(ptx)
                print(f"{name}: {ptx.splitlines()[4] if len(ptx.splitlines()) > 4 else ''} "
                      f"expect_tx {ptx.count('expect_tx')}, try_wait {ptx.count('try_wait')}")
            check_clean(name, a.launches, a.repeats)
        except Exception as e:  # report and go on to the next kernel
            failed += 1
            print(f"{name}: FAILED: {type(e).__name__}: {e}", flush=True)
    import subprocess

    for name in names:
        # A process each: a hang ends the process that saw it (exit code 124).
        r = subprocess.run([sys.executable, __file__, "--bug", name], timeout=300)
        print(f"{name} bug run: exit code {r.returncode}", flush=True)
        failed += r.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
