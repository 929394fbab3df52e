"""Fuzz a Triton kernel on the GPU with its real arguments: `phasecheck.triton.fuzz`.

    with phasecheck.triton.fuzz(repeats=100) as campaign:
        matmul[grid](a_desc, b_desc, c, M, N, K)      # unmodified user code
    for report in campaign.reports:                   # one per compiled kernel launched
        print(report)
        assert report.verdict == "clean"

Inside the block, each launch of a Triton kernel runs an instrumented copy of that kernel
instead (issue 27; the same instrumenter as `phasecheck fuzz --app`, in Rust: seeded random
`nanosleep` delays around every synchronization instruction, every mbarrier wait bounded, a
thread that stays stuck past the bound writes where it is to a `.global` buffer and exits). The
copy is made from the launched `CompiledKernel`'s own PTX (`asm["ptx"]`), loaded in the
launch's context by the driver's JIT (its `.version` lowered to the driver's when newer: Triton
stamps its PTX with its own ptxas's version), and launched by Triton's own launcher with the
launch's own arguments, grid, stream and shared memory, `repeats` times with a fresh seed each
time. After each batch the hook waits for the stream (a watchdog: `watchdog_s`), reads the stuck
records back and maps each to the kernel's source line (the PTX's `.loc`).

The repeats reuse the launch's arguments: the kernel must be safe to run again on them (a
matmul writing C from A and B is; an in-place update is not). The first launch's results are
the copy's, so the program's own checks see what the instrumented kernel computed.

A batch that does not finish within the watchdog's time is a hang the bounds could not turn
into stuck records (`bar.sync`, `barrier.cluster.wait`): the GPU context cannot be used again,
so the hook prints the report to standard error and ends the process with exit code 124.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import _native
from ._native import PhasecheckError

__all__ = ["Fuzz", "FuzzReport", "StuckAt", "fuzz"]


def _end_process(code: int) -> None:  # replaced in tests
    os._exit(code)


def seed_of(base: int, n: int) -> int:
    """The seed of launch `n` of a campaign seeded `base` (as the injection library's: distinct
    for the first 2^32 launches, never 0)."""
    s = (base + (n * 0x9E3779B9)) & 0xFFFFFFFF
    return s or 0x9E3779B9


@dataclass
class StuckAt:
    """Threads that stayed stuck at one instrumented instruction."""

    source: Optional[str]
    ptx_line: Optional[int]
    instruction: Optional[str]
    stack: List[str]
    threads: int
    blocks: int
    tids: str
    seeds: List[int]


@dataclass
class FuzzReport:
    """What the instrumented copy of one compiled kernel showed (the JSON of
    `phasecheck fuzz --app --format json`, source `real-kernel`)."""

    kernel: str
    verdict: str
    launches: int
    blocks: int
    stuck_launches: int
    hangs: int
    errors: List[str]
    stuck: List[StuckAt]
    points: int
    bounded_waits: int
    lowered_from: Optional[str]
    lowered_to: Optional[str]
    json: Dict[str, Any] = field(repr=False)

    def __str__(self) -> str:
        lines = [
            f"fuzz of Triton kernel {self.kernel} (the real kernel, instrumented: "
            f"{self.points} points, {self.bounded_waits} bounded waits"
            + (
                f"; .version {self.lowered_from} lowered to {self.lowered_to} for the driver)"
                if self.lowered_from
                else ")"
            ),
            f"  {self.launches} launch(es) of the instrumented kernel ({self.blocks} blocks)",
        ]
        lines += [f"  error: {e}" for e in self.errors]
        if self.verdict == "clean":
            lines.append(
                f"result: clean: no thread stuck and no hang in {self.launches} launches "
                f"({self.blocks} blocks)"
            )
        elif self.verdict in ("stuck", "hang"):
            lines.append(
                f"result: {self.verdict.upper()}: {self.stuck_launches} launch(es) with stuck "
                "threads" + (", and a batch that never finished (watchdog)" if self.hangs else "")
            )
        else:
            lines.append(f"result: {self.verdict}")
        for s in self.stuck:
            lines.append(
                f"  stuck at {s.source or 'no line information'} (PTX line {s.ptx_line}: "
                f"`{s.instruction}`): {s.threads} thread(s) in {s.blocks} block(s), tid {s.tids}"
            )
            if len(s.stack) > 1:
                lines.append(f"    inline stack: {' > '.join(s.stack)}")
            shown = ", ".join(str(x) for x in s.seeds[:5])
            lines.append(f"    seeds {shown}{', ...' if len(s.seeds) > 5 else ''}")
        return "\n".join(lines) + "\n"


class _Loaded:
    """The copy, loaded in one context."""

    def __init__(self, driver: Any, inst: Any, shared: int) -> None:
        module = driver.load(inst.ptx)
        self.function = driver.function(module, inst.kernel)
        if shared > 48 * 1024:
            # As Triton does for its own kernel: the launch asks for this much.
            driver.set_max_dynamic_shared(self.function, shared)
        self.cfg = driver.global_address(module, _native.CFG_SYMBOL)
        self.count = driver.global_address(module, _native.STUCK_COUNT_SYMBOL)
        self.records = driver.global_address(module, _native.STUCK_SYMBOL)


class _Swapped:
    """One compiled kernel of the campaign: its instrumented copy and what it showed."""

    def __init__(self, compiled: Any, inst: Any, lowered_to: Optional[str]) -> None:
        self.compiled = compiled
        self.inst = inst
        self.lowered_to = lowered_to
        self.loaded: Dict[int, _Loaded] = {}
        self.events: List[str] = []
        self.next_launch = 0
        self.seconds = 0.0

    def event(self, **e: Any) -> None:
        self.events.append(json.dumps(e))

    def report(self) -> FuzzReport:
        raw = json.loads(
            self.inst.report(
                "\n".join(self.events) + "\n",
                file=f"{self.inst.kernel} (Triton)",
                seconds=self.seconds,
            )
        )
        return FuzzReport(
            kernel=raw["kernel"],
            verdict=raw["verdict"],
            launches=raw["launches"],
            blocks=raw["blocks"],
            stuck_launches=raw["stuck_launches"],
            hangs=raw["hangs"],
            errors=list(raw["errors"]),
            stuck=[
                StuckAt(
                    source=s["source"],
                    ptx_line=s["ptx_line"],
                    instruction=s["instruction"],
                    stack=list(s["stack"]),
                    threads=s["threads"],
                    blocks=s["blocks"],
                    tids=s["tids"],
                    seeds=list(s["seeds"]),
                )
                for s in raw["stuck"]
            ],
            points=self.inst.points,
            bounded_waits=self.inst.bounded_waits,
            lowered_from=self.inst.lowered_from,
            lowered_to=self.lowered_to if self.inst.lowered_from else None,
            json=raw,
        )


def _decode(words: List[int]) -> List[Dict[str, Any]]:
    n = _native.RECORD_WORDS
    return [
        {"block": words[i : i + 3], "thread": words[i + 3 : i + 6], "point": words[i + 6],
         "seed": words[i + 7]}
        for i in range(0, len(words) - n + 1, n)
    ]


class Fuzz:
    """A campaign: the kernels swapped so far and their reports (see the module's doc)."""

    def __init__(
        self,
        *,
        repeats: int,
        seed: int,
        delay_chance: int,
        delay_max_ns: int,
        wait_bound_ms: int,
        watchdog_s: float,
        kernel: Optional[str],
        max_ptx_version: Optional[str],
        driver: Any,
    ) -> None:
        if repeats < 1:
            raise _native.InputError(f"repeats {repeats}: at least 1")
        if not 0 <= delay_chance <= 256:
            raise _native.InputError(f"delay_chance {delay_chance}: in 256ths, 0 to 256")
        if wait_bound_ms < 1 or watchdog_s <= 0:
            raise _native.InputError("wait_bound_ms and watchdog_s must be positive")
        self.repeats = repeats
        self.seed = seed & 0xFFFFFFFF
        self.options = dict(
            delay_chance=delay_chance,
            delay_max_ns=delay_max_ns,
            wait_bound_us=wait_bound_ms * 1000,
        )
        self.watchdog_s = watchdog_s
        self.kernel = kernel
        self.max_ptx_version = max_ptx_version
        self.driver = driver
        self._swapped: Dict[int, _Swapped] = {}

    @property
    def reports(self) -> List[FuzzReport]:
        """One report per compiled kernel swapped, in the order of their first launch."""
        return [s.report() for s in self._swapped.values()]

    @property
    def verdict(self) -> str:
        """The worst verdict over the kernels (`not-run` when none was launched)."""
        order = ["hang", "stuck", "error", "program-failed", "clean", "not-run"]
        vs = [r.verdict for r in self.reports]
        return min(vs, key=order.index) if vs else "not-run"

    def wants(self, compiled: Any) -> bool:
        name = getattr(compiled, "name", "") or ""
        return self.kernel is None or self.kernel in name

    def swapped(self, compiled: Any) -> _Swapped:
        key = id(compiled)
        if key not in self._swapped:
            ptx = compiled.asm["ptx"]
            lowered_to = self.max_ptx_version
            if lowered_to == "auto":
                from ._cuda import driver_ptx_version

                lowered_to = driver_ptx_version(self.driver.driver_version())
            inst = _native.InstrumentedKernel(
                ptx, kernel=compiled.name, max_ptx_version=lowered_to, **self.options
            )
            self._swapped[key] = _Swapped(compiled, inst, lowered_to)
        return self._swapped[key]

    def launch(self, compiled: Any, launcher: Callable[..., Any], grid: List[int],
               stream: int, rest: tuple) -> Any:
        """Run one launch of `compiled` as `repeats` launches of its copy. `rest` is the
        launcher's arguments after the function: packed metadata, launch metadata, the enter
        and exit hooks, then the kernel's arguments."""
        sw = self.swapped(compiled)
        d = self.driver
        ctx = d.current_context()
        if ctx not in sw.loaded:
            try:
                sw.loaded[ctx] = _Loaded(d, sw.inst, int(getattr(compiled.metadata, "shared", 0)))
            except PhasecheckError as e:
                # Running the unmodified kernel would pass for a clean run.
                sw.event(event="error", message=str(e))
                raise
            sw.event(event="loaded", kernel=sw.inst.kernel)
        cp = sw.loaded[ctx]
        first = sw.next_launch
        start = time.monotonic()
        result = None
        for j in range(self.repeats):
            d.write_u32_async(cp.cfg, seed_of(self.seed, first + j), stream)
            if j == 0:
                result = launcher(*grid, stream, cp.function, *rest)
            else:
                # The repeats: no launch metadata and no hooks (a profiler sees one launch).
                launcher(*grid, stream, cp.function, rest[0], None, None, None, *rest[4:])
        sw.next_launch = first + self.repeats
        blocks = grid[0] * grid[1] * grid[2]
        while not d.stream_done(stream):
            if time.monotonic() - start > self.watchdog_s:
                self._hang(sw, cp, first, time.monotonic() - start)
                return result
            time.sleep(50e-6)
        total = d.read_u32(cp.count, 1)[0]
        stuck: List[Dict[str, Any]] = []
        if total:
            n = min(total, _native.STUCK_CAPACITY) * _native.RECORD_WORDS
            stuck = _decode(d.read_u32(cp.records, n))
            d.zero_u32(cp.count, 1)
        sw.seconds += time.monotonic() - start
        sw.event(event="batch", first=first, launches=self.repeats, blocks=blocks,
                 stuck_total=total, stuck=stuck, seconds=time.monotonic() - start)
        return result

    def _hang(self, sw: _Swapped, cp: _Loaded, first: int, after: float) -> None:
        d = self.driver
        count = d.read_u32_while_running(cp.count, 1)
        total = count[0] if count else 0
        words = d.read_u32_while_running(
            cp.records, min(total, _native.STUCK_CAPACITY) * _native.RECORD_WORDS
        ) if total else []
        sw.event(event="hang", first=first, launches=self.repeats, after_seconds=after,
                 stuck_total=total, stuck=_decode(words or []))
        sys.stderr.write(str(sw.report()))
        sys.stderr.write(
            "phasecheck.triton.fuzz: the instrumented kernel did not finish within "
            f"{self.watchdog_s} s; the GPU context cannot be used again: exiting (124)\n"
        )
        sys.stderr.flush()
        _end_process(124)


def _set_run(compiled: Any, run: Any) -> None:
    # Triton 3.5+ keeps the launcher in `_run` behind a `run` property; older ones in `run`.
    if isinstance(getattr(type(compiled), "run", None), property):
        compiled._run = run
    else:
        compiled.__dict__["run"] = run


@contextlib.contextmanager
def fuzz(
    *,
    repeats: int = 16,
    seed: int = 1,
    delay_chance: int = 48,
    delay_max_ns: int = 2047,
    wait_bound_ms: int = 200,
    watchdog_s: float = 20.0,
    kernel: Optional[str] = None,
    max_ptx_version: Optional[str] = "auto",
    driver: Any = None,
) -> Iterator[Fuzz]:
    """Swap every Triton kernel launched inside the block (or those whose name contains
    `kernel`) for its instrumented copy, launched `repeats` times per launch with seeds from
    `seed` on (see the module's doc). `delay_chance` (in 256ths), `delay_max_ns` and
    `wait_bound_ms` are `phasecheck fuzz --app`'s stress settings. `max_ptx_version`: lower the
    PTX's `.version` to this (`"auto"`: the newest the driver JITs; `None`: keep it).
    `driver`: the CUDA driver calls (default: libcuda through ctypes). Not thread-safe: one
    campaign at a time."""
    try:
        from triton.compiler.compiler import CompiledKernel
    except ImportError as e:  # pragma: no cover - only without Triton
        raise PhasecheckError(f"phasecheck.triton.fuzz needs Triton: {e}") from e
    if driver is None:
        from ._cuda import CudaDriver

        driver = CudaDriver()
    campaign = Fuzz(
        repeats=repeats, seed=seed, delay_chance=delay_chance, delay_max_ns=delay_max_ns,
        wait_bound_ms=wait_bound_ms, watchdog_s=watchdog_s, kernel=kernel,
        max_ptx_version=max_ptx_version, driver=driver,
    )
    original = CompiledKernel.launch_metadata
    wrapped: List[Any] = []

    def hooked(self: Any, grid: Any, stream: Any, *args: Any) -> Any:
        meta = original(self, grid, stream, *args)
        if campaign.wants(self) and not getattr(self.run, "_phasecheck_swap", False):
            self._init_handles()
            launcher = self.run

            def swapped_run(gx: int, gy: int, gz: int, stream: int, function: Any,
                            *rest: Any) -> Any:
                return campaign.launch(self, launcher, [gx, gy, gz], stream, rest)

            swapped_run._phasecheck_swap = True  # type: ignore[attr-defined]
            _set_run(self, swapped_run)
            wrapped.append((self, launcher))
        return meta

    CompiledKernel.launch_metadata = hooked
    try:
        yield campaign
    finally:
        CompiledKernel.launch_metadata = original
        for compiled, launcher in wrapped:
            _set_run(compiled, launcher)
