# Type stubs of the Rust extension (python/src/lib.rs). Each check returns
# (lint JSON, SARIF) as strings; phasecheck/__init__.py builds the report objects.
from typing import List, Optional, Tuple

class PhasecheckError(Exception): ...
class InputError(PhasecheckError): ...

def verify_text(
    name: str,
    text: str,
    params: List[Tuple[str, int]],
    max_states: int,
    max_time: Optional[float],
    exhaustive: bool,
) -> Tuple[str, str]: ...
def verify_path(
    path: str,
    params: List[Tuple[str, int]],
    max_states: int,
    max_time: Optional[float],
    exhaustive: bool,
    kernel: Optional[str],
    block: Optional[Tuple[int, int, int]],
    cluster: Optional[int],
    args: List[Tuple[str, int]],
    assume: List[Tuple[str, int]],
    launch: Optional[str] = ...,
) -> Tuple[str, str]: ...
def verify_ptx(
    name: str,
    ptx: str,
    params: List[Tuple[str, int]],
    max_states: int,
    max_time: Optional[float],
    exhaustive: bool,
    kernel: Optional[str],
    block: Optional[Tuple[int, int, int]],
    cluster: Optional[int],
    args: List[Tuple[str, int]],
    assume: List[Tuple[str, int]],
    launch: Optional[str] = ...,
) -> Tuple[str, str]: ...
def extract(
    name: str,
    ptx: str,
    kernel: Optional[str],
    block: Optional[Tuple[int, int, int]],
    cluster: Optional[int],
    args: List[Tuple[str, int]],
    assume: List[Tuple[str, int]],
    launch: Optional[str] = ...,
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
