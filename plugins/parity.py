"""Parity plugin: backend selection, per-case records, and the parity matrix.

Tests call ``record_parity(request, ...)``; the record travels in the test report's
``user_properties`` so it reaches the controller under pytest-xdist, which writes at session end:
* ``reports/p0_parity_matrix.json`` / ``.md``: kernel x case x backend -> pass / fail / not run (why);
* ``reports/csim_port_bytes.csv``: bytes per m_axi port per kernel and case from the C-sim counters.

"reports/" is ``--reports-dir`` (plugins.artifacts). An interrupted run writes no matrix at all, so
the previous one stays. The records of a session live in ``config.stash`` (one recorder per config).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest

from eagle4.backends.csim_ports import port_rows, write_port_bytes_csv
from eagle4.report import atomic
from plugins.api import interrupted, reports_dir, requested_hw  # noqa: F401 - reports_dir: callers import it here

_MATRIX_BACKENDS = ("ref-frozen", "dump:cuda-original", "dump:h100", "csim:h100", "csim", "cuda", "xrt")
_BACKEND_HW = {"csim": "cpu", "cuda": "cuda", "xrt": "fpga", "ref-frozen": "cpu",
               "dump:cuda-original": "cpu", "dump:h100": "cpu", "csim:h100": "cpu"}


def pytest_addoption(parser):
    group = parser.getgroup("eagle4 parity")
    group.addoption("--fuzz-examples", type=int, default=200,
                    help="hypothesis examples per kernel for the fuzz parity tests (default 200)")
    group.addoption("--kernel-src", default=os.environ.get("EAGLE4_KERNEL_SRC"),
                    help="path to a user's cost_draft_tree_kernel.cu for the cuda backend")
    group.addoption("--no-matrix", action="store_true", default=False,
                    help="do not write the parity matrix (used by tests of the harness itself)")


class _Records:
    """This session's matrix cells and C-sim port rows (collected on the controller)."""

    def __init__(self):
        self.cells: list[dict] = []
        self.port_rows: list[dict] = []

    def pytest_runtest_logreport(self, report):
        # runs on the controller (and in a single process); collects what tests recorded
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        for key, value in report.user_properties:
            if key == "eagle4_parity":
                rec = dict(value)
                if report.outcome == "failed" and rec["status"] == "pass":
                    rec["status"] = "fail"
                self.cells.append(rec)
            elif key == "eagle4_port_bytes":
                self.port_rows.extend(value)


_RECORDS = pytest.StashKey[_Records]()


def pytest_configure(config):
    # hypothesis settings are fixed at import time of the test modules, which follows configure
    os.environ["EAGLE4_FUZZ_EXAMPLES"] = str(config.getoption("--fuzz-examples"))
    config.stash[_RECORDS] = _Records()
    config.pluginmanager.register(config.stash[_RECORDS], "eagle4-parity-records")


def record_parity(request, kernel: str, case_id: str, backend: str, status: str, detail: str = "",
                  port_bytes: dict | None = None) -> None:
    """Attach one matrix cell (and optional C-sim port counters) to the running test's report."""
    request.node.user_properties.append(("eagle4_parity", {
        "kernel": kernel, "case_id": case_id, "backend": backend, "status": status, "detail": detail[:2000]}))
    if port_bytes:
        request.node.user_properties.append(("eagle4_port_bytes", port_rows(kernel, case_id, port_bytes)))


@pytest.fixture
def parity_record(request):
    def _rec(kernel, case_id, backend, status, detail="", port_bytes=None):
        record_parity(request, kernel, case_id, backend, status, detail, port_bytes)
    return _rec


