"""phasecheck from Python: check GPU barrier protocols (.phase files) and kernels (PTX).

    import phasecheck
    report = phasecheck.verify("corpus/hazards/data-race/fail.phase")
    report.verdict                 # "ok", "hazard" or "inconclusive"
    for f in report.findings:      # rule, code, class_, severity, message, spans, trace
        print(f.rule, f.message)
    report.to_sarif()              # SARIF 2.1.0 as a JSON string

Bad input (a protocol that does not load, a kernel the PTX front end cannot extract, an
unreadable file) raises `InputError`, a `PhasecheckError`. `phasecheck.triton.verify` checks
a Triton `CompiledKernel`; `phasecheck.triton.fuzz()` runs each launched Triton kernel's own
instrumented copy on the GPU with its real arguments (`InstrumentedKernel` is that copy).
`phasecheck.mutate` makes the mutants of a protocol (a flipped
parity, a count off by one, ...) and checks each one; `phasecheck.lower` gives the CUDA kernel that
`phasecheck fuzz` launches. `phasecheck.confirm` replays each finding on a GPU (on a stress
kernel built from the model; without a GPU it raises `NoGpuError`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import GpuError, InputError, InstrumentedKernel, NoGpuError, PhasecheckError

__all__ = [
    "ConfirmReport",
    "ConfirmedFinding",
    "Finding",
    "GpuError",
    "NoGpuError",
    "InputError",
    "InstrumentedKernel",
    "LintReport",
    "PhasecheckError",
    "Report",
    "Span",
    "TraceStep",
    "extract",
    "Kernel",
    "Mutant",
    "MutateReport",
    "lint",
    "lower",
    "mutate",
    "confirm",
    "verify",
    "verify_ptx",
]

DEFAULT_MAX_STATES = 50_000_000
DEFAULT_MAX_TIME = 600.0


@dataclass(frozen=True)
class Span:
    """A place in the checked protocol (1-based lines and columns); `message` is the label."""

    line: int
    column: int
    end_line: int
    end_column: int
    message: str = ""


@dataclass(frozen=True)
class TraceStep:
    """One step of a counterexample: which thread ran which operation at which line."""

    thread: str
    line: int
    op: str
    state: str
    repeat: int = 1


@dataclass(frozen=True)
class Finding:
    """A finding: `rule` (e.g. "data-race"), `code` ("PC300"), `class_` ("hazard", ...)."""

    rule: str
    code: str
    class_: str
    severity: str
    message: str
    spans: List[Span]
    trace: List[TraceStep]
    help: Optional[str] = None
    schedule: str = ""

    @property
    def span(self) -> Span:
        """The main span (the first of `spans`; the others are labels)."""
        return self.spans[0]


@dataclass(frozen=True)
class Report:
    """The check of one protocol or kernel."""

    file: str
    protocol: str
    verdict: str
    findings: List[Finding]
    params: Dict[str, int]
    stats: Dict[str, Any]
    incomplete: Optional[Dict[str, Any]]
    _sarif: str = field(repr=False, default="")

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"

    @property
    def errors(self) -> List[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def to_sarif(self) -> str:
        """SARIF 2.1.0 (as `phasecheck lint --format sarif` writes it), a JSON string."""
        return self._sarif


@dataclass(frozen=True)
class LintReport:
    """The check of every file `lint` found: one `Report` per checked file, and the load
    errors of the files that did not load (file name to the error entries)."""

    reports: List[Report]
    not_loaded: Dict[str, List[Dict[str, Any]]]
    exit_code: int
    summary: Dict[str, int]
    _sarif: str = field(repr=False, default="")

    @property
    def verdict(self) -> str:
        """"bad-input" when a file did not load, else "hazard", "inconclusive" or "ok"."""
        if self.not_loaded:
            return "bad-input"
        if any(r.verdict == "hazard" for r in self.reports):
            return "hazard"
        if any(r.verdict == "inconclusive" for r in self.reports):
            return "inconclusive"
        return "ok"

    @property
    def findings(self) -> List[Finding]:
        return [f for r in self.reports for f in r.findings]

    def to_sarif(self) -> str:
        return self._sarif


def _span(s: Mapping[str, Any], message: str = "") -> Span:
    return Span(s["line"], s["column"], s["end_line"], s["end_column"], message)


def _finding(f: Mapping[str, Any]) -> Finding:
    spans = [_span(f["span"], f["message"])]
    spans += [_span(l["span"], l["message"]) for l in f["labels"]]
    trace = [
        TraceStep(t["thread"], t["line"], t["op"], t["state"], t.get("repeat", 1))
        for t in f["trace"]
    ]
    return Finding(
        rule=f["rule"],
        code=f["code"],
        class_=f["class"],
        severity=f["severity"],
        message=f["message"],
        spans=spans,
        trace=trace,
        help=f.get("help"),
        schedule=f.get("schedule", ""),
    )


def _report(entry: Mapping[str, Any], sarif: str) -> Report:
    return Report(
        file=entry["file"],
        protocol=entry["protocol"],
        verdict=entry["verdict"],
        findings=[_finding(f) for f in entry["findings"]],
        params=dict(entry["params"]),
        stats=dict(entry["stats"]),
        incomplete=entry["incomplete"],
        _sarif=sarif,
    )


def _one(rendered: Tuple[str, str]) -> Report:
    doc, sarif = rendered
    return _report(json.loads(doc)["files"][0], sarif)


def _pairs(values: Optional[Mapping[Union[str, int], int]], what: str) -> List[Tuple[str, int]]:
    out = []
    for k, v in (values or {}).items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{what} {k!r}: {v!r} is not an integer")
        out.append((str(k), v))
    return out


def _block(block: Union[None, int, Sequence[int]]) -> Optional[Tuple[int, int, int]]:
    if block is None:
        return None
    if isinstance(block, int):
        block = (block,)
    dims = list(block)
    if not 1 <= len(dims) <= 3 or any(not isinstance(d, int) or d < 1 for d in dims):
        raise InputError(f"block {block!r} is not X, (X, Y) or (X, Y, Z) of positive integers")
    dims += [1] * (3 - len(dims))
    return (dims[0], dims[1], dims[2])


def _options(
    params: Optional[Mapping[str, int]],
    max_states: int,
    max_time: Optional[float],
    exhaustive: bool,
    *,
    kernel: Optional[str] = None,
    block: Union[None, int, Sequence[int]] = None,
    cluster: Optional[int] = None,
    args: Optional[Mapping[Union[str, int], int]] = None,
    assume: Optional[Mapping[Union[str, int], int]] = None,
    launch: Optional[str] = None,
) -> "_native.CheckOptions":
    """The native options of a check, from the keywords the functions below share."""
    return _native.CheckOptions(
        params=_pairs(params, "param"),
        max_states=max_states,
        max_time=max_time,
        exhaustive=exhaustive,
        kernel=kernel,
        block=_block(block),
        cluster=cluster,
        args=_pairs(args, "arg"),
        assume=_pairs(assume, "assume"),
        launch=launch,
    )


def _looks_like_path(s: str) -> bool:
    return "\n" not in s and (s.endswith(".phase") or s.endswith(".ptx") or os.path.exists(s))


def verify(
    path_or_text: Union[str, "os.PathLike[str]"],
    params: Optional[Mapping[str, int]] = None,
    *,
    name: str = "<text>.phase",
    max_states: int = DEFAULT_MAX_STATES,
    max_time: Optional[float] = DEFAULT_MAX_TIME,
    exhaustive: bool = False,
) -> Report:
    """Check a protocol: a path to a `.phase` (or `.ptx`) file, or the `.phase` text itself.

    `params` overrides `param` declarations (`{"STAGES": 4}`). `max_time` is in seconds
    (None: no limit); a search that stops at a limit has verdict "inconclusive".
    """
    options = _options(params, max_states, max_time, exhaustive)
    if isinstance(path_or_text, os.PathLike) or _looks_like_path(path_or_text):
        return _one(_native.verify_path(os.fspath(path_or_text), options))
    return _one(_native.verify_text(name, path_or_text, options))


def verify_ptx(
    ptx_text: str,
    block: Union[None, int, Sequence[int]] = None,
    cluster: Optional[int] = None,
    args: Optional[Mapping[Union[str, int], int]] = None,
    *,
    kernel: Optional[str] = None,
    assume: Optional[Mapping[Union[str, int], int]] = None,
    launch: Optional[str] = None,
    name: str = "kernel.ptx",
    max_states: int = DEFAULT_MAX_STATES,
    max_time: Optional[float] = DEFAULT_MAX_TIME,
    exhaustive: bool = False,
) -> Report:
    """Check a kernel given as PTX text (docs/ptx.md): its synchronization skeleton is extracted
    and checked. `block`: threads per block (default: the kernel's .reqntid); `cluster`: blocks
    per cluster; `args`: kernel parameter values by index, `param_N` or PTX name (for a tensor
    map, the bytes one copy through it moves); `assume`: `{PTX line: value}` for unknowns;
    `launch`: a launch recorded by `phasecheck capture`, `"FILE"` or `"FILE#N"` (its block,
    cluster and parameter bytes; `block`, `cluster` and `args` win over it)."""
    options = _options(
        None,
        max_states,
        max_time,
        exhaustive,
        kernel=kernel,
        block=block,
        cluster=cluster,
        args=args,
        assume=assume,
        launch=launch,
    )
    return _one(_native.verify_ptx(name, ptx_text, options))


def extract(
    ptx_text: str,
    block: Union[None, int, Sequence[int]] = None,
    cluster: Optional[int] = None,
    args: Optional[Mapping[Union[str, int], int]] = None,
    *,
    kernel: Optional[str] = None,
    assume: Optional[Mapping[Union[str, int], int]] = None,
    launch: Optional[str] = None,
    name: str = "kernel.ptx",
) -> str:
    """The `.phase` protocol extracted from a kernel's PTX (what `phasecheck extract` prints)."""
    options = _options(
        None,
        DEFAULT_MAX_STATES,
        DEFAULT_MAX_TIME,
        False,
        kernel=kernel,
        block=block,
        cluster=cluster,
        args=args,
        assume=assume,
        launch=launch,
    )
    return _native.extract(name, ptx_text, options)


def lint(
    paths: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]],
    *,
    params: Optional[Mapping[str, int]] = None,
    config: Optional[str] = None,
    no_config: bool = False,
    deny: Sequence[str] = (),
    warn: Sequence[str] = (),
    allow: Sequence[str] = (),
    jobs: Optional[int] = None,
    extra_args: Sequence[str] = (),
) -> LintReport:
    """`phasecheck lint`: every `.phase` file under the paths, with phasecheck.toml files and
    rule levels as on the command line (`extra_args` are passed through as they are)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    argv = [os.fspath(p) for p in paths]
    for k, v in _pairs(params, "param"):
        argv += ["--param", f"{k}={v}"]
    if config is not None:
        argv += ["--config", os.fspath(config)]
    if no_config:
        argv.append("--no-config")
    for flag, rules in (("--deny", deny), ("--warn", warn), ("--allow", allow)):
        for r in rules:
            argv += [flag, r]
    if jobs is not None:
        argv += ["--jobs", str(jobs)]
    argv += list(extra_args)
    doc, sarif = _native.lint(argv)
    parsed = json.loads(doc)
    reports = [_report(f, sarif) for f in parsed["files"] if "findings" in f]
    not_loaded = {f["file"]: f.get("errors", []) for f in parsed["files"] if "findings" not in f}
    return LintReport(
        reports=reports,
        not_loaded=not_loaded,
        exit_code=parsed["exit_code"],
        summary=parsed["summary"],
        _sarif=sarif,
    )


MUTATE_MAX_STATES = 2_000_000
MUTATE_MAX_TIME = 10.0


@dataclass(frozen=True)
class Mutant:
    """One mutant: its 1-based id, the operator, the first changed line, the lines before and
    after, its `.phase` text, and (when checked) the checker's verdict and error rules."""

    id: int
    operator: str
    line: int
    before: List[str]
    after: List[str]
    text: str
    verdict: Optional[str] = None
    rules: List[str] = field(default_factory=list)


