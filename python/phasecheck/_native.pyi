# Type stubs of the Rust extension (python/src/lib.rs). Each check returns
# (lint JSON, SARIF) as strings, confirm the report's JSON; phasecheck/__init__.py builds the
# report objects. The check options travel as one CheckOptions.
from typing import List, Optional, Tuple

class PhasecheckError(Exception): ...
class InputError(PhasecheckError): ...
class NoGpuError(PhasecheckError): ...
class GpuError(PhasecheckError): ...

class CheckOptions:
    def __init__(
        self,
        *,
        params: List[Tuple[str, int]],
        max_states: int,
        max_time: Optional[float],
        exhaustive: bool,
        kernel: Optional[str] = ...,
        block: Optional[Tuple[int, int, int]] = ...,
        cluster: Optional[int] = ...,
        args: List[Tuple[str, int]] = ...,
        assume: List[Tuple[str, int]] = ...,
        launch: Optional[str] = ...,
    ) -> None: ...

def verify_text(name: str, text: str, options: CheckOptions) -> Tuple[str, str]: ...
def verify_path(path: str, options: CheckOptions) -> Tuple[str, str]: ...
def verify_ptx(name: str, ptx: str, options: CheckOptions) -> Tuple[str, str]: ...
def extract(name: str, ptx: str, options: CheckOptions) -> str: ...
def confirm_text(
    name: str,
    text: str,
    options: CheckOptions,
    seconds: float,
    aim_seconds: float,
    fuzz_seconds: float,
) -> str: ...
def confirm_path(
    path: str,
    options: CheckOptions,
    seconds: float,
    aim_seconds: float,
    fuzz_seconds: float,
) -> str: ...
def lint(argv: List[str]) -> Tuple[str, str]: ...
def mutate(
    name: str,
    text: str,
    params: List[Tuple[str, int]],
    operators: List[str],
    check: bool,
    max_states: int,
    max_time: Optional[float],
) -> str: ...
def fuzz_kernel(
    name: str,
    text: str,
    params: List[Tuple[str, int]],
    proxy_window: bool,
) -> Tuple[str, str, int, int]: ...

CFG_SYMBOL: str
STUCK_COUNT_SYMBOL: str
STUCK_SYMBOL: str
RECORD_WORDS: int
STUCK_CAPACITY: int

class InstrumentedKernel:
    def __init__(
        self,
        ptx: str,
        *,
        kernel: Optional[str] = ...,
        delay_chance: int = ...,
        delay_max_ns: int = ...,
        wait_bound_us: int = ...,
        max_ptx_version: Optional[str] = ...,
    ) -> None: ...
    @property
    def ptx(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def lowered_from(self) -> Optional[str]: ...
    @property
    def points(self) -> int: ...
    @property
    def bounded_waits(self) -> int: ...
    @property
    def bounded_wait_ids(self) -> List[int]: ...
    def report(
        self, events: str, *, file: str, command: List[str] = ..., seconds: float = ...
    ) -> str: ...
