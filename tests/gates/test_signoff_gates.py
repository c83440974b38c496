"""One test per [[gates]] entry of the contract. A gate passes only when VALID: its metric comes
from raw CSV artifacts with an accepted provenance and satisfies the threshold; report-only gates
(stretch targets, model figures) print their value and never fail. Gates declared for other hardware
are deselected (marker), and under --hw=fpga a gate without measured FPGA numbers fails naming what
is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eagle4.gates import load_gates

CONTRACT = Path(os.environ.get("EAGLE4_CONTRACT", Path(__file__).resolve().parents[2] / "contracts" / "default.toml"))


def _params():
    out = []
    for g in load_gates(CONTRACT):
        marks = [pytest.mark.gate]
        if "cpu" not in g.hw and "fpga" in g.hw:
            marks.append(pytest.mark.fpga)
        elif "cpu" not in g.hw and "cuda" in g.hw:
            marks.append(pytest.mark.cuda)
        out.append(pytest.param(g.name, marks=marks, id=g.name))
    return out


@pytest.mark.parametrize("name", _params())
def test_gate(name, gate_results):
    r = gate_results[name]
    if r.status == "REPORT":
        print(f"\n{r.line()}")
        return
    if not r.valid:
        pytest.fail(r.line(), pytrace=False)
