"""The reference against the only real outputs of the original CUDA kernel (KERNELS.md §12).

The three public case files in tests/data/goldens/cuda (see SOURCE.md there) are imported with
the cdt-text parser, run on the ref backend and compared bit for bit; the import-case CLI must
produce a dump that round-trips to the same verdict.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from eagle4.backends.ref import ReferenceBackend
from eagle4.cases.cdt_text import parse_cdt_text
from eagle4.cases.dump import load_dump
from eagle4.cli import main as cli_main
from eagle4.compare import compare_outputs

pytestmark = [pytest.mark.parity, pytest.mark.cpu]

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "goldens" / "cuda"
GOLDENS = [
    ("cost_draft_tree_score_case.txt", "draft_tree_score"),
    ("cost_draft_tree_score_case_hot.txt", "draft_tree_score"),
    ("cost_draft_tree_update_case.txt", "update_draft_state"),
]
# outputs each golden must carry: a golden that silently lost one would otherwise pass
MUST_COMPARE = {
    "cost_draft_tree_score_case.txt": {"curr_layer_scores", "sort_layer_scores", "sort_layer_indices",
                                       "cache_topk_indices", "parent_indices_in_layer", "output_hidden_states"},
    "cost_draft_tree_score_case_hot.txt": {"curr_layer_scores", "sort_layer_scores", "sort_layer_indices",
                                           "cache_topk_indices", "parent_indices_in_layer",
                                           "output_hidden_states", "topk_tokens_sampling", "output_tokens"},
    "cost_draft_tree_update_case.txt": {"cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs",
                                        "side_indexs", "output_scores", "output_tokens", "work_scores",
                                        "sort_scores", "output_tree_mask"},
}


def golden(name: str) -> Path:
    path = GOLDEN_DIR / name
    if not path.is_file():
        pytest.fail(f"CUDA golden {path} is missing: the real-kernel outputs are project test data "
                    "(tests/data/goldens/cuda, see SOURCE.md there)", pytrace=False)
    return path


@pytest.mark.parametrize("name,kernel", GOLDENS, ids=[g[0] for g in GOLDENS])
def test_reference_matches_cuda_golden(name, kernel, parity_record):
    case = parse_cdt_text(golden(name), kernel)
    assert set(case.expected) == MUST_COMPARE[name]
    out = ReferenceBackend().run(case.kernel, case.inputs, case.params)
    res = compare_outputs(case.kernel, case.expected, out, case.inputs, case.params, case.case_id)
    parity_record(case.kernel, case.case_id, "dump:cuda-original", "pass" if res.ok else "fail",
                  "" if res.ok else res.report())
    assert res.ok, res.report()
    assert all(d.total > 0 for d in res.outputs)  # never a vacuous compare


def test_update_golden_reports_ignored_keys():
    case = parse_cdt_text(golden("cost_draft_tree_update_case.txt"), "K2")
    assert case.meta["ignored_keys"] == ["score_curr_layer_scores", "score_output_hidden_states",
                                         "topk_tokens_sampling_input"]


@pytest.mark.parametrize("name,kernel", GOLDENS, ids=[g[0] for g in GOLDENS])
def test_import_case_cli_round_trip(name, kernel, tmp_path, capsys):
    """import-case writes a verified dump with producer provenance; the ref reproduces its outputs."""
    src = golden(name)
    dump = tmp_path / (src.stem + ".npz")
    rc = cli_main(["import-case", "--format", "cdt-text", str(src), "--kernel", kernel, "--out", str(dump)])
    assert rc == 0, capsys.readouterr().err
    case = load_dump(dump)  # verifies sha256, shapes and dtypes against the spec
    prod = case.meta["producer"]
    assert prod["backend"] == "cuda-original"
    assert prod["device"] == "GPU (per tests/data/goldens/cuda/SOURCE.md)"
    assert prod["source"] == name
    assert prod["source_sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()
    out = ReferenceBackend().run(case.kernel, case.inputs, case.params)
    res = compare_outputs(case.kernel, case.expected, out, case.inputs, case.params, case.case_id)
    assert res.ok, res.report()
    rc = cli_main(["check", "--backend", "ref", str(dump)])  # `eagle4 check`: the same dump passes on ref
    assert rc == 0, capsys.readouterr()
