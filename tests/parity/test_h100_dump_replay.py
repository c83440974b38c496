"""Replay of the committed H100 one-shot dumps (tests/goldens/h100/): the reference and the
C-simulation must reproduce the outputs our CUDA kernels produced on a real H100.

CI never has a GPU; these dumps are how CPU CI compares against real H100 outputs."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from eagle4.backends import get_backend
from eagle4.cards import UnknownCard, card_of
from eagle4.cases.dump import load_dump
from eagle4.parity import Outcome, judge, run_case

GOLDENS = Path(__file__).resolve().parents[1] / "goldens" / "h100"
DUMPS = sorted(GOLDENS.glob("**/*.npz"))


def test_h100_goldens_are_committed():
    """No silent pass: without committed H100 dumps the replay below would test nothing."""
    assert DUMPS, f"no H100 dumps under {GOLDENS}: run scripts/dump_h100_goldens.py on an H100 and commit them"
    manifest = GOLDENS / "MANIFEST.json"
    assert manifest.is_file(), f"{manifest} (device, driver, torch, commit of the dump run) is missing"
    meta = json.loads(manifest.read_text())
    assert "H100" in json.dumps(meta), "the dump manifest does not name an H100"


@functools.cache
def _backend(name):
    b = get_backend(name)
    b.require()
    return b


@pytest.mark.parity
@pytest.mark.parametrize("backend_name", ["ref", pytest.param("csim", marks=pytest.mark.csim)])
@pytest.mark.parametrize("path", DUMPS, ids=lambda p: p.stem)
def test_replay_h100_dump(path, backend_name, parity_record):
    case = load_dump(path)  # verifies sha256, shapes and dtypes
    device = str(case.meta.get("producer", {}).get("device", ""))
    try:
        card_of(device)
    except UnknownCard as e:
        pytest.fail(f"{path.name}: producer {e}", pytrace=False)
    cell = "dump:h100" if backend_name == "ref" else "csim:h100"
    backend = _backend(backend_name)
    if not backend.supports(case.kernel):
        parity_record(case.kernel, case.case_id, cell, "fail", f"{backend_name} does not implement {case.kernel}")
        pytest.fail(f"{backend_name} does not implement {case.kernel}")
    verdict = judge(case, Outcome(case.expected, None), run_case(backend, case), require_all=True)  # no PASS without evidence
    parity_record(case.kernel, case.case_id, cell, "pass" if verdict.ok else "fail",
                  "" if verdict.ok else verdict.report)
    assert verdict.ok, verdict.report
