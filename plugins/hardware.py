"""--hw selection and the honesty rule.

``--hw=cpu|cuda|fpga`` (comma-separated for several) says what hardware the run must exercise.
* A test marked for hardware the run asked for runs; if that hardware is missing it FAILS with
  a message naming what is missing. It never skips.
* A test marked for hardware the run did not ask for is deselected, and the terminal summary
  counts those per hardware kind so nothing disappears silently.
* Unmarked tests and ``cpu``/``csim`` tests need only this machine and always run.
"""

from __future__ import annotations

import functools

import pytest

from plugins.api import HW_KINDS, requested_hw  # noqa: F401 - requested_hw: callers import it here

_DESELECTED = pytest.StashKey[dict]()  # hardware kind -> tests deselected because it was not asked for
_COLLAPSED = pytest.StashKey[dict]()  # hardware kind asked for but missing -> tests that one failure stands for


def pytest_addoption(parser):
    group = parser.getgroup("eagle4 hardware")
    group.addoption("--hw", default="cpu",
                    help="hardware the run must exercise: cpu, cuda, fpga (comma-separated); default cpu")
    group.addoption("--xclbin", default=None,
                    help="the xclbin the xrt backend loads under --hw=fpga (else EAGLE4_XCLBIN or the contract's [fpga] xclbin)")
    group.addoption("--with-docker", action="store_true", default=False,
                    help="also run tests that need a running Docker engine (marker 'docker')")


def pytest_configure(config):
    requested_hw(config)  # a bad --hw is a usage error before anything runs
    config.stash[_DESELECTED] = {}
    xclbin = config.getoption("--xclbin", default=None)
    if xclbin:  # the xrt backend (and the run processes it starts) read it from the environment
        import os

        os.environ["EAGLE4_XCLBIN"] = str(xclbin)


@functools.cache
def hardware_missing(kind: str) -> str | None:
    """None when ``kind`` is usable here, else a sentence saying what is missing."""
    if kind == "cpu":
        return None
    if kind == "cuda":
        try:
            import torch
        except ImportError:
            return "torch is not installed"
        if not torch.cuda.is_available():
            return ("no CUDA device: torch.cuda.is_available() is False "
                    f"(torch {torch.__version__}, CUDA build {torch.version.cuda})")
        return None
    if kind == "fpga":
        # pyxrt importable, a device enumerated, the xclbin (--xclbin / EAGLE4_XCLBIN) present
        from eagle4.backends.xrt import board_missing

        why = board_missing()
        return None if why is None else f"the FPGA board is not usable: {why}"
    if kind == "docker":
        try:
            import docker
            docker.from_env().ping()
        except Exception as e:  # any failure means no usable engine
            return f"no running Docker engine reachable ({type(e).__name__}: {e})"
        return None
    raise ValueError(kind)


def _item_hw(item) -> set[str]:
    return {k for k in ("cuda", "fpga") if item.get_closest_marker(k)}


def pytest_collection_modifyitems(config, items):
    wanted = requested_hw(config)
    with_docker = config.getoption("--with-docker")
    keep, drop = [], []
    for item in items:
        needs = _item_hw(item)
        missing_request = needs - wanted
        if item.get_closest_marker("docker") and not with_docker:
            missing_request = missing_request | {"docker"}
        if missing_request:
            drop.append(item)
            for k in missing_request:
                config.stash[_DESELECTED][k] = config.stash[_DESELECTED].get(k, 0) + 1
        else:
            keep.append(item)
    # hardware asked for but missing here: one test per kind fails naming it and the count, the rest are
    # deselected (one reason, one line: not 1,276 copies of "no CUDA device")
    collapsed: dict[str, list] = {}
    for item in keep:
        needs = _item_hw(item) | ({"docker"} if item.get_closest_marker("docker") else set())
        kind = next((k for k in sorted(needs) if hardware_missing(k)), None)
        if kind is not None:
            collapsed.setdefault(kind, []).append(item)
    config.stash[_COLLAPSED] = {k: len(v) for k, v in collapsed.items()}
    for _kind, group in collapsed.items():
        if len(group) > 1:
            gone = set(map(id, group[1:]))
            drop += group[1:]
            keep = [i for i in keep if id(i) not in gone]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    # checked in the call phase so the test is reported FAILED (not skipped, not an error)
    needs = _item_hw(item)
    if item.get_closest_marker("docker"):
        needs = needs | {"docker"}
    for kind in sorted(needs):
        why = hardware_missing(kind)
        if why:
            n = item.config.stash.get(_COLLAPSED, {}).get(kind, 1)
            more = f"; it stands for all {n} selected tests that need {kind} (the other {n - 1} were deselected)" \
                if n > 1 else ""
            pytest.fail(f"this test needs {kind} (asked for with --hw / --with-docker) but {why}{more}", pytrace=False)


def pytest_sessionfinish(session, exitstatus):
    # xdist: workers collect; hand the counts to the controller (every worker collects the same)
    if hasattr(session.config, "workerinput"):
        session.config.workeroutput["eagle4_deselected"] = dict(session.config.stash[_DESELECTED])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    counts = node.config.stash[_DESELECTED]
    for k, n in getattr(node, "workeroutput", {}).get("eagle4_deselected", {}).items():
        counts[k] = max(counts.get(k, 0), n)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    counts = config.stash.get(_DESELECTED, {})
    if counts:
        parts = ", ".join(f"{n} need {k}" for k, n in sorted(counts.items()))
        hint = "; ask with --hw=cuda / --hw=fpga / --with-docker"
        terminalreporter.write_line(f"eagle4: deselected tests for hardware not asked for: {parts}{hint}")


def pytest_report_header(config):
    return f"eagle4 --hw={','.join(sorted(requested_hw(config)))}"


@pytest.fixture(scope="session")
def hw(pytestconfig) -> set[str]:
    """The hardware kinds this run exercises."""
    return requested_hw(pytestconfig)
