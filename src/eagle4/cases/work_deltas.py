"""Case catalog of K3 ``calculate_work_deltas`` (KERNELS.md §3.6 edge cases and the §13 matrix).

Scores are kept in ``[1e-30, 1e4]`` or exactly 0 (§0.2, subnormal-safe for HLS cores). Entries
past ``n0 + K`` of each ``work_scores`` row hold the sentinel ``-777.0`` (never read, so a wrong
read shows up in the deltas). ``per_req_deltas`` is passed (sentinel ``-3.0``) by the edge cases
and by the first seed of the matrix, tagged ``per_req``; the other cases leave the optional
debug output out.
"""

from __future__ import annotations

import numpy as np

from eagle4.cases import Case

KERNEL = "work_deltas"
SEEDS = (0, 1, 2)
BATCHES = (1, 7, 128)
MATRIX_K = (8, 10, 1, 4)  # the distinct K of the §13 (K, W) pairs; K3 has no W
M_DEFAULT = 64
UNREAD = np.float32(-777.0)
PER_REQ_SENTINEL = np.float32(-3.0)


def _desc(values: np.ndarray) -> np.ndarray:
    return np.sort(values.astype(np.float32), axis=-1)[..., ::-1].copy()


def _path_scores(rng: np.random.Generator, shape) -> np.ndarray:
    """Cumulative-path-like scores: products of a few probabilities, in [1e-30, 1]."""
    depth = rng.integers(1, 5, size=shape)
    return np.maximum(rng.uniform(0.05, 1.0, size=shape) ** depth, 1e-30).astype(np.float32)


def _make(name, B, n0, K, Vb, A, Bn, *, M=M_DEFAULT, per_req=True, seed=None, tags=(), note="") -> Case:
    """One case; ``A [B, n0]`` and ``Bn [B, K]`` are placed into rows of stride ``max(M, n0) + K``."""
    stride = max(M, n0) + K
    ws = np.full((B, stride), UNREAD, np.float32)
    ws[:, :n0] = A
    ws[:, n0:n0 + K] = Bn
    inputs = {"work_scores": ws}
    if per_req:
        inputs["per_req_deltas"] = np.full((B, K + 1), PER_REQ_SENTINEL, np.float32)
        tags = (*tags, "per_req")
    params = {"batch_size": B, "node_count": n0, "node_top_k": K, "verify_num": Vb, "row_stride": stride}
    return Case(KERNEL, f"{KERNEL}/{name}", params, inputs, seed=seed, tags=tuple(tags), note=note)


def _random_rows(rng, B, n0, K):
    return _desc(_path_scores(rng, (B, n0))), _desc(_path_scores(rng, (B, K)))


