"""phasecheck.verify_ptx / extract on the PTX front end's fixtures (nvcc output kept in the repo)."""

import pytest

import phasecheck


def fixture(root, name):
    return (root / "ptx/tests/fixtures" / name).read_text()


def test_the_double_buffer_kernel_is_ok(root):
    report = phasecheck.verify_ptx(fixture(root, "double_buffer.ptx"), block=64, args={2: 4})
    assert report.verdict == "ok", report.findings


def test_its_parity_bug_is_found(root):
    report = phasecheck.verify_ptx(
        fixture(root, "double_buffer_parity_bug.ptx"), block=(64, 1, 1), args={"param_2": 4}
    )
    assert report.verdict == "hazard"
    assert "data-race" in {f.rule for f in report.findings}


def test_a_value_the_kernel_needs_is_asked_for(root):
    # The trip count (parameter 2) decides the loop: phasecheck never guesses it.
    with pytest.raises(phasecheck.InputError, match="--arg 2="):
        phasecheck.verify_ptx(fixture(root, "double_buffer.ptx"), block=64)


def test_extract_gives_the_protocol(root):
    text = phasecheck.extract(fixture(root, "double_buffer.ptx"), block=64, args={2: 4})
    assert text.startswith("#") or "protocol" in text
    assert "mbarrier" in text
    # The extracted protocol checks as the PTX does.
    assert phasecheck.verify(text).verdict == "ok"


def test_a_captured_launch_gives_block_and_arguments(root):
    # The capture file was recorded on an H100 by `phasecheck capture` from the test program
    # capture/tests/fixtures/tma_launch.cu; launch 0 is `tma_tiles` with 64 threads.
    fixtures = root / "capture/tests/fixtures"
    ptx = (fixtures / "tma_launch.ptx").read_text()
    launch = f"{fixtures / 'tma_launch.capture.json'}#0"
    report = phasecheck.verify_ptx(ptx, launch=launch, kernel="tma_tiles")
    assert report.verdict == "ok", report.findings
    assert "--launch" in phasecheck.extract(ptx, launch=launch, kernel="tma_tiles")
    with pytest.raises(phasecheck.InputError, match="99"):
        phasecheck.verify_ptx(ptx, launch=f"{fixtures / 'tma_launch.capture.json'}#99")
