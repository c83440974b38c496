"""HLS C++ of the verify-side kernels K5 logits_to_probas, K6 reject_sample, K7 update_verify.

* Catalog parity: every case of ``eagle4.cases.<key>.cases()`` runs on the csim backend (the HLS
  C++ through its C ABI wrapper, byte counters on) and on the reference; outputs are compared with
  ``eagle4.compare.compare_outputs``; a case the reference refuses must be refused by csim too.
* Sanitized testbenches: each case is written as a dump (expected = reference) and
  ``tb_<key> <dump>`` built with ``-fsanitize=address,undefined`` must exit 0 with no sanitizer
  report.
* Independent oracles: hand-made and seeded random cases checked against small numpy/pure-Python
  implementations written here from KERNELS.md §5-§7 (not from the reference module).
* Preconditions and bounds: the wrappers refuse what the reference refuses, and what exceeds a
  compile-time bound, with a message naming the argument.
* Port bytes: the C-sim counters show the access pattern the design claims (logits read once, etc.).
"""

from __future__ import annotations

import functools
import importlib

import numpy as np
import pytest
from oracles_verify import k6_oracle, k7_oracle  # the spec transcriptions shared with the ref tests

from eagle4 import dtypes as dt
from eagle4.backends import get_backend
from eagle4.cases import Case
from eagle4.compare import compare_outputs
from eagle4.kernels import PreconditionError

KEYS = ("logits_to_probas", "reject_sample", "update_verify")

pytestmark = pytest.mark.csim


@functools.cache
def _cases(key: str) -> tuple[Case, ...]:
    return tuple(importlib.import_module(f"eagle4.cases.{key}").cases())


@functools.cache
def _csim():
    b = get_backend("csim")
    b.require()
    b.build()
    return b


@functools.cache
def _ref():
    return get_backend("ref")


def _catalog_params(prefix=""):
    out = []
    for key in KEYS:
        try:
            cases = _cases(key)
        except Exception:  # a broken catalog must fail (in _case), not vanish from the run
            out.append(pytest.param(key, None, id=f"{prefix}{key}-catalog-does-not-load"))
            continue
        out += [pytest.param(key, c.case_id, id=f"{prefix}{c.case_id}") for c in cases]
    return out


def _case(key, case_id) -> Case:
    if case_id is None:
        try:
            _cases.cache_clear()
            _cases(key)
        except Exception as e:
            pytest.fail(f"catalog eagle4.cases.{key} does not load: {type(e).__name__}: {e}", pytrace=False)
    return next(c for c in _cases(key) if c.case_id == case_id)


def _run(backend, key, case):
    try:
        return backend.run(key, case.inputs, case.params), None
    except PreconditionError as e:
        return None, str(e)


# ------------------------------------------------------------------------------------------------
# build


def test_csim_library_builds_the_verify_kernels_cleanly():
    b = _csim()
    errors = {k: v for k, v in b.build_info.get("errors", {}).items() if k in KEYS}
    assert not errors, errors
    for key in KEYS:
        assert key in b.build_info["kernels"], b.build_info
        warn = b.build_info.get("warnings", {}).get(key, "")
        assert "warning" not in warn, f"{key} compiles with warnings:\n{warn}"


# ------------------------------------------------------------------------------------------------
# catalog parity: csim vs ref


@pytest.mark.parity
@pytest.mark.parametrize("key,case_id", _catalog_params())
def test_csim_matches_reference_on_catalog(key, case_id):
    case = _case(key, case_id)
    expected, ref_err = _run(_ref(), key, case)
    actual, csim_err = _run(_csim(), key, case)
    if ref_err is not None or csim_err is not None:
        assert ref_err is not None and csim_err is not None, (
            f"{case_id}: reference {'refused: ' + ref_err if ref_err else 'ran'}; "
            f"csim {'refused: ' + csim_err if csim_err else 'ran'}")
        return
    res = compare_outputs(key, expected, actual, case.inputs, case.params, case_id)
    assert res.ok, res.report()
    # a second run gives the same bits (no state leaks between calls through static buffers)
    again, _ = _run(_csim(), key, case)
    res2 = compare_outputs(key, actual, again, case.inputs, case.params, case_id)
    assert all(d.mismatches == 0 for d in res2.outputs if d.parity == "EXACT"), res2.report()
    if "probas" in actual:
        np.testing.assert_array_equal(dt.bits(actual["probas"]), dt.bits(again["probas"]))


