"""A test session's scratch copy of reports/ (``/tmp/eagle4-reports-*``) is removed when the session ends,
kept only with --keep-scratch and then named (issue 40, deliverable 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _session(tmp_path, *extra):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "--co",
                           "tests/harness/test_stats.py", *extra], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_scratch_copy_is_removed_at_session_end(tmp_path):
    out = _session(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not list(tmp_path.glob("eagle4-reports-*")), out.stdout
    assert "removed" in out.stdout


def test_keep_scratch_keeps_and_names_it(tmp_path):
    out = _session(tmp_path, "--keep-scratch")
    assert out.returncode == 0, out.stdout + out.stderr
    [kept] = list(tmp_path.glob("eagle4-reports-*"))
    assert str(kept) in out.stdout.replace("\n", "")
