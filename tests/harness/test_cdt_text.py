"""The cdt-text parser and the import-case CLI: good files parse, bad files fail with file:line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eagle4.backends.ref import ReferenceBackend
from eagle4.cases import draft_tree_score as k1_cases
from eagle4.cases.cdt_text import CdtTextError, parse_cdt_text
from eagle4.cases.dump import DumpError, load_dump
from eagle4.cli import main as cli_main
from eagle4.cli.import_case import import_case
from eagle4.compare import compare_outputs
from eagle4.spec import kernel_spec

# the real K2 golden, project test data (see tests/data/goldens/cuda/SOURCE.md)
UPDATE_GOLDEN = Path(__file__).resolve().parents[1] / "data" / "goldens" / "cuda" / "cost_draft_tree_update_case.txt"

SCORE_OK = """\
# a small K1 case: B=1 K=2 W=2 H=3 cc=5
meta 1 2 2 3 5
topk_probas_sampling 4 0.5 0.25 0.75 1
last_layer_scores 2 0.5 1
input_hidden_states 6 1 2 3 4 5 6
expected_curr_layer_scores 4 0.25 0.125 0.75 1
"""


def write(tmp_path: Path, text: str, name: str = "case.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_small_case_parses_and_runs(tmp_path):
    case = parse_cdt_text(write(tmp_path, SCORE_OK), "K1")
    assert case.params == {"batch_size": 1, "node_top_k": 2, "tree_width": 2, "cumu_count": 5,
                           "use_hot_token_id": False}
    assert case.inputs["input_hidden_states"].shape == (2, 3)
    assert case.inputs["input_hidden_states"].dtype == np.float32
    out = ReferenceBackend().run(case.kernel, case.inputs, case.params)
    assert compare_outputs(case.kernel, case.expected, out, case.inputs, case.params).ok


def test_meta_with_leading_count(tmp_path):
    case = parse_cdt_text(write(tmp_path, SCORE_OK.replace("meta 1 2 2 3 5", "meta 5 1 2 2 3 5")), "K1")
    assert case.params["cumu_count"] == 5


def test_meta_first_value_equal_to_count_is_not_mistaken(tmp_path):
    # B = 4 with 4 remaining fields: without a sixth value this is not a count-prefixed meta
    text = SCORE_OK.replace("meta 1 2 2 3 5", "meta 4 1 1 1 5")
    text = "\n".join(l for l in text.splitlines() if not l.startswith(("topk", "last", "input", "expected")))
    text += "\ntopk_probas_sampling 4 1 1 1 1\nlast_layer_scores 4 1 1 1 1\ninput_hidden_states 4 1 2 3 4\n" \
            "expected_cache_topk_indices 4 5 5 5 5\n"
    case = parse_cdt_text(write(tmp_path, text), "K1")
    assert case.params["batch_size"] == 4 and case.params["cumu_count"] == 5


@pytest.mark.parametrize("mutate,pattern", [
    (lambda t: t.replace("last_layer_scores 2 0.5 1", "last_layer_scores 3 0.5 1"),
     r"case\.txt:4: last_layer_scores: declares 3 values, the line has 2"),
    (lambda t: t.replace("last_layer_scores 2", "last_layer_scores x"), r"case\.txt:4: .*bad integer 'x'"),
    (lambda t: t + "bogus_key 1 7\n", r"case\.txt:7: unknown key 'bogus_key'"),
    (lambda t: t.replace("0.25 0.75", "0.25 zero"), r"case\.txt:3: topk_probas_sampling: bad number 'zero'"),
    (lambda t: t.replace("meta 1 2 2 3 5", "meta 1 2 2 3"), r"case\.txt:2: meta: expected 5 values"),
    (lambda t: t.replace("meta 1 2 2 3 5\n", ""), r"missing scalar argument"),
    (lambda t: t.replace("input_hidden_states 6 1 2 3 4 5 6\n", ""), r"missing required array.*input_hidden_states"),
    (lambda t: t + "last_layer_scores 2 1 1\n", r"case\.txt:7: duplicate key 'last_layer_scores'"),
    (lambda t: t.replace("input_hidden_states 6 1 2 3 4 5 6", "input_hidden_states 5 1 2 3 4 5"),
     r"case\.txt:5: input_hidden_states: spec shape .* needs 6 values"),
    (lambda t: t + "expected_topk_probas_sampling 4 1 1 1 1\n", r"case\.txt:7: .*is an input"),
    (lambda t: t + "initial_last_layer_scores 2 1 1\n", r"case\.txt:7: .*pure input"),
    (lambda t: t.replace("expected_curr_layer_scores 4 0.25 0.125 0.75 1\n", ""), r"no expected_"),
    (lambda t: t + "use_hot_token_id 1 1\n", r"missing required array.*hot_token_id"),
    (lambda t: t + "use_hot_token_id 1 2\n", r"case\.txt:7: use_hot_token_id: a bool must be 0 or 1"),
])
def test_parser_errors_name_file_and_line(tmp_path, mutate, pattern):
    with pytest.raises(CdtTextError, match=pattern):
        parse_cdt_text(write(tmp_path, mutate(SCORE_OK)), "K1")


def test_truncated_golden_fails(tmp_path):
    src = UPDATE_GOLDEN
    raw = src.read_text()
    cut = write(tmp_path, raw[: len(raw) // 2], "trunc.txt")  # ends in the middle of a line
    with pytest.raises(CdtTextError, match=r"trunc\.txt:\d+: .*declares \d+ values, the line has \d+"):
        parse_cdt_text(cut, "K2")
    lines = raw.splitlines(keepends=True)
    whole = write(tmp_path, "".join(lines[: len(lines) // 2]), "trunc_lines.txt")  # ends on a line boundary
    with pytest.raises(CdtTextError, match=r"trunc_lines\.txt: missing required array"):
        parse_cdt_text(whole, "K2")


def test_bool_values_must_be_01(tmp_path):
    src = UPDATE_GOLDEN
    text = src.read_text().replace("input_tree_mask 256 1 1 0", "input_tree_mask 256 1 2 0", 1)
    with pytest.raises(CdtTextError, match=r"input_tree_mask: bool values must be 0 or 1"):
        parse_cdt_text(write(tmp_path, text), "K2")


def test_unknown_key_for_k2(tmp_path):
    src = UPDATE_GOLDEN
    text = src.read_text() + "mystery_array 2 1 2\n"
    with pytest.raises(CdtTextError, match=r"unknown key 'mystery_array'"):
        parse_cdt_text(write(tmp_path, text), "K2")


def test_cli_error_is_clear(tmp_path, capsys):
    bad = write(tmp_path, SCORE_OK.replace("last_layer_scores 2", "last_layer_scores 9"))
    rc = cli_main(["import-case", "--format", "cdt-text", str(bad), "--kernel", "K1", "--out",
                   str(tmp_path / "x.npz")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "case.txt:4" in err and "declares 9 values" in err
    assert not (tmp_path / "x.npz").exists()


def _save_spec_npz(path: Path, arrays: dict, meta: dict) -> None:
    np.savez(path, **arrays, meta_json=np.array(json.dumps(meta)))


def test_spec_npz_import_k1(tmp_path):
    """A user's own plain .npz: ABI names, initial_/expected_ prefixes, meta_json with params."""
    c = k1_cases.make("npz", B=2, K=4, W=2, H=3, seed=5, hot="perm")
    out = ReferenceBackend().run(c.kernel, c.inputs, c.params)
    arrays = {}
    for name, arr in c.inputs.items():
        role = kernel_spec("K1").arg(name).role
        arrays[name if role == "in" else f"initial_{name}"] = arr
    arrays.update({f"expected_{k}": v for k, v in out.items()})
    src = tmp_path / "mine.npz"
    _save_spec_npz(src, arrays, {"params": c.params})
    dump = tmp_path / "dump.npz"
    case, _ = import_case("spec-npz", src, "draft_tree_layer_score_index_gen_op", dump)
    loaded = load_dump(dump)
    assert loaded.case_id == "draft_tree_score/npz/mine"
    assert loaded.meta["producer"]["source"] == "mine.npz"
    res = ReferenceBackend().run(loaded.kernel, loaded.inputs, loaded.params)
    assert compare_outputs(loaded.kernel, loaded.expected, res, loaded.inputs, loaded.params).ok