@dataclass(frozen=True)
class MutateReport:
    """The mutants of a protocol. `verdict` is the original's (None when not checked);
    `not_loading` counts proposals that do not load, `duplicates` repeated texts."""

    file: str
    verdict: Optional[str]
    mutants: List[Mutant]
    not_loading: int
    duplicates: int

    @property
    def score(self) -> Optional[float]:
        """The share of mutants the checker flags as a hazard (None without mutants or
        without checking), as `phasecheck mutate` reports it."""
        if not self.mutants or self.verdict is None:
            return None
        return sum(m.verdict == "hazard" for m in self.mutants) / len(self.mutants)


def _mutant(m: Mapping[str, Any]) -> Mutant:
    checked = m.get("checked") or {}
    return Mutant(
        id=m["id"],
        operator=m["operator"],
        line=m["change"]["line"],
        before=list(m["change"]["before"]),
        after=list(m["change"]["after"]),
        text=m["text"],
        verdict=checked.get("verdict"),
        rules=list(checked.get("rules", [])),
    )


def mutate(
    path_or_text: Union[str, "os.PathLike[str]"],
    params: Optional[Mapping[str, int]] = None,
    *,
    operators: Optional[Sequence[str]] = None,
    check: bool = True,
    name: str = "<text>.phase",
    max_states: int = MUTATE_MAX_STATES,
    max_time: Optional[float] = MUTATE_MAX_TIME,
) -> MutateReport:
    """The mutants of a protocol (a path to a `.phase` file, or its text), as
    `phasecheck mutate` makes them, each checked by the checker unless `check=False` (no GPU
    either way). `operators` names the operators to apply (all by default), e.g.
    `["flip-parity"]`; an unknown name raises `InputError`.
    """
    p = _pairs(params, "param")
    if isinstance(path_or_text, os.PathLike) or _looks_like_path(path_or_text):
        path = os.fspath(path_or_text)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read {path}: {e}") from None
        name = path
    else:
        text = path_or_text
    doc = json.loads(
        _native.mutate(name, text, p, list(operators or []), check, max_states, max_time)
    )
    original = doc.get("original")
    return MutateReport(
        file=name,
        verdict=original["verdict"] if original else None,
        mutants=[_mutant(m) for m in doc["mutants"]],
        not_loading=len(doc["not_loading"]),
        duplicates=doc["duplicates"],
    )


