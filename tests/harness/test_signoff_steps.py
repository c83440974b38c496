"""A GPU sign-off call's step logs read back (eagle4.perf.records steps): a step stopped by its time box or a
sanitizer that found something is named, and a step redone clean in a second call is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagle4.perf.records import main, step_verdict, unclean_steps

pytestmark = [pytest.mark.cpu]


def _record(tmp_path: Path, **logs: str) -> Path:
    for name, text in logs.items():
        (tmp_path / f"{name}.txt").write_text(text)
    return tmp_path


def test_clean_steps_pass_and_non_steps_are_not_read(tmp_path):
    d = _record(tmp_path, pytest_log="172 passed\nexit 0\n",
                memcheck_log="========= ERROR SUMMARY: 0 errors\nexit 0\n",
                racecheck_log="========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\nexit 0\n",
                compare_src_log="compare ...\nexit 0 (EAGLE4_CUDA_PDL=1)\n",
                smoke_log="no exit line\n", signoff_log="exit 1\n")  # the script's own output repeats tails
    assert unclean_steps(d) == [] and main(["steps", str(d)]) == 0


def test_a_timed_out_step_is_named_until_a_second_call_redoes_it_clean(tmp_path, capsys):
    d = _record(tmp_path, memcheck_points_log="$ compute-sanitizer ...\n========= COMPUTE-SANITIZER\nexit 124\n")
    assert unclean_steps(d) == ["memcheck_points_log.txt: exit 124 (its time box ran out)"]
    assert main(["steps", str(d)]) == 1 and "step not clean: memcheck_points_log.txt" in capsys.readouterr().out
    _record(d, memcheck_points_second_call_log="========= ERROR SUMMARY: 3 errors\nexit 0\n")
    assert unclean_steps(d) == ["memcheck_points_log.txt: exit 124 (its time box ran out)"]  # redone, not clean
    _record(d, memcheck_points_second_call_log="========= ERROR SUMMARY: 0 errors\nexit 0\n")
    assert unclean_steps(d) == []


def test_sanitizer_findings_count_even_when_the_tool_exits_0(tmp_path):
    # compute-sanitizer exits with the program's code unless told otherwise: the summary line decides
    log = _record(tmp_path, racecheck_log="RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\nexit 0\n")
    assert step_verdict(log / "racecheck_log.txt") == "2 racecheck hazards"
    assert step_verdict(_record(tmp_path, m_log="ERROR SUMMARY: 1 error\nexit 1\n") / "m_log.txt") == \
        "exit 1, 1 memcheck errors"


def test_usage_error_is_exit_2(tmp_path):
    assert main(["steps", str(tmp_path / "missing")]) == 2


@pytest.mark.parametrize("log, says", [
    ("$ python3 -m pytest tests/parity/test_cuda_draft_step.py\nexit 124\n", "did not finish inside its time box"),
    ("1 failed, 40 passed\nexit 1\n", "failed (a mismatch or an error: see step_log.txt)"),
])
def test_the_sign_off_script_never_calls_a_time_out_a_mismatch(tmp_path, log, says):
    """scripts/h100_kernel_signoff.sh says why a parity step failed with its own ``failed_why`` (run here in bash as the
    script defines it): on nvidia-h200 a draft-step parity stopped by its 6 s box was once logged as "did not match"."""
    import subprocess

    script = (Path(__file__).resolve().parents[2] / "scripts" / "h100_kernel_signoff.sh").read_text()
    fn = next(ln for ln in script.splitlines() if ln.startswith("failed_why() {"))
    (tmp_path / "step_log.txt").write_text(log)
    out = subprocess.run(["bash", "-c", f'{fn}\nfailed_why "$1"', "_", str(tmp_path / "step_log.txt")],
                         capture_output=True, text=True, check=True).stdout
    assert says in out and ("match" not in out or "mismatch or an error" in out)
    assert "did not match" not in script, "a failed step is described by failed_why, never as a mismatch outright"


def test_the_sign_off_script_checks_the_harness_imports_before_the_build(tmp_path):
    """On nvidia-h200 pydantic was missing: the parity step failed after a 122 s build and the script blamed the kernel
    source. Its preflight now names the missing module at once (its own lines, run here with a python3 that lacks
    every package: the PATH holds a stub that raises like a missing import)."""
    import subprocess

    script = (Path(__file__).resolve().parents[2] / "scripts" / "h100_kernel_signoff.sh").read_text()
    start = script.index("python3 -c \"import eagle4.contract")
    assert start < script.index('stamp "build"')
    block = script[start:script.index("exit 2; }", start) + len("exit 2; }")]
    stub = tmp_path / "bin" / "python3"
    stub.parent.mkdir()
    stub.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'pydantic'\" >&2\nexit 1\n")
    stub.chmod(0o755)
    r = subprocess.run(["bash", "-c", f'stamp() {{ echo "$*"; }}; OUT={tmp_path}; {block}'], capture_output=True,
                       text=True, env={"PATH": f"{stub.parent}:/usr/bin:/bin"})
    assert r.returncode == 2 and "No module named 'pydantic'" in r.stdout and "wheels" in r.stdout
