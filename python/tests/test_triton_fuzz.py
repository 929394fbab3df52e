"""phasecheck.triton.fuzz without a GPU: a fake Triton `CompiledKernel` (its launcher records
the launches) and a fake CUDA driver (its "GPU" writes stuck records for chosen seeds), around
the real instrumenter (Rust, through the binding) on a real Triton kernel's PTX (the
warp-specialized matmul fixture, compiled for sm_90a). The GPU run is
test_triton_fuzz_gpu.py."""

import pathlib
import sys
import types

import pytest

import phasecheck
import phasecheck.triton
from phasecheck import _native
from phasecheck import triton_fuzz
from phasecheck._cuda import driver_ptx_version

ROOT = pathlib.Path(__file__).resolve().parents[2]
PTX = (ROOT / "ptx/tests/fixtures/triton/matmul_ws.ptx").read_text()
SOURCE_LINES = {
    int(line.split()[2])
    for line in PTX.splitlines()
    if line.strip().startswith(".loc\t1 ") or line.strip().startswith(".loc 1 ")
}


def test_driver_versions_map_to_the_ptx_isa_they_jit():
    assert driver_ptx_version(13000) == "9.0"
    assert driver_ptx_version(13010) == "9.1"
    assert driver_ptx_version(12080) == "8.7"
    assert driver_ptx_version(12060) == "8.5"
    assert driver_ptx_version(12040) == "8.4"
    assert driver_ptx_version(10020) is None


def test_the_instrumented_copy_of_a_triton_kernel_is_lowered_for_the_driver():
    inst = _native.InstrumentedKernel(PTX, kernel="matmul_ws", max_ptx_version="9.0")
    assert inst.kernel == "matmul_ws"
    assert inst.lowered_from == "9.4"
    assert ".version 9.0" in inst.ptx and ".version 9.4" not in inst.ptx
    assert inst.bounded_waits >= 3 and inst.points > inst.bounded_waits
    assert len(inst.bounded_wait_ids) == inst.bounded_waits
    for sym in (_native.CFG_SYMBOL, _native.STUCK_COUNT_SYMBOL, _native.STUCK_SYMBOL):
        assert sym in inst.ptx
    kept = _native.InstrumentedKernel(PTX, max_ptx_version=None)
    assert kept.lowered_from is None and ".version 9.4" in kept.ptx
    with pytest.raises(phasecheck.InputError, match="not a PTX ISA version"):
        _native.InstrumentedKernel(PTX, max_ptx_version="nine")
    with pytest.raises(phasecheck.InputError, match="no kernel `nope`"):
        _native.InstrumentedKernel(PTX, kernel="nope")


class FakeDriver:
    """The driver calls of the swap, over a dict of device words. `stuck_for(seed)` gives the
    stuck records (block, thread, point) a launch with that seed leaves."""

    def __init__(self, stuck_for=lambda seed: [], done=True, version=13000, fail_load=False):
        self.mem = {}
        self.stuck_for = stuck_for
        self.done = done
        self.version = version
        self.fail_load = fail_load
        self.loaded = []
        self.shared = {}
        self.seeds = []
        self.next = 0x1000

    def _alloc(self, words):
        a = self.next
        self.next += 4 * words + 0x100
        self.mem[a] = [0] * words
        return a

    def driver_version(self):
        return self.version

    def current_context(self):
        return 77

    def load(self, ptx):
        if self.fail_load:
            raise phasecheck.GpuError("the driver cannot load the instrumented PTX (CUDA error 222)")
        self.loaded.append(ptx)
        self.cfg = self._alloc(4)
        self.count = self._alloc(1)
        self.records = self._alloc(_native.STUCK_CAPACITY * _native.RECORD_WORDS)
        return 5

    def function(self, module, name):
        assert module == 5
        return 0xC0DE

    def global_address(self, module, name):
        return {
            _native.CFG_SYMBOL: self.cfg,
            _native.STUCK_COUNT_SYMBOL: self.count,
            _native.STUCK_SYMBOL: self.records,
        }[name]

    def set_max_dynamic_shared(self, function, nbytes):
        self.shared[function] = nbytes

    def write_u32_async(self, address, value, stream):
        self.mem[address][0] = value

    def run_copy(self):
        """What a launch of the copy does: the seed it reads, the records it writes."""
        seed = self.mem[self.cfg][0]
        self.seeds.append(seed)
        for block, thread, point in self.stuck_for(seed):
            n = self.mem[self.count][0]
            if n < _native.STUCK_CAPACITY:
                w = _native.RECORD_WORDS
                self.mem[self.records][n * w : (n + 1) * w] = [block, 0, 0, thread, 0, 0, point, seed]
            self.mem[self.count][0] = n + 1

    def zero_u32(self, address, count):
        self.mem[address][:count] = [0] * count

    def read_u32(self, address, count):
        return list(self.mem[address][:count])

    def read_u32_while_running(self, address, count):
        return self.read_u32(address, count)

    def stream_done(self, stream):
        return self.done


