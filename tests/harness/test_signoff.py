"""The main job's orchestration: every step reported, the verdict honest, the exit code meaningful."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _signoff(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "eagle4.cli", "signoff", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_skipped_steps_make_the_verdict_invalid_and_say_why(tmp_path):
    out = _signoff("--skip", "parity", "workload", "budget", "--reports", str(tmp_path))
    assert out.returncode == 1, out.stderr  # NOT SIGNED OFF (docs/cli.md)
    text = out.stdout
    assert "VERDICT: NOT SIGNED OFF" in text
    # one verdict: no other line reads as one (issue 10.6)
    assert "RESULT:" not in text and "SIGN-OFF:" not in text and text.count("VERDICT:") == 1
    assert "step parity: NOT RUN" in text and "step workload: NOT RUN" in text
    # with no artifacts in the fresh reports dir the byte gates cannot pass: they name what is missing
    assert "missing artifact" in text
    assert (tmp_path / "benchmark_contract.md").is_file() and (tmp_path / "env_manifest.txt").is_file()
    # gates that only an FPGA run can evaluate keep a CPU run from signing off
    assert "not evaluated on --hw=cpu" in text.replace("\n", " ")
    written = (tmp_path / "signoff_summary.md").read_text()
    assert "**VERDICT: NOT SIGNED OFF**" in written and "step parity: NOT RUN" in written


def test_strict_is_kept_and_not_signed_off_exits_1(tmp_path):
    out = _signoff("--skip", "parity", "workload", "budget", "--reports", str(tmp_path), "--strict")
    assert out.returncode == 1


def test_bad_contract_is_one_line_and_no_pack(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[meta]\nname = 1\n")
    out = _signoff("--contract", str(bad), "--reports", str(tmp_path / "r"), cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "bad.toml" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "r").exists() and not list((tmp_path / "runs").glob("*"))


def test_unknown_step_is_a_usage_error(tmp_path):
    out = _signoff("--skip", "lunch", "--reports", str(tmp_path))
    assert out.returncode == 2 and "unknown step" in out.stderr


def test_default_pack_holds_what_the_run_wrote_and_an_index(tmp_path):
    committed = tmp_path / "reports"
    committed.mkdir()
    (committed / "evidence.csv").write_text("kept\n")
    out = _signoff("--contract", str(REPO / "contracts" / "default.toml"), "--skip", "parity", "workload", "budget",
                   cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    packs = list((tmp_path / "runs").glob("signoff-*"))
    assert len(packs) == 1, out.stdout
    pack = packs[0]
    assert not (pack / "evidence.csv").exists()  # committed evidence the run only read is not copied
    assert (pack / "signoff_summary.md").is_file() and (pack / "env_manifest.txt").is_file()
    index = json.loads((pack / "index.json").read_text())
    assert index["verdict"] == "NOT SIGNED OFF" and index["exit_code"] == 1
    files = sorted(p.relative_to(pack).as_posix() for p in pack.rglob("*") if p.is_file())
    assert sorted([*(f["path"] for f in index["files"]), "index.json"]) == files and len(files) <= 40
    assert sorted(p.name for p in committed.iterdir()) == ["evidence.csv"]  # nothing written to reports/
    assert str(pack) in out.stdout.replace("\n", "")


SLOW_PARITY = """
import os, time, pytest

