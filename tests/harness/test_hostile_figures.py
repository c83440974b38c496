"""Nonsense never signs off: every figure a gate reads is validated at import (type, finiteness, sign,
physical bounds) and a contract threshold must be finite; a violation is a one-line error naming the
file and the field, never a PASS (issue 43, finding 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from eagle4.cli import main as cli
from eagle4.contract import ContractError, load_contract
from eagle4.engines import ResultFormatError
from eagle4.engines.importer import import_results
from eagle4.gates import evaluate_all

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "contracts" / "examples" / "eagle3-engine.toml"
DATA = REPO / "tests" / "data" / "engine_results" / "eagle3"
SPEC = "bench/speculative_single_context32k_3tokens.json"
BASE = "bench/baseline_single_context32k.json"


def _edit(p: Path, fn) -> None:
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d, indent=2))


def _copy(tmp_path, name="micro-1") -> Path:
    d = tmp_path / name
    shutil.copytree(DATA / name, d)
    return d


def _negate(d):
    d["throughput_tokens_per_sec"]["mean"] = -d["throughput_tokens_per_sec"]["mean"]


@pytest.mark.parametrize("edit, field", [
    (_negate, "throughput_tokens_per_sec.mean"),
    (lambda d: d["throughput_tokens_per_sec"].update(mean="131.2"), "throughput_tokens_per_sec.mean"),
    (lambda d: d["throughput_tokens_per_sec"].update(mean=0.0), "throughput_tokens_per_sec.mean"),
    (lambda d: d["latency_ms_per_token"].update(mean=-1.0), "latency_ms_per_token.mean"),
    (lambda d: d["eagle_speculation"].update(mean_acceptance_length=99), "mean_acceptance_length"),
    (lambda d: d["eagle_speculation"].update(mean_acceptance_length=0.5), "mean_acceptance_length"),
    (lambda d: d["eagle_speculation"].update(total_accepted_tokens=-3), "total_accepted_tokens"),
])
def test_impossible_figure_refuses_the_file(tmp_path, edit, field):
    d = _copy(tmp_path)
    _edit(d / SPEC, edit)
    with pytest.raises(ResultFormatError) as e:
        import_results(d)
    msg = str(e.value)
    assert "\n" not in msg and "speculative_single_context32k_3tokens.json" in msg and field in msg, msg


def test_negated_throughputs_on_both_sides_never_pass(tmp_path):
    d = _copy(tmp_path)
    _edit(d / SPEC, _negate)
    _edit(d / BASE, _negate)
    with pytest.raises(ResultFormatError, match="throughput"):
        evaluate_all(EXAMPLE, tmp_path / "rep", record_ledger=False, results_dir=d, stage="micro")


def test_negated_full_stage_is_refused_by_the_cli(tmp_path, capsys):
    rep = str(tmp_path / "rep")
    for m in ("micro-1", "micro-2", "micro-3"):  # the micro gates green three times: full may run
        assert cli(["gates", "--contract", str(EXAMPLE), "--results", str(DATA / m), "--reports", rep,
                    "--stage", "micro", "--record"]) == 0
    capsys.readouterr()
    d = _copy(tmp_path, "full")
    for p in (d / "bench").glob("*_context*.json"):
        _edit(p, _negate)
    rc = cli(["gates", "--contract", str(EXAMPLE), "--results", str(d), "--reports", rep, "--stage", "full"])
    out = capsys.readouterr()
    assert rc == 2, out
    assert "SIGNED OFF" not in out.out.replace("NOT SIGNED OFF", "")


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_threshold_must_be_finite(tmp_path, value):
    text = EXAMPLE.read_text()
    import re
    bad, n = re.subn(r"(?m)^threshold = [0-9.]+", f"threshold = {value}", text, count=1)
    assert n == 1
    p = tmp_path / "c.toml"
    p.write_text(bad)
    with pytest.raises(ContractError, match="threshold"):
        load_contract(p)


@pytest.mark.parametrize("value", ["1e400", "3.5e38"])
def test_cdt_text_value_that_overflows_f32_is_refused(tmp_path, value):
    """1e400 and 3.5e38 were stored as inf in a float32 array; an explicit inf token still is one."""
    from eagle4.cases.cdt_text import CdtTextError, parse_cdt_text

    text = ("meta 1 2 2 3 5\ntopk_probas_sampling 4 0.5 0.25 0.75 1\nlast_layer_scores 2 0.5 1\n"
            f"input_hidden_states 6 1 2 {value} 4 5 6\nexpected_curr_layer_scores 4 0.25 0.125 0.75 1\n")
    p = tmp_path / "case.txt"
    p.write_text(text)
    with pytest.raises(CdtTextError, match=rf"case\.txt:4: input_hidden_states: {value} does not fit float32"):
        parse_cdt_text(p, "K1")
    p.write_text(text.replace(value, "inf"))
    assert np.isinf(parse_cdt_text(p, "K1").inputs["input_hidden_states"]).sum() == 1
