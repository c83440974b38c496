"""Artifact plugin: where the artifact pack goes, the env manifest beside it (once per session), and
the guard that a test run leaves the committed artifacts alone.

``--reports-dir`` names the folder. Without it a test run writes into a scratch copy of the committed
``reports/`` (a temporary folder named at the end of the run): only explicit commands (``eagle4
signoff``, ``pytest --reports-dir reports``) write the pack. An interrupted run writes no manifest.
The scratch copy is removed when the session ends, by SIGTERM too; ``--keep-scratch`` keeps it.

The guard snapshots (size, mtime) of every file under reports/, tests/data/ and tests/goldens/ when the
session starts and fails the run, naming the files, if any changed, appeared or vanished by its end;
only a run given ``--reports-dir`` inside reports/ may write there.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from eagle4.report.working_copy import working_copy
from plugins.api import interrupted, reports_dir, requested_hw


def pytest_addoption(parser):
    group = parser.getgroup("eagle4 artifacts")
    group.addoption("--reports-dir", default=None,
                    help="where the artifact pack goes (default: a scratch copy of <rootdir>/reports, removed at the end)")
    group.addoption("--keep-scratch", action="store_true", default=False,
                    help="keep the scratch copy of reports/ after the session (its path is printed at the end)")


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        # an xdist worker parses the command line again, so an option the controller set in configure does
        # not reach it: the controller's folder comes through workerinput (pytest_configure_node)
        d = config.workerinput.get(_WORKER_KEY)
        if d:
            config.option.reports_dir = d
    elif not config.getoption("--reports-dir"):
        config.option.reports_dir = str(_scratch_reports(Path(config.rootpath) / "reports"))
        config.stash[_SCRATCH] = True
        if not config.getoption("--keep-scratch"):
            _remove_scratch_on_sigterm(config)


_WORKER_KEY = "eagle4_reports_dir"


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist (controller): every worker writes where the controller does, the scratch copy included."""
    node.workerinput[_WORKER_KEY] = str(reports_dir(node.config))


_SCRATCH = pytest.StashKey[bool]()


def _scratch_reports(committed: Path) -> Path:
    """A temporary copy of the committed artifact pack: tests read what is committed, write only here."""
    return working_copy(committed, Path(tempfile.mkdtemp(prefix="eagle4-reports-")) / "reports")

COMMITTED = ("reports", "tests/data", "tests/goldens")
_BEFORE = pytest.StashKey[dict]()


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for top in COMMITTED:
        for d, _, files in os.walk(root / top):
            for f in files:
                p = Path(d, f)
                try:
                    st = p.stat()
                except OSError:
                    continue
                out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _guarded(config) -> bool:
    """A run may write reports/ only when told to (--reports-dir pointing into it)."""
    root = Path(config.rootpath).resolve()
    return not str(reports_dir(config).resolve()).startswith(str(root / "reports"))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session):
    config = session.config
    if not hasattr(config, "workerinput") and _guarded(config):
        config.stash[_BEFORE] = _snapshot(Path(config.rootpath))


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):
        return
    before = config.stash.get(_BEFORE, None)
    if before is not None:
        after = _snapshot(Path(config.rootpath))
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if changed:
            config.stash[_CHANGED] = changed
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if config.getoption("--no-matrix") or interrupted(exitstatus):
        return
    from eagle4.report import env_manifest

    extra = {"pytest_hw": ",".join(sorted(requested_hw(config))), "pytest_exitstatus": str(int(exitstatus))}
    if os.environ.get("EAGLE4_XCLBIN"):  # an FPGA run (--xclbin): record the board the xrt backend opened
        from eagle4.backends.xrt import board_fields

        extra.update(board_fields())
    env_manifest.write(reports_dir(config) / "env_manifest.txt", extra)


_CHANGED = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if config.stash.get(_SCRATCH, False):
        fate = "kept (--keep-scratch)" if config.getoption("--keep-scratch") else "removed now; --keep-scratch keeps it"
        terminalreporter.write_line(f"eagle4: this run's artifacts went to {reports_dir(config)} (a scratch copy, "
                                    f"{fate}; reports/ is written only by --reports-dir reports or "
                                    "`eagle4 signoff --reports reports`)")
    changed = config.stash.get(_CHANGED, None)
    if changed:
        terminalreporter.write_sep("=", "committed files changed by this test run", red=True)
        for k in changed[:50]:
            terminalreporter.write_line(f"  {k}")
        terminalreporter.write_line("tests must write to tmp_path or the scratch reports folder; "
                                    "restore with `git checkout -- <file>` (run FAILED)")


def _remove_scratch(config) -> None:
    top = reports_dir(config).parent
    if top.name.startswith("eagle4-reports-"):
        shutil.rmtree(top, ignore_errors=True)


_SIGTERM_BEFORE = pytest.StashKey[object]()


def _remove_scratch_on_sigterm(config) -> None:
    """SIGTERM (a timeout, a parent stopping its process group) ends Python without unwinding, so
    pytest_unconfigure never runs: the handler removes the scratch copy, puts the previous handler back and
    lets the signal end the process as it would have (exit by SIGTERM)."""
    if signal.getsignal(signal.SIGTERM) is None or not _main_thread():
        return  # a handler set outside Python, or not the main thread: leave signals alone
    before = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        _remove_scratch(config)
        signal.signal(signal.SIGTERM, before)
        if callable(before):
            before(signum, frame)
        elif before != signal.SIG_IGN:
            os.kill(os.getpid(), signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_sigterm)
    config.stash[_SIGTERM_BEFORE] = before


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def pytest_unconfigure(config):
    """The controller removes its scratch copy (the whole ``eagle4-reports-*`` folder) unless --keep-scratch."""
    if hasattr(config, "workerinput") or not config.stash.get(_SCRATCH, False):
        return
    before = config.stash.get(_SIGTERM_BEFORE, None)
    if before is not None:
        signal.signal(signal.SIGTERM, before)
    if not config.getoption("--keep-scratch"):
        _remove_scratch(config)
