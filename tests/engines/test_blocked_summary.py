"""A blocked gate shows the figure it measured and why it cannot count; a reason several gates share
is printed once (issue 42, finding on `eagle4 gates --results`)."""

from __future__ import annotations

from pathlib import Path

from eagle4.contract import load_contract
from eagle4.gates import evaluate_all, summary

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "contracts" / "examples" / "eagle3-engine.toml"
DATA = REPO / "tests" / "data" / "engine_results" / "eagle3"
FULL = [g.name for g in load_contract(EXAMPLE).gates if g.stage == "full"]


def test_blocked_gates_show_their_figure_and_one_shared_reason(tmp_path):
    res = evaluate_all(EXAMPLE, tmp_path / "rep", record_ledger=False, results_dir=DATA / "full", stage="full")
    blocked = [r for r in res if r.name in FULL]
    assert len(blocked) > 1 and all(r.status == "BLOCKED" for r in blocked)
    measured = [r for r in blocked if r.threshold is not None]
    assert measured and all(r.value is not None for r in measured)
    assert all(r.notes[0].startswith(f"measured {r.value:.4g}: ") for r in measured)
    text = summary(res, contract_sha256="x", results_dir=DATA / "full")
    why = blocked[0].reasons[0]
    assert "waits until" in why and text.count(why) == 2  # the tag's line and the verdict's line, once each
    tag = next(ln.split()[0] for ln in text.splitlines() if ln.endswith(why) and ln.strip().startswith("[R"))
    assert f"{tag} ({len(blocked)} gates:" in text and text.count(f"see {tag}") == 2 * len(blocked)
