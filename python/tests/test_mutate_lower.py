"""phasecheck.mutate (the mutants of a protocol, each checked) and phasecheck.lower (its fuzzing
kernel): neither needs a GPU."""

import pytest

import phasecheck

HANDOFF = """protocol handoff
block 2
mbarrier bar
if tid == 0 {
  init bar, 2
}
syncthreads
arrive bar
wait bar parity 0
"""


def test_mutants_are_checked_and_a_flipped_parity_is_a_hazard():
    report = phasecheck.mutate(HANDOFF, name="handoff.phase")
    assert report.verdict == "ok"
    assert report.mutants, "the operators propose mutants of an init, arrive and wait"
    assert [m.id for m in report.mutants] == list(range(1, len(report.mutants) + 1))
    [flipped] = [m for m in report.mutants if m.operator == "flip-parity"]
    assert flipped.line == 9
    assert flipped.before == ["wait bar parity 0"]
    assert "parity" in flipped.after[0] and flipped.after != flipped.before
    assert flipped.verdict == "hazard"
    assert flipped.rules, "a hazard names its rule"
    assert flipped.text != HANDOFF
    assert 0.0 < report.score <= 1.0


def test_without_check_the_mutants_are_only_made():
    report = phasecheck.mutate(HANDOFF, operators=["flip-parity"], check=False)
    assert report.verdict is None and report.score is None
    [m] = report.mutants
    assert m.verdict is None and m.operator == "flip-parity"
    # The mutant is itself a protocol the checker reads.
    assert phasecheck.verify(m.text, name="mutant.phase").verdict == "hazard"


def test_a_corpus_file_by_path(root):
    report = phasecheck.mutate(
        root / "corpus/hazards/data-race/pass.phase", operators=["remove-wait"]
    )
    assert report.file.endswith("pass.phase")
    assert report.verdict == "ok"
    assert report.mutants and all(m.operator == "remove-wait" for m in report.mutants)


def test_bad_input_raises():
    with pytest.raises(phasecheck.InputError, match="unknown operator"):
        phasecheck.mutate(HANDOFF, operators=["no-such-operator"])
    with pytest.raises(phasecheck.InputError):
        phasecheck.mutate("protocol p\nblock 0\n")


def test_lower_gives_the_fuzzing_kernel_without_a_gpu():
    kernel = phasecheck.lower(HANDOFF, {})
    assert kernel.block == 2 and kernel.cluster == 1
    assert "__global__" in kernel.source and kernel.name in kernel.source
    with pytest.raises(phasecheck.InputError):
        phasecheck.lower("protocol p\nblock 0\n")
