"""The C-simulation library: one cached build, the uniform C ABI, and parity of K1-K4 against the
reference (every catalog case) and against the real CUDA goldens (K1, K2).

The generic ``pytest -m parity`` over every backend lives in test_backend_parity.py; this file checks
the csim machinery itself and the four kernels K1-K4 directly.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from eagle4.backends import csim_build
from eagle4.backends.csim import CsimBackend, CsimBuildError
from eagle4.compare import compare_outputs
from eagle4.kernels import PreconditionError
from eagle4.parity import judge, reference_outcome, run_case

pytestmark = pytest.mark.csim

MY_KERNELS = ("draft_tree_score", "update_draft_state", "work_deltas", "tree_mask")
GOLDENS = Path(__file__).resolve().parents[1] / "data" / "goldens" / "cuda"


def _need_tools():
    missing = csim_build.tools_missing()
    if missing:
        pytest.fail(f"the C-simulation needs {missing}: install g++ and `pip install hls4ml`", pytrace=False)


@pytest.fixture(scope="module")
def backend():
    _need_tools()
    b = CsimBackend()
    b.build()
    return b


# ---------------------------------------------------------------------------------------------
# build and cache


def test_library_builds_once_then_cache_hit(tmp_path):
    _need_tools()
    first = CsimBackend(cache_dir=tmp_path)
    path = first.build()
    assert first.cache_hit is False
    assert path.is_file() and path.name == csim_build.LIB_NAME
    for k in MY_KERNELS:
        assert k in first.build_info["kernels"], first.build_info["errors"].get(k, "")
    assert first.build_info["seconds"] < 120, "the whole csim build should take well under a minute"
    second = CsimBackend(cache_dir=tmp_path)
    assert second.build() == path
    assert second.cache_hit is True
    # sanitize=True is its own cache key
    assert csim_build.build_digest("lib", [], list(csim_build.BASE_FLAGS)) != \
        csim_build.build_digest("lib", [], list(csim_build.BASE_FLAGS) + list(csim_build.SANITIZE_FLAGS))


def test_concurrent_builds_do_not_race(tmp_path):
    """Two processes building into one fresh cache: one builds, the other waits for it and hits."""
    _need_tools()
    code = ("import sys; from eagle4.backends.csim import CsimBackend; b = CsimBackend(cache_dir=sys.argv[1]); "
            "p = b.build(); print(int(b.cache_hit), p)")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=300)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(o[0] for o in outs) == ["0", "1"], outs
    assert outs[0][1] == outs[1][1]
    assert len([d for d in tmp_path.iterdir() if d.is_dir()]) == 1  # no leftover temp dirs


def test_available_explains_what_is_missing(monkeypatch):
    monkeypatch.setattr(csim_build, "find_cxx", lambda: None)
    ok, why = CsimBackend().available()
    assert not ok and "g++" in why
    monkeypatch.setattr(csim_build, "hls4ml_ap_types", lambda: None)
    ok, why = CsimBackend().available()
    assert not ok and "hls4ml" in why


def test_sanitized_library_needs_preloaded_asan(monkeypatch):
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    ok, why = CsimBackend(sanitize=True).available()
    if csim_build.tools_missing():
        pytest.fail("the C-simulation tools are missing (g++, hls4ml)", pytrace=False)
    assert not ok and "LD_PRELOAD" in why


def test_supports_the_kernels_with_a_capi(backend):
    for k in MY_KERNELS:
        assert backend.supports(k)
    assert set(k for k in csim_build.kernel_keys_with_capi()) >= set(MY_KERNELS)
    assert backend.name == "csim" and backend.provenance == "csim"


# ---------------------------------------------------------------------------------------------
# parity against the reference, every catalog case


def _catalog(key):
    return [pytest.param(c, id=c.case_id) for c in importlib.import_module(f"eagle4.cases.{key}").cases()]


@pytest.mark.parity
@pytest.mark.parametrize("case", [p for k in MY_KERNELS for p in _catalog(k)])
def test_csim_matches_reference(backend, case):
    expected = reference_outcome(case)
    actual = run_case(backend, case)
    verdict = judge(case, expected, actual)
    assert verdict.ok, verdict.report


def test_backend_does_not_mutate_inputs(backend):
    case = importlib.import_module("eagle4.cases.update_draft_state").cases()[0]
    before = {k: v.copy() for k, v in case.inputs.items()}
    backend.run(case.kernel, case.inputs, case.params)
    for k, v in before.items():
        assert np.array_equal(v.view(np.uint8), case.inputs[k].view(np.uint8)), k


# ---------------------------------------------------------------------------------------------
# the real CUDA goldens (ground truth for K1, K2)


@pytest.mark.parity
@pytest.mark.parametrize("fname,kernel", [("cost_draft_tree_score_case.txt", "draft_tree_score"),
                                          ("cost_draft_tree_score_case_hot.txt", "draft_tree_score"),
                                          ("cost_draft_tree_update_case.txt", "update_draft_state")])
def test_csim_matches_cuda_goldens(backend, fname, kernel):
    from eagle4.cases.cdt_text import parse_cdt_text

    path = GOLDENS / fname
    if not path.is_file():
        pytest.fail(f"{path} is missing: the shared/ folder beside the checkout must hold it", pytrace=False)
    case = parse_cdt_text(path, kernel)
    out = backend.run(kernel, case.inputs, case.params)
    res = compare_outputs(kernel, case.expected, out, case.inputs, case.params, case.case_id)
    assert res.ok, res.report()
    assert len(res.outputs) >= 6


# ---------------------------------------------------------------------------------------------
# K1: the full bitonic network sorts every C (regression for §12 P1)


def _k1_inputs(rng, B, W, K, H=4, hidden=np.float32, special=True):
    C = W * K
    probas = rng.integers(0, 16, size=(B, C)).astype(np.float32) / 16  # quantized: many ties
    last = rng.integers(1, 5, size=(B, W)).astype(np.float32) / 4
    if special:
        flat = probas.reshape(-1)
        pick = rng.choice(flat.size, size=min(flat.size, 6), replace=False)
        vals = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan], np.float32)[: len(pick)]
        flat[pick] = vals
    hid = rng.standard_normal((B * W, H)).astype(hidden)
    return {"topk_probas_sampling": probas, "last_layer_scores": last, "input_hidden_states": hid}


def _expected_perm(s):
    key = np.where(np.isnan(s), -np.inf, s).astype(np.float64)
    key = np.where(key == 0, 0.0, key)
    return np.lexsort((np.arange(s.size), -key))  # key desc, index asc


@pytest.mark.parametrize("C,W,K", [(3, 3, 1), (3, 1, 3), (10, 5, 2), (10, 1, 10), (24, 3, 8), (40, 5, 8),
                                   (48, 6, 8), (56, 7, 8), (60, 6, 10), (64, 8, 8), (64, 64, 1), (5, 5, 1)])
def test_k1_sort_is_total_for_every_width(backend, C, W, K):
    assert W * K == C
    rng = np.random.default_rng(C * 100 + W)
    for trial in range(20):
        B = 3
        inputs = _k1_inputs(rng, B, W, K, special=trial % 2 == 1)
        params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": 17, "use_hot_token_id": False}
        out = backend.run("draft_tree_score", inputs, params)
        for b in range(B):
            s = out["curr_layer_scores"][b]
            perm = out["sort_layer_indices"][b]
            assert np.array_equal(perm, _expected_perm(s)), (C, trial, b, perm)
            assert np.array_equal(out["sort_layer_scores"][b].view(np.uint32), s[perm].view(np.uint32))
            assert np.array_equal(out["cache_topk_indices"][b], perm[:K] + 17)
            assert np.array_equal(out["parent_indices_in_layer"][b], perm[:K] // K)


def test_k1_all_equal_scores_give_identity(backend):
    B, W, K = 2, 5, 8
    inputs = {"topk_probas_sampling": np.full((B, W * K), 0.25, np.float32),
              "last_layer_scores": np.ones((B, W), np.float32),
              "input_hidden_states": np.zeros((B * W, 2), np.float16)}
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": 0, "use_hot_token_id": False}
    out = backend.run("draft_tree_score", inputs, params)
    assert np.array_equal(out["sort_layer_indices"], np.tile(np.arange(W * K), (B, 1)))


def test_k1_precondition_refused(backend):
    B, W, K = 1, 9, 8  # C = 72 > 64
    inputs = _k1_inputs(np.random.default_rng(0), B, W, K, special=False)
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": 0, "use_hot_token_id": False}
    with pytest.raises((PreconditionError, ValueError), match="C"):
        backend.run("draft_tree_score", inputs, params)


def test_k4_precondition_refused_with_message(backend):
    B, T, Q = 1, 2, 3  # Q > T
    inputs = {"seq_lens": np.array([1], np.int64), "req_pool_indices": np.array([0], np.int64),
              "req_to_token": np.zeros((1, 4), np.int32), "tree_cache_locs": np.zeros((B, T), np.int64),
              "tree_parent": np.full((B, T), -1, np.int64)}
    params = {"S_max": 4, "B": B, "T": T, "Q": Q, "write_bool_mask": False}
    with pytest.raises(PreconditionError):
        backend.run("tree_mask", inputs, params)
    # the wrapper itself names the argument and the bound (called directly: the reference's
    # allocate would refuse these inputs before the wrapper sees them)
    inputs["seq_lens"] = np.array([9], np.int64)  # > S_max
    params["Q"] = 1
    outs = {"qo_indptr": np.zeros(2, np.int32), "kv_indptr": np.zeros(2, np.int32),
            "kv_indices": np.zeros(16, np.int32), "positions": np.zeros((1, 1), np.int64),
            "mask_indptr_bits": np.zeros(2, np.int32), "mask_indptr_bytes": np.zeros(2, np.int32),
            "packed_mask": np.zeros(16, np.uint8)}
    with pytest.raises(PreconditionError, match=r"tree_mask: seq_lens .*S_max = 4, got 9"):
        backend.call_raw("tree_mask", {**inputs, **outs}, params)
    outs["packed_mask"] = np.zeros(0, np.uint8)
    inputs["seq_lens"] = np.array([1], np.int64)
    with pytest.raises(PreconditionError, match=r"packed_mask holds 0 elements, needs at least 1"):
        backend.call_raw("tree_mask", {**inputs, **outs}, params)
    with pytest.raises(PreconditionError, match=r"EAGLE4_MAX_TREE_TOKENS"):
        backend.call_raw("tree_mask", {**inputs, **outs}, {**params, "T": 10**6})


def test_a_broken_kernel_is_isolated_and_reported(tmp_path):
    """A kernel that fails to compile is left out of the library; running it raises CsimBuildError with
    the compiler output (naming the real file), while every other kernel still runs."""
    _need_tools()
    import shutil

    hls = tmp_path / "hls"
    shutil.copytree(csim_build.HLS_DIR, hls, ignore=shutil.ignore_patterns("fused", "tcl"))
    src = hls / "work_deltas" / "work_deltas.cpp"
    src.write_text(src.read_text() + "\nthis is not C++;\n")
    code = """