@dataclass(frozen=True)
class Kernel:
    """The CUDA C++ stress kernel of a protocol, as `phasecheck lower` writes it and
    `phasecheck fuzz` launches it."""

    source: str
    name: str
    block: int
    cluster: int


def lower(
    path_or_text: Union[str, "os.PathLike[str]"],
    params: Optional[Mapping[str, int]] = None,
    *,
    name: str = "<text>.phase",
    proxy_window: bool = False,
) -> Kernel:
    """The fuzzing kernel of a protocol (a path to a `.phase` file, or its text); no GPU or
    CUDA install needed. A protocol that does not load or lower raises `InputError`."""
    p = _pairs(params, "param")
    if isinstance(path_or_text, os.PathLike) or _looks_like_path(path_or_text):
        path = os.fspath(path_or_text)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read {path}: {e}") from None
        name = path
    else:
        text = path_or_text
    source, kernel, block, cluster = _native.fuzz_kernel(name, text, p, proxy_window)
    return Kernel(source=source, name=kernel, block=block, cluster=cluster)


@dataclass(frozen=True)
class ConfirmedFinding:
    """What the GPU showed for one error-level finding. `outcome`: "confirmed", "not-observed"
    or "not-observable"; `evidence`: the kernel that ran, "model" (a stress kernel lowered
    from the protocol: for a `.ptx` input, from the extracted protocol, not the kernel itself)
    or "real-kernel"; `outcome_text` says both ("confirmed on a stress kernel built from the
    model")."""

    rule: str
    code: str
    class_: str
    line: int
    statement: str
    outcome: str
    evidence: str
    outcome_text: str
    detail: str
    trials: int
    trials_showing: int


