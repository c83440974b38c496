"""Bounded child processes: a command that runs past its limit is killed with everything it started.

``subprocess.run(timeout=...)`` kills only the direct child; pytest-xdist workers, g++ drivers and the
like would live on. Here the child gets its own process group and the whole group is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess


def run_bounded(cmd: list[str], timeout_s: float, *, grace_s: float = 10.0, **kw) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kw)`` that raises ``subprocess.TimeoutExpired``
    (with the output so far) after ``timeout_s`` seconds, having stopped the child's whole process group
    (SIGTERM, then SIGKILL after ``grace_s``)."""
    kw.setdefault("text", True)
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw) as p:
        try:
            out, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            out, err = _stop_group(p, grace_s)
            raise subprocess.TimeoutExpired(cmd, timeout_s, output=out, stderr=err) from None
        except BaseException:  # Ctrl-C / SIGTERM in the parent: the child's session must not outlive it
            _stop_group(p, min(grace_s, 5.0))
            raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _stop_group(p: subprocess.Popen, grace_s: float) -> tuple[str | bytes | None, str | bytes | None]:
    """SIGTERM the child's process group, SIGKILL it after ``grace_s``; the output read so far."""
    out = err = None
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
        try:
            out, err = p.communicate(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        out, err = p.communicate()
    return out, err
