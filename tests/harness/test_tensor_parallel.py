"""Tensor parallelism without GPUs: gloo ranks on the CPU at a tiny shape give the TP=1 engine's
tokens, acceptance and kernel outputs; any TP degree generates the TP=1 weights; a rank that dies or
hangs ends the run with one line naming it, in bounded time; the contract's ``tp`` field keeps every
committed hash; the GPU bench refuses too few GPUs by naming the machine kind; the floor shards.

Bound: integer outputs (committed tokens, accept lengths, every index/token/mask buffer of the seven
kernels) are equal; float outputs (probabilities, scores, hidden states) within 1e-4 (float32: the
all-reduce sums the partial products in another order; measured <= 3e-6). The ranks agree bitwise.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import time
from pathlib import Path

import pytest
import torch

from eagle4.contract import ContractError, load_contract
from eagle4.models.dummy import Arch, DummyTarget
from eagle4.models.tensor_parallel import TensorParallel
from eagle4.workload.tiny_contract import write_tiny_contract
from eagle4.workload.tp_launch import TPRunError, launch

pytestmark = [pytest.mark.cpu]

ROOT = Path(__file__).resolve().parents[2]
C70 = ROOT / "contracts" / "deployment-70b.toml"
FAULT = str(Path(__file__).with_name("tp_fault_worker.py"))
TINY_TP = {"num_heads": 8, "num_kv_heads": 4}  # 4 KV heads: TP=4 keeps one per rank
ENV = {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "EAGLE4_TP_TIMEOUT_S": "60"}
FAULT_ENV = {**ENV, "EAGLE4_TP_TIMEOUT_S": "3"}  # a collective waits 3 s for a hung peer


K7_PACKED = {("K7", k): "next_indptr" for k in ("next_hidden", "next_verified_id", "next_positions")} | \
    {("K7", k): "accept_indptr" for k in ("accepted_flat", "verified_id", "accepted_node_ids")}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return write_tiny_contract(tmp_path_factory.mktemp("tp"), C70, "float32", tp=1, **TINY_TP)


@pytest.fixture(scope="module")
def tp1(tiny):
    from eagle4.workload.tp_run import check

    return check(load_contract(tiny), batch=2, steps=4)


def test_any_tp_degree_generates_the_tp1_weights():
    a = Arch(64, 2, 8, 4, 128, 64)
    full = DummyTarget(a, fc_layers=[0], seed=7, device="cpu", dtype=torch.float32)
    hd = a.head_dim
    for w in (2, 4):
        ranks = [DummyTarget(a, fc_layers=[0], seed=7, device="cpu", dtype=torch.float32,
                             tp=TensorParallel(r, w)) for r in range(w)]
        for i, (_, attn, _, mlp) in enumerate(full.layers):
            shards = [t.layers[i] for t in ranks]
            nq, nk = a.heads * hd // w, a.kv_heads * hd // w
            q, k, v = (torch.cat([s[1].wqkv[:, lo:hi] for s in shards], 1)
                       for lo, hi in ((0, nq), (nq, nq + nk), (nq + nk, nq + 2 * nk)))
            assert torch.equal(torch.cat([q, k, v], 1), attn.wqkv)
            assert torch.equal(torch.cat([s[1].wo for s in shards], 0), attn.wo)
            g, u = zip(*(s[3].wgu.chunk(2, 1) for s in shards), strict=True)
            assert torch.equal(torch.cat([*g, *u], 1), mlp.wgu)
            assert torch.equal(torch.cat([s[3].wd for s in shards], 0), mlp.wd)
            assert shards[0][1].wqkv.shape[1] * w == attn.wqkv.shape[1]  # a rank holds only its shard
        assert all(torch.equal(t.embed, full.embed) and torch.equal(t.lm_head, full.lm_head) for t in ranks)
        assert ranks[1].new_cache(1, 8)[0][0].shape[1] == a.kv_heads // w


@pytest.mark.parametrize("n", [2, 4])
def test_tp_ranks_on_gloo_match_tp1(tiny, tp1, tmp_path, n):
    t0 = time.monotonic()
    launch([sys.executable, "-m", "eagle4.workload.tp_run", "check", "--contract", str(tiny), "--tp", str(n),
            "--device", "cpu", "--batch", "2", "--steps", "4", "--dump", str(tmp_path)], n, timeout_s=120, env=ENV)
    assert time.monotonic() - t0 < 120
    recs = [torch.load(tmp_path / f"rank{r}.pt") for r in range(n)]
    for r, rec in enumerate(recs):
        assert torch.equal(rec["first"], tp1["first"])
        for s, (out, ref) in enumerate(zip(rec["out"], tp1["out"], strict=True)):
            # committed count, trace length and committed ids of every row: tokens and acceptance
            assert torch.equal(out, ref), f"tp={n} rank {r} step {s}: {out.tolist()} != {ref.tolist()}"
        for s, (ks, kref) in enumerate(zip(rec["kernels"], tp1["kernels"], strict=True)):
            assert ks.keys() == kref.keys()
            for label, bufs in kref.items():
                for k, ref in bufs.items():
                    if (label, k) == ("K5_verify", "probas"):
                        continue  # not written under greedy verification (write_probas = sampling)
                    got = ks[label][k]
                    if (label, k) in K7_PACKED:  # packed rows: the tail past the count is not written
                        n_rows = int(kref[label][K7_PACKED[label, k]][-1])
                        assert int(ks[label][K7_PACKED[label, k]][-1]) == n_rows
                        got, ref = got[:n_rows], ref[:n_rows]
                    if ref.dtype.is_floating_point:
                        torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4, msg=f"{label}.{k} step {s}")
                    else:
                        assert torch.equal(got, ref), f"tp={n} rank {r} step {s}: {label}.{k} differs"
                    assert torch.equal(got, recs[0]["kernels"][s][label][k][: len(got)]), f"rank {r} != rank 0: {label}.{k}"


def test_torchrun_starts_the_same_ranks(tiny, tp1, tmp_path):
    # the user's launcher: torchrun sets the ranks and the rendezvous, the worker joins it
    import subprocess

    cp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m",
                         "eagle4.workload.tp_run", "check", "--contract", str(tiny), "--tp", "2", "--device", "cpu",
                         "--batch", "2", "--steps", "4", "--dump", str(tmp_path)], capture_output=True, text=True,
                        timeout=120, env={**os.environ, **ENV})
    assert cp.returncode == 0, cp.stderr[-2000:]
    for r in range(2):
        rec = torch.load(tmp_path / f"rank{r}.pt")
        assert all(torch.equal(a, b) for a, b in zip(rec["out"], tp1["out"], strict=True))


def test_a_rank_that_dies_is_named(tmp_path):
    t0 = time.monotonic()
    with pytest.raises(TPRunError) as e:
        launch([sys.executable, FAULT, "die", "1"], 2, timeout_s=60, env=FAULT_ENV)
    assert time.monotonic() - t0 < 30
    assert str(e.value).startswith("tp rank 1 died (exit 13)") and "\n" not in str(e.value)


def test_a_rank_that_raises_is_named_not_its_bystanders():
    with pytest.raises(TPRunError, match=r"^tp rank 2 died \(exit 1\): tp rank 2: ValueError: bad shard$"):
        launch([sys.executable, FAULT, "raise", "2"], 3, timeout_s=60, env=FAULT_ENV)


def test_a_rank_that_hangs_is_named_within_the_collective_timeout():
    t0 = time.monotonic()
    with pytest.raises(TPRunError, match=r"^tp rank 0 hung: rank 1 timed out waiting for it in a collective$"):
        launch([sys.executable, FAULT, "hang", "0"], 2, timeout_s=60, env=FAULT_ENV, hang_grace_s=2)
    assert time.monotonic() - t0 < 30  # 3 s collective timeout + 2 s grace + start-up


def test_an_nccl_watchdog_abort_is_a_bystander_not_the_culprit():
    # what NCCL's watchdog does to a rank whose collective timed out: one line on stderr, SIGABRT
    body = ("import os, sys, time\nif os.environ['RANK'] == '1':\n"
            "    sys.stderr.write('[rank1]: Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE)\\n')\n"
            "    sys.stderr.flush(); os.abort()\ntime.sleep(60)\n")
    with pytest.raises(TPRunError, match=r"^tp rank 0 hung: rank 1 timed out"):
        launch([sys.executable, "-c", body], 2, timeout_s=30, hang_grace_s=1)


def test_tp_field_is_hashed_only_when_not_1(tiny, tmp_path):
    # committed rows' hashes (test_contract_deployment, the records) stay as they were
    assert load_contract(ROOT / "contracts" / "deployment-8b.toml").sha256.startswith("be073859767c")
    assert load_contract(ROOT / "contracts" / "default.toml").sha256.startswith("4f5c679f5a7d")
    c1 = load_contract(tiny)
    assert c1.model.tp == 1 and "tp" not in c1.canonical()["model"]
    from eagle4.workload.tp_run import with_tp

    c2 = with_tp(c1, 2)
    assert c2.model.tp == 2 and c2.canonical()["model"]["tp"] == 2 and c2.sha256 != c1.sha256
    with pytest.raises(ContractError, match=r"model\.tp: .*num_kv_heads \(4\)"):
        with_tp(c1, 8)
    c70 = load_contract(C70)
    t = c70.model.target_arch
    assert (t.hidden_size, t.num_layers, t.num_heads, t.num_kv_heads, t.intermediate_size, t.vocab_size) == \
        (8192, 80, 64, 8, 28672, 128256)
    assert c70.model.tp == 2 and c70.model.dtype == "bfloat16" and [p.batch for p in c70.operating_points] == [1, 8, 32]
    bad = write_tiny_contract(tmp_path, C70, "float32", tp=3, **TINY_TP)
    with pytest.raises(ContractError, match=r"model: .*tp = 3 must divide"):
        load_contract(bad)


def test_gpu_bench_with_too_few_gpus_names_the_kind(capsys):
    from eagle4.workload.tp_run import main

    assert main(["bench", "--contract", str(C70), "--tp", "4", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(r"tp_run: tp=4 needs 4 GPUs but \d+ (is|are) visible: run it on nvidia-h200-x4\n", err), err


def test_cpu_bench_writes_the_rows_and_the_topology(tmp_path, monkeypatch):
    # a short warm-up: any two steps are steady (the rule itself is the device runner's, tested there)
    tiny = write_tiny_contract(tmp_path, C70, "float32", tp=1, warmup_steps_min=0, steady_window=2, steady_cov=1.0,
                               min_samples=1, **TINY_TP)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-smi"  # the test double of the GPU host's topology matrix
    fake.write_text("#!/bin/sh\n[ \"$1\" = topo ] && printf '\\tGPU0\\tGPU1\\nGPU0\\t X \\tNV18\\nGPU1\\tNV18\\t X \\n'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("EAGLE4_TP_TIMEOUT_S", "60")
    from eagle4.workload.tp_run import bench

    stats = bench(tiny, tmp_path / "out", tp=2, points=["b1"], runs=1, duration_s=0.3, device="cpu",
                  timeout_s=120, log=lambda *_: None)
    assert [s["point"] for s in stats] == ["b1"]
    man = json.loads((tmp_path / "out" / "tp2_e2e_manifest.json").read_text())
    assert man["tp"] == 2 and "NV18" in man["topology"]
    from eagle4.workload.tp_run import with_tp

    assert man["contract_sha256"] == with_tp(load_contract(tiny), 2).sha256
    rows = list(csv.DictReader(open(tmp_path / "out" / "tp2_e2e_runs.csv")))
    assert len(rows) == 1 and rows[0]["tp"] == "2", rows


class _Recorder(TensorParallel):
    def all_reduce(self, x):
        object.__setattr__(self, "calls", getattr(self, "calls", 0) + 1)
        return x


def test_floor_holds_one_ranks_shard_and_all_reduces_twice_a_layer(tiny):
    from eagle4.workload.floor import FloorStep, step_flops
    from eagle4.workload.tp_run import with_tp

    c = with_tp(load_contract(tiny), 2)
    t = c.model.target_arch
    rec = _Recorder(0, 2)
    f = FloorStep(c, 1, device="cpu", tp=rec)
    lay = f.layers[0]
    assert (lay.nh, lay.nkv, lay.wgu.shape[1], lay.wd.shape[0]) == \
        (t.num_heads // 2, t.num_kv_heads // 2, t.intermediate_size, t.intermediate_size // 2)
    assert f.draft.nh == t.num_heads  # the draft layer is whole on every rank
    f.step()
    assert rec.calls == 2 * t.num_layers  # the draft layer does not all-reduce
    one = step_flops(load_contract(tiny), 1, 64)
    two = step_flops(c, 1, 64)
    assert two["draft"] == one["draft"] and one["target"] / 2 < two["target"] < one["target"]
