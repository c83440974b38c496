"""Case catalog of K5 ``convert_logits_to_probas`` (KERNELS.md §5.6 edge cases and the §13 matrix).

``probas`` is passed with the sentinel -3.0 whenever ``write_probas`` is false (it must stay
untouched); when ``write_probas`` is true it is a pure output and not passed. Logits are
softmax-scale normals (``N(0, 2)``) unless a case says otherwise; ``V <= 4096`` except the cases
tagged ``large`` (``B = 1``, ``V`` = 128256 and 152064).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from eagle4.cases import Case

KERNEL = "logits_to_probas"
SEEDS = (0, 1, 2)
BATCHES = (1, 7, 128)
KW_PAIRS = ((8, 1), (8, 3), (8, 8), (10, 6), (1, 1), (4, 4))  # §13 (K, W); K5's rows per request G = W
PROBAS_SENTINEL = np.float32(-3.0)
F32_1E6 = np.uint32(0x358637BD).view(np.float32)  # f32(1e-6): sampling (not < itself)
F32_BELOW_1E6 = np.uint32(0x358637BC).view(np.float32)  # the next float below: greedy


def _make(name, logits, temps, G, *, write_probas=True, seed=None, tags=(), note="") -> Case:
    temps = np.asarray(temps, np.float32)
    inputs = {"logits": logits, "temperatures": temps}
    if not write_probas:
        inputs["probas"] = np.full(logits.shape, PROBAS_SENTINEL, np.float32)
    params = {"rows_per_req": int(G), "write_probas": bool(write_probas)}
    return Case(KERNEL, f"{KERNEL}/{name}", params, inputs, seed=seed, tags=tuple(tags), note=note)


def _normal(rng, R, V, scale=2.0) -> np.ndarray:
    return (rng.standard_normal((R, V)) * scale).astype(np.float32)


def _edge_cases() -> list[Case]:
    out: list[Case] = []
    s = 3000
    rng = np.random.default_rng(s)
    V = 1000
    # Greedy paths.
    out.append(_make("edge/all_greedy_no_probas", _normal(rng, 7 * 4, V), [0.0] * 7, 4, write_probas=False,
                     seed=s, note="write_probas false: probas keeps its sentinel"))
    out.append(_make("edge/all_greedy_with_probas", _normal(rng, 7 * 4, V), [0.0] * 7, 4, seed=s,
                     note="one-hot rows"))
    temps = [0.0, 1.0, 0.7, 1e-7, 2.5, -1.0, 1.0]
    out.append(_make("edge/mixed_greedy_sampling", _normal(rng, 7 * 3, V), temps, 3, seed=s))
    out.append(_make("edge/mixed_no_probas", _normal(rng, 7 * 3, V), temps, 3, write_probas=False, seed=s,
                     note="argmax and is_greedy still written; probas untouched"))
    # Temperature thresholds (D17).
    out.append(_make("edge/temp_1", _normal(rng, 4, V), [1.0], 4, seed=s, note="x = logits exactly"))
    out.append(_make("edge/temp_f32_1e-6", _normal(rng, 2 * 2, V, 0.01), [F32_1E6, F32_1E6], 2, seed=s,
                     note="temp == f32(1e-6) (0x358637BD) samples: very peaked rows"))
    out.append(_make("edge/temp_below_1e-6", _normal(rng, 2 * 2, V), [F32_BELOW_1E6, F32_1E6], 2, seed=s,
                     note="0x358637BC is greedy, 0x358637BD is not"))
    out.append(_make("edge/temp_negative_zero", _normal(rng, 4 * 2, V), [-1.0, -0.0, 0.0, -1e-30], 2, seed=s,
                     note="negative and zero temperatures are greedy"))
    out.append(_make("edge/temp_nan", _normal(rng, 2, V), [np.nan, 1.0], 1, seed=s,
                     note="NaN < f32(1e-6) is false: sampling, NaN row (IEEE)"))
    # Argmax ties (2^-8-quantized logits), +-0 ties, first NaN wins.
    lg = (np.round(rng.standard_normal((6, V)) * 256) / 256).astype(np.float32)
    lg[:, [17, 400, 999]] = lg.max() + 1  # equal maxima: lowest index wins
    lg[1, :] = 0.0
    lg[1, 3] = -0.0
    lg[2, :] = -0.0
    lg[2, 5] = 0.0
    out.append(_make("edge/argmax_ties", lg, [0.0, 1.0], 3, seed=s, note="equal maxima, +-0 ties"))
    lg = _normal(rng, 6, V)
    lg[0, [50, 7, 900]] = np.nan
    lg[1, 0] = np.nan
    lg[2, V - 1] = np.nan
    lg[3, :] = np.nan
    out.append(_make("edge/nan_logits", lg, [0.0, 1.0], 3, seed=s,
                     note="first NaN wins the argmax; a NaN logit gives a NaN row when sampling"))
    # Extremes: +-1e4, -inf entries, all -inf rows, +inf.
    lg = _normal(rng, 8, V)
    lg[0, ::2] = 1e4
    lg[1, ::3] = -1e4
    lg[1, 11] = 1e4
    lg[2, ::5] = -np.inf
    lg[3, :] = -np.inf
    lg[4, 123] = np.inf
    lg[5, [9, 99]] = np.inf
    lg[6, :] = -np.inf
    lg[6, 600] = 3.0
    lg[7, :] = 1e4
    for temps, tag in (([1.0, 1.0], "sampling"), ([0.0, 0.0], "greedy"), ([0.5, F32_1E6], "hot")):
        out.append(_make(f"edge/extremes_{tag}", lg, temps, 4, seed=s,
                         note="+-1e4, -inf entries, all -inf row (NaN), +inf (NaN row), one finite entry"))
    # Shapes: V = 1, V not a multiple of 16 or 128, V = 16 and 4096 exactly.
    for Vx in (1, 5, 16, 17, 130, 4095, 4096):
        out.append(_make(f"edge/V{Vx}", _normal(rng, 3 * 2, Vx), [1.0, 0.0, 0.8], 2, seed=s))
    # Half-precision logits, upcast exactly.
    for name, dtype in (("bf16", ml_dtypes.bfloat16), ("f16", np.float16)):
        lg = _normal(rng, 7 * 2, V).astype(dtype)
        lg[0, 10] = np.nan
        lg[1, :4] = np.inf
        out.append(_make(f"edge/{name}_logits", lg, [1.0, 0.0, 0.6, 1.3, F32_1E6, 1.0, 0.0], 2, seed=s))
    lg = (np.round(rng.standard_normal((4, V)) * 8) / 8).astype(ml_dtypes.bfloat16)
    out.append(_make("edge/bf16_ties", lg, [0.0, 1.0], 2, seed=s, note="bf16 ties after the exact upcast"))
    # Underflowing exp: a huge spread, most e_v are 0.
    lg = _normal(rng, 2, V) * np.float32(1e3)
    out.append(_make("edge/exp_underflow", lg, [0.05], 2, seed=s))
    # Many rows of a mid-size vocabulary: on CUDA the register kernel's 4-blocks-per-SM build (one block per
    # row, 8 vectors a thread from 264 rows and V in (4096, 8192]); greedy, plain and tempered requests.
    r = np.random.default_rng([s, 264])
    temps = np.tile(np.array([0.0, 1.0, 0.7], np.float32), 11)
    out.append(_make("edge/many_rows_V4100", _normal(r, 33 * 8, 4100), temps, 8, seed=s,
                     note="264 rows of V = 4100 (cuda: k5r14_kernel, one block a row, 8 vectors a thread)"))
    # More rows than the GPU holds at once, one block a row (on the H100: 600 rows of V = 8192 against the 528
    # blocks of the register kernel's 4-blocks-per-SM build): on CUDA its L2-prefetching build, whose first wave's
    # last rows ask L2 for the second wave's; max ties and NaNs in the second wave's rows.
    r = np.random.default_rng([s, 600])
    lg = _normal(r, 75 * 8, 8192)
    lg[531::2, 4001] = lg[531::2, 8000] = np.float32(30.0)
    lg[540::9, 7777] = np.nan
    temps = np.tile(np.array([0.0, 1.0, 0.7], np.float32), 25)
    out.append(_make("edge/many_rows_V8192_two_waves", lg, temps, 8, seed=s,
                     note="600 rows of V = 8192 (cuda: k5r14_kernel's prefetching build where the GPU holds fewer)"))
    # The division's range: on CUDA a register-kernel thread divides by one reciprocal with Markstein's correction
    # where its |logits| lie in [2^-64, 2^64] and the temperature in [2^-32, 2^32], by the IEEE division otherwise.
    # Rows with the range's ends and the floats just outside them, +-0, 1e-30 and -1e25, at temperatures f32(1e-6),
    # 0.7, 2^32 and the float above it; one plain row per request.
    r = np.random.default_rng([s, 64])
    lo, hi = np.float32(2.0**-64), np.float32(2.0**64)
    below, above = np.nextafter(lo, np.float32(0)), np.nextafter(hi, np.float32(np.inf))
    lg = _normal(r, 4 * 4, 1000)
    for b in range(4):
        row = lg[4 * b:4 * b + 4]
        row[0, [3, 500, 997]] = [lo, -lo, hi]  # the ends: a max of 2^64
        row[1, [10, 600]] = [below, -above]  # just outside: those threads take the IEEE division
        row[2, [0, 7, 300, 999]] = [0.0, -0.0, np.float32(1e-30), np.float32(-1e25)]
    temps = [F32_1E6, 0.7, 2.0**32, np.nextafter(np.float32(2.0**32), np.float32(np.inf))]
    out.append(_make("edge/division_range", lg, temps, 4, seed=s,
                     note="logits at and beyond [2^-64, 2^64], +-0, 1e-30, -1e25; temperatures up to past 2^32"))
    # Large vocabularies (B = 1).
    for Vx in (128256, 152064):
        r = np.random.default_rng([s, Vx])
        out.append(_make(f"large/V{Vx}", _normal(r, 2, Vx), [0.8], 2, seed=s, tags=("large",),
                         note="the 16-lane partial sums at full vocabulary size"))
    # The argmax rules across a large row's slices: 40 rows of V = 128256 (on CUDA: the register kernel's
    # 16-block clusters, 8016 entries a block, which 33-64 such rows take); greedy, plain and tempered
    # requests; a tie of the max in two blocks of a row (blocks 0 and 5, or 9 and 12: the lower index wins)
    # and, in every sixth row, a NaN in a later block (the NaN wins).
    Vx, blk = 128256, 8016
    r = np.random.default_rng([s, Vx, 40])
    lg = _normal(r, 20 * 2, Vx)
    for row in range(40):
        first, second = ((100, 5 * blk + 7), (9 * blk + 3, 12 * blk))[row % 2]
        lg[row, first] = lg[row, second] = np.float32(40.0)
    lg[5::6, 14 * blk + 11] = np.nan
    temps = np.tile(np.array([0.0, 1.0, 0.7], np.float32), 7)[:20]
    out.append(_make("large/V128256_rows40_ties_nan", lg, temps, 2, seed=s, tags=("large",),
                     note="max ties and NaN across a 40-row launch's clusters"))
    return out


def _matrix_cases() -> list[Case]:
    out: list[Case] = []
    vocab = {0: 256, 1: 1000, 2: 4096}
    for seed in SEEDS:
        for B in BATCHES:
            for G in sorted({w for _, w in KW_PAIRS}):
                rng = np.random.default_rng([seed, B, G])
                V = vocab[seed] if B < 128 else min(vocab[seed], 1000)  # keep B = 128 rows cheap
                # per request: greedy (0), plain (1) or a random temperature in (0.1, 2)
                kind = rng.integers(0, 3, B)
                temps = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.uniform(0.1, 2.0, B)))
                write = not (seed == 2 and G == 1)  # one no-probas column per batch size
                out.append(_make(f"matrix/B{B}_G{G}_s{seed}", _normal(rng, B * G, V), temps, G,
                                 write_probas=write, seed=seed, tags=("matrix",)))
    return out


def cases() -> list[Case]:
    return _edge_cases() + _matrix_cases()
