"""The real benchmark clients of vLLM 0.34.0 (``vllm bench serve``) and sglang 0.5.23
(``bench_serving``), from their published wheels with only their package imports shimmed, against
``eagle4 workload serve`` in both dialects; their genuine result files go through the importers and
``eagle4 gates`` (issue 42)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from eagle4.contract import load_contract
from eagle4.engines import import_file
from eagle4.workload.engine import DeviceEngine
from eagle4.workload.server import ENGINE_NAME, EngineServer, engine_version

from .clients import REPO, install

pytestmark = [pytest.mark.interop, pytest.mark.cpu, pytest.mark.slow]

N, IN_LEN, OUT_LEN = 6, 32, 20
VLLM_MAIN = ("import sys; from vllm.utils.argparse_utils import FlexibleArgumentParser; "
             "from vllm.benchmarks.serve import add_cli_args, main; p = FlexibleArgumentParser(); "
             "add_cli_args(p); main(p.parse_args(sys.argv[1:]))")  # what `vllm bench serve` runs


@pytest.fixture(scope="module")
def engine():
    torch.set_num_threads(1)
    return DeviceEngine(load_contract(REPO / "contracts" / "default.toml"), "ref")


def _client(name: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SGLANG_IS_IN_CI")}
    env.update(PYTHONPATH=str(install(name)), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-c", VLLM_MAIN] if name == "vllm" else [sys.executable, "-m", "sglang.bench_serving"]
    p = subprocess.run(cmd + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"{name} client failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _contract(path: Path, *, context: int, batch: int, spec_tokens: int) -> Path:
    path.write_text(f"""
[contract]
name = "interop"
version = 1
[engine]
results = ["**/*.json", "**/*.jsonl"]
micro_max_decode_steps = 512
[[scenarios]]
name = "spec"
context = {context}
batch = {batch}
spec_tokens = {spec_tokens}
stage = "micro"
[[gates]]
name = "acceptance"
metric = "mean_acceptance_length"
scenario = "spec"
op = ">="
threshold = 1.2
stage = "micro"
""")
    return path


def _gates(contract: Path, results: Path, reports: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{REPO}"}
    return subprocess.run([sys.executable, "-m", "eagle4.cli", "gates", "--contract", str(contract), "--results",
                           str(results), "--reports", str(reports)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=240)


def test_vllm_client_default_and_chat_against_the_server(engine, tmp_path):
    n_spec = engine.params.verify_num - 1
    out = tmp_path / "vllm"
    out.mkdir()
    meta = ["--metadata", "device=cpu", "commit=interop", f"context={IN_LEN}", f"spec_tokens={n_spec}",
            f"decode_steps={OUT_LEN}", f"engine={ENGINE_NAME}", f"engine_version={engine_version()}"]
    common = ["--random-input-len", str(IN_LEN), "--random-output-len", str(OUT_LEN), "--num-prompts", str(N),
              "--max-concurrency", "2", "--save-result", "--result-dir", str(out)]
    with EngineServer(engine, dialect="vllm") as srv:
        # default arguments: no --model (the model and its tokenizer folder come from /v1/models)
        _client("vllm", ["--base-url", srv.url, *common, "--result-filename", "default.json", *meta], out)
        _client("vllm", ["--base-url", srv.url, "--backend", "openai-chat", "--endpoint", "/v1/chat/completions",
                         *common, "--result-filename", "chat.json", *meta], out)
    for name in ("default.json", "chat.json"):
        raw = json.loads((out / name).read_text())
        assert raw["completed"] == N and raw["failed"] == 0, raw
        # the server's counters, as the client read them from /metrics: drafts of the tree it verifies
        assert raw["spec_decode_draft_tokens"] == n_spec * raw["spec_decode_num_drafts"]
        (row,) = import_file(out / name)
        assert row.engine == ENGINE_NAME and row.metrics["mean_acceptance_length"] > 1
        assert "itl_chunk_ms_mean" in row.metrics and "itl_token_ms_mean" not in row.metrics
    (out / "chat.json").unlink()  # one run per scenario: the gate takes the default invocation's file
    c = _contract(tmp_path / "c.toml", context=IN_LEN, batch=2, spec_tokens=n_spec)
    g = _gates(c, out, tmp_path / "rep")
    assert g.returncode == 0 and "VERDICT: SIGNED OFF" in g.stdout, g.stdout + g.stderr


def test_sglang_client_with_flush_cache_reports_each_runs_acceptance(engine, tmp_path):
    out = tmp_path / "sglang"
    out.mkdir()
    jsonl = out / "runs.jsonl"

    def run(srv, seed: int):
        _client("sglang", ["--backend", "sglang", "--base-url", srv.url, "--dataset-name", "random-ids",
                           "--random-input-len", str(IN_LEN), "--random-output-len", str(OUT_LEN),
                           "--random-range-ratio", "1", "--num-prompts", str(N), "--max-concurrency", "1",
                           "--seed", str(seed), "--flush-cache", "--output-file", str(jsonl)], out)

    with EngineServer(engine, dialect="sglang") as srv:
        run(srv, 1)
        run(srv, 2)
        run(srv, 1)  # the first run's prompts again: its own acceptance again, whatever ran in between
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    acc = [x["accept_length"] for x in lines]
    assert len(acc) == 3 and all(a > 1 for a in acc)
    assert acc[2] == pytest.approx(acc[0], rel=1e-9) and acc[1] != pytest.approx(acc[0], rel=1e-6), acc
    info = lines[0]["server_info"]
    assert info["engine"] == ENGINE_NAME and info["version"] == engine_version()
    assert info["speculative_eagle_topk"] == engine.params.node_top_k  # the tree, in sglang's words
    # what the file cannot say: the device, the engine build's commit, and the failed requests
    (out / "runs.jsonl.meta.json").write_text(json.dumps({"device": "cpu", "commit": "interop", "failed_requests": 0}))
    rows = import_file(jsonl)
    assert [r.engine for r in rows] == [ENGINE_NAME] * 3
    assert all(r.spec_tokens == engine.params.verify_num - 1 and "itl_token_ms_mean" in r.metrics for r in rows)
    c = _contract(tmp_path / "c.toml", context=IN_LEN, batch=1, spec_tokens=engine.params.verify_num - 1)
    g = _gates(c, out, tmp_path / "rep")
    assert g.returncode == 0 and "VERDICT: SIGNED OFF" in g.stdout, g.stdout + g.stderr
