"""Artifact plugin: the env manifest beside the artifact pack, written once per session; and the guard
that a test run leaves the committed artifacts alone.

The guard snapshots (size, mtime) of every file under reports/, tests/data/ and tests/goldens/ when the
session starts and fails the run, naming the files, if any changed, appeared or vanished by its end;
only a run given ``--reports-dir`` inside reports/ may write there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from plugins.parity import interrupted, reports_dir

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
    from plugins.hardware import requested_hw

    env_manifest.write(reports_dir(config) / "env_manifest.txt",
                       {"pytest_hw": ",".join(sorted(requested_hw(config))),
                        "pytest_exitstatus": str(int(exitstatus))})


_CHANGED = pytest.StashKey[list]()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    changed = config.stash.get(_CHANGED, None)
    if changed:
        terminalreporter.write_sep("=", "committed files changed by this test run", red=True)
        for k in changed[:50]:
            terminalreporter.write_line(f"  {k}")
        terminalreporter.write_line("tests must write to tmp_path or the scratch reports folder; "
                                    "restore with `git checkout -- <file>` (run FAILED)")