def _edge_cases() -> list[Case]:
    out: list[Case] = []
    rng = np.random.default_rng(1000)
    for B in (1, 128):
        A, Bn = _random_rows(rng, B, 0, 8)
        out.append(_make(f"edge/n0_0_B{B}", B, 0, 8, 5, A, Bn, seed=1000, note="empty A: base +0.0, free slots only"))
    A, Bn = _random_rows(rng, 7, 40, 8)
    out.append(_make("edge/n0_eq_vb", 7, 40, 8, 40, A, Bn, seed=1000, note="n0 == Vb': no free slot"))
    A, Bn = _random_rows(rng, 7, 40, 8)
    out.append(_make("edge/n0_gt_vb", 7, 40, 8, 12, A, Bn, seed=1000, note="n0 > Vb': kA = Vb' < n0"))
    A, Bn = _random_rows(rng, 7, 20, 8)
    out.append(_make("edge/all_free", 7, 20, 8, 28, A, Bn, seed=1000, note="Vb' == n0 + K: every x is free"))
    A, Bn = _random_rows(rng, 7, 20, 10)
    out.append(_make("edge/vb_beyond_M", 7, 20, 10, 1000, A, Bn, seed=1000, note="no upper clamp on Vb"))
    for Vb in (0, -5, 1):
        A, Bn = _random_rows(rng, 7, 10, 8)
        out.append(_make(f"edge/vb_{Vb}".replace("-", "neg"), 7, 10, 8, Vb, A, Bn, seed=1000,
                         note="Vb <= 0 gives Vb' = 1" if Vb <= 0 else "Vb = 1"))
    A, Bn = _random_rows(rng, 1, 0, 8)
    out.append(_make("edge/vb_0_n0_0", 1, 0, 8, 0, A, Bn, seed=1000, note="Vb' = 1 with empty A: one free slot"))

    # Every Bn below the last kept A: all deltas +0.0.
    A = _desc(rng.uniform(0.5, 1.0, (7, 30)))
    Bn = _desc(rng.uniform(0.01, 0.4, (7, 8)))
    out.append(_make("edge/bn_below_a", 7, 30, 8, 30, A, Bn, seed=1000, note="every delta is +0.0"))

    # Bn equal to A values (quantized to 2^-8): strict '>' means no eviction on equality.
    q = lambda x: (np.round(x * 256) / 256).astype(np.float32)  # noqa: E731
    A = _desc(q(rng.uniform(0.25, 1.0, (7, 16))))
    Bn = np.repeat(A[:, 12:13], 8, axis=1)  # all equal to A[12]
    out.append(_make("edge/bn_equal_a_last", 7, 16, 8, 13, A, Bn, seed=1000,
                     note="x == A[kA-1]: no eviction, delta +0.0"))
    Bn = _desc(np.concatenate([A[:, 10:11] + np.float32(2 ** -8), A[:, 10:11], A[:, 10:11], A[:, 9:10],
                               A[:, 15:16], A[:, 15:16], A[:, 15:16], A[:, 15:16]], axis=1))
    out.append(_make("edge/ties_quantized", 7, 16, 8, 11, A, Bn, seed=1000,
                     note="2^-8-quantized ties around the eviction boundary"))

    # Partial: a few free slots, then evictions, then a stop.
    A = _desc(rng.uniform(0.2, 0.9, (7, 20)))
    Bn = _desc(np.concatenate([rng.uniform(0.6, 1.0, (7, 5)), rng.uniform(0.0, 0.1, (7, 5))], axis=1))
    out.append(_make("edge/free_then_evict_then_stop", 7, 20, 10, 22, A, Bn, seed=1000))

    for K in (1, 10):
        for B in (1, 128):
            A, Bn = _random_rows(rng, B, 30, K)
            out.append(_make(f"edge/K{K}_B{B}", B, 30, K, 32, A, Bn, seed=1000))

    # NaN in Bn: enters only through a free slot; otherwise delta +0.0 (NaN > a is false).
    A = _desc(rng.uniform(0.2, 0.9, (7, 10)))
    Bn = _desc(rng.uniform(0.3, 1.0, (7, 8)))
    Bn_nan = Bn.copy()
    Bn_nan[:, 0] = np.nan
    out.append(_make("edge/nan_free_slot", 7, 10, 8, 11, A, Bn_nan, seed=1000, note="NaN takes the free slot"))
    Bn_nan = Bn.copy()
    Bn_nan[:, 1] = np.nan
    out.append(_make("edge/nan_no_free_slot", 7, 10, 8, 10, A, Bn_nan, seed=1000,
                     note="NaN cannot evict; later x still may (the rule is applied per w)"))
    Bn_nan[:, 4] = np.nan
    out.append(_make("edge/nan_mixed", 7, 10, 8, 12, A, Bn_nan, seed=1000))

    # Exact zeros and the extreme magnitudes of the allowed range.
    A = np.zeros((7, 8), np.float32)
    Bn = np.zeros((7, 8), np.float32)
    Bn[:, :3] = [1e-30, 1e-30, 0.0]
    out.append(_make("edge/zeros", 7, 8, 8, 9, A, Bn, seed=1000, note="zero scores; tiny x evicts an exact 0"))

    # Order-sensitive magnitudes: a different summation order changes the f32 result.
    A = _desc(np.concatenate([np.full((128, 1), 1e4), rng.uniform(1e-4, 1e-3, (128, 63))], axis=1))
    Bn = _desc(rng.uniform(1e-4, 2e-3, (128, 8)))
    out.append(_make("edge/order_sensitive_B128", 128, 64, 8, 64, A, Bn, seed=1000,
                     note="1e4 plus many 1e-4..1e-3 terms: pins the sequential and ascending-b order"))
    A = _desc(rng.uniform(1e-3, 1e4, (128, 40)))
    Bn = _desc(rng.uniform(1e-3, 1e4, (128, 8)))
    out.append(_make("edge/wide_range_B128", 128, 40, 8, 44, A, Bn, seed=1000))

    # Stride larger than n0 + K, with sentinels in the unread tail; and n0 + K == row_stride exactly.
    A, Bn = _random_rows(rng, 7, 5, 4)
    out.append(_make("edge/unread_tail", 7, 5, 4, 6, A, Bn, M=64, seed=1000, note="row_stride 68, only 9 read"))
    A, Bn = _random_rows(rng, 7, 64, 8)
    out.append(_make("edge/full_stride", 7, 64, 8, 64, A, Bn, M=64, seed=1000, note="n0 + K == row_stride"))
    return out


def _matrix_cases() -> list[Case]:
    out: list[Case] = []
    for seed in SEEDS:
        for B in BATCHES:
            for K in MATRIX_K:
                rng = np.random.default_rng([seed, B, K])
                M = M_DEFAULT
                cc = int(rng.integers(1, 3 * M))
                Vn = int(rng.integers(1, M + 1))
                n0 = min(Vn, cc)  # as K2 computes it (§2.5)
                Vb = int(rng.integers(-1, M + K + 2))  # next budget: may be <= 0, below n0 or above n0 + K
                A, Bn = _random_rows(rng, B, n0, K)
                out.append(_make(f"matrix/B{B}_K{K}_s{seed}", B, n0, K, Vb, A, Bn, M=M,
                                 per_req=(seed == 0), seed=seed, tags=("matrix",)))
    return out


def cases() -> list[Case]:
    return _edge_cases() + _matrix_cases()