# ------------------------------------------------------------------------------------------------
# sanitized testbenches on dumps of the catalog


@functools.cache
def _tb(key):
    from eagle4.backends import csim_tb

    return csim_tb.build_testbench(key, sanitize=True)


def _run_tb_on_case(key, case, tmp_path, expected=None):
    from eagle4.backends import csim_tb
    from eagle4.cases.dump import save_dump

    _tb(key)
    if expected is None:
        expected = _ref().run(key, case.inputs, case.params)
    path = tmp_path / (case.case_id.replace("/", "__") + ".npz")
    save_dump(path, case, expected, producer={"backend": "ref", "test": __name__})
    return csim_tb.run_testbench(key, path, sanitize=True)


@pytest.mark.parametrize("key,case_id", _catalog_params("tb-"))
def test_sanitized_testbench_passes_on_catalog_dump(key, case_id, tmp_path):
    case = _case(key, case_id)
    expected, err = _run(_ref(), key, case)
    if err is not None:
        return  # refused cases have no expected outputs to dump (covered by the parity test)
    res = _run_tb_on_case(key, case, tmp_path, expected)
    assert not res.sanitizer_report, res.sanitizer_report + "\n" + res.stderr[-4000:]
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    assert "PASS" in res.stdout


def test_testbench_reports_a_mismatch(tmp_path):
    """A corrupted expected output must make the testbench exit 1 (it really compares)."""
    for key in KEYS:
        case = _cases(key)[0]
        expected = _ref().run(key, case.inputs, case.params)
        bad = {k: v.copy() for k, v in expected.items()}
        name = {"logits_to_probas": "argmax_ids", "reject_sample": "accept_length",
                "update_verify": "seq_lens_out"}[key]
        bad[name].flat[0] += 1
        res = _run_tb_on_case(key, case, tmp_path, bad)
        assert not res.sanitizer_report, res.sanitizer_report
        assert res.returncode == 1, (key, res.stdout, res.stderr)
        assert "MISMATCH" in res.stdout


# ------------------------------------------------------------------------------------------------
# independent oracles (numpy / pure Python, written from KERNELS.md)

F32 = np.float32
GREEDY_T = np.uint32(0x358637BD).view(np.float32)


def _oracle_argmax(row: np.ndarray) -> int:
    nan = np.isnan(row)
    if nan.any():
        return int(np.flatnonzero(nan)[0])
    return int(np.flatnonzero(row == row.max())[0])


