"""C-sim port counters equal the hand-computed bytes of KERNELS.md §1.8, §2.8, §3.7, §4.7 (each input
element read once, each output element written once), and the port-bytes CSV helpers."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from eagle4.backends.csim_ports import port_rows, write_port_bytes_csv

pytestmark = pytest.mark.csim


@pytest.fixture(scope="module")
def backend(csim_backend):
    return csim_backend


def _totals(pb):
    return sum(r for r, _ in pb.values()), sum(w for _, w in pb.values())


def test_k3_bytes(backend):
    B, n0, K, stride = 3, 5, 4, 12
    rng = np.random.default_rng(1)
    ws = np.sort(rng.random((B, stride)).astype(np.float32), axis=1)[:, ::-1].copy()
    params = {"batch_size": B, "node_count": n0, "node_top_k": K, "verify_num": 7, "row_stride": stride}
    backend.run("work_deltas", {"work_scores": ws}, params)
    pb = backend.last_port_bytes
    assert pb["work_scores"] == (4 * B * (n0 + K), 0)  # §3.7 B_in = 4B(n0+K) = 108
    assert pb["work_deltas"] == (0, 4 * (K + 1))  # B_out = 4(K+1) = 20
    backend.run("work_deltas", {"work_scores": ws, "per_req_deltas": np.zeros((B, K + 1), np.float32)}, params)
    assert backend.last_port_bytes["per_req_deltas"] == (0, 4 * B * (K + 1))


@pytest.mark.parametrize("eh,dtype", [(2, np.float16), (4, np.float32)])
def test_k1_bytes_without_hot_path(backend, eh, dtype):
    B, W, K, H = 2, 4, 4, 16
    C = W * K
    rng = np.random.default_rng(2)
    inputs = {"topk_probas_sampling": rng.random((B, C)).astype(np.float32),
              "last_layer_scores": rng.random((B, W)).astype(np.float32),
              "input_hidden_states": rng.standard_normal((B * W, H)).astype(dtype)}
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": 3, "use_hot_token_id": False}
    backend.run("draft_tree_score", inputs, params)
    pb = backend.last_port_bytes
    assert set(pb) == {"topk_probas_sampling", "last_layer_scores", "curr_layer_scores", "sort_layer_scores",
                       "sort_layer_indices", "cache_topk_indices", "parent_indices_in_layer",
                       "input_hidden_states", "output_hidden_states"}
    assert pb["topk_probas_sampling"] == (4 * B * C, 0)
    assert pb["last_layer_scores"] == (4 * B * W, 0)
    assert pb["input_hidden_states"] == (eh * B * K * H, 0)  # gathered rows only
    assert pb["output_hidden_states"] == (0, eh * B * K * H)
    # §1.8: B_in = 4BC + 4BW + E_h*B*K*H; B_out = 16BC + 16BK + E_h*B*K*H
    assert _totals(pb) == (4 * B * C + 4 * B * W + eh * B * K * H, 16 * B * C + 16 * B * K + eh * B * K * H)


def test_k1_bytes_hot_path(backend):
    B, W, K, H, Vh = 1, 8, 8, 4096, 4096
    C = W * K
    rng = np.random.default_rng(3)
    inputs = {"topk_probas_sampling": rng.random((B, C)).astype(np.float32),
              "last_layer_scores": rng.random((B, W)).astype(np.float32),
              "input_hidden_states": rng.standard_normal((B * W, H)).astype(np.float16),
              "topk_tokens_sampling": rng.integers(0, Vh, (B, C)).astype(np.int64),  # all in range
              "hot_token_id": rng.permutation(Vh).astype(np.int64)}
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": 0, "use_hot_token_id": True}
    backend.run("draft_tree_score", inputs, params)
    pb = backend.last_port_bytes
    assert pb["topk_tokens_sampling"] == (8 * B * C, 8 * B * C)  # read once, written back in place
    assert pb["hot_token_id"] == (8 * B * C, 0)
    assert pb["output_tokens"] == (0, 8 * B * K)  # HLS extension (not in §1.8)
    rd, wr = _totals(pb)
    # §1.8 example (B=1, W=K=8, H=4096, fp16, hot path): B_in ~ 65.3 KiB, B_out ~ 65.6 KiB
    assert rd == 4 * B * C + 4 * B * W + 2 * B * K * H + 16 * B * C
    assert wr - 8 * B * K == 16 * B * C + 16 * B * K + 2 * B * K * H + 8 * B * C
    assert round(rd / 1024, 1) == 65.3 and round((wr - 8 * B * K) / 1024, 1) == 65.6


def test_k2_bytes(backend):
    B, W, K, I, N, M = 1, 8, 8, 64, 1024, 64
    C, Ic, cc, Vn = W * K, 17, 64, 64  # n0 = n1 = 64, every candidate kept
    n0, n1 = min(Vn, cc), min(Vn, cc + C)
    rng = np.random.default_rng(4)
    sc = np.sort(rng.random((B, C)).astype(np.float32), axis=1)[:, ::-1].copy()
    inputs = {
        "topk_probas": rng.random((B, C)).astype(np.float32),
        "topk_tokens": rng.integers(0, 1000, (B, C)).astype(np.int64),
        "sorted_scores": sc, "sorted_indexs": np.tile(np.arange(C), (B, 1)).astype(np.int64),
        "parent_indexs": np.zeros((B, K), np.int64), "topk_indexs": np.arange(1, W + 1)[None].astype(np.int64),
        "input_tree_mask": np.ones((B, W, Ic - 1), bool),
        **{n: np.full((B, N), -777, np.int64) for n in ("cumu_tokens", "cumu_deltas", "prev_indexs", "next_indexs",
                                                        "side_indexs")},
        "cumu_scores": np.full((B, N), -3.0, np.float32), "output_scores": np.zeros((B, K), np.float32),
        "output_tokens": np.zeros((B, K), np.int64), "work_scores": np.zeros((B, M + K), np.float32),
        "sort_scores": np.sort(rng.random((B, M)).astype(np.float32), axis=1)[:, ::-1].copy(),
        "output_tree_mask": np.zeros((B, K, I + 1), bool)}
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc,
              "verify_num": Vn, "curr_depth": 2, "max_input_size": I, "max_node_count": N, "max_verify_num": M}
    backend.run("update_draft_state", inputs, params)
    rd, wr = _totals(backend.last_port_bytes)
    m = Ic - 1
    assert rd == 4 * B * C + 8 * B * C + 4 * B * n1 + 8 * B * K + 8 * B * K + 8 * B * W + B * K * m + 4 * B * n0
    assert wr == 44 * B * C + 8 * B * W + 12 * B * K + 4 * B * (n0 + K) + 4 * B * n1 + B * K * m
    assert (rd, wr) == _bytes_model().k2(B, W, K, m, n0, n1)  # the spec's calculator agrees


@pytest.mark.parametrize("write_bool", [False, True])
def test_k4_bytes(backend, write_bool):
    B, T, Q, S_max = 3, 7, 5, 40
    L = np.array([0, 13, 29], np.int64)
    rng = np.random.default_rng(5)
    parent = np.array([[-1] + [int(rng.integers(-1, t)) for t in range(1, T)] for _ in range(B)], np.int64)
    inputs = {"seq_lens": L, "req_pool_indices": np.array([2, 0, 1], np.int64),
              "req_to_token": rng.integers(0, 2**31 - 1, (4, S_max)).astype(np.int32),
              "tree_cache_locs": rng.integers(0, 10**6, (B, T)).astype(np.int64), "tree_parent": parent}
    params = {"S_max": S_max, "B": B, "T": T, "Q": Q, "write_bool_mask": write_bool}
    backend.run("tree_mask", inputs, params)
    rd, wr = _totals(backend.last_port_bytes)
    lens = L + T
    assert rd == 16 * B + 4 * int(L.sum()) + 16 * B * T  # §4.7
    packed = int(sum((Q * n + 7) // 8 for n in lens))
    want_out = 16 * (B + 1) + 4 * int(lens.sum()) + packed + 8 * B * Q
    if write_bool:
        want_out += Q * int(lens.sum())
    assert wr == want_out


def test_port_bytes_csv(tmp_path):
    """One writer: one row per (kernel, case, port), the last recorded winning, sorted by that key."""
    path = tmp_path / "reports" / "csim_port_bytes.csv"
    rows = (port_rows("work_deltas", "work_deltas/y", {"work_scores": (8, 0)})
            + port_rows("work_deltas", "work_deltas/x", {"work_scores": (1, 0), "work_deltas": (0, 20)})
            + port_rows("work_deltas", "work_deltas/x", {"work_scores": (108, 0)})  # a rerun of the same case
            + port_rows("tree_mask", "tree_mask/z", {"packed_mask": (0, 5)}))
    assert write_port_bytes_csv(rows, path) == path
    lines = path.read_text().splitlines()
    assert lines == ["kernel,case_id,port,bytes_read,bytes_written,provenance",
                     "tree_mask,tree_mask/z,packed_mask,0,5,csim",
                     "work_deltas,work_deltas/x,work_deltas,0,20,csim",
                     "work_deltas,work_deltas/x,work_scores,108,0,csim",
                     "work_deltas,work_deltas/y,work_scores,8,0,csim"]
    write_port_bytes_csv(port_rows("k", "c", {"p": (3, 4)}), path)  # a fresh file, never appended
    assert list(csv.DictReader(path.open())) == [{"kernel": "k", "case_id": "c", "port": "p", "bytes_read": "3",
                                                  "bytes_written": "4", "provenance": "csim"}]


def test_port_bytes_have_one_writer():
    """The CSV's columns are spelled in eagle4.backends.csim_ports only (no module-global row list either)."""
    from eagle4.backends import csim, csim_ports

    root = Path(__file__).resolve().parents[2]
    spelled = [str(f.relative_to(root)) for top in ("src", "plugins", "scripts") for f in (root / top).rglob("*.py")
               if '"case_id", "port", "bytes_read"' in f.read_text()]
    assert spelled == ["src/eagle4/backends/csim_ports.py"]
    assert not any(isinstance(v, list) for k, v in vars(csim_ports).items() if not k.startswith("__"))
    assert not hasattr(csim, "flush_port_bytes") and not hasattr(csim, "record_port_bytes")


