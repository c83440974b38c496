"""The dump format as documented, and no PASS without evidence (issue 10, points 2, 3, 4 and the dump
half of 10).

* spec-npz's ``meta_json`` is a flat object of the ABI's scalars (the wrapped ``params`` form stays);
* an optional output the dump expects (K3 ``per_req_deltas``) is asked of the backend;
* ``eagle4 check`` passes only a dump that holds every non-optional output's expectation, names what it
  did not compare, and one bad file does not stop the others;
* a bad scalar is a one-line error naming the file and the field, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eagle4.cases import Case
from eagle4.cases.dump import DumpError, load_dump, payload_sha256, save_dump
from eagle4.cli import main as cli_main
from eagle4.cli.import_case import import_case
from eagle4.compare import compare_outputs

# K3 by hand (KERNELS.md §3): row 0 A=[4,3] Bn=[5,1], Vb=3: base 7, 5 fills the free slot, 1 evicts
# nothing (1 < 3); row 1 A=[2,1] Bn=[3,2.5]: base 3, 3 free, 2.5 evicts A[1]=1 -> 1.5.
K3_PARAMS = {"batch_size": 2, "node_count": 2, "node_top_k": 2, "verify_num": 3, "row_stride": 4}
K3_SCORES = np.array([[4, 3, 5, 1], [2, 1, 3, 2.5]], np.float32)
K3_PER_REQ = np.array([[7, 5, 0], [3, 3, 1.5]], np.float32)
K3_TOTAL = np.array([10, 8, 1.5], np.float32)
PRODUCER = {"backend": "hand", "device": "none (worked by hand from KERNELS.md §3)"}


def _spec_npz(path: Path, meta: dict, **arrays) -> Path:
    np.savez(path, **arrays, meta_json=np.array(json.dumps(meta)))
    return path


def _k3_dump(path: Path, expected: dict) -> Path:
    case = Case("work_deltas", "work_deltas/hand", dict(K3_PARAMS), {"work_scores": K3_SCORES})
    save_dump(path, case, expected, PRODUCER)
    return path


def _check(capsys, backend: str, *dumps) -> tuple[int, str, str]:
    rc = cli_main(["check", "--backend", backend, *map(str, dumps)])
    out = capsys.readouterr()
    return rc, out.out, out.err


# -- 10.2: spec-npz with a flat meta_json --------------------------------------------------------------
def test_spec_npz_flat_meta_json_imports(tmp_path):
    src = _spec_npz(tmp_path / "flat.npz", dict(K3_PARAMS), work_scores=K3_SCORES, expected_work_deltas=K3_TOTAL)
    case, _ = import_case("spec-npz", src, "K3", tmp_path / "d.npz")
    assert case.params == K3_PARAMS
    assert load_dump(tmp_path / "d.npz").params == K3_PARAMS


def test_spec_npz_flat_meta_json_with_kernel_and_producer(tmp_path):
    meta = {"kernel": "K3", **K3_PARAMS, "producer": {"backend": "my-cuda", "device": "H100"}}
    src = _spec_npz(tmp_path / "flat.npz", meta, work_scores=K3_SCORES, expected_work_deltas=K3_TOTAL)
    case, _ = import_case("spec-npz", src, None, tmp_path / "d.npz")
    assert case.kernel == "work_deltas"
    assert load_dump(tmp_path / "d.npz").meta["producer"]["backend"] == "my-cuda"


def test_spec_npz_wrapped_meta_json_still_imports(tmp_path):
    src = _spec_npz(tmp_path / "w.npz", {"params": K3_PARAMS}, work_scores=K3_SCORES, expected_work_deltas=K3_TOTAL)
    case, _ = import_case("spec-npz", src, "K3", tmp_path / "d.npz")
    assert case.params == K3_PARAMS


@pytest.mark.parametrize("meta,match", [
    ({**K3_PARAMS, "params": K3_PARAMS}, r"both flat .* and in 'params'"),
    ({**K3_PARAMS, "batchsize": 2}, r"'batchsize'.* neither scalar arguments"),
    ({k: v for k, v in K3_PARAMS.items() if k != "verify_num"}, r"missing scalar argument\(s\) \['verify_num'\]"),
])
def test_spec_npz_meta_json_errors_name_the_field(tmp_path, meta, match):
    src = _spec_npz(tmp_path / "bad.npz", meta, work_scores=K3_SCORES, expected_work_deltas=K3_TOTAL)
    with pytest.raises(DumpError, match=match):
        import_case("spec-npz", src, "K3", tmp_path / "d.npz")
    assert not (tmp_path / "d.npz").exists()


# -- bad scalars: a one-line error naming the file and the field ---------------------------------------
BAD_SCALARS = [("verify_num", None), ("verify_num", [3]), ("verify_num", 2.5), ("verify_num", 2**66),
               ("verify_num", True), ("verify_num", "3")]


@pytest.mark.parametrize("field,value", BAD_SCALARS, ids=[repr(v) for _, v in BAD_SCALARS])
def test_bad_scalar_in_spec_npz_is_one_line_error(tmp_path, capsys, field, value):
    src = _spec_npz(tmp_path / "bad.npz", {**K3_PARAMS, field: value}, work_scores=K3_SCORES,
                    expected_work_deltas=K3_TOTAL)
    rc = cli_main(["import-case", "--format", "spec-npz", str(src), "--kernel", "K3", "--out", str(tmp_path / "d.npz")])
    err = capsys.readouterr().err
    assert rc != 0
    assert len(err.strip().splitlines()) == 1, err
    assert "bad.npz" in err and f"'{field}'" in err and "Traceback" not in err
    assert not (tmp_path / "d.npz").exists()


def _dump_with_params(path: Path, params: dict) -> Path:
    """A dump whose sha256 is right but whose scalars are not (a writer that skipped the checks)."""
    arrays = {"work_scores": K3_SCORES, "expected_work_deltas": K3_TOTAL}
    meta = {"format": "eagle4-dump/1", "kernel": "work_deltas", "case_id": "work_deltas/bad", "params": params,
            "dtypes": {k: "float32" for k in arrays}, "producer": PRODUCER,
            "sha256": payload_sha256("work_deltas", params, arrays)}
    np.savez(path, **arrays, meta_json=np.array(json.dumps(meta)))
    return path


@pytest.mark.parametrize("field,value", BAD_SCALARS, ids=[repr(v) for _, v in BAD_SCALARS])
def test_bad_scalar_in_a_dump_fails_that_file_only(tmp_path, capsys, field, value):
    bad = _dump_with_params(tmp_path / "bad.npz", {**K3_PARAMS, field: value})
    good = _k3_dump(tmp_path / "good.npz", {"work_deltas": K3_TOTAL})
    rc, out, err = _check(capsys, "ref", bad, good)
    assert rc == 1
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "bad.npz" in x]
    assert line.startswith("ERROR") and f"'{field}'" in line
    assert "PASS work_deltas" in out and "good.npz" in out  # the bad file did not stop the good one
    assert "1 passed, 1 failed" in out


def test_save_dump_refuses_bad_scalars(tmp_path):
    case = Case("work_deltas", "work_deltas/x", {**K3_PARAMS, "node_count": 2.5}, {"work_scores": K3_SCORES})
    with pytest.raises(DumpError, match="'node_count'"):
        save_dump(tmp_path / "x.npz", case, {"work_deltas": K3_TOTAL}, PRODUCER)
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize("meta_patch,field", [({"dtypes": ["float32"]}, "dtypes"), ({"tags": 3}, "tags"),
                                              ({"kernel": ["K3"]}, "kernel")])
def test_bad_meta_fields_are_errors_not_tracebacks(tmp_path, capsys, meta_patch, field):
    p = _k3_dump(tmp_path / "d.npz", {"work_deltas": K3_TOTAL})
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    meta = {**json.loads(str(arrays.pop("meta_json")[()])), **meta_patch}
    np.savez(p, **arrays, meta_json=np.array(json.dumps(meta)))
    rc, _, err = _check(capsys, "ref", p)
    assert rc == 1 and "Traceback" not in err and field in err


# -- 10.3: optional outputs are requested when the dump expects them --------------------------------------
def test_ref_produces_a_requested_optional_output(tmp_path, capsys):
    dump = _k3_dump(tmp_path / "k3.npz", {"work_deltas": K3_TOTAL, "per_req_deltas": K3_PER_REQ})
    rc, out, err = _check(capsys, "ref", dump)
    assert rc == 0, out + err
    assert "per_req_deltas" in out.split("compared", 1)[1]


def test_optional_output_is_produced_only_when_asked():
    from eagle4.backends import get_backend

    ref = get_backend("ref")
    assert "per_req_deltas" not in ref.run("work_deltas", {"work_scores": K3_SCORES}, K3_PARAMS)
    out = ref.run("work_deltas", {"work_scores": K3_SCORES}, K3_PARAMS, want={"per_req_deltas"})
    np.testing.assert_array_equal(out["per_req_deltas"], K3_PER_REQ)
    with pytest.raises(ValueError, match="not optional outputs"):
        ref.run("work_deltas", {"work_scores": K3_SCORES}, K3_PARAMS, want={"work_deltas"})


@pytest.mark.csim
def test_csim_produces_a_requested_optional_output(tmp_path, capsys):
    from eagle4.backends import csim_build

    missing = csim_build.tools_missing()
    if missing:
        pytest.fail(f"the C-simulation needs {missing}: install g++ and `pip install hls4ml`", pytrace=False)
    dump = _k3_dump(tmp_path / "k3.npz", {"work_deltas": K3_TOTAL, "per_req_deltas": K3_PER_REQ})
    rc, out, err = _check(capsys, "csim", dump)
    assert rc == 0, out + err
    assert "per_req_deltas" in out.split("compared", 1)[1]


@pytest.mark.parity
@pytest.mark.cuda
def test_cuda_produces_a_requested_optional_output(tmp_path, capsys):
    dump = _k3_dump(tmp_path / "k3.npz", {"work_deltas": K3_TOTAL, "per_req_deltas": K3_PER_REQ})
    rc, out, err = _check(capsys, "cuda", dump)
    assert rc == 0, out + err
    assert "per_req_deltas" in out.split("compared", 1)[1]


# -- 10.4: no PASS without evidence --------------------------------------------------------------------
def test_dump_without_expectations_fails(tmp_path, capsys):
    dump = _k3_dump(tmp_path / "empty.npz", {})
    rc, out, err = _check(capsys, "ref", dump)
    assert rc == 1
    assert "PASS" not in out
    assert "['work_deltas']" in out + err and "empty.npz" in out + err


def test_dump_missing_a_required_expectation_fails_naming_it(tmp_path, capsys):
    dump = _k3_dump(tmp_path / "partial.npz", {"per_req_deltas": K3_PER_REQ})
    rc, out, err = _check(capsys, "ref", dump)
    assert rc == 1
    assert "PASS" not in out
    assert "no expectation for ['work_deltas']" in out + err


def test_pass_names_what_was_compared_and_what_was_not():
    res = compare_outputs("work_deltas", {"work_deltas": K3_TOTAL},
                          {"work_deltas": K3_TOTAL, "per_req_deltas": K3_PER_REQ}, {}, K3_PARAMS, "x")
    assert res.ok and res.not_compared == ["per_req_deltas"]
    assert "not compared (no expectation): ['per_req_deltas']" in res.report()
    assert not compare_outputs("work_deltas", {}, {"work_deltas": K3_TOTAL}, {}, K3_PARAMS, "x").ok
    partial = compare_outputs("update_verify", {}, {}, {}, {}, "x", require_all=True)
    assert not partial.ok and "accept_index_out" in partial.report()
