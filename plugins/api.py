"""What the harness's plugins share, as plain functions over the pytest config (not a plugin: no
hooks). Each plugin owns its options and its state (``config.stash``); the others read options
only through these functions, never another plugin's internals."""

from __future__ import annotations

from pathlib import Path

import pytest

HW_KINDS = ("cpu", "cuda", "fpga")


def requested_hw(config) -> set[str]:
    """The hardware kinds a run exercises (``--hw``, owned by plugins.hardware); the CPU always."""
    kinds = {k.strip() for k in str(config.getoption("--hw")).split(",") if k.strip()}
    bad = kinds - set(HW_KINDS)
    if bad:
        raise pytest.UsageError(f"--hw: unknown hardware {sorted(bad)}; choose from {HW_KINDS}")
    return kinds | {"cpu"}  # the CPU is always there and always exercised


def reports_dir(config) -> Path:
    """Where this run's artifact pack goes (``--reports-dir``, owned by plugins.artifacts, which sets a
    scratch copy of ``reports/`` when the option is not given)."""
    d = config.getoption("--reports-dir")
    return Path(d) if d else Path(config.rootpath) / "reports"  # unset only before configure ran


def interrupted(exitstatus) -> bool:
    """An interrupted session (Ctrl-C, a crash of the run) leaves every previous artifact as it was."""
    return int(exitstatus) == int(pytest.ExitCode.INTERRUPTED)
