"""Bounded child processes: a command that runs past its limit is killed with everything it started.

``subprocess.run(timeout=...)`` kills only the direct child; pytest-xdist workers, g++ drivers and the
like would live on. Here the child gets its own process group and the whole group is stopped.
"""

from __future__ import annotations

import os
import signal
import subprocess


def run_bounded(cmd: list[str], timeout_s: float, *, grace_s: float = 10.0, on_line=None,
                **kw) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, capture_output=True, text=True, **kw)`` that raises ``subprocess.TimeoutExpired``
    (with the output so far) after ``timeout_s`` seconds, having stopped the child's whole process group
    (SIGTERM, then SIGKILL after ``grace_s``); so does an interrupt (Ctrl-C, SIGTERM) of the caller.
    ``on_line(line)``: called for each line of output as it comes (stderr merged into stdout)."""
    kw.setdefault("text", True)
    if on_line is not None:
        return _run_streaming(cmd, timeout_s, grace_s, on_line, **kw)
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


def _run_streaming(cmd, timeout_s, grace_s, on_line, **kw) -> subprocess.CompletedProcess:
    import threading

    lines: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, **kw) as p:
        def pump():
            for line in p.stdout:
                lines.append(line)
                on_line(line.rstrip("\n"))

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        try:
            p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(p, grace_s)
            t.join(5)
            raise subprocess.TimeoutExpired(cmd, timeout_s, output="".join(lines), stderr="") from None
        except BaseException:
            _stop_group(p, min(grace_s, 5.0))
            raise
        t.join(5)
    return subprocess.CompletedProcess(cmd, p.returncode, "".join(lines), "")