@pytest.mark.parity
def test_slow(request):
    out = request.config.getoption("--reports-dir")
    open(os.path.join(out, "p0_parity_matrix.md"), "w").write("partial\\n")
    open(os.path.join(os.path.dirname(__file__), "child.pid"), "w").write(str(os.getpid()))
    time.sleep(120)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_publishes_nothing_and_stops_the_child(tmp_path, sig):
    """Ctrl-C / SIGTERM during a step: the target folder stays byte-identical, the parity child's process
    group is stopped, the partial output is kept as an interrupted pack (issue 43, finding 2)."""
    (tmp_path / "test_slow_parity.py").write_text(SLOW_PARITY)
    target = tmp_path / "reports"
    target.mkdir()
    (target / "p0_parity_matrix.md").write_text("committed\n")
    (target / "csim_port_bytes.csv").write_text("a,b\n1,2\n")
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    p = subprocess.Popen([sys.executable, "-m", "eagle4.cli", "signoff", "--contract",
                          str(REPO / "contracts" / "default.toml"), "--reports", str(target), "--workers", "0"],
                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid_file = tmp_path / "child.pid"
    deadline = time.time() + 120
    while not pid_file.is_file() and time.time() < deadline and p.poll() is None:
        time.sleep(0.2)
    assert pid_file.is_file(), p.communicate(timeout=60)
    time.sleep(0.5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, out + err
    child = int(pid_file.read_text())
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert {q.name: q.read_bytes() for q in target.iterdir()} == before  # nothing published
    [pack] = list((tmp_path / "runs").glob("signoff-*"))
    assert pack.name.endswith(".interrupted") and (pack / "INTERRUPTED").is_file()
    assert (pack / "p0_parity_matrix.md").read_text() == "partial\n"


def test_parity_step_prints_progress(monkeypatch, tmp_path, capsys):
    """The parity step printed nothing for ~100 s: each pytest progress line now gives a line."""
    from argparse import Namespace

    from eagle4.cli import signoff

    def fake(cmd, timeout_s, on_line=None, **kw):
        for ln in ("....F. [ 50%]", "...... [100%]", "1 failed, 11 passed"):
            on_line(ln)
        return subprocess.CompletedProcess(cmd, 1, "1 failed, 11 passed\n", "")
    monkeypatch.setattr(signoff, "run_bounded", fake)
    signoff._parity(Namespace(hw="cpu", workers=0, parity_timeout=60.0), tmp_path)
    out = capsys.readouterr().out
    assert "parity: 50% of the tests done (1 failed on this line)" in out and "parity: 100% of the tests done" in out


def test_streaming_runner_calls_back_per_line_and_keeps_the_output():
    from eagle4.proc import run_bounded

    seen = []
    res = run_bounded([sys.executable, "-c", "import sys\nfor i in range(3): print(i, flush=True)\n"
                                             "print('err', file=sys.stderr)"], 60, on_line=seen.append)
    assert res.returncode == 0 and seen[:3] == ["0", "1", "2"] and "err" in res.stdout


def test_workload_step_names_points_below_the_run_rule(monkeypatch, tmp_path, capsys):
    """b4/b8 missed the run rule (CoV 17-18%) while the workload step said only OK: the step's first note
    now counts the points meeting the run rule and names each one below it, with its reasons."""
    from argparse import Namespace

    from eagle4.cli import signoff
    from eagle4.workload import runner

    stats = [{"point": "b1", "valid": True, "invalid_reasons": []},
             {"point": "b4", "valid": False, "invalid_reasons": ["CoV 17.20% > 5.00%"]},
             {"point": "b8", "valid": False, "invalid_reasons": ["CoV 18.10% > 5.00%"]}]
    monkeypatch.setattr(runner, "run_contract", lambda *a, **k: {"stats": stats, "paths": {}})
    res = signoff._workload(Namespace(hw="cpu"), object(), tmp_path)
    first = res.notes[0]
    assert first.startswith("run rule: 1 of 3 points MEETS RUN RULE; BELOW RUN RULE: b4 (CoV 17.20% > 5.00%)")
    assert "b8 (CoV 18.10% > 5.00%)" in first and first in capsys.readouterr().out
    monkeypatch.setattr(runner, "run_contract", lambda *a, **k: {"stats": stats[:1], "paths": {}})
    assert signoff._workload(Namespace(hw="cpu"), object(), tmp_path).notes[0] == "run rule: 1 of 1 points MEETS RUN RULE"
