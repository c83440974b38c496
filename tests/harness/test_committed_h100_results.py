"""The committed H100 kernel results hold what issue 14 asks of them (CPU only; always runs).

Checks reports/cuda_kernel_times*.csv, kernel_anchors.md, cuda_bytes_per_token.csv,
hotspots_ranked.md, h100_env_manifest.txt and the one-shot dumps in tests/goldens/h100/:

* schema, provenance "measured", an H100, the contract hash of the contract that produced each row
  (default and deployment-8b), every kernel, the draft step and every anchor at every batch;
* per (contract, point, impl): >= the contract's runs, median and CoV recomputed from the raw rows
  equal to the summary, graph CoV <= 2%;
* ours / anchor and ours / roofline recomputed from the raw medians and the byte model; a point
  where ours is slower than its best anchor fails unless it is listed in ``KNOWN_SLOWER`` with the
  reason (and a listed point that is no longer slower fails too, so the list cannot go stale);
* K5 within 1.3x of the HBM roofline at every point of >= 32 MiB, every kernel <= 5 us at B = 1,
  the draft step <= 8 us at B = 1 and <= 12 us at B = 128, K6 <= 20 us at B = 128, our graph CoV
  <= 2% (same exception rule: ``KNOWN_MISSES`` says why each missed bar is missed; the list is the
  statement of what issue 14 left open, and a bar met later must leave it);
* ncu bytes beside the model with their ratio; every kernel over 1.2x listed in the hotspots with a reason.

Each check runs on the current set (reports/, contracts/default.toml and deployment-8b.toml) and on every
archived set (``eagle4.contract.archive.ARCHIVED``: reports/archive/<name>/ against the archived contract
beside it, with its own ``KNOWN_*`` lists): rows are only ever judged against the contract that produced them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from eagle4.contract.archive import ARCHIVE_DIR, ARCHIVED, archived_contract_path
from eagle4.perf import h100_manifest, source_successor
from eagle4.perf.card import BASELINE, is_baseline
from eagle4.perf.kernel_report import BPT_FIELDS, SUMMARY_FIELDS
from eagle4.perf.points import operating_points, roofline_us, shape_from_contract
from eagle4.perf.rows import RAW_FIELDS, ours_in_graph, read_csv
from eagle4.spec import KERNEL_ORDER

pytestmark = [pytest.mark.cpu]

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports"
GOLDENS = REPO / "tests" / "goldens" / "h100"
CONTRACTS = [REPO / "contracts" / "default.toml", REPO / "contracts" / "deployment-8b.toml"]
MAX_GRAPH_COV = 0.02  # issue 14: >= 5 processes, CoV <= 2% in graph mode
K5_ROOFLINE_MAX, K5_MIN_BYTES = 1.3, 32 * 2**20
B1_MAX_US, STEP_B1_MAX_US, STEP_B128_MAX_US, K6_B128_MAX_US = 5.0, 8.0, 12.0, 20.0

# (contract, point) -> why ours is slower than the best PyTorch anchor there (statement, not a waiver)
KNOWN_SLOWER: dict[tuple[str, str], str] = {}
# (contract, point, bar) -> why the bar is missed (measured 2026-11-28 00:24-00:28 UTC on the H100 by c57e595's sign-off
# bench, every graph row of ours within 0.46% CoV: 00001c6's kernels with K5's narrow register build at >= 512 rows of
# V > 65536 (k5_narrow/; against 00001c6's source in one process 0.974 / 0.966 / 0.963 at deployment-8b's verify B = 8 /
# 32 / 128, 0.999-1.002 at K5's other points, compare_src_c57e595*); 00001c6's bench (22:33-22:37 UTC,
# reports/h100_parity/00001c6/bench/), every graph row of ours within 1.45% CoV: 37f9ac4's kernels with K6's GX slots cleared where a launch has fewer
# blocks a request than the one before (k6_gx_wrap/; against 37f9ac4's source in one process 1.011 / 1.007 at deployment-8b's
# B = 1 / 8, 1.000 at K6's other points, compare_src_00001c6*); 37f9ac4's bench (22:08-22:11 UTC,
# reports/h100_parity/37f9ac4/bench/), every graph row of ours within 0.51% CoV: edf7a14's kernels with refusal messages
# joined without iostreams, host code only (30b6090's source, the SASS of every function byte for byte edf7a14's; against edf7a14's source in one process
# 0.995-1.005 at K6's points, compare_src_37f9ac4*, 0.995-1.007 at every point, compare_src_30b6090*; refusal_crash/);
# edf7a14's sign-off bench (17:45-17:49 UTC, reports/h100_parity/edf7a14/bench/), every graph row of ours within 0.63% CoV:
# 258ca03's kernels with K6's register form without clusters at
# deployment-8b's B = 1 and 8 (the final row over up to 64 blocks, the block totals through global memory as tagged words:
# reports/kernel_before_after/k6_gx/), against 258ca03's source in one process 0.854 at B = 1 (K6's 5 us bar met, 4.78 us
# in the bench), 0.814 at B = 8, 0.998-1.000 at K6's other points (compare_src_edf7a14*); 258ca03's bench (16:39-16:42 UTC,
# reports/h100_parity/258ca03/bench/), every graph row of ours within 0.53% CoV: 33f5666's kernels with K5's one-round merges by warp 0 only where a
# launch has more blocks than the GPU has SMs (reports/kernel_before_after/k5_warp0/), against 33f5666's source in one
# process 0.89 / 0.91 at the draft points of B = 8, 0.95 / 0.97 at the default verify B = 8 / 4, 0.998-1.004 elsewhere
# (compare_src_258ca03*); 33f5666's bench (16:03-16:06 UTC, reports/h100_parity/33f5666/bench/), every graph row of ours
# within 0.56% CoV: 460ca31's kernels with K5's fallback exp loop through k5_each and
# amax_better as one template (reports/kernel_before_after/k5_nits/: a change of code generation, not of the work a thread
# does), against 460ca31's source in one process 0.964 at deployment-8b verify B = 1, 0.976 at draft B = 32, 0.98-1.00 at
# the other K5 points but 1.012 at draft B = 8 (compare_src_33f5666*); 460ca31's bench (14:21-14:24 UTC,
# reports/h100_parity/460ca31/bench/), every graph row of ours within 0.50% CoV: 08010d1's kernels with a merge of two K5 partials by one exp instead of
# two, the exp there and in k5_scale by ex2.approx.ftz, the merge's argmax order on 32-bit indices
# (reports/kernel_before_after/k5_merge1/), against 08010d1's source in one process 0.82-1.00 at K5's points (0.937 at
# deployment-8b verify B = 1, 0.948 at draft B = 32: compare_src_460ca31*); 08010d1's bench (13:49-13:53 UTC,
# reports/h100_parity/08010d1/bench/), every graph row of ours within 0.71% CoV: 74e0f7e's kernels with K5's lean per-entry path (the register kernel's
# one-round form: the thread argmax by max.NaN and one backward scan, the division by one reciprocal a thread and
# Markstein's correction where the thread's |logits| allow it, exp by ex2.approx.ftz: reports/kernel_before_after/k5_lean/),
# against 77f9273's source in one process 0.85-1.00 at K5's points (0.89 at deployment-8b verify B = 1, 0.90 at draft
# B = 32: compare_src_08010d1*); 74e0f7e's bench (09:23-09:26 UTC, reports/h100_parity/74e0f7e/bench/), every graph row
# of ours within 0.26% CoV: e2cda77's kernels with K5's L2 prefetch (the register kernel, wherever
# a launch has more rows than the GPU holds at once, asks L2 for the same slice of the row a quarter of those rows
# ahead, marked evict_last, and loads its own slice marked evict_normal: reports/kernel_before_after/k5_l2_prefetch/),
# 0.89-0.97x e2cda77's bench at deployment-8b's six K5 points of > 1 wave (it met K5's roofline bar at verify
# B = 8 / 32 / 128: 1.25 / 1.21 / 1.20x, from 1.37 / 1.34 / 1.34x), against a2b44db's source in one process 0.97 at
# verify B = 1 and draft B = 32 and 0.998-1.002 elsewhere (compare_src_74e0f7e*); e2cda77's bench
# (07:01-07:05 UTC, reports/h100_parity/e2cda77/bench/): 8ed4d4d's kernels with the common code of K5's shared-memory
# kernels folded, 0.997-1.002 against 8ed4d4d's source in one process, compare_src_e2cda77*; before it 8ed4d4d's bench
# (06:39-06:42 UTC, reports/h100_parity/8ed4d4d/bench/: the byte-bound K5 points 1-2% faster there, the same code in
# another session): K5's one-round forms keep e = exp(x - the part's max), one exp an entry, and the register kernel
# serves every f32 point in one round, V = 128256 in 16-block clusters (reports/kernel_before_after/k5_keep_e/;
# before/after against 5cc446c's source: 0.78-0.97 at K5's points, compare_src_8ed4d4d*); before them e41e6ac's bench, the first with the timing events recorded inside the graph
# (reports/kernel_before_after/timer/: a host stall between a host-recorded start event and the replay had reached the
# sample), of 5cc446c's kernels (K6's register form keeps each thread's q values in 32 bits for the owner's scan: 0.935-0.977 at K6's points
# of B <= 8; K5's one-round form takes its max from the merged partials: 0.99 at its points;
# reports/kernel_before_after/compare_src_5cc446c*, k6 scan ablation in k6_scan/), on 2527c2d's (K5's
# register kernel in 16-block clusters for 33-64 rows of V > 65536: 0.95x at deployment-8b's verify B = 1, 1.00 at every
# other K5 point, reports/kernel_before_after/compare_src_2527c2d_log.txt, k5_rows64/) on a371bde's (d58a8ae's with
# comments moved; its before/after against d58a8ae's source, an A/A check of the bench, 0.995-1.001) = d58a8ae's (K6's
# walk takes the final row's rejected tokens from a list phase A writes: reports/kernel_before_after/k6_walk_rej/) on
# ac99361's (K6's phase A: each row's pass bound computed while staging, for every coin, and the first 8 children
# scanned from registers: reports/kernel_before_after/k6_phase_a/) on 8610897's (K6's acceptance test as a float compare
# against the least passing float, no division a child: reports/kernel_before_after/k6_division/) on 59cc7f6's (K5's
# one-round reduction and K6's exchanges: the cluster barrier's arrival releases from warp 0 only), on ff43c71's (K6:
# clusters sized by what the GPCs hold, one cluster barrier in the tiled kernel, final_coins loaded first, the tiled
# kernel's dependents triggered after its row stream), d0f1ed2's (K4's packed-mask bytes and blocks per request, K5's
# one-round reduction for <= 32 rows, K7's compaction one thread per entry), 08a43b6's (K5's register form at 4 blocks
# per SM for many rows), f7d3175's (K5's fewer instructions) and b80d405's (K6, the one-launch draft step of h24, h27
# and h28), with programmatic dependent launch, the draft step as one launch, every anchor incl. torch.compile's K5 and
# the copy of K5's bytes in the same processes; before/after: reports/kernel_before_after/compare_src_d58a8ae_log.txt
# (and the earlier compare_src_*), the variants tried: reports/kernel_before_after/k6_walk_rej/, k6_phase_a/,
# k6_division/, xchg/, k6_scaling/, k5_experiments/, b1_latency/ and k5_rows64/)
_K5V1 = "64 rows of 128256 (65.7 MB, HBM roofline 19.6 us, one copy of the same bytes 23.6 us): 26.2 us, 1.34x the roofline and 1.11x the copy in c57e595's bench (the same K5 code at this point measured 26.3 us, 1.34x and 1.11x, in 00001c6's bench, 26.2 us in 37f9ac4's bench, 26.5 us, 1.35x and 1.12x, in edf7a14's bench, 26.2 us, 1.33x and 1.10x, in 258ca03's bench on another machine of the same kind; 1.34x in 33f5666's bench), since 33f5666 with a change of code generation (0.964x 460ca31's source in one process; 27.2 us, 1.39x, in 460ca31's bench; k5_nits/), since 460ca31 with a merge of partials by one exp (0.937x 08010d1's source in one process, 29.0 against 30.4 us in the standalone probe, bitwise equal outputs; 29.1 us, 1.49x, in 08010d1's bench; k5_merge1/), since 08010d1 with the lean per-entry path (about 14 instructions an entry instead of about 28: 0.89x 77f9273's source in one process, 30.2 against 33.7 us in the standalone probe; 32.8 us, 1.68x, in 74e0f7e's bench; k5_lean/), since 74e0f7e with K5's L2 prefetch (the second wave's rows asked of L2 by the first wave's last rows, a quarter of the rows held ahead (28 clusters of 16 on the cards of k5_l2_two_pass/, whose driver answer is what the launch uses): 0.97x a2b44db's source in one process, of which up to about 0.06 us may be lines the previous launch left marked in L2, the sweep's copy-after check; 34.0 us, 1.73x, in e2cda77's bench; k5_l2_prefetch/), since 8ed4d4d the register kernel's one-round form in 16-block clusters (1024 blocks, about two waves of the 528 block slots; 40.1 us in two rounds, 2527c2d-5cc446c; the shared-memory kernel in one round 36.5, k5_keep_e/); a form holding each row in registers and shared memory, 8 blocks a row, so that every row's cluster would be on chip at once, measured 42.3-49.0 us against 40.2 then: the GPU holds fewer than 64 such clusters at once, so it ran in two waves too (k5_rows64/); each block loads, reduces across its cluster and stores, and the blocks of a wave go through those phases together; a persistent form in which each block streams its slice of its next row into shared memory by one bulk copy while it reduces and stores the current one measured 41.7 against 32.4 us in one process (every row by bulk copy: 42.7), slower at every point of more rows than the GPU holds: its 32 KB of shared memory a block shrank L1 and the clusters held at once (22 of 16 blocks), ncu (k5_pipelined/); a form holding no row, streaming it from HBM once (evict_last) and reading it again from L2 to write it, measured 42.4 against 33.4 us in one process (ncu: the second pass served by L2, so its own latency), and computing the division by the temperature from one reciprocal a row with a range check an entry changed nothing (33.4, bitwise equal outputs), and a branch-free thread argmax gained 1.7% (33.1 against 33.7, bitwise equal; not ported alone, below the 3% set for re-benching every K5 row, it is part of 08010d1's lean path, whose range check is once a thread); the driver holds 28 clusters of 16 blocks here, not 33, and past the first wave each row adds about 0.43 us: most of the gap to a copy is the first wave, 18.0 against 11.1 us for 28 rows, which ncu shows latency- and issue-bound at 22% DRAM throughput, and holding only part of each thread's slice in registers (the rest read again from L2) still left two waves (58 of 64 clusters held) and measured 38.5 against 34.4 (k5_l2_two_pass/); without clusters, a persistent cooperative form filling the 33 rows' worth of block slots that 28 clusters of 16 leave partly empty (33 + 31 rows instead of 28 + 28 + 8; the partials through global memory, K6's GX exchange; the same bits) took 26.65 against 26.22 us in one process (1.135x at verify B = 8; k5_gx/); 64-thread blocks of 32 vectors a thread (168 registers, 6 blocks an SM), which the driver holds 42 clusters of 16 of (42 + 22 rows), took 29.28 against 26.44 us in one process, each wave's blocks holding 1.5x the entries an SM (kept only from 512 rows on, where it gains 2-4%), and the entries in groups, each a part of its own so that its passes could run while later loads were in flight, 28.4-30.9 (k5_narrow/)"
KNOWN_MISSES: dict[tuple[str, str, str], str] = {
    ('deployment-8b', 'logits_to_probas/verify/B1/Q64/V128256', 'b1_5us'): 'byte-bound: 65.7 MB per call, HBM roofline 19.6 us',
    ('deployment-8b', 'logits_to_probas/verify/B1/Q64/V128256', 'k5_roofline'): _K5V1,
    ('deployment-8b', 'reject_sample/B128/Q64/V128256', 'k6_b128'): 'the final rows alone are 65.7 MB at B = 128 (HBM roofline 19.7 us): 20 us is the floor, and a plain streaming read of that many bytes takes longer on this card (a grid-stride read-only kernel, one process, nvidia-h100-x1: 32.8 MB in 12.46 us, 134 MB in 45.3 us, 263 MB in 86.5 us, 2.63-3.04 TB/s, so 22-25 us for 65.7 MB at those rates; k5_l2_two_pass/probe_run1.txt); 30.6 us (30.59 in c57e595\'s bench, 30.58 in 00001c6\'s and 37f9ac4\'s, 30.53 in edf7a14\'s, 30.57 in 74e0f7e\'s, 30.58 in e41e6ac\'s; one copy of K5\'s verify bytes at B = 128 takes 1.11x its roofline on this card; 66.3 before issue 14, 39.5 after its second pass, 32.1 before ff43c71); phase-trace: the row stream itself runs at about 2.9 TB/s (45000 cycles a block), after about 6100 cycles of tree staging, row resolution and walk that every block needs before it knows its row',
}
# the statements of the archived set's kernels (5be68ae, before issue 14's second pass)
_K5S = 'a block per row (V = 260) still pays launch, two reduction barriers and IEEE divisions; anchor 12-13 us'
_ARCH_K4 = 'one launch rebuilds three block scans and the ancestor rows before its first store (about four dependent global rounds); not reworked in issue 14'
_ARCH_K6 = "tree staged in shared memory, rows' accepted children resolved in parallel (issue 14: no gain, the walk was not the cost), then the final row's inverse CDF with a block scan and two cluster barriers; not reworked further"
_ARCH_K7 = "three block scans and the free-slot compaction in the bookkeeping block; the accepted entries' loads became one parallel round in issue 14 (-0.3 us); not reworked further"
_ARCH_STEP = 'three launches in one graph cost their sum (K1 + K2 + K3); the fused draft-layer kernel is not written'
# the same statements for each archived set (its own contract, its own points)
ARCHIVED_KNOWN_SLOWER: dict[str, dict[tuple[str, str], str]] = {"h100_toy_pair_b6befd65731f": {}}
ARCHIVED_KNOWN_MISSES: dict[str, dict[tuple[str, str, str], str]] = {"h100_toy_pair_b6befd65731f": {
    ('default', 'draft_step/B1/dtypefloat32', 'step_b1'): _ARCH_STEP,
    ('default', 'logits_to_probas/draft/B1/Q4/V260', 'b1_5us'): _K5S,
    ('default', 'logits_to_probas/verify/B1/Q16/V260', 'b1_5us'): _K5S,
    ('default', 'reject_sample/B1/Q16/V260', 'b1_5us'): _ARCH_K6,
    ('default', 'tree_mask/draft/B1/Q4', 'b1_5us'): _ARCH_K4,
    ('default', 'tree_mask/verify/B1/Q16', 'b1_5us'): _ARCH_K4,
    ('default', 'update_verify/B1/Q16/dtypefloat32', 'b1_5us'): _ARCH_K7,
}}
# anchors added after a set was archived (its runs could not measure them)
ARCHIVED_BEFORE_ANCHORS: dict[str, set[str]] = {
    "h100_toy_pair_b6befd65731f": {"torch_compile_softmax_temp", "torch_copy_same_bytes"}}
# summary columns added after a set was archived (they derive from those anchors)
ARCHIVED_BEFORE_FIELDS: dict[str, set[str]] = {"h100_toy_pair_b6befd65731f": {"copy_us", "ours_over_copy"}}
SETS = ["current", *ARCHIVED]


def _dir(which: str) -> Path:
    return REPORTS if which == "current" else ARCHIVE_DIR / which


def _known(which: str):
    """(KNOWN_SLOWER, KNOWN_MISSES) of a set."""
    if which == "current":
        return KNOWN_SLOWER, KNOWN_MISSES
    return ARCHIVED_KNOWN_SLOWER[which], ARCHIVED_KNOWN_MISSES[which]


def _need(path: Path) -> Path:
    if not path.is_file():
        pytest.fail(f"{path.relative_to(REPO)} is missing: it is produced on an H100 by "
                    "scripts/bench_h100_kernels.sh (see its header) and committed", pytrace=False)
    return path


@pytest.fixture(scope="module", params=SETS)
def which(request):
    return request.param


def _current_shapes() -> dict:
    return {p.stem: shape_from_contract(p) for p in CONTRACTS}


@pytest.fixture(scope="module")
def shapes(which):
    if which == "current":
        return _current_shapes()
    p = archived_contract_path(which)  # its stem is the rows' contract name
    return {p.stem: shape_from_contract(p, root=p.parent)}


@pytest.fixture(scope="module")
def raw(which):
    rows = read_csv(_need(_dir(which) / "cuda_kernel_times_raw.csv"))
    assert rows, "the raw CSV has no rows"
    return rows


@pytest.fixture(scope="module")
def summary(which):
    rows = read_csv(_need(_dir(which) / "cuda_kernel_times.csv"))
    assert rows, "the summary CSV has no rows"
    return rows


def _groups(raw):
    g = defaultdict(list)
    for r in raw:
        g[(r["contract"], r["point"], r["impl"], r["mode"])].append(r)
    return g


def _check_raw(raw, shapes) -> None:
    assert set(RAW_FIELDS) <= set(raw[0]), f"missing columns: {set(RAW_FIELDS) - set(raw[0])}"
    for r in raw:
        assert r["provenance"] == "measured", r
        assert is_baseline(r["device"]), f"device {r['device']!r} is not the baseline card ({BASELINE.name})"
        assert r["contract"] in shapes, f"row of an unknown contract {r['contract']!r}"
        assert r["contract_sha256"] == shapes[r["contract"]].contract_hash, \
            f"{r['contract']} {r['point']}: contract hash {r['contract_sha256'][:12]} is not the contract's " \
            f"{shapes[r['contract']].contract_hash[:12]}: re-run scripts/bench_h100_kernels.sh"
        assert r["git_commit"] and r["driver"] and r["torch"], r
        assert r["mode"] in ("eager", "graph")
        assert r["source"] in ("csv", "log"), r
        if r["source"] == "csv":  # rows recovered from a run's printed log have the median only
            assert float(r["p10_us"]) <= float(r["median_us"]) <= float(r["p90_us"]), r


def test_raw_schema_provenance_and_contract_hash(raw, shapes):
    _check_raw(raw, shapes)


def test_every_point_ours_and_anchors(raw, shapes, which):
    from eagle4.perf.anchors import ANCHORS

    seen = {(r["contract"], r["point"], r["impl"]) for r in raw if r["mode"] == "graph"}
    later = ARCHIVED_BEFORE_ANCHORS.get(which, set())
    missing = []
    for name, sh in shapes.items():
        for p in operating_points(sh):
            for impl in ["cuda"] + [a for a, _, _ in ANCHORS[p.kernel] if a not in later]:
                if (name, p.pid, impl) not in seen:
                    missing.append(f"{name} {p.pid} {impl}")
        kernels = {p.kernel for p in operating_points(sh)}
        assert set(KERNEL_ORDER) <= kernels and "draft_step" in kernels
    assert not missing, "no graph measurement of: " + "; ".join(missing)


def test_runs_median_and_cov(raw, summary, shapes, which):
    _, KNOWN_MISSES = _known(which)
    by_key = {(s["contract"], s["point"], s["impl"], s["mode"]): s for s in summary}
    groups = _groups(raw)
    assert set(by_key) == set(groups), "summary and raw rows cover different points"
    bad = []
    for key, rs in groups.items():
        runs = {int(r["run_index"]) for r in rs}
        assert len(runs) == len(rs), f"{key}: duplicate run indices"
        assert len(runs) >= shapes[key[0]].runs, f"{key}: {len(runs)} runs < the contract's {shapes[key[0]].runs}"
        meds = np.array([float(r["median_us"]) for r in rs])
        cov = float(meds.std(ddof=1) / meds.mean())
        s = by_key[key]
        assert abs(float(s["cov"]) - cov) <= 1e-5 + 1e-3 * cov, f"{key}: summary CoV {s['cov']} != raw {cov:.6f}"
        assert abs(float(s["median_us"]) - float(np.median(meds))) <= 1e-3 * float(np.median(meds)) + 1e-3, key
        assert s["valid"] == str(cov <= shapes[key[0]].cov_max).lower(), f"{key}: valid flag disagrees with the rule"
        if key[2] == "cuda" and key[3] == "graph" and cov > MAX_GRAPH_COV and (key[0], key[1], "cov") not in KNOWN_MISSES:
            bad.append(f"{key}: CoV {cov:.4f} (run medians {', '.join(f'{m:.2f}' for m in meds)} us)")
    assert not bad, f"graph-mode CoV of our kernels must be <= {MAX_GRAPH_COV:.0%}:\n" + "\n".join(bad)


def test_ratios_recomputed(raw, summary, shapes):
    groups = _groups(raw)
    med = {k: float(np.median([float(r["median_us"]) for r in rs])) for k, rs in groups.items()}
    pts = {(n, p.pid): p for n, sh in shapes.items() for p in operating_points(sh)}
    for (c, pid), s in ours_in_graph(summary).items():
        ours = med[(c, pid, "cuda", "graph")]
        anchors = {k[2]: v for k, v in med.items() if k[0] == c and k[1] == pid and k[2] != "cuda"
                   and k[3] == "graph" and groups[k][0]["same_computation"] == "true"}
        best = min(anchors, key=anchors.get)
        assert s["anchor_impl"] == best
        assert abs(float(s["ours_over_anchor"]) - ours / anchors[best]) <= 1e-3 * ours / anchors[best] + 6e-5
        roof = roofline_us(pts[(c, pid)], BASELINE.hbm_bps)
        assert abs(float(s["roofline_us"]) - roof) <= 1e-3 * roof + 1e-4
        assert abs(float(s["ours_over_roofline"]) - ours / roof) <= 1e-3 * ours / roof + 6e-5
        copy = med.get((c, pid, "torch_copy_same_bytes", "graph"))
        if copy is None:
            assert not s.get("copy_us"), f"{c} {pid}: a copy floor without its copy rows"
        else:
            assert abs(float(s["copy_us"]) - copy) <= 1e-3 * copy + 1e-4
            assert abs(float(s["ours_over_copy"]) - ours / copy) <= 1e-3 * ours / copy + 6e-5


def test_no_point_slower_than_its_anchor(summary, which):
    KNOWN_SLOWER, _ = _known(which)
    ours = ours_in_graph(summary)
    slower = {k: s for k, s in ours.items() if float(s["ours_over_anchor"]) > 1.0}
    unexplained = [f"{c} {p}: ours {float(s['median_us']):.2f} us vs {s['anchor_impl']} {float(s['anchor_us']):.2f} us"
                   for (c, p), s in slower.items() if (c, p) not in KNOWN_SLOWER]
    stale = [f"{k}" for k in KNOWN_SLOWER if k not in slower]
    assert not unexplained, "ours slower than the best PyTorch anchor:\n" + "\n".join(unexplained)
    assert not stale, f"KNOWN_SLOWER lists points that are no longer slower: {stale}"


def test_a_ratio_on_an_anchor_row_outside_the_run_rule_holds_run_for_run(summary, which):
    # ours / anchor at such a point rests on a row the run rule rejects (its runs spread too far): the verdict
    # "ours is faster" is kept only where every run of ours beats every run of that anchor
    rows = {(s["contract"], s["point"], s["impl"]): s for s in summary if s["mode"] == "graph"}
    shaky = []
    for (c, p), s in ours_in_graph(summary).items():
        a = rows.get((c, p, s.get("anchor_impl", "")))
        if a is not None and a["valid"] != "true" and not float(s["max_run_us"]) < float(a["min_run_us"]):
            shaky.append(f"{c} {p}: ours up to {float(s['max_run_us']):.2f} us, {a['impl']} from {float(a['min_run_us']):.2f}")
    assert not shaky, "anchor rows outside the run rule that ours does not beat run for run:\n" + "\n".join(shaky)


def _bar_misses(summary, shapes):
    misses = {}
    for (c, pid), s in ours_in_graph(summary).items():
        us = float(s["median_us"])
        if s["kernel"] == "logits_to_probas" and int(s["bytes_model"]) >= K5_MIN_BYTES and \
                float(s["ours_over_roofline"]) > K5_ROOFLINE_MAX:
            misses[(c, pid, "k5_roofline")] = f"{float(s['ours_over_roofline']):.2f}x the roofline"
        if int(s["B"]) == 1 and s["kernel"] != "draft_step" and us > B1_MAX_US:
            misses[(c, pid, "b1_5us")] = f"{us:.2f} us at B = 1"
        if s["kernel"] == "draft_step" and int(s["B"]) == 1 and us > STEP_B1_MAX_US:
            misses[(c, pid, "step_b1")] = f"{us:.2f} us"
        if s["kernel"] == "draft_step" and int(s["B"]) == 128 and us > STEP_B128_MAX_US:
            misses[(c, pid, "step_b128")] = f"{us:.2f} us"
        if s["kernel"] == "reject_sample" and int(s["B"]) == 128 and us > K6_B128_MAX_US:
            misses[(c, pid, "k6_b128")] = f"{us:.2f} us"
        if float(s["cov"]) > MAX_GRAPH_COV:
            misses[(c, pid, "cov")] = f"CoV {float(s['cov']):.4f}"
    return misses


def test_issue14_bars(summary, shapes, which):
    _, KNOWN_MISSES = _known(which)
    misses = _bar_misses(summary, shapes)
    unexplained = [f"{k}: {v}" for k, v in misses.items() if k not in KNOWN_MISSES]
    stale = [f"{k}" for k in KNOWN_MISSES if k not in misses]
    assert not unexplained, "bars of issue 14 missed:\n" + "\n".join(unexplained)
    assert not stale, f"KNOWN_MISSES lists bars that are now met: {stale}"


def test_summary_schema_and_anchor_table(summary, which):
    assert set(SUMMARY_FIELDS) - ARCHIVED_BEFORE_FIELDS.get(which, set()) <= set(summary[0])
    md = _need(_dir(which) / "kernel_anchors.md").read_text()
    for (c, pid), s in ours_in_graph(summary).items():
        # a draft-step row names its form after the point, e.g. "(one launch)", as its label does
        form = re.search(r"\(([^)]*)\)$", s.get("label", ""))
        cell = f"{pid} ({form.group(1)})" if pid.startswith("draft_step/") and form else pid
        assert f"| {cell} | {float(s['median_us']):.2f} |" in md, f"{c} {cell} missing from kernel_anchors.md"


def test_ncu_bytes_beside_the_model(which, shapes):
    rows = read_csv(_need(_dir(which) / "cuda_bytes_per_token.csv"))
    assert {r["contract"] for r in rows} <= set(shapes), "bytes rows of a contract this set does not hold"
    assert set(BPT_FIELDS) <= set(rows[0])
    measured = [r for r in rows if r["bytes_ncu"]]
    assert measured, "no ncu-measured bytes committed"
    assert {r["kernel"] for r in measured} == set(KERNEL_ORDER)
    md = _need(_dir(which) / "hotspots_ranked.md").read_text()
    for r in rows:
        assert int(r["bytes_per_cycle_model"]) == int(r["calls_per_cycle"]) * int(r["bytes_model"])
        if r["bytes_ncu"]:
            ratio = int(r["bytes_ncu"]) / int(r["bytes_model"])
            assert abs(float(r["ncu_over_model"]) - ratio) <= 1e-3 * ratio + 1e-3
            if ratio > 1.2:
                line = next((x for x in md.splitlines() if f"| {r['contract']} | {r['point']} |" in x), None)
                assert line, f"{r['contract']} {r['point']} moves {ratio:.2f}x its model bytes: not in the hotspots"
                assert not line.rstrip().endswith("| not analysed |"), f"{r['point']}: no reason given"


def test_hotspots_and_manifest(shapes, which):
    md = _need(_dir(which) / "hotspots_ranked.md").read_text()
    for name, sh in shapes.items():
        assert f"## contract `{name}`" in md
        for B in sh.batches:
            assert f"### B = {B}" in md
    env = _need(_dir(which) / "h100_env_manifest.txt").read_text()
    assert "H100" in env and "Driver Version" in env and "torch" in env and "build flags" in env
    for sh in shapes.values():
        assert sh.contract_hash in env


# the manifest lines (written by scripts/bench_h100_kernels.sh) that say what the rows timed, and how
KERNEL_SRC_LINE, TIMER_LINE = h100_manifest.KERNEL_SRC, h100_manifest.TIMER


def _manifest_field(path: Path, pattern: str, what: str) -> str:
    value = h100_manifest.field(_need(path), pattern)
    assert value is not None, f"{path.relative_to(REPO)} names no {what} (written by scripts/bench_h100_kernels.sh)"
    return value


def test_current_rows_time_the_current_kernel_source():
    # the committed rows claim to be the H100's times of this code: a kernel edit without a new bench
    # leaves them describing a source that no longer exists, unless a host-only successor record carries
    # them over on its evidence (eagle4.perf.source_successor: equal SASS, a before/after at every point
    # of the rows within 3%, the successor's clean sign-off record)
    src = _manifest_field(REPORTS / "h100_env_manifest.txt", KERNEL_SRC_LINE, "kernel source")
    have = hashlib.sha256((REPO / "cuda" / "cost_draft_tree_kernel.cu").read_bytes()).hexdigest()
    successor = REPORTS / source_successor.SUCCESSOR
    if src == have:
        assert not successor.exists(), f"{successor.relative_to(REPO)} is stale: the rows time the current source"
        return
    assert successor.is_file(), (
        f"the committed H100 rows time kernel source {src[:12]}, cuda/cost_draft_tree_kernel.cu is {have[:12]}: "
        "re-run scripts/h100_kernel_signoff.sh (or scripts/bench_h100_kernels.sh) on an H100 and commit its reports")
    rows = read_csv(REPORTS / "cuda_kernel_times.csv")
    points = {(r["contract"], r["point"]) for r in rows if r["impl"] == "cuda"}
    bad = source_successor.problems(source_successor.load(successor), src, have, points, REPO)
    assert not bad, f"{successor.relative_to(REPO)} does not carry the rows of {src[:12]} over: " + "; ".join(bad)


def test_current_rows_were_taken_by_the_current_timer():
    # a change of how a sample is timed (perf.timing) changes what every row means, like a kernel edit
    from eagle4.perf.timing import TIMER

    timer = _manifest_field(REPORTS / "h100_env_manifest.txt", TIMER_LINE, "timer")
    assert timer == TIMER, (
        f"the committed H100 rows were timed by {timer!r}, eagle4.perf.timing is {TIMER!r}: re-run "
        "scripts/bench_h100_kernels.sh on an H100 and commit its reports")


# 5cc446c's sign-off call benched its kernels with the previous timer (events recorded by the host around each replay)
# ten minutes before e41e6ac's bench took the same kernels with events inside the graph
# (reports/kernel_before_after/timer/README.md); both benches are kept beside 5cc446c's sign-off.
OLD_TIMER_BENCH = REPORTS / "h100_parity" / "5cc446c" / "bench_old_timer"
IN_GRAPH_BENCH = REPORTS / "h100_parity" / "5cc446c" / "bench_in_graph_timer"


def test_the_two_timers_benches_of_one_kernel_source_agree():
    old_env, env = OLD_TIMER_BENCH / "h100_env_manifest.txt", IN_GRAPH_BENCH / "h100_env_manifest.txt"
    assert _manifest_field(old_env, KERNEL_SRC_LINE, "kernel source") == \
        _manifest_field(env, KERNEL_SRC_LINE, "kernel source"), "not the same kernel source"
    assert _manifest_field(old_env, TIMER_LINE, "timer") != _manifest_field(env, TIMER_LINE, "timer"), \
        "not the previous timer"
    assert _manifest_field(env, TIMER_LINE, "timer") == _manifest_field(REPORTS / "h100_env_manifest.txt", TIMER_LINE,
                                                                        "timer"), "not the current timer"
    old_raw = read_csv(OLD_TIMER_BENCH / "cuda_kernel_times_raw.csv")
    _check_raw(old_raw, _current_shapes())
    _check_raw(read_csv(IN_GRAPH_BENCH / "cuda_kernel_times_raw.csv"), _current_shapes())
    ours = defaultdict(list)
    for r in old_raw:
        if r["impl"] == "cuda" and r["mode"] == "graph":
            ours[(r["contract"], r["point"])].append(float(r["median_us"]))
    committed = ours_in_graph(read_csv(IN_GRAPH_BENCH / "cuda_kernel_times.csv"))
    assert set(ours) == set(committed)
    far = {k: round(float(np.median(v)) / float(committed[k]["median_us"]), 4) for k, v in ours.items()
           if abs(float(np.median(v)) / float(committed[k]["median_us"]) - 1) > 0.02}
    assert not far, f"the two timers' benches of one kernel source differ by more than 2% at {far}"
    # the old bench's rows outside the run rule were one process each; the in-graph bench has none there
    missed = {k for k, v in ours.items() if np.std(v, ddof=1) / np.mean(v) > MAX_GRAPH_COV}
    assert missed == {("deployment-8b", "draft_step/B1/dtypebfloat16"), ("deployment-8b", "reject_sample/B1/Q64/V128256")}
    assert all(float(committed[k]["cov"]) <= MAX_GRAPH_COV for k in missed)


def test_committed_h100_dumps():
    from eagle4.cases.dump import load_dump

    man_path = GOLDENS / "MANIFEST.json"
    if not man_path.is_file():
        pytest.fail(f"{man_path.relative_to(REPO)} is missing: written by scripts/dump_h100_goldens.py on an H100",
                    pytrace=False)
    man = json.loads(man_path.read_text())
    files = sorted(GOLDENS.glob("*.npz"))
    assert {f.name for f in files} == {s["file"] for s in man["selected"]}, "dumps and MANIFEST.json disagree"
    assert sum(f.stat().st_size for f in files) < 16e6
    kernels = set()
    for f in files:
        case = load_dump(f)  # verifies the payload sha256 and the spec shapes
        prod = case.meta["producer"]
        assert prod["backend"] == "cuda" and prod["provenance"] == "measured", f.name
        assert is_baseline(prod["device"]), f.name
        for k in ("driver", "cuda", "torch", "git_commit", "kernel_src_sha256"):
            assert prod.get(k), (f.name, k)
        kernels.add(case.kernel)
    assert kernels == set(KERNEL_ORDER)