import sys, numpy as np
from eagle4.backends.csim import CsimBackend, CsimBuildError
b = CsimBackend(cache_dir=sys.argv[1])
b.build()
assert "work_deltas" in b.build_info["errors"], b.build_info
assert "tree_mask" in b.build_info["kernels"]
try:
    b.run("work_deltas", {"work_scores": np.zeros((1, 3), np.float32)},
          {"batch_size": 1, "node_count": 1, "node_top_k": 1, "verify_num": 1, "row_stride": 3})
    raise SystemExit("no error")
except CsimBuildError as e:
    assert sys.argv[2] in str(e), str(e)[:500]
    assert b.build_info["cache"] in str(e), str(e)[:500]  # the error names the build folder it used
assert not b.build_info["complete"] and ".failed-" in b.build_info["cache"]
again = CsimBackend(cache_dir=sys.argv[1])
again.build()
assert again.cache_hit is False, "a build with a failed source was cached"
out = b.run("tree_mask", {"seq_lens": np.array([1]), "req_pool_indices": np.array([0]),
                          "req_to_token": np.zeros((1, 2), np.int32), "tree_cache_locs": np.array([[5]]),
                          "tree_parent": np.array([[-1]])}, {"S_max": 2, "B": 1, "T": 1, "Q": 1,
                                                             "write_bool_mask": False})