def _bytes_model():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "spec" / "bytes_model.py"  # see SOURCE.md there
    spec = importlib.util.spec_from_file_location("eagle4_bytes_model_ref", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_counters_match_the_spec_bytes_model(backend):
    """Cross-check with KERNELS.md's own calculator (tests/data/spec/bytes_model.py) for K1 (hot), K3, K4."""
    bm = _bytes_model()
    # K3
    B, n0, K = 2, 9, 6
    ws = np.sort(np.random.default_rng(0).random((B, n0 + K)).astype(np.float32), axis=1)[:, ::-1].copy()
    backend.run("work_deltas", {"work_scores": ws},
                {"batch_size": B, "node_count": n0, "node_top_k": K, "verify_num": 12, "row_stride": n0 + K})
    assert _totals(backend.last_port_bytes) == bm.k3(B, K, n0)
    # K4, uniform prefix length
    B, T, Q, L = 2, 16, 8, 37
    inputs = {"seq_lens": np.full(B, L, np.int64), "req_pool_indices": np.arange(B, dtype=np.int64),
              "req_to_token": np.arange(B * 40, dtype=np.int32).reshape(B, 40),
              "tree_cache_locs": np.arange(B * T, dtype=np.int64).reshape(B, T),
              "tree_parent": np.tile(np.arange(-1, T - 1), (B, 1)).astype(np.int64)}
    backend.run("tree_mask", inputs, {"S_max": 40, "B": B, "T": T, "Q": Q, "write_bool_mask": False})
    assert _totals(backend.last_port_bytes) == bm.k4(B, T, Q, L)
    # K1 hot path (bytes_model counts neither output_tokens nor out-of-range hot lookups)
    B, W, K, H = 1, 8, 8, 64
    rng = np.random.default_rng(1)
    inputs = {"topk_probas_sampling": rng.random((B, W * K)).astype(np.float32),
              "last_layer_scores": rng.random((B, W)).astype(np.float32),
              "input_hidden_states": rng.standard_normal((B * W, H)).astype(np.float16),
              "topk_tokens_sampling": rng.integers(0, 100, (B, W * K)).astype(np.int64),
              "hot_token_id": np.arange(100, dtype=np.int64)}
    backend.run("draft_tree_score", inputs, {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": 0,
                                             "use_hot_token_id": True})
    rd, wr = _totals(backend.last_port_bytes)
    assert (rd, wr - 8 * B * K) == bm.k1(B, W, K, H, 2, hot=True)
