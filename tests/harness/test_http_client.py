"""HTTP client against a real local OpenAI-compatible streaming server (started and stopped here)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
import torch

from eagle4.contract import load_contract
from eagle4.workload.engine import LocalEngine
from eagle4.workload.http_client import (
    acceptance_from_deltas,
    read_counters,
    run_batch,
    run_http_contract,
    run_http_point,
)
from eagle4.workload.server import EngineServer

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cpu


@pytest.fixture(scope="module")
def contract():
    return load_contract(ROOT / "contracts" / "default.toml")


@pytest.fixture(scope="module")
def server(contract):
    torch.set_num_threads(1)
    eng = LocalEngine.from_contract(contract, "ref")
    with EngineServer(eng) as s:
        yield s


def test_stream_counts_tokens_not_chunks(server, contract):
    texts = [p["text"] for p in contract.load_prompts()][:2]
    before = read_counters(server.url, "vllm")
    res = run_http_point(server.url, texts, 2, 24, kind="vllm", timeout=120)
    after = read_counters(server.url, "vllm")
    assert res["failures"] == 0, [r.error for r in res["results"]]
    for r in res["results"]:
        assert r.output_tokens == 24
        assert r.count_method == "token_ids"
        assert len(r.itl()) == 23
        assert r.ttft > 0 and r.e2e >= r.ttft
        assert r.tpot == pytest.approx((r.e2e - r.ttft) / 23)
    # speculative decoding: some chunk carried several tokens (several tokens share an arrival time)
    assert any(len(set(r.token_times)) < r.output_tokens for r in res["results"])
    assert before["source"] == "vllm:/metrics"
    assert after["drafts"] > before["drafts"]
    acc = res["acceptance_length"]
    assert acc == pytest.approx(1 + (after["accepted"] - before["accepted"]) / (after["drafts"] - before["drafts"]))
    assert 1.0 <= acc <= contract.decode.S


def test_sglang_style_counters(server, contract):
    c = read_counters(server.url, "sglang")
    assert c["source"] == "sglang:/get_server_info"
    assert c["drafts"] >= 0


def test_acceptance_uses_deltas_not_cumulative():
    before = {"source": "x", "drafts": 1000.0, "accepted": 3000.0}   # an earlier workload: 4.0
    after = {"source": "x", "drafts": 1010.0, "accepted": 3010.0}    # this run: 1 + 10/10 = 2.0
    assert acceptance_from_deltas(before, after) == 2.0
    assert np.isnan(acceptance_from_deltas({"source": None}, after))
    assert np.isnan(acceptance_from_deltas(before, before))


def test_failures_are_counted():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    res = run_batch(f"http://127.0.0.1:{port}", ["a", "b"], 4, timeout=5)
    assert all(not r.ok and r.error for r in res)


class _TextOnly(BaseHTTPRequestHandler):
    """A server that streams text chunks without token ids, 2 tokens in the second chunk, then a
    final usage chunk (the sglang/vLLM default shape)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for obj in ({"choices": [{"index": 0, "text": "a"}]}, {"choices": [{"index": 0, "text": "bc"}]},
                    {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 3}}):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


def test_final_usage_fills_uncounted_tokens():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _TextOnly)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        (r,) = run_batch(f"http://127.0.0.1:{httpd.server_address[1]}", ["x"], 3, timeout=10)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert r.ok and r.output_tokens == 3 and r.count_method == "chunks+final_usage"


@pytest.mark.slow
def test_http_contract_writes_reports(server, contract, tmp_path):
    res = run_http_contract(contract, server.url, tmp_path, kind="vllm", points=["b1"], runs=5, timeout=120)
    assert len(res["runs"]) == 5
    assert (tmp_path / "http_summary.md").read_text().count("| b1 |") == 1


def test_phased_profile_is_bounded(server, contract):
    from types import SimpleNamespace

    from eagle4.workload.http_client import run_http_phases

    texts = [p["text"] for p in contract.load_prompts()]
    phases = [SimpleNamespace(duration_s=0.3, concurrency=1), SimpleNamespace(duration_s=0.3, concurrency=3)]
    res = run_http_phases(server.url, texts, phases, 8, kind="vllm", timeout=60, max_requests=12)
    assert 2 <= len(res["results"]) <= 12
    assert res["failures"] == 0
    assert set(res["phases"]) == {0, 1}