def test_spec_npz_import_other_kernel(tmp_path):
    """spec-npz is generic: K3 arrays by ABI name import without kernel-specific code."""
    arrays = {"work_scores": np.ones((2, 12), np.float32), "expected_work_deltas": np.zeros(5, np.float32)}
    src = tmp_path / "k3.npz"
    _save_spec_npz(src, arrays, {"params": {"batch_size": 2, "node_count": 8, "node_top_k": 4, "verify_num": 8,
                                            "row_stride": 12}})
    case, _ = import_case("spec-npz", src, "K3", tmp_path / "k3_dump.npz")
    assert case.kernel == "work_deltas"
    assert load_dump(tmp_path / "k3_dump.npz").expected["work_deltas"].shape == (5,)


def test_spec_npz_errors(tmp_path):
    src = tmp_path / "bad.npz"
    _save_spec_npz(src, {"not_an_arg": np.zeros(3, np.float32)}, {"params": {}})
    with pytest.raises(DumpError, match="not_an_arg"):
        import_case("spec-npz", src, "K3", tmp_path / "o.npz")
    np.savez(tmp_path / "nometa.npz", work_scores=np.zeros((1, 2), np.float32))
    with pytest.raises(DumpError, match="meta_json"):
        import_case("spec-npz", tmp_path / "nometa.npz", "K3", tmp_path / "o.npz")