class Launcher:
    """Triton's launcher: records (grid, stream, function, hooks, args) per call."""

    def __init__(self, driver):
        self.driver = driver
        self.calls = []

    def __call__(self, gx, gy, gz, stream, function, packed, meta, enter, exit_, *args):
        self.calls.append(((gx, gy, gz), stream, function, meta, args))
        if function == 0xC0DE:
            self.driver.run_copy()


def fake_triton(monkeypatch, run_property=True):
    """Install a fake `triton.compiler.compiler.CompiledKernel` (Triton 3.5+'s `run` property
    over `_run`, or older Triton's `run` attribute) and return a kernel factory."""

    class CompiledKernel:
        def __init__(self, driver, ptx=PTX, name="matmul_ws", shared=98304):
            self.asm = {"ptx": ptx}
            self.name = name
            self.metadata = types.SimpleNamespace(shared=shared)
            self.function = 0xF00D
            self.packed_metadata = ("packed",)
            self.module = None
            self._driver = driver
            self._launcher = Launcher(driver)
            if run_property:
                self._run = None
            else:
                self.run = self._launcher

        def _init_handles(self):
            if self.module is not None:
                return
            self.module = 1
            if run_property:
                self._run = self._launcher

        def launch_metadata(self, grid, stream, *args):
            return {"name": self.name}

        def launch(self, grid, stream, *args):
            """JITFunction.run's two steps."""
            meta = self.launch_metadata(grid, stream, *args)
            self.run(*grid, stream, self.function, self.packed_metadata, meta, None, None, *args)

    if run_property:

        def run(self):
            if self._run is None:
                self._init_handles()
            return self._run

        CompiledKernel.run = property(run)

    mod = types.ModuleType("triton.compiler.compiler")
    mod.CompiledKernel = CompiledKernel
    pkg = types.ModuleType("triton")
    comp = types.ModuleType("triton.compiler")
    pkg.compiler, comp.compiler = comp, mod
    monkeypatch.setitem(sys.modules, "triton", pkg)
    monkeypatch.setitem(sys.modules, "triton.compiler", comp)
    monkeypatch.setitem(sys.modules, "triton.compiler.compiler", mod)
    return CompiledKernel


@pytest.mark.parametrize("run_property", [True, False])
def test_each_launch_runs_the_copy_repeatedly_with_its_own_arguments(monkeypatch, run_property):
    CompiledKernel = fake_triton(monkeypatch, run_property)
    d = FakeDriver()
    k = CompiledKernel(d)
    with phasecheck.triton.fuzz(repeats=4, seed=7, driver=d) as campaign:
        k.launch((3, 2, 1), 99, "a_desc", "b_desc", 4096)
        k.launch((3, 2, 1), 99, "a_desc", "b_desc", 4096)
    calls = k._launcher.calls
    assert len(calls) == 8
    assert all(c[0] == (3, 2, 1) and c[1] == 99 and c[2] == 0xC0DE for c in calls)
    assert all(c[4] == ("a_desc", "b_desc", 4096) for c in calls)
    # The user's launch keeps its launch metadata; the repeats run without hooks.
    assert calls[0][3] == {"name": "matmul_ws"} and calls[1][3] is None
    assert d.seeds == [triton_fuzz.seed_of(7, n) for n in range(8)]
    assert len(set(d.seeds)) == 8
    assert len(d.loaded) == 1 and ".version 9.0" in d.loaded[0]
    assert d.shared == {0xC0DE: 98304}
    [report] = campaign.reports
    assert (report.verdict, report.launches, report.blocks) == ("clean", 8, 48)
    assert report.lowered_from == "9.4" and report.lowered_to == "9.0"
    assert campaign.verdict == "clean"
    assert "result: clean" in str(report) and "lowered to 9.0" in str(report)
    # After the block the kernel is Triton's own again.
    k.launch((1, 1, 1), 99)
    assert k._launcher.calls[-1][2] == 0xF00D and len(d.seeds) == 8


