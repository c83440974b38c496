"""Every backend against the reference, on every catalog case (the chained regressions included).

Each case runs twice on the backend and the two runs must agree bitwise (nondeterminism check).
csim needs only this machine; cuda needs --hw=cuda; xrt needs --hw=fpga (deselected otherwise,
and counted in the summary). A backend that cannot run where it was asked for FAILS.
"""

from __future__ import annotations

import functools

import pytest

from eagle4.backends import get_backend
from eagle4.cases.catalog import all_cases
from eagle4.parity import judge, reference_outcome, run_case, self_consistency

BACKEND_MARKS = {"csim": pytest.mark.csim, "cuda": pytest.mark.cuda, "xrt": pytest.mark.fpga}


def _params():
    cases = all_cases()
    return [pytest.param(b, c, id=f"{b}-{c.case_id}", marks=[m]) for b, m in BACKEND_MARKS.items() for c in cases]


@functools.cache
def _backend(name: str, kernel_src: str | None):
    opts = {"kernel_src": kernel_src} if name == "cuda" and kernel_src else {}
    backend = get_backend(name, **opts)
    backend.require()  # raises BackendUnavailable naming what is missing
    return backend


@pytest.mark.parity
@pytest.mark.parametrize("backend_name,case", _params())
def test_backend_matches_reference(backend_name, case, parity_record, pytestconfig):
    try:
        backend = _backend(backend_name, pytestconfig.getoption("--kernel-src"))
    except Exception as e:
        parity_record(case.kernel, case.case_id, backend_name, "fail", f"backend unavailable: {e}")
        pytest.fail(f"backend {backend_name!r} cannot run: {e}", pytrace=False)
    if not backend.supports(case.kernel):
        parity_record(case.kernel, case.case_id, backend_name, "fail", "kernel not implemented by this backend")
        pytest.fail(f"backend {backend_name!r} does not implement {case.kernel}", pytrace=False)
    expected = reference_outcome(case)
    first = run_case(backend, case)
    # C-sim counters only: the board's come from its counters block with their own provenance
    port_bytes = getattr(backend, "last_port_bytes", None) if first.error is None and backend_name == "csim" else None
    second = run_case(backend, case)
    verdict = judge(case, expected, first)
    repeat = self_consistency(case, first, second)
    ok = verdict.ok and repeat.ok
    detail = "\n".join(x for x in (verdict.report if not verdict.ok else "", repeat.report) if x)
    if getattr(backend, "provenance", "") == "double":  # the cell must not read as a board result
        detail = "on the pyxrt test double (C-sim behind the board interface), not a board\n" + detail
    parity_record(case.kernel, case.case_id, backend_name, "pass" if ok else "fail", detail,
                  port_bytes=dict(port_bytes) if port_bytes else None)
    assert verdict.ok, verdict.report
    assert repeat.ok, repeat.report
