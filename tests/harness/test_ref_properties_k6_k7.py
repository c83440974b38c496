"""Property tests of the K6/K7 references (KERNELS.md §6, §7), their preconditions and their catalogs.

The oracles below are scalar transcriptions of the spec text in plain Python (Python ints for the
integer inverse CDF, numpy float32 scalars for the walk); the references must match them bit for
bit on every catalog case and on random inputs. The properties are checked on top of that, from
the definitions rather than from either implementation.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles_verify import k6_oracle, k7_oracle  # this folder, as naive_draft

from eagle4 import dtypes as dt
from eagle4.backends.ref import ReferenceBackend
from eagle4.cases import reject_sample as k6_cases
from eagle4.cases import update_verify as k7_cases
from eagle4.cases.dump import load_dump, save_dump
from eagle4.compare import compare_outputs
from eagle4.kernels import PreconditionError
from eagle4.spec import kernel_spec

REF = ReferenceBackend()
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
COIN_MAX = float(np.float32(1 - 2.0**-24))


# ---------------------------------------------------------------------------------------------
# Oracles


def _assert_same(kernel, expected, actual, inputs, params, case_id=""):
    res = compare_outputs(kernel, expected, actual, inputs, params, case_id)
    assert res.ok, res.report()


# ---------------------------------------------------------------------------------------------
# Catalogs


K6_CASES = k6_cases.cases()
K7_CASES = k7_cases.cases()


@pytest.mark.parametrize("case", K6_CASES, ids=lambda c: c.case_id)
def test_k6_catalog_matches_oracle(case):
    out = REF.run(case.kernel, case.inputs, case.params)
    _assert_same(case.kernel, k6_oracle(case.inputs, case.params), out, case.inputs, case.params, case.case_id)


@pytest.mark.parametrize("case", K7_CASES, ids=lambda c: c.case_id)
def test_k7_catalog_matches_oracle(case):
    out = REF.run(case.kernel, case.inputs, case.params)
    _assert_same(case.kernel, k7_oracle(case.inputs, case.params), out, case.inputs, case.params, case.case_id)


@pytest.mark.parametrize("mod", [k6_cases, k7_cases], ids=["k6", "k7"])
def test_catalog_is_deterministic_named_and_fast(mod):
    a, b = mod.cases(), mod.cases()
    ids = [c.case_id for c in a]
    assert ids == [c.case_id for c in b]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith(mod.KEY + "/") for i in ids)
    for x, y in zip(a, b, strict=True):
        assert x.params == y.params and x.inputs.keys() == y.inputs.keys()
        for k in x.inputs:
            assert np.array_equal(dt.bits(x.inputs[k]), dt.bits(y.inputs[k])), (x.case_id, k)
    t0 = time.perf_counter()
    for c in a:
        REF.run(c.kernel, c.inputs, c.params)
    assert time.perf_counter() - t0 < 6.0  # budget ~3 s; slack for a loaded machine
    small = [c for c in a if "large" not in c.tags]
    if mod is k6_cases:
        # the multiblock cases' rows span more blocks than a cluster holds (the CUDA kernel's form without clusters)
        assert all(c.params["V"] <= (40960 if "multiblock" in c.tags else 4096) for c in small)
        assert {c.params["B"] for c in a} >= {1, 7, 128} and max(c.params["Q"] for c in a) == 128
    else:
        assert {c.params["B"] for c in a} >= {1, 7, 128} and max(c.params["Q"] for c in a) == 128


def test_k6_catalog_covers_edge_cases():
    outs = {c.case_id.split("/", 1)[1]: (c, REF.run(c.kernel, c.inputs, c.params)) for c in K6_CASES}
    c, o = outs["all_root_children_rejected"]
    assert (o["accept_length"] == 0).all()
    c, o = outs["full_path_accepted"]
    assert (o["accept_length"] == c.params["S"] - 1).all()
    c, o = outs["s1_bonus_only"]
    assert (o["accept_length"] == 0).all() and (o["accept_index"][:, 0] >= 0).all()
    c, o = outs["residual_zero_fallback_in_rej"]
    for b in range(c.params["B"]):  # the fallback returns a rejected child's token
        assert o["predicts"][b * c.params["Q"]] in set(c.inputs["candidates"][b, 1:].tolist())
    c, o = outs["residual_zero_first_nan"]
    for b in range(c.params["B"]):
        assert o["predicts"][b * c.params["Q"]] == int(np.flatnonzero(np.isnan(c.inputs["target_probs"][b, 0]))[0])
    c, o = outs["out_of_range_tokens"]
    V = c.params["V"]
    for b in range(c.params["B"]):
        for j in range(o["accept_length"][b]):
            assert 0 <= o["predicts"][o["accept_index"][b, j]] < V
    c, o = outs["coin_equals_prob_acc"]
    assert (o["accept_length"] == 1).all()
    # the second root child is accepted exactly at coin == prob_acc / thr_acc
    assert all(o["accept_index"][b, 1] == b * c.params["Q"] + 2 for b in range(c.params["B"]))
    c, o = outs["final_coin_zero"]  # c = 0, u = 0: the first token with q_v > 0 outside Rej
    Q = c.params["Q"]
    for b in range(c.params["B"]):
        n = int(o["accept_length"][b])
        row = int(o["accept_index"][b, n]) - b * Q
        rej = set()
        if n < c.params["S"] - 1:
            kid = int(c.inputs["retrive_next_token"][b, row])
            while kid != -1:
                rej.add(int(c.inputs["candidates"][b, kid]))
                kid = int(c.inputs["retrive_next_sibling"][b, kid])
        q = _residual_q(c.inputs["target_probs"][b, row], rej)
        assert o["predicts"][b * Q + row] == next(v for v, x in enumerate(q) if x > 0)
    ks = {k6_cases.KEY + "/" + n for n in ("q1_root_only", "s1_bonus_only", "threshold_acc_0", "wide_star",
                                             "deep_chain", "duplicate_sibling_tokens", "entry_exactly_one",
                                             "nan_entries", "unnormalised_rows", "greedy_sampling_mixed")}
    assert ks <= {c.case_id for c in K6_CASES}
    assert any("large" in c.tags for c in K6_CASES)


def test_k7_catalog_covers_edge_cases():
    outs = {c.case_id.split("/", 1)[1]: (c, REF.run(c.kernel, c.inputs, c.params)) for c in K7_CASES}
    c, o = outs["u0_all_finished"]
    assert o["unfinished_count"][0] == 0 and o["next_indptr"][0] == 0 and (o["next_indptr"][1:] == -1).all()
    c, o = outs["u_eq_b"]
    assert o["unfinished_count"][0] == c.params["B"]
    c, o = outs["all_a_zero"]
    assert o["accept_indptr"][-1] == c.params["B"]
    c, o = outs["all_a_full"]
    assert (o["accept_length_out"] == c.params["S"] - 1).all()
    c, o = outs["last_legal_slot"]
    assert (o["seq_lens_out"] == c.params["S_max"]).all()
    c, o = outs["finish_pos_zero"]
    fin = c.inputs["finish_pos"] >= 0
    assert fin.any() and (o["accept_length_out"][fin] == 0).all() and (c.inputs["accept_length"][fin] > 0).any()
    for name in ("nan_payload_float16", "nan_payload_bfloat16", "nan_payload_float32"):
        c, o = outs[name]
        n = int(o["next_indptr"][o["unfinished_count"][0]])
        assert np.isnan(o["next_hidden"][:n].astype(np.float32)).any()
    assert "accepted_node_ids" not in outs["no_verify_node_ids"][1]


def test_dump_roundtrip(tmp_path):
    for case in (K6_CASES[6], K7_CASES[3]):
        out = REF.run(case.kernel, case.inputs, case.params)
        path = tmp_path / "case.npz"
        save_dump(path, case, out, {"backend": "ref"})
        back = load_dump(path)
        _assert_same(back.kernel, back.expected, REF.run(back.kernel, back.inputs, back.params), back.inputs,
                     back.params)


# ---------------------------------------------------------------------------------------------
# K6 properties


PROB = st.one_of(st.integers(0, 256).map(lambda i: i / 256.0), st.just(1.0), st.just(0.0), st.just(math.nan),
                 st.floats(0.0, 1.0, width=32))
COIN = st.one_of(st.just(0.0), st.just(COIN_MAX), st.integers(0, 2**24 - 1).map(lambda i: i / 2.0**24),
                 st.integers(0, 256).map(lambda i: min(i / 256.0, COIN_MAX)))


@st.composite
def k6_inputs(draw):
    B = draw(st.integers(1, 3))
    Q = draw(st.integers(1, 10))
    S = draw(st.integers(1, 6))
    V = draw(st.integers(1, 12))
    nxt = np.full((B, Q), -1, np.int64)
    sib = np.full((B, Q), -1, np.int64)
    parents = []
    for b in range(B):
        par = [-1] + [draw(st.integers(0, t - 1)) for t in range(1, Q)]
        parents.append(par)
        nxt[b], sib[b] = k6_cases.links_from_parents(par)
    tok = st.one_of(st.integers(0, V - 1), st.sampled_from([-1, V, V + 3, -7]))
    cand = np.array([[draw(tok) for _ in range(Q)] for _ in range(B)], np.int64).reshape(B, Q)
    probs = np.array(draw(st.lists(PROB, min_size=B * Q * V, max_size=B * Q * V)), np.float32).reshape(B, Q, V)
    greedy = np.array(draw(st.lists(st.integers(0, 1), min_size=B, max_size=B)), np.uint8)
    if draw(st.booleans()):  # predictions that match some children
        pred = np.array([[draw(st.integers(0, V - 1)) for _ in range(Q)] for _ in range(B)], np.int64).reshape(B, Q)
    else:
        pred = k6_cases.first_argmax(probs)
    coins = np.array(draw(st.lists(COIN, min_size=B * Q, max_size=B * Q)), np.float32).reshape(B, Q)
    final = np.array(draw(st.lists(COIN, min_size=B, max_size=B)), np.float32)
    thr = st.sampled_from([1.0, 0.5, 0.0, -1.0, 0.25, 2.0])
    params = {"threshold_single": draw(thr), "threshold_acc": draw(st.sampled_from([1.0, 0.5, 0.0, 1e-12, 3.0])),
              "B": B, "Q": Q, "S": S, "V": V}
    inputs = {"candidates": cand, "retrive_index": np.arange(B * Q, dtype=np.int64).reshape(B, Q),
              "retrive_next_token": nxt, "retrive_next_sibling": sib, "target_probs": probs,
              "target_predict": pred, "is_greedy": greedy, "coins": coins, "final_coins": final}
    return inputs, params, parents


def _residual_q(row: np.ndarray, rej: set[int]) -> list[int]:
    return [int(math.floor(float(x) * 2.0**32)) if x > 0 and v not in rej else 0 for v, x in enumerate(row)]


@SETTINGS
@given(k6_inputs())
def test_k6_properties(data):
    inputs, params, parents = data
    B, Q, S, V = (params[k] for k in ("B", "Q", "S", "V"))
    out = REF.run("reject_sample", inputs, params)
    _assert_same("reject_sample", k6_oracle(inputs, params), out, inputs, params)
    pred, ai, al = out["predicts"], out["accept_index"], out["accept_length"]
    for b in range(B):
        n = int(al[b])
        assert 0 <= n <= S - 1
        assert ai[b, 0] == b * Q and (ai[b, n + 1:] == -1).all()
        local = [int(p) - b * Q for p in ai[b, :n + 1]]
        assert all(0 <= x < Q for x in local)
        for j in range(1, n + 1):  # one root-to-leaf path: each accepted node is a child of the previous
            assert parents[b][local[j]] == local[j - 1]
            tok = int(pred[ai[b, j - 1]])
            assert tok == inputs["candidates"][b, local[j]] and 0 <= tok < V  # only tree tokens, in range
            if inputs["is_greedy"][b]:
                assert tok == inputs["target_predict"][b, local[j - 1]]
        on_path = set(int(p) for p in ai[b, :n + 1])
        for p in range(b * Q, (b + 1) * Q):
            if p not in on_path:
                assert pred[p] == -1
        final = int(pred[ai[b, n]])
        row = local[-1]
        if inputs["is_greedy"][b]:
            assert final == inputs["target_predict"][b, row]
            continue
        assert 0 <= final < V
        # Rej: the in-range siblings tested before the walk stopped (none when the path is full or row is a leaf)
        rej = set()
        if n < S - 1:
            kids = [t for t in range(1, Q) if parents[b][t] == row]
            rej = {int(inputs["candidates"][b, t]) for t in kids if 0 <= inputs["candidates"][b, t] < V}
        q = _residual_q(inputs["target_probs"][b, row], rej)
        if sum(q) > 0:
            assert q[final] > 0  # the sample has positive residual mass (and is not a rejected token)
        else:
            t = inputs["target_probs"][b, row]
            nan = np.flatnonzero(np.isnan(t))
            assert final == (nan[0] if nan.size else int(np.argmax(t)))


@SETTINGS
@given(st.integers(1, 2**24 - 1), st.integers(0, 2**24 - 1), st.integers(0, 2**50))
def test_k6_integer_split_equals_wide_product(c, lo, R):
    """u = c*(R>>24) + ((c*(R & (2^24-1)))>>24) equals floor(c*R / 2^24) for every R < 2^50."""
    assert c * (R >> 24) + ((c * (R & (2**24 - 1))) >> 24) == (c * R) >> 24


def test_k6_out_of_range_never_accepted_and_not_in_rej():
    inputs, params = k6_cases.batch(3, 1, 4, 3, 8, tree="star")
    inputs["candidates"][0, 1:] = [-1, 8, 3]
    inputs["target_probs"][0, 0] = 0.0
    inputs["target_probs"][0, 0, 3] = 0.5
    inputs["coins"][:] = 0.0
    params["threshold_single"] = -1.0
    out = REF.run("reject_sample", inputs, params)
    assert out["accept_length"][0] == 1 and out["accept_index"][0, 1] == 3 and out["predicts"][0] == 3


def test_k6_threshold_acc_capped_in_binary32():
    # prob_acc = 2^-149 (the smallest subnormal) / f32(1e-9) is a tiny positive f32: only coin 0 accepts
    inputs, params = k6_cases.batch(4, 1, 2, 2, 4, tree="chain")
    inputs["target_probs"][0, 0] = 0.0
    tok = int(inputs["candidates"][0, 1])
    inputs["target_probs"][0, 0, tok] = np.float32(2.0**-149)
    params["threshold_acc"] = 0.0
    inputs["coins"][0, 0] = np.float32(2.0**-24)
    assert REF.run("reject_sample", inputs, params)["accept_length"][0] == 0
    inputs["target_probs"][0, 0, tok] = np.float32(2.0**-40)  # 2^-40 / 1e-9 ~ 9.1e-4 >= 2^-24
    assert REF.run("reject_sample", inputs, params)["accept_length"][0] == 1


# ---------------------------------------------------------------------------------------------
# K7 properties


@st.composite
def k7_inputs(draw):
    B = draw(st.integers(1, 6))
    Q = draw(st.integers(1, 8))
    S = draw(st.integers(1, 5))
    H = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**31 - 1))
    lengths = draw(st.sampled_from(["random", "zero", "full", "variable"]))
    finish = draw(st.sampled_from(["none", "all", "mixed", "zero", "full"]))
    dtype = draw(st.sampled_from(["float16", "bfloat16", "float32"]))
    inputs, params = k7_cases.batch(seed, B, Q, S, H, hidden_dtype=dtype, lengths=lengths, finish=finish,
                                    node_ids=draw(st.booleans()), tight=draw(st.booleans()),
                                    nan_payloads=draw(st.booleans()), tree=draw(st.sampled_from(["eagle", "random"])))
    return inputs, params


@SETTINGS
@given(k7_inputs())
def test_k7_properties(data):
    inputs, params = data
    B, Q = params["B"], params["Q"]
    out = REF.run("update_verify", inputs, params)
    _assert_same("update_verify", k7_oracle(inputs, params), out, inputs, params)
    fp, ai = inputs["finish_pos"], inputs["accept_index"]
    a = np.where(fp >= 0, fp, inputs["accept_length"]).astype(np.int64)
    n_acc = int((a + 1).sum())
    # compaction keeps exactly the accepted positions, in request then j order
    want = [int(ai[b, j]) for b in range(B) for j in range(a[b] + 1)]
    assert out["accepted_flat"][:n_acc].tolist() == want and (out["accepted_flat"][n_acc:] == -1).all()
    assert out["accept_indptr"].tolist() == [0] + np.cumsum(a + 1).tolist()
    # free_slots and the accepted slots cover every verify slot once
    free = out["free_slots"][:B * Q - n_acc]
    assert (out["free_slots"][B * Q - n_acc:] == -1).all()
    ocl = inputs["out_cache_loc"]
    assert sorted(free.tolist() + ocl[want].tolist()) == sorted(ocl.tolist())
    assert out["evict_mask"].sum() == B * Q - n_acc
    assert free.tolist() == ocl[out["evict_mask"]].tolist()  # ascending position order
    # req_to_token changes only at the committed cells
    changed = inputs["req_to_token"] != out["req_to_token"]
    committed = np.zeros_like(changed)
    for b in range(B):
        committed[inputs["req_pool_indices"][b], inputs["seq_lens"][b]:inputs["seq_lens"][b] + a[b] + 1] = True
    assert not (changed & ~committed).any()
    # next_* prefix sums over the unfinished requests
    unf = np.flatnonzero(fp == -1)
    U = int(out["unfinished_count"][0])
    assert U == unf.size and out["unfinished_index"][:U].tolist() == unf.tolist()
    assert out["next_indptr"][:U + 1].tolist() == [0] + np.cumsum(a[unf] + 1).tolist()
    assert (out["next_indptr"][U + 1:] == -1).all() and (out["unfinished_index"][U:] == -1).all()
    n_unf = int(out["next_indptr"][U])
    assert (out["next_positions"][n_unf:] == -1).all() and (out["next_verified_id"][n_unf:] == -1).all()
    assert np.array_equal(dt.bits(out["next_hidden"][n_unf:]), dt.bits(inputs["next_hidden"][n_unf:]))
    if U == 0:
        assert out["next_indptr"][0] == 0 and n_unf == 0
        for name in ("next_accept_length", "next_seq_lens", "next_req_pool_indices", "next_root_token",
                     "next_last_flat", "unfinished_index"):
            assert (out[name] == -1).all()


def test_k7_does_not_mutate_inputs_and_allocates_caps():
    inputs, params = k7_cases.batch(5, 3, 4, 3, 2)
    minimal = {k: v for k, v in inputs.items() if k in {a.name for a in kernel_spec("update_verify").inputs}}
    before = {k: v.copy() for k, v in minimal.items()}
    out = REF.run("update_verify", minimal, params)
    for k in before:
        assert np.array_equal(dt.bits(before[k]), dt.bits(minimal[k]))
    assert out["free_slots"].shape == (12,) and out["next_hidden"].shape == (9, 2)
    assert out["next_hidden"].dtype == inputs["hidden_states"].dtype


# ---------------------------------------------------------------------------------------------
# Preconditions


def _k6_base():
    return k6_cases.batch(9, 2, 6, 4, 16, tree="eagle")


def _mut_k6(fn):
    inputs, params = _k6_base()
    fn(inputs, params)
    return inputs, params


K6_BAD = {
    "retrive_index": (lambda i, p: i["retrive_index"].__setitem__((1, 2), 3), "b*Q+i"),
    "retrive_next_token": (lambda i, p: i["retrive_next_token"].__setitem__((0, 3), 1), "local index"),
    "retrive_next_sibling": (lambda i, p: i["retrive_next_sibling"].__setitem__((0, 2), 6), "Q=6"),
    "target_probs": (lambda i, p: i["target_probs"].__setitem__((0, 1, 2), 1.5), "[0, 1]"),
    "coins": (lambda i, p: i["coins"].__setitem__((1, 0), 1.0), "[0, 1)"),
    "final_coins": (lambda i, p: i["final_coins"].__setitem__(0, -0.5), "[0, 1)"),
    "is_greedy": (lambda i, p: i["is_greedy"].__setitem__(0, 2), "0 or 1"),
    "threshold_acc": (lambda i, p: p.__setitem__("threshold_acc", float("nan")), "NaN"),
}


@pytest.mark.parametrize("name", sorted(K6_BAD))
def test_k6_precondition_errors(name):
    fn, bound = K6_BAD[name]
    inputs, params = _mut_k6(fn)
    with pytest.raises(PreconditionError) as e:
        REF.run("reject_sample", inputs, params)
    assert name in str(e.value) and bound in str(e.value)


def test_k6_precondition_scalars_and_greedy_predict():
    from eagle4.kernels import call

    inputs, params = _k6_base()
    t = {k: dt.to_torch(v) for k, v in inputs.items()}
    with pytest.raises(PreconditionError, match=r"S must be >= 1"):
        call("reject_sample", t, {**params, "S": 0})
    with pytest.raises(PreconditionError, match=r"target_probs must have shape"):
        call("reject_sample", t, {**params, "V": 17})
    inputs["is_greedy"][:] = 1
    inputs["target_predict"][0, 0] = 16
    with pytest.raises(PreconditionError, match=r"target_predict\[0,0\].*\[0, V=16\)"):
        REF.run("reject_sample", inputs, params)


def _k7_base():
    return k7_cases.batch(8, 3, 6, 4, 2, lengths="variable", finish="mixed")


K7_BAD = {
    "accept_length": (lambda i, p: i["accept_length"].__setitem__(0, p["S"]), "S-1"),
    "accept_index": (lambda i, p: i["accept_index"].__setitem__((0, p["S"] - 1), 1), "-1 past the prefix"),
    "finish_pos": (lambda i, p: i["finish_pos"].__setitem__(1, i["accept_length"][1] + 1), "accept_length[1]"),
    "seq_lens": (lambda i, p: i["seq_lens"].__setitem__(2, p["S_max"]), "S_max"),
    "req_pool_indices": (lambda i, p: i["req_pool_indices"].__setitem__(0, i["req_to_token"].shape[0]), "[0, P"),
    "out_cache_loc": (lambda i, p: i["out_cache_loc"].__setitem__(0, 2**31), "2^31-1"),
}


@pytest.mark.parametrize("name", sorted(K7_BAD))
def test_k7_precondition_errors(name):
    inputs, params = _k7_base()
    fn, bound = K7_BAD[name]
    if name == "accept_index":
        inputs["accept_length"][0] = 0
        inputs["finish_pos"][0] = -1
    fn(inputs, params)
    with pytest.raises(PreconditionError) as e:
        REF.run("update_verify", inputs, params)
    assert name in str(e.value) and bound in str(e.value)


def test_k7_precondition_positions_and_pools():
    inputs, params = _k7_base()
    inputs["accept_index"][1, 0] = 0  # request 1 pointing into request 0's block
    with pytest.raises(PreconditionError, match=r"accept_index\[1,0\].*\[6, 12\)"):
        REF.run("update_verify", inputs, params)
    inputs, params = _k7_base()
    inputs["accept_length"][0] = max(1, inputs["accept_length"][0])
    inputs["finish_pos"][0] = -1
    inputs["accept_index"][0, 1] = inputs["accept_index"][0, 0]
    with pytest.raises(PreconditionError, match=r"distinct positions"):
        REF.run("update_verify", inputs, params)
    inputs, params = _k7_base()
    inputs["req_pool_indices"][1] = inputs["req_pool_indices"][0]
    with pytest.raises(PreconditionError, match=r"req_pool_indices must be distinct"):
        REF.run("update_verify", inputs, params)
    inputs, params = _k7_base()
    del inputs["verify_node_ids"]
    with pytest.raises(PreconditionError, match=r"accepted_node_ids exists only when verify_node_ids"):
        REF.run("update_verify", inputs, params)


def test_k7_truncation_example():
    """A hand-checked batch: request 0 finishes at j = 1 of 3 accepted, request 1 keeps running."""
    B, Q, S, H = 2, 4, 4, 1
    inputs = {
        "accept_index": np.array([[0, 1, 2, 3], [4, 6, -1, -1]], np.int32),
        "accept_length": np.array([3, 1], np.int32),
        "predicts": np.array([10, 11, 12, 13, 20, -1, 21, -1], np.int32),
        "finish_pos": np.array([1, -1], np.int32),
        "seq_lens": np.array([5, 2], np.int64),
        "req_pool_indices": np.array([1, 0], np.int64),
        "req_to_token": np.full((2, 12), -777, np.int32),
        "out_cache_loc": np.array([100, 101, 102, 103, 200, 201, 202, 203], np.int64),
        "hidden_states": np.arange(8, dtype=np.float32).reshape(8, 1),
    }
    params = {"B": B, "Q": Q, "S": S, "H": H, "S_max": 12}
    out = REF.run("update_verify", inputs, params)
    assert out["accept_index_out"].tolist() == [[0, 1, -1, -1], [4, 6, -1, -1]]
    assert out["accept_length_out"].tolist() == [1, 1]
    assert out["accept_indptr"].tolist() == [0, 2, 4]
    assert out["accepted_flat"].tolist() == [0, 1, 4, 6, -1, -1, -1, -1]
    assert out["verified_id"].tolist() == [10, 11, 20, 21, -1, -1, -1, -1]
    assert out["free_slots"].tolist() == [102, 103, 201, 203, -1, -1, -1, -1]
    assert out["req_to_token"][1, 5:7].tolist() == [100, 101] and out["req_to_token"][0, 2:4].tolist() == [200, 202]
    assert (out["req_to_token"][1, 7:] == -777).all()
    assert out["seq_lens_out"].tolist() == [7, 4]
    assert out["unfinished_count"].tolist() == [1] and out["unfinished_index"].tolist() == [1, -1]
    assert out["next_indptr"].tolist() == [0, 2, -1]
    assert out["next_verified_id"][:2].tolist() == [20, 21] and out["next_positions"][:2].tolist() == [2, 3]
    assert out["next_hidden"][:2, 0].tolist() == [4.0, 6.0]
    assert out["next_root_token"].tolist() == [21, -1] and out["next_last_flat"].tolist() == [6, -1]
    assert out["next_seq_lens"].tolist() == [4, -1] and out["next_req_pool_indices"].tolist() == [0, -1]