def test_stuck_records_are_reported_at_the_kernels_source_lines(monkeypatch):
    CompiledKernel = fake_triton(monkeypatch)
    inst = _native.InstrumentedKernel(PTX, max_ptx_version="9.0")
    wait = inst.bounded_wait_ids[0]
    bad = triton_fuzz.seed_of(1, 2)
    d = FakeDriver(stuck_for=lambda s: [(0, t, wait) for t in range(128, 132)] if s == bad else [])
    k = CompiledKernel(d)
    with phasecheck.triton.fuzz(repeats=3, driver=d) as campaign:
        k.launch((2, 1, 1), 0)
        k.launch((2, 1, 1), 0)
    [r] = campaign.reports
    assert (r.verdict, r.launches, r.stuck_launches) == ("stuck", 6, 1)
    [at] = r.stuck
    assert at.threads == 4 and at.blocks == 1 and at.tids == "128-131" and at.seeds == [bad]
    assert at.source.startswith("matmul_ws.py:")
    assert int(at.source.split(":")[1].split()[0]) in SOURCE_LINES
    assert "mbarrier.try_wait" in at.instruction
    assert "result: STUCK: 1 launch(es)" in str(r) and at.source in str(r)
    assert campaign.verdict == "stuck"
    # The count was reset after the read-back: the next batch saw none.
    assert d.mem[d.count][0] == 0


def test_a_batch_past_the_watchdog_is_a_hang_that_ends_the_process(monkeypatch, capsys):
    CompiledKernel = fake_triton(monkeypatch)
    d = FakeDriver(done=False)
    ended = []

    class Ended(Exception):
        pass

    def end(code):
        ended.append(code)
        raise Ended

    monkeypatch.setattr(triton_fuzz, "_end_process", end)
    k = CompiledKernel(d)
    with pytest.raises(Ended):
        with phasecheck.triton.fuzz(repeats=2, watchdog_s=0.05, driver=d):
            k.launch((1, 1, 1), 0)
    assert ended == [124]
    err = capsys.readouterr().err
    assert "result: HANG" in err and "exiting (124)" in err


def test_a_copy_the_driver_cannot_load_is_an_error_not_a_clean_run(monkeypatch):
    CompiledKernel = fake_triton(monkeypatch)
    d = FakeDriver(fail_load=True)
    k = CompiledKernel(d)
    with pytest.raises(phasecheck.GpuError, match="cannot load"):
        with phasecheck.triton.fuzz(driver=d) as campaign:
            k.launch((1, 1, 1), 0)
    [r] = campaign.reports
    assert r.verdict == "error" and "cannot load" in r.errors[0]
    assert k._launcher.calls == []


def test_only_the_named_kernels_are_swapped_and_nothing_launched_is_not_run(monkeypatch):
    CompiledKernel = fake_triton(monkeypatch)
    d = FakeDriver()
    k = CompiledKernel(d)
    with phasecheck.triton.fuzz(kernel="attention", driver=d) as campaign:
        k.launch((1, 1, 1), 0)
    assert k._launcher.calls[0][2] == 0xF00D and d.loaded == []
    assert campaign.reports == [] and campaign.verdict == "not-run"
    with pytest.raises(phasecheck.InputError, match="repeats"):
        with phasecheck.triton.fuzz(repeats=0, driver=d):
            pass