@dataclass(frozen=True)
class ConfirmReport:
    """`phasecheck confirm`'s report: the device, each finding's result, and for a protocol
    without error-level findings the fuzzing summary (`fuzz`, as `phasecheck fuzz --format
    json` prints it). `raw` is the whole JSON object."""

    file: str
    device: str
    findings: List[ConfirmedFinding]
    fuzz: Optional[Dict[str, Any]]
    raw: Dict[str, Any] = field(repr=False)

    @property
    def shown(self) -> bool:
        """The GPU showed a hazard: a finding confirmed, or the fuzzing saw one."""
        fuzz = self.fuzz or {}
        return any(f.outcome == "confirmed" for f in self.findings) or bool(
            fuzz.get("hangs") or fuzz.get("stale_reads") or fuzz.get("stuck")
        )


def confirm(
    path_or_text: Union[str, "os.PathLike[str]"],
    params: Optional[Mapping[str, int]] = None,
    *,
    name: str = "<text>.phase",
    seconds: float = 5.0,
    aim_seconds: float = 5.0,
    fuzz_seconds: float = 10.0,
    block: Union[None, int, Sequence[int]] = None,
    cluster: Optional[int] = None,
    args: Optional[Mapping[Union[str, int], int]] = None,
    kernel: Optional[str] = None,
    assume: Optional[Mapping[Union[str, int], int]] = None,
    launch: Optional[str] = None,
) -> ConfirmReport:
    """Check a protocol (a `.phase` or `.ptx` path, or `.phase` text) and replay each
    error-level finding on the GPU, in this process (`phasecheck_api::confirm`). Each result
    says which kernel showed it: today a stress kernel built from the model, never the user's
    own kernel. Without a GPU this raises `NoGpuError`; bad input raises `InputError`, a failed
    GPU run `GpuError`. A launch stuck in a hardware collective ends the run and holds the GPU
    until the Python process ends."""
    options = _options(
        params,
        DEFAULT_MAX_STATES,
        DEFAULT_MAX_TIME,
        False,
        kernel=kernel,
        block=block,
        cluster=cluster,
        args=args,
        assume=assume,
        launch=launch,
    )
    if isinstance(path_or_text, os.PathLike) or _looks_like_path(path_or_text):
        doc = _native.confirm_path(
            os.fspath(path_or_text), options, seconds, aim_seconds, fuzz_seconds
        )
    else:
        doc = _native.confirm_text(
            name, path_or_text, options, seconds, aim_seconds, fuzz_seconds
        )
    raw = json.loads(doc)
    findings = [
        ConfirmedFinding(
            rule=f["rule"],
            code=f["code"],
            class_=f["class"],
            line=f["line"],
            statement=f["statement"],
            outcome=f["outcome"],
            evidence=f["evidence"],
            outcome_text=f["outcome_text"],
            detail=f["detail"],
            trials=f["trials"],
            trials_showing=f["trials_showing"],
        )
        for f in raw["findings"]
    ]
    return ConfirmReport(
        file=raw["file"],
        device=raw["device"],
        findings=findings,
        fuzz=raw.get("fuzz"),
        raw=raw,
    )
