"""One test per [[gates]] entry of the contract (``--contract``, parametrized in conftest.py). A gate
passes only when VALID: its metric comes from raw evidence with an accepted provenance and satisfies
the threshold; report-only gates (stretch targets, model figures) print their value and never fail.
Gates declared for other hardware are deselected (marker), under --hw=fpga a gate without measured
FPGA numbers fails naming what is missing, and a gate of the stage not asked for (--stage) is
skipped with that reason (the verdict counts it as not evaluated)."""

from __future__ import annotations

import pytest


def test_gate(gate_name, gate_results):
    missing = gate_results.get("__board_missing__")  # conftest.BOARD_MISSING: --hw=fpga without a usable board
    if missing:  # no gate is evaluated without the board it needs
        pytest.fail(f"gate {gate_name}: {missing}", pytrace=False)
    r = gate_results[gate_name]
    if r.status == "REPORT":
        print(f"\n{r.line()}")
        return
    if r.status == "SKIPPED":
        pytest.skip("; ".join(r.reasons))
    if not r.valid:
        pytest.fail(r.line(), pytrace=False)