def oracle_k5(logits, temps, G, write_probas, probas_init):
    R, V = logits.shape
    greedy = temps < GREEDY_T
    argmax = np.array([_oracle_argmax(logits[r]) for r in range(R)], np.int64)
    probas = probas_init.copy()
    if write_probas:
        for r in range(R):
            t = temps[r // G]
            if greedy[r // G]:
                probas[r] = 0.0
                probas[r, argmax[r]] = 1.0
            else:
                x = (logits[r] / t).astype(F32)
                with np.errstate(all="ignore"):
                    e = np.exp((x - x.max()).astype(np.float64))  # f64 oracle: TOL-compared
                    probas[r] = (e / e.sum()).astype(F32)
                if np.isnan(x).any():
                    probas[r] = np.nan
    return {"probas": probas, "argmax_ids": argmax, "is_greedy": greedy.astype(np.uint8)}


def _k5_case(name, logits, temps, G, write_probas=True):
    R, V = logits.shape
    return Case("logits_to_probas", f"logits_to_probas/oracle/{name}",
                {"rows_per_req": G, "write_probas": write_probas},
                {"logits": logits.astype(F32), "temperatures": np.asarray(temps, F32),
                 "probas": np.full((R, V), -3.0, F32)})


def _k5_oracle_cases():
    rng = np.random.default_rng(5)
    out = []
    # ties, NaN (first NaN wins), -0.0 == +0.0, +-inf, all -inf, V = 1, V = 17 (not a multiple of 16)
    tie = np.array([[1, 3, 3, 0, 3], [np.nan, 1, np.nan, 7, 0], [-0.0, 0.0, -1, -2, -0.0],
                    [-np.inf, -np.inf, -np.inf, -np.inf, -np.inf], [np.inf, 1, 2, np.inf, 0],
                    [1e4, -1e4, 1e4, 9999.999, -np.inf]], F32)
    out.append(_k5_case("ties_greedy", tie, [0.0, -1.0, np.uint32(0x358637BC).view(F32)], 2))
    out.append(_k5_case("ties_sampling", tie, [1.0, GREEDY_T, 0.7], 2))
    out.append(_k5_case("V1", np.array([[3.0], [np.nan], [-np.inf]], F32), [1.0, 0.0, 2.0], 1))
    out.append(_k5_case("V17_mixed", rng.normal(size=(6, 17)).astype(F32) * 4, [1.0, 0.0, 0.5], 2))
    out.append(_k5_case("V1000_quantized", (np.round(rng.normal(size=(4, 1000)) * 256) / 256).astype(F32),
                        [1.0, 2.0, 1e-6, 5e-7], 1))
    out.append(_k5_case("no_write", rng.normal(size=(4, 33)).astype(F32), [1.0, 0.0], 2, write_probas=False))
    return out


@pytest.mark.parametrize("case", _k5_oracle_cases(), ids=lambda c: c.case_id)
def test_k5_matches_independent_oracle(case):
    actual = _csim().run("logits_to_probas", case.inputs, case.params)
    want = oracle_k5(case.inputs["logits"], case.inputs["temperatures"], case.params["rows_per_req"],
                     case.params["write_probas"], case.inputs["probas"])
    np.testing.assert_array_equal(actual["argmax_ids"], want["argmax_ids"])
    np.testing.assert_array_equal(actual["is_greedy"], want["is_greedy"])
    res = compare_outputs("logits_to_probas", {"probas": want["probas"]}, {"probas": actual["probas"]},
                          case.inputs, case.params, case.case_id)
    assert res.ok, res.report()
    # and the reference agrees with both
    ref = _ref().run("logits_to_probas", case.inputs, case.params)
    assert compare_outputs("logits_to_probas", ref, actual, case.inputs, case.params).ok


def test_k5_greedy_threshold_is_binary32():
    t_at = np.uint32(0x358637BD).view(F32)  # f32(1e-6): sampling
    t_below = np.uint32(0x358637BC).view(F32)  # next float below: greedy
    case = _k5_case("thr", np.zeros((2, 3), F32), [t_at, t_below], 1)
    out = _csim().run("logits_to_probas", case.inputs, case.params)
    assert out["is_greedy"].tolist() == [0, 1]


# ---- K6




def _links_from_parents(parents):
    """First-child / next-sibling links (siblings ascending) from parent pointers (parent < i)."""
    Q = len(parents)
    nxt, sib = [-1] * Q, [-1] * Q
    for i in range(Q - 1, 0, -1):
        par = parents[i]
        sib[i] = nxt[par]
        nxt[par] = i
    return nxt, sib


def _k6_case(name, B, Q, S, V, parents, cand, probs, greedy, coins, final_coins, target_predict=None,
             thr_single=1.0, thr_acc=1.0):
    nx, sb = [], []
    for b in range(B):
        n_, s_ = _links_from_parents(parents[b])
        nx.append(n_)
        sb.append(s_)
    probs = np.asarray(probs, F32)
    if target_predict is None:
        target_predict = np.array([[_oracle_argmax(probs[b, i]) for i in range(Q)] for b in range(B)], np.int64)
    inputs = {
        "candidates": np.asarray(cand, np.int64).reshape(B, Q),
        "retrive_index": np.arange(B * Q, dtype=np.int64).reshape(B, Q),
        "retrive_next_token": np.array(nx, np.int64),
        "retrive_next_sibling": np.array(sb, np.int64),
        "target_probs": probs,
        "target_predict": np.asarray(target_predict, np.int64),
        "is_greedy": np.asarray(greedy, np.uint8),
        "coins": np.asarray(coins, F32).reshape(B, Q),
        "final_coins": np.asarray(final_coins, F32),
        "predicts": np.full(B * Q, -777, np.int32),
        "accept_index": np.full((B, S), -777, np.int32),
        "accept_length": np.full(B, -777, np.int32),
    }
    params = {"threshold_single": thr_single, "threshold_acc": thr_acc, "B": B, "Q": Q, "S": S, "V": V}
    return Case("reject_sample", f"reject_sample/oracle/{name}", params, inputs)


def _k6_hand_cases():
    out = []
    # root 0 with children 1 (tok 2), 2 (tok 2, duplicate), 3 (tok 7 = V: out of range), 4 (tok 0).
    # Sampling, coin 0.9: child 1 p=.2 -> acc .2 reject; child 2 p=.2 -> .4 reject (Rej = {2});
    # child 3 skipped; child 4 p=.5 -> .9 -> accept (coin <= .9). Then node 4 has no children.
    V = 7
    probs = np.zeros((1, 5, V), F32)
    probs[0, 0] = [0.5, 0.05, 0.2, 0.05, 0.1, 0.05, 0.05]
    probs[0, 4] = [0.0, 0.25, 0.25, 0.0, 0.5, 0.0, 0.0]
    out.append(_k6_case("star_accept_last", 1, 5, 4, V, [[-1, 0, 0, 0, 0]], [[9, 2, 2, 7, 0]], probs, [0],
                        [[F32(0.9), 0, 0, 0, F32(0.5)]], [F32(0.5)]))
    # same tree, coin 0.99 (> 0.9): every child rejected; residual of row 0 without token {2, 0}.
    out.append(_k6_case("star_reject_all", 1, 5, 4, V, [[-1, 0, 0, 0, 0]], [[9, 2, 2, 7, 0]], probs, [0],
                        [[F32(0.99), 0, 0, 0, 0]], [F32(0.0)]))
    # residual mass 0 -> argmax fallback returns a rejected token (Rej ignored)
    p0 = np.zeros((1, 3, 4), F32)
    p0[0, 0] = [0.0, 0.0, 0.75, 0.0]
    out.append(_k6_case("fallback_in_rej", 1, 3, 3, 4, [[-1, 0, 0]], [[0, 2, 2]], p0, [0],
                        [[F32(0.999), 0, 0]], [F32(0.3)]))
    # q_v = 2^32 (an entry exactly 1.0) and final coin 1 - 2^-24
    p1 = np.zeros((1, 2, 5), F32)
    p1[0, 0] = [0.0, 1.0, 1.0, 0.0, 0.5]
    out.append(_k6_case("entry_one_coin_max", 1, 2, 2, 5, [[-1, 0]], [[0, 3]], p1, [0],
                        [[F32(1 - 2**-24), 0]], [F32(1 - 2**-24)]))
    # deep chain accepted to the end (n = S-1): bonus from the last row, greedy and sampling
    Q = 6
    pc = np.full((2, Q, 8), F32(0.125), F32)
    out.append(_k6_case("chain_full", 2, Q, 4, 8, [[-1, 0, 1, 2, 3, 4]] * 2, [[0, 1, 2, 3, 4, 5]] * 2, pc, [0, 1],
                        np.zeros((2, Q), F32), [F32(0.6), F32(0.1)],
                        target_predict=np.tile(np.arange(Q) + 1, (2, 1)), thr_single=0.1))
    # threshold_acc = 0 (capped to 1e-9) and threshold_single <= 0 with an out-of-range token
    out.append(_k6_case("thr_acc_zero", 1, 5, 3, V, [[-1, 0, 0, 0, 0]], [[9, -1, 7, 3, 3]], probs, [0],
                        [[F32(0.5), 0, 0, 0, 0]], [F32(0.0)], thr_single=0.0, thr_acc=0.0))
    return out


def _random_k6(seed, B, Q, S, V):
    rng = np.random.default_rng(seed)
    parents = [[-1] + [int(rng.integers(0, i)) for i in range(1, Q)] for _ in range(B)]
    cand = rng.integers(-1, V + 1, size=(B, Q))
    cand[:, 1:] = np.where(rng.random((B, Q - 1)) < 0.3, rng.integers(0, 4, size=(B, Q - 1)), cand[:, 1:])
    probs = rng.dirichlet(np.full(V, 0.3), size=(B, Q)).astype(F32)
    probs[rng.random((B, Q, V)) < 0.3] = 0.0
    probs = np.minimum(probs, F32(1.0))
    if seed % 3 == 0:
        probs = (np.floor(probs * 256) / 256).astype(F32)  # ties and zero rows
    greedy = (rng.random(B) < 0.3).astype(np.uint8)
    coins = (rng.integers(0, 2**24, size=(B, Q)) / 2**24).astype(F32)
    fc = (rng.integers(0, 2**24, size=B) / 2**24).astype(F32)
    thr = [(1.0, 1.0), (0.5, 0.5), (0.3, 0.0), (1.0, 0.8)][seed % 4]
    return _k6_case(f"random_s{seed}", B, Q, S, V, parents, cand, probs, greedy, coins, fc,
                    thr_single=thr[0], thr_acc=thr[1])


def _k6_oracle_cases():
    return _k6_hand_cases() + [_random_k6(s, B, Q, S, V) for s, (B, Q, S, V) in
                               enumerate([(1, 1, 1, 5), (3, 8, 4, 16), (5, 16, 6, 40), (2, 32, 9, 300),
                                          (7, 12, 3, 4), (4, 24, 17, 64), (1, 128, 9, 50), (6, 10, 10, 10)])]


@pytest.mark.parametrize("case", _k6_oracle_cases(), ids=lambda c: c.case_id)
def test_k6_matches_independent_oracle(case):
    actual = _csim().run("reject_sample", case.inputs, case.params)
    want = k6_oracle(case.inputs, case.params)
    for name in ("predicts", "accept_index", "accept_length"):
        np.testing.assert_array_equal(actual[name], want[name], err_msg=name)
    ref = _ref().run("reject_sample", case.inputs, case.params)
    assert compare_outputs("reject_sample", ref, actual, case.inputs, case.params).ok


def test_k6_hand_case_values():
    """Expected values worked out by hand (see _k6_hand_cases)."""
    cases = {c.case_id.split("/")[-1]: c for c in _k6_hand_cases()}
    out = _csim().run("reject_sample", cases["star_accept_last"].inputs, cases["star_accept_last"].params)
    assert out["accept_length"].tolist() == [1]
    assert out["accept_index"].tolist() == [[0, 4, -1, -1]]
    # predicts[0] = accepted token 0; the final row 4 has no children: Rej empty, coin .5 of
    # q = [0, 1/4, 1/4, 0, 1/2] * 2^32 -> u = R_q/2 -> first prefix > u is v = 4
    assert out["predicts"].tolist() == [0, -1, -1, -1, 4]
    out = _csim().run("reject_sample", cases["star_reject_all"].inputs, cases["star_reject_all"].params)
    assert out["accept_length"].tolist() == [0]
    # residual of row 0 without Rej = {2, 0}: first positive q is v = 1 (final coin 0)
    assert out["predicts"].tolist() == [1, -1, -1, -1, -1]
    out = _csim().run("reject_sample", cases["fallback_in_rej"].inputs, cases["fallback_in_rej"].params)
    assert out["predicts"].tolist()[0] == 2  # argmax fallback ignores Rej = {2}
    out = _csim().run("reject_sample", cases["chain_full"].inputs, cases["chain_full"].params)
    assert out["accept_length"].tolist() == [3, 3]
    assert out["accept_index"].tolist() == [[0, 1, 2, 3], [6, 7, 8, 9]]
    assert out["predicts"][6:10].tolist() == [1, 2, 3, 4]  # greedy: target_predict = i + 1
    out = _csim().run("reject_sample", cases["thr_acc_zero"].inputs, cases["thr_acc_zero"].params)
    assert out["accept_index"][0, 1] == 3  # tokens -1 and 7 skipped even with threshold_single = 0


def test_k6_rej_state_does_not_leak_between_calls():
    """Rej lives in an on-chip bitmap that persists across calls; it must be empty again after each request."""
    first = next(c for c in _k6_hand_cases() if c.case_id.endswith("star_reject_all"))  # Rej = {0, 2} at the end
    out = _csim().run("reject_sample", first.inputs, first.params)
    assert out["accept_length"].tolist() == [0]
    probs = np.zeros((1, 1, 7), F32)
    probs[0, 0, 0], probs[0, 0, 2] = 0.25, 0.75
    fresh = _k6_case("fresh", 1, 1, 1, 7, [[-1]], [[0]], probs, [0], [[0.0]], [0.0])
    out = _csim().run("reject_sample", fresh.inputs, fresh.params)
    assert out["predicts"].tolist() == [0]  # a leaked Rej {0, 2} would give R_q = 0 and the fallback 2


# ---- K7




def _random_k7(seed, B, Q, S, H, hidden_dtype, with_nodes, finish="mixed"):
    rng = np.random.default_rng(seed)
    al = rng.integers(0, min(S, Q), size=B)
    ai = np.full((B, S), -1, np.int32)
    for b in range(B):
        ai[b, :al[b] + 1] = b * Q + rng.permutation(Q)[:al[b] + 1]
    if finish == "none":
        fp = np.full(B, -1)
    elif finish == "all":
        fp = np.array([rng.integers(0, al[b] + 1) for b in range(B)])
    else:
        fp = np.array([-1 if rng.random() < 0.5 else rng.integers(0, al[b] + 1) for b in range(B)])
    seq = rng.integers(0, 20, size=B)
    S_max = int((seq + al + 1).max()) + int(rng.integers(0, 3))
    P = B + 3
    pool = rng.permutation(P)[:B]
    bits = {"float16": np.uint16, "bfloat16": np.uint16, "float32": np.uint32}[hidden_dtype]
    raw = rng.integers(0, np.iinfo(bits).max, size=(B * Q, H), dtype=bits, endpoint=True)
    hidden = raw.view(dt.numpy_dtype(hidden_dtype))  # random bits: NaN payloads included
    inputs = {
        "accept_index": ai, "accept_length": al.astype(np.int32), "predicts": rng.integers(0, 50000, B * Q).astype(np.int32),
        "finish_pos": fp.astype(np.int32), "seq_lens": seq.astype(np.int64), "req_pool_indices": pool.astype(np.int64),
        "req_to_token": np.full((P, S_max), -777, np.int32),
        "out_cache_loc": rng.permutation(4 * B * Q)[:B * Q].astype(np.int64), "hidden_states": hidden,
    }
    if with_nodes:
        inputs["verify_node_ids"] = rng.integers(0, 1000, size=(B, Q)).astype(np.int64)
    inputs["next_hidden"] = np.full((B * S, H), 0x7FA5A5A5 & np.iinfo(bits).max, bits).view(hidden.dtype)
    for name, cap, dtp in (("accepted_flat", B * S, np.int32), ("free_slots", B * Q, np.int64),
                           ("next_positions", B * S, np.int64), ("next_indptr", B + 1, np.int32),
                           ("unfinished_index", B, np.int64)):
        inputs[name] = np.full(cap, -777, dtp)
    params = {"B": B, "Q": Q, "S": S, "H": H, "S_max": S_max}
    return Case("update_verify", f"update_verify/oracle/s{seed}_B{B}_Q{Q}_S{S}_H{H}_{hidden_dtype}_{finish}", params,
                inputs)


def _k7_oracle_cases():
    specs = [(0, 1, 1, 1, 1, "float32", False, "mixed"), (1, 3, 8, 4, 5, "float16", True, "mixed"),
             (2, 7, 16, 9, 16, "bfloat16", True, "none"), (3, 7, 16, 9, 16, "bfloat16", False, "all"),
             (4, 12, 5, 5, 3, "float32", True, "mixed"), (5, 128, 8, 17, 2, "float16", True, "mixed"),
             (6, 2, 128, 64, 8, "float32", True, "none")]
    return [_random_k7(*s) for s in specs]


@pytest.mark.parametrize("case", _k7_oracle_cases(), ids=lambda c: c.case_id)
def test_k7_matches_independent_oracle(case):
    actual = _csim().run("update_verify", case.inputs, case.params)
    want = k7_oracle(case.inputs, case.params)
    n_unf = int(want["next_indptr"][int(want["unfinished_count"][0])])
    assert set(actual) == set(want), sorted(set(actual) ^ set(want))
    for name, w in want.items():
        a = actual[name]
        if name == "next_hidden":  # rows past N_unf are untouched (still the sentinel)
            np.testing.assert_array_equal(dt.bits(a), dt.bits(w), err_msg=name)
            continue
        np.testing.assert_array_equal(a, w, err_msg=name)
    assert n_unf <= case.params["B"] * case.params["S"]
    ref = _ref().run("update_verify", case.inputs, case.params)
    res = compare_outputs("update_verify", ref, actual, case.inputs, case.params, case.case_id)
    assert res.ok, res.report()


# ------------------------------------------------------------------------------------------------
# preconditions and bounds: refused like the reference, with the argument named


def _mutated(case, **changes):
    inputs = {k: v.copy() for k, v in case.inputs.items()}
    params = dict(case.params)
    for k, v in changes.items():
        if k in params:
            params[k] = v
        else:
            v(inputs[k]) if callable(v) else inputs.__setitem__(k, v)
    return Case(case.kernel, case.case_id + "/mutated", params, inputs)


def _bad_cases():
    k6 = _k6_hand_cases()[0]
    k7 = _k7_oracle_cases()[1]
    k5 = _k5_oracle_cases()[3]

    def setv(idx, val):
        def f(a):
            a[idx] = val
        return f

    return [
        ("reject_sample", _mutated(k6, retrive_index=setv((0, 1), 3)), "retrive_index"),
        ("reject_sample", _mutated(k6, retrive_next_sibling=setv((0, 2), 1)), "retrive_next_sibling"),
        ("reject_sample", _mutated(k6, target_probs=setv((0, 3, 1), 1.5)), "target_probs"),
        ("reject_sample", _mutated(k6, coins=setv((0, 0), 1.0)), "coins"),
        ("reject_sample", _mutated(k6, final_coins=setv(0, -0.25)), "final_coins"),
        ("reject_sample", _mutated(k6, is_greedy=setv(0, 2)), "is_greedy"),
        ("reject_sample", _mutated(k6, threshold_acc=float("nan")), "threshold_acc"),
        ("update_verify", _mutated(k7, accept_length=setv(0, 4)), "accept_length"),
        ("update_verify", _mutated(k7, finish_pos=setv(0, -2)), "finish_pos"),
        ("update_verify", _mutated(k7, req_pool_indices=lambda a: a.__setitem__(1, a[0])), "req_pool_indices"),
        ("update_verify", _mutated(k7, seq_lens=setv(0, 10**6)), "seq_lens"),
        ("update_verify", _mutated(k7, out_cache_loc=setv(0, 2**31)), "out_cache_loc"),
        ("logits_to_probas", _mutated(k5, rows_per_req=4), "rows"),
    ]


@pytest.mark.parametrize("key,case,word", _bad_cases(), ids=lambda x: x if isinstance(x, str) else x.case_id)
def test_wrapper_refuses_what_the_reference_refuses(key, case, word):
    _, ref_err = _run(_ref(), key, case)
    _, csim_err = _run(_csim(), key, case)
    assert ref_err is not None, "the mutation should violate a precondition of the reference"
    assert csim_err is not None, f"csim accepted a case the reference refuses: {ref_err}"
    assert word in csim_err and key in csim_err, csim_err


def test_wrapper_refuses_sizes_past_the_compile_time_bounds():
    k6 = _k6_hand_cases()[0]
    with pytest.raises(PreconditionError, match="S = 65 is outside"):
        _csim().run("reject_sample", _mutated(k6, S=65, accept_index=np.full((1, 65), -1, np.int32)).inputs,
                    {**k6.params, "S": 65})
    big = _k5_case("B129", np.zeros((129, 2), F32), np.ones(129, F32), 1)
    with pytest.raises(PreconditionError, match="EAGLE4_MAX_BATCH_SIZE"):
        _csim().run("logits_to_probas", big.inputs, big.params)


# ------------------------------------------------------------------------------------------------
# port bytes of the C-sim counters


def test_port_bytes_show_the_claimed_access_pattern():
    b = _csim()
    rng = np.random.default_rng(0)
    R, V = 6, 1000
    case = _k5_case("bytes", rng.normal(size=(R, V)).astype(F32), [1.0, 0.0, 0.5], 2)
    b.run("logits_to_probas", case.inputs, case.params)
    pb = b.last_port_bytes
    assert pb["logits"] == (4 * R * V, 0)  # each logit read exactly once (row kept on chip)
    assert pb["probas"] == (0, 4 * R * V)
    assert pb["argmax_ids"] == (0, 8 * R) and pb["is_greedy"] == (0, 3) and pb["temperatures"] == (12, 0)
    b.run("logits_to_probas", case.inputs, {**case.params, "write_probas": False})
    assert b.last_port_bytes["probas"] == (0, 0)
    assert b.last_port_bytes["logits"] == (4 * R * V, 0)

    k6 = _random_k6(11, 4, 16, 5, 300)
    b.run("reject_sample", k6.inputs, k6.params)
    pb = b.last_port_bytes
    B, Q, S, V = 4, 16, 5, 300
    for name in ("candidates", "retrive_index", "retrive_next_token", "retrive_next_sibling"):
        assert pb[name] == (8 * B * Q, 0), name
    n_sampling = int((k6.inputs["is_greedy"] == 0).sum())
    # walk reads (at most one per tested candidate) + one final row per sampling request
    assert 4 * n_sampling * V <= pb["target_probs"][0] <= 4 * n_sampling * V + 4 * B * Q
    assert pb["predicts"] == (0, 4 * B * Q) and pb["accept_index"] == (0, 4 * B * S)

    k7 = _k7_oracle_cases()[2]
    out = b.run("update_verify", k7.inputs, k7.params)
    pb = b.last_port_bytes
    U = int(out["unfinished_count"][0])
    n_unf = int(out["next_indptr"][U])
    row_bytes = k7.params["H"] * k7.inputs["hidden_states"].itemsize
    assert pb["next_hidden"] == (0, n_unf * row_bytes)
    assert pb["hidden_states"] == (n_unf * row_bytes, 0)
    n_acc = int(out["accept_indptr"][-1])
    assert pb["req_to_token"] == (0, 4 * n_acc)


@pytest.mark.parametrize("depth", [1, 2])
def test_k5_other_accumulator_depths(depth, tmp_path):
    """EAGLE4_K5_ACC_DEPTH = 1 is the reference's exact association; any power of two stays within TOL."""
    import subprocess

    from eagle4.backends import csim_build, csim_tb, hls_designs
    from eagle4.cases.dump import save_dump

    hls = csim_build.HLS_DIR / "logits_to_probas"
    exe = tmp_path / f"tb_k5_depth{depth}"
    flags = [f.replace("-O2", "-O1") for f in csim_build.BASE_FLAGS] + list(csim_tb.TB_SANITIZE_FLAGS)
    sources = hls_designs.testbench_sources("logits_to_probas", csim_build.all_designs())
    assert sources[0] == hls / "tb_logits_to_probas.cpp"
    cmd = [csim_build.find_cxx(), *flags, f"-DEAGLE4_K5_ACC_DEPTH={depth}", *csim_build.include_flags(),
           *[str(f) for f in sources], "-o", str(exe)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=csim_build.cxx_timeout_s())
    assert p.returncode == 0, p.stderr
    picked = [c for c in _cases("logits_to_probas") if c.params["write_probas"] and "large" not in c.tags][:6]
    assert picked
    env = dict(__import__("os").environ, **csim_tb.SANITIZER_ENV)
    env.pop("LD_PRELOAD", None)
    for case in picked:
        path = tmp_path / (case.case_id.replace("/", "__") + ".npz")
        save_dump(path, case, _ref().run("logits_to_probas", case.inputs, case.params), producer={"backend": "ref"})
        r = subprocess.run([str(exe), str(path)], capture_output=True, text=True, env=env)
        assert r.returncode == 0, case.case_id + "\n" + r.stdout[-3000:] + r.stderr[-3000:]
