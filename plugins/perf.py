"""Perf plugin: perf tests run alone (never under xdist), with >= 5 independent runs per point.

* ``--perf-runs N`` (default 5; fewer is refused): independent runs per operating point;
* a perf test collected under pytest-xdist FAILS: parallel workers would measure each other;
* ``perf_rows`` fixture: raw rows a perf test records, written by the controller to
  ``reports/perf_runs_raw.csv`` (one row per run, with provenance).
"""

from __future__ import annotations

import csv

import pytest

from eagle4.contract import MIN_RUNS, Runs
from eagle4.report import atomic
from plugins.api import interrupted, reports_dir

DEFAULT_COV_MAX = Runs.model_fields["cov_max"].default  # the contract schema's default, not a second literal


class _Rows:
    """The raw rows perf tests recorded this session (collected on the controller)."""

    def __init__(self):
        self.rows: list[dict] = []

    def pytest_runtest_logreport(self, report):
        if report.when == "teardown":
            for key, value in report.user_properties:
                if key == "eagle4_perf_rows":
                    self.rows.extend(value)


_ROWS = pytest.StashKey[_Rows]()


def pytest_addoption(parser):
    group = parser.getgroup("eagle4 perf")
    group.addoption("--perf-runs", type=int, default=MIN_RUNS,
                    help=f"independent runs per operating point (>= {MIN_RUNS})")
    group.addoption("--max-cov", type=float, default=DEFAULT_COV_MAX,
                    help=f"largest coefficient of variation accepted (the contract default, {DEFAULT_COV_MAX})")


def pytest_configure(config):
    if config.getoption("--perf-runs") < MIN_RUNS:
        raise pytest.UsageError(f"--perf-runs must be >= {MIN_RUNS} (the benchmark contract's minimum)")
    config.stash[_ROWS] = _Rows()
    config.pluginmanager.register(config.stash[_ROWS], "eagle4-perf-rows")


def pytest_runtest_setup(item):
    if item.get_closest_marker("perf") and hasattr(item.config, "workerinput"):
        pytest.fail("perf tests never run under pytest-xdist (workers would measure each other): "
                    "run them with -p no:xdist, e.g. `pytest -m perf -p no:xdist`", pytrace=False)


@pytest.fixture
def perf_runs(pytestconfig) -> int:
    return pytestconfig.getoption("--perf-runs")


@pytest.fixture
def max_cov(pytestconfig) -> float:
    return pytestconfig.getoption("--max-cov")


@pytest.fixture
def perf_rows(request):
    rows: list[dict] = []
    yield rows
    request.node.user_properties.append(("eagle4_perf_rows", rows))


def pytest_sessionfinish(session, exitstatus):
    rows = session.config.stash[_ROWS].rows
    if hasattr(session.config, "workerinput") or not rows or interrupted(exitstatus):
        return
    path = reports_dir(session.config) / "perf_runs_raw.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    fields = sorted({k for r in rows for k in r})
    with atomic.atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
