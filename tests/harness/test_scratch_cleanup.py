"""A test session's scratch copy of reports/ (``/tmp/eagle4-reports-*``) is removed when the session ends,
kept only with --keep-scratch and then named (issue 40, deliverable 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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


SLEEPS = """
import os, time
def test_sleeps():
    open(os.environ["EAGLE4_TEST_STARTED"], "w").close()
    time.sleep(60)
"""


def test_sigterm_mid_session_leaves_no_scratch(harness_pytester, tmp_path):
    """A session stopped by SIGTERM (a timeout, a parent stopping its process group) never reaches
    pytest_unconfigure; its scratch copy goes all the same and the exit is still by SIGTERM."""
    scratch_parent, started = tmp_path / "tmp", tmp_path / "started"
    scratch_parent.mkdir()
    harness_pytester.makepyfile(SLEEPS)
    env = {**os.environ, "TMPDIR": str(scratch_parent), "EAGLE4_TEST_STARTED": str(started)}
    p = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q"],
                         cwd=harness_pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 20
        while not started.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "the child session never started its test"
        assert list(scratch_parent.glob("eagle4-reports-*")), "the child made no scratch copy to remove"
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=5)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGTERM, out
    assert not list(scratch_parent.glob("eagle4-reports-*")), out