assert out["packed_mask"].tolist() == [3], out
print("ok")
"""
    env = {**os.environ, "EAGLE4_HLS_DIR": str(hls)}
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "cache"), str(src)], capture_output=True,
                       text=True, env=env, timeout=300)
    assert p.returncode == 0 and "ok" in p.stdout, p.stdout + p.stderr


def test_a_gxx_timeout_is_an_error_naming_the_cache_and_nothing_is_cached(tmp_path, monkeypatch):
    _need_tools()
    monkeypatch.setenv("EAGLE4_CXX_TIMEOUT_S", "0.001")
    with pytest.raises(CsimBuildError, match=r"timed out after 0\.001 s .*cache folder " + str(tmp_path)):
        b = CsimBackend(cache_dir=tmp_path)
        b.build()
        b.run("work_deltas", {"work_scores": np.zeros((1, 3), np.float32)},
              {"batch_size": 1, "node_count": 1, "node_top_k": 1, "verify_num": 1, "row_stride": 3})
    assert not [d for d in tmp_path.iterdir() if d.is_dir() and not d.name.startswith(".failed-")]
    monkeypatch.setenv("EAGLE4_CXX_TIMEOUT_S", "soon")
    with pytest.raises(ValueError, match="EAGLE4_CXX_TIMEOUT_S"):
        csim_build.cxx_timeout_s()


def test_prune_cache_keeps_the_newest_entries(tmp_path):
    import time as _time

    for i in range(4):
        d = tmp_path / f"entry{i}"
        d.mkdir()
        (d / csim_build.LIB_NAME).write_bytes(b"")
        (d / "build.json").write_text("{}")
        os.utime(d / "build.json", (_time.time() - 100 + i, _time.time() - 100 + i))
    removed = csim_build.prune_cache(tmp_path, keep=2)
    assert sorted(p.name for p in removed) == ["entry0", "entry1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry2", "entry3"]