def _matrix(config) -> dict:
    from eagle4.cases.catalog import all_cases

    wanted = requested_hw(config)
    cells: dict[tuple, dict] = {}
    for r in config.stash[_RECORDS].cells:
        k = (r["kernel"], r["case_id"], r["backend"])
        prev = cells.get(k)
        if prev is None or prev["status"] == "pass":  # a failure anywhere wins
            cells[k] = r
    try:
        catalog = [(c.kernel, c.case_id) for c in all_cases()]
    except Exception as e:  # the matrix still lists what ran
        catalog = []
        cells[("?", "?", "catalog")] = {"kernel": "?", "case_id": "?", "backend": "catalog",
                                         "status": "fail", "detail": f"catalog failed to load: {e}"}
    rows = []
    seen = set()
    for kernel, case_id in catalog + [(k[0], k[1]) for k in cells]:
        if (kernel, case_id) in seen:
            continue
        seen.add((kernel, case_id))
        row = {"kernel": kernel, "case_id": case_id, "backends": {}}
        for b in _MATRIX_BACKENDS + tuple(sorted({k[2] for k in cells} - set(_MATRIX_BACKENDS))):
            cell = cells.get((kernel, case_id, b))
            if cell:
                row["backends"][b] = {"status": cell["status"], "detail": cell["detail"]}
            elif ":" in b:
                row["backends"][b] = {"status": "not run", "detail": "no stored dump of this case from that device"}
            elif _BACKEND_HW.get(b, "cpu") not in wanted:
                row["backends"][b] = {"status": "not run", "detail": f"needs --hw={_BACKEND_HW[b]}"}
            else:
                row["backends"][b] = {"status": "not run",
                                      "detail": "not selected in this session (-k/-m filter, or not collected)"}
        rows.append(row)
    return {"backends": list(_MATRIX_BACKENDS), "hw": sorted(wanted), "rows": rows}


def _write_matrix(config, matrix: dict) -> None:
    out = reports_dir(config)
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "p0_parity_matrix.json", json.dumps(matrix, indent=1, sort_keys=True))
    backends = [b for b in matrix["backends"]]
    counts: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    for row in matrix["rows"]:
        for b, cell in row["backends"].items():
            counts[(row["kernel"], b)][cell["status"]] += 1
    kernels = sorted({r["kernel"] for r in matrix["rows"]})
    lines = ["# P0 parity matrix", "",
             f"Run with --hw={','.join(matrix['hw'])}. Cells: pass / fail / not run, counted over the catalog cases.",
             "Backends: `ref-frozen` = reference vs its frozen output hashes; `dump:cuda-original` = real CUDA "
             "goldens of the original kernel; `dump:h100` = our CUDA kernels' one-shot H100 dumps; `csim` = HLS "
             "C-simulation vs reference; `cuda` = our CUDA kernels vs reference on the GPU; `xrt` = FPGA board (or the pyxrt test double: its "
             "cells' details in the JSON say so, and the env manifest's fpga_backend).", "",
             "| kernel | " + " | ".join(backends) + " |", "|---|" + "---|" * len(backends)]
    for k in kernels:
        cells = []
        for b in backends:
            c = counts[(k, b)]
            cells.append(f"{c['pass']} / {c['fail']} / {c['not run']}")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    fails = [(r, b, c) for r in matrix["rows"] for b, c in r["backends"].items() if c["status"] == "fail"]
    if fails:
        lines += ["", "## Failures", ""]
        for r, b, c in fails[:200]:
            lines.append(f"* `{r['case_id']}` on `{b}`: {c['detail'].splitlines()[0] if c['detail'] else ''}")
    reasons = defaultdict(int)
    for r in matrix["rows"]:
        for b, c in r["backends"].items():
            if c["status"] == "not run":
                reasons[(b, c["detail"])] += 1
    if reasons:
        lines += ["", "## Not run, and why", ""]
        for (b, why), n in sorted(reasons.items()):
            lines.append(f"* `{b}`: {n} case(s): {why}")
    atomic.write_text(out / "p0_parity_matrix.md", "\n".join(lines) + "\n")


def _write_port_bytes(config) -> None:
    rows = config.stash[_RECORDS].port_rows
    if rows:
        write_port_bytes_csv(rows, reports_dir(config) / "csim_port_bytes.csv")


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("--no-matrix"):
        return
    if not config.stash[_RECORDS].cells:
        return  # no parity test ran: leave the previous matrix alone
    if interrupted(exitstatus):
        return  # a partial matrix never replaces a complete one
    _write_matrix(config, _matrix(config))
    _write_port_bytes(config)
