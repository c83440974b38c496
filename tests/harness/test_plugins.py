"""The harness's own plugins, exercised through pytester in subprocesses (isolated plugin state)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def run(harness_pytester):
    def _run(*args):
        return harness_pytester.runpytest_subprocess("-p", "no:cacheprovider", "--reports-dir",
                                                     str(harness_pytester.path / "rep"), *args)
    return _run


GPU_TEST = """
import pytest
@pytest.mark.cuda
def test_needs_gpu():
    pass
@pytest.mark.fpga
def test_needs_board():
    pass
def test_plain():
    pass
"""


def _torch_has_cuda() -> bool:
    import torch
    return torch.cuda.is_available()


def test_hardware_not_asked_for_is_deselected_and_counted(pytester, run):
    pytester.makepyfile(GPU_TEST)
    res = run()
    res.assert_outcomes(passed=1, deselected=2)
    res.stdout.fnmatch_lines(["*deselected tests for hardware not asked for: 1 need cuda, 1 need fpga*"])


@pytest.mark.skipif(_torch_has_cuda(), reason="this machine has a GPU; the missing-hardware path cannot be shown")
def test_missing_hardware_fails_and_names_it(pytester, run):
    pytester.makepyfile(GPU_TEST)
    res = run("--hw=cuda")
    res.assert_outcomes(passed=1, failed=1, deselected=1)
    res.stdout.fnmatch_lines(["*this test needs cuda*no CUDA device*"])


def test_missing_fpga_fails_and_names_it(pytester, run):
    pytester.makepyfile(GPU_TEST)
    res = run("--hw=fpga")
    outcomes = res.parseoutcomes()
    assert outcomes.get("failed") == 1 and outcomes.get("deselected") == 1
    res.stdout.fnmatch_lines(["*this test needs fpga*pyxrt*"])


def test_unknown_hw_is_a_usage_error(pytester, run):
    pytester.makepyfile(GPU_TEST)
    res = run("--hw=tpu")
    assert res.ret != 0
    res.stderr.fnmatch_lines(["*--hw: unknown hardware*tpu*"])


PLANTED = """
import numpy as np, pytest
from eagle4.compare import compare_outputs

@pytest.mark.parity
def test_planted(parity_record):
    exp = {"work_deltas": np.array([1, 2, 3], np.float32)}
    act = {"work_deltas": np.array([1, 2, 4], np.float32)}
    res = compare_outputs("work_deltas", exp, act, {}, {}, "work_deltas/planted")
    parity_record("work_deltas", "work_deltas/planted", "csim", "pass" if res.ok else "fail", res.report())
    assert res.ok, res.report()
"""


def test_planted_mismatch_is_reported_with_indices_and_matrix_written(pytester, run):
    pytester.makepyfile(PLANTED)
    res = run()
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines(["*work_deltas [[]EXACT[]]: 1/3 mismatching elements*", "*at (2,): expected 3.0, got 4.0*"])
    matrix = json.loads((pytester.path / "rep" / "p0_parity_matrix.json").read_text())
    row = next(r for r in matrix["rows"] if r["case_id"] == "work_deltas/planted")
    assert row["backends"]["csim"]["status"] == "fail"
    assert row["backends"]["cuda"] == {"status": "not run", "detail": "needs --hw=cuda"}
    md = (pytester.path / "rep" / "p0_parity_matrix.md").read_text()
    assert "work_deltas/planted" in md and "| work_deltas |" in md
    manifest = (pytester.path / "rep" / "env_manifest.txt").read_text()
    assert "git_commit:" in manifest and "pytest_hw: cpu" in manifest


MANY_GPU_TESTS = """
import pytest
@pytest.mark.cuda
@pytest.mark.parametrize("i", range(40))
def test_needs_gpu(i):
    pass
def test_plain():
    pass
"""


@pytest.mark.skipif(_torch_has_cuda(), reason="this machine has a GPU; the missing-hardware path cannot be shown")
def test_missing_hardware_is_one_failure_with_a_count(pytester, run):
    """40 tests that need a missing CUDA device: one failure names the reason and the count, not 40 copies."""
    pytester.makepyfile(MANY_GPU_TESTS)
    res = run("--hw=cuda")
    res.assert_outcomes(passed=1, failed=1, deselected=39)
    assert sum("no CUDA device" in ln for ln in res.outlines) <= 2
    res.stdout.fnmatch_lines(["*no CUDA device*stands for all 40 selected tests that need cuda*"])
