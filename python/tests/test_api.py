"""phasecheck.verify / verify_ptx / extract / lint on the corpus and on text."""

import json

import pytest

import phasecheck

RACE = """protocol p
block 2
mbarrier full
buffer data
if tid == 0 {
  init full, 1
}
syncthreads
if tid == 0 {
  write data
  arrive full
}
if tid == 1 {
  read data
}
"""


def test_verify_text_finds_the_race_with_its_place_and_trace():
    report = phasecheck.verify(RACE, name="race.phase")
    assert report.verdict == "hazard"
    assert not report.ok
    [f] = [f for f in report.findings if f.rule == "data-race"]
    assert f.class_ == "race"
    assert f.code.startswith("PC")
    assert f.severity == "error"
    # The race is between line 10 (write) and line 14 (read).
    lines = {s.line for s in f.spans}
    assert {10, 14} <= lines, f.spans
    assert f.trace and all(t.thread and t.op for t in f.trace)
    assert report.file == "race.phase" and report.protocol == "p"


def test_waiting_before_the_read_is_ok():
    fixed = RACE.replace("  read data", "  wait full parity 0\n  read data")
    report = phasecheck.verify(fixed)
    assert report.verdict == "ok"
    assert report.findings == []


def test_verify_a_corpus_file_by_path_with_params(root):
    path = root / "corpus/hazards/model-error/fail.phase"
    report = phasecheck.verify(path, params={"STAGES": 3})
    assert report.params == {"STAGES": 3}
    assert [f.rule for f in report.errors] == ["model-error"]
    assert phasecheck.verify(str(root / "corpus/hazards/model-error/pass.phase")).ok


def test_to_sarif_is_sarif_2_1_0_with_the_finding():
    sarif = json.loads(phasecheck.verify(RACE, name="race.phase").to_sarif())
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert any(r["ruleId"].endswith("data-race") or "data-race" in json.dumps(r) for r in results)


def test_bad_input_raises_a_phasecheck_error():
    with pytest.raises(phasecheck.InputError) as e:
        phasecheck.verify("protocol p\nblock 1\nwait nothing parity 0\n")
    assert isinstance(e.value, phasecheck.PhasecheckError)
    assert "nothing" in str(e.value)
    with pytest.raises(phasecheck.PhasecheckError, match="cannot read"):
        phasecheck.verify("no/such/file.phase")
    with pytest.raises(phasecheck.PhasecheckError):
        phasecheck.verify(RACE, params={"NOPE": "x"})
    with pytest.raises(phasecheck.PhasecheckError):
        phasecheck.verify_ptx("this is not PTX")
    with pytest.raises(phasecheck.PhasecheckError):
        phasecheck.verify_ptx(".version 8.0\n", block=(0,))


def test_limits_give_inconclusive(root):
    report = phasecheck.verify(root / "corpus/hazards/data-race/pass.phase", max_states=1)
    assert report.verdict == "inconclusive"
    assert report.incomplete is not None


def test_lint_a_folder(root):
    out = phasecheck.lint([root / "corpus/hazards/data-race"], no_config=True)
    assert len(out.reports) == 2
    assert out.verdict == "hazard"
    assert out.exit_code == 1
    assert {f.rule for f in out.findings} == {"data-race"}
    assert json.loads(out.to_sarif())["version"] == "2.1.0"
    with pytest.raises(phasecheck.PhasecheckError, match="no .phase files"):
        phasecheck.lint([root / "docs"], no_config=True)
    with pytest.raises(phasecheck.PhasecheckError):
        phasecheck.lint([root / "corpus/hazards/data-race"], extra_args=["--no-such-flag"])


def test_confirm_says_which_kernel_or_that_there_is_no_gpu(root):
    """`confirm` replays the race on the GPU; without one (CI) it raises `NoGpuError`, a
    `PhasecheckError`, naming what is missing. Bad input is an `InputError` before any GPU."""
    path = root / "corpus/hazards/data-race/fail.phase"
    try:
        report = phasecheck.confirm(path, seconds=1.0, aim_seconds=0.0)
    except phasecheck.NoGpuError as e:
        assert isinstance(e, phasecheck.PhasecheckError)
        assert "no GPU" in str(e)
    else:
        race = next(f for f in report.findings if f.rule == "data-race")
        assert race.evidence == "model"
        assert race.outcome_text.endswith("on a stress kernel built from the model")
    with pytest.raises(phasecheck.InputError):
        phasecheck.confirm("protocol\n", name="bad.phase")
