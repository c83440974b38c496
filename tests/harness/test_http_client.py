"""`eagle4 workload http` against real HTTP servers started here: the engine behind the test
server in both dialects (vLLM, sglang), and stubs for what a real server may do wrong (no token ids,
silence, death)."""

from __future__ import annotations

import csv
import json
import shutil
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch

from eagle4.contract import load_contract
from eagle4.workload.engine import DeviceEngine
from eagle4.workload.http_client import (
    HttpBenchError,
    Timeouts,
    acceptance_from_deltas,
    check_spec_config,
    read_counters,
    read_spec_config,
    run_http_contract,
    run_point,
    stream_one,
    tokenize,
)
from eagle4.workload.server import MODEL_NAME, EngineServer

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "contracts" / "default.toml"
T = Timeouts(60.0, 5.0)
pytestmark = pytest.mark.cpu


@pytest.fixture(scope="module")
def contract():
    return load_contract(CONTRACT)


@pytest.fixture(scope="module")
def engine(contract):
    torch.set_num_threads(1)
    return DeviceEngine(contract, "ref")


@pytest.fixture(scope="module")
def vllm(engine):
    with EngineServer(engine, dialect="vllm") as s:
        yield s


@pytest.fixture(scope="module")
def sglang(engine):
    with EngineServer(engine, dialect="sglang") as s:
        yield s


@pytest.fixture()
def client():
    with httpx.Client(timeout=T.httpx()) as c:
        yield c


def _prompts(client, server, kind, contract, n=2):
    return [tokenize(client, server.url, kind, MODEL_NAME, p["text"])[: contract.prompts.prompt_tokens]
            for p in contract.load_prompts()[:n]]


def test_prompts_cut_with_the_servers_tokenizer(client, vllm, sglang, engine, contract):
    text = contract.load_prompts()[0]["text"]
    for srv, kind in ((vllm, "vllm"), (sglang, "sglang")):
        ids = tokenize(client, srv.url, kind, MODEL_NAME, text)
        assert ids == engine.tokenizer.encode(text) and len(ids) > contract.prompts.prompt_tokens


def test_vllm_counts_tokens_not_chunks_and_acceptance_from_counter_deltas(client, vllm, contract):
    prompts = _prompts(client, vllm, "vllm", contract)
    before = read_counters(client, vllm.url)
    res = run_point(client, vllm.url, "vllm", prompts, 2, 24, model=MODEL_NAME, temperatures=[0.0], timeouts=T)
    after = read_counters(client, vllm.url)
    for r in res["results"]:
        assert r.ok and r.output_tokens == 24 and r.count_method == "token_ids"
        assert r.prompt_tokens == contract.prompts.prompt_tokens  # the server's usage: the cut prompt arrived
        assert len(r.itl()) == 23 and r.tpot == pytest.approx((r.e2e - r.ttft) / 23)
    # speculative decoding: some chunk carried several tokens (several tokens share an arrival time)
    assert any(len(set(r.token_times)) < r.output_tokens for r in res["results"])
    assert before["source"] == "vllm:/metrics" and after["drafts"] > before["drafts"]
    acc = res["acceptance_length"]
    assert acc == pytest.approx(1 + (after["accepted"] - before["accepted"]) / (after["drafts"] - before["drafts"]))
    assert 1.0 < acc <= contract.decode.S


def test_sglang_acceptance_from_per_request_spec_verify_ct(client, sglang, contract):
    prompts = _prompts(client, sglang, "sglang", contract)
    res = run_point(client, sglang.url, "sglang", prompts, 2, 24, model=MODEL_NAME, temperatures=[0.0], timeouts=T)
    for r in res["results"]:
        assert r.ok and r.output_tokens == 24 and r.count_method == "meta_info.completion_tokens"
        # one streamed chunk per step: the prefill's token, then one per verify step
        assert r.spec_verify_ct == len(set(r.token_times)) - 1 > 0
        assert r.acceptance_length == pytest.approx(24 / r.spec_verify_ct)
    assert res["acceptance_length"] == pytest.approx(48 / sum(r.spec_verify_ct for r in res["results"]))
    assert res["acceptance_source"] == "sglang meta_info.spec_verify_ct"


def test_acceptance_uses_deltas_not_cumulative():
    before = {"source": "x", "drafts": 1000.0, "accepted": 3000.0}   # an earlier workload: 4.0
    after = {"source": "x", "drafts": 1010.0, "accepted": 3010.0}    # this run: 1 + 10/10 = 2.0
    assert acceptance_from_deltas(before, after) == 2.0
    assert np.isnan(acceptance_from_deltas({"source": None}, after))
    assert np.isnan(acceptance_from_deltas(before, before))


# ---- the server's speculative configuration --------------------------------------------------------------
def test_spec_config_read_back_and_checked(client, vllm, sglang, engine, contract):
    s = read_spec_config(client, sglang.url, "sglang")
    assert s["source"].startswith("sglang:") and check_spec_config(s, contract) == []
    v = read_spec_config(client, vllm.url, "vllm")
    # vLLM's vocabulary has no dynamic tree: num_spec_tokens is the draft tokens verified per step
    assert v == {"source": "vllm:/server_info", "algorithm": "eagle", "num_steps": contract.decode.verify_num - 1,
                 "topk": 1, "num_verify_tokens": contract.decode.verify_num}
    # read as vLLM's chain, it is not the contract's tree workload
    assert any("top-k" in m for m in check_spec_config(v, contract))
    assert check_spec_config(None, contract)
    with EngineServer(engine, dialect="sglang", advertise={"topk": 8}) as other:
        bad = check_spec_config(read_spec_config(client, other.url, "sglang"), contract)
    assert bad == [f"top-k per node (decode.node_top_k): server 8, contract {contract.decode.node_top_k}"]


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_contract_run_stamps_the_hash_only_on_a_matching_server(sglang, vllm, contract, tmp_path):
    ok = run_http_contract(contract, sglang.url, tmp_path / "ok", kind="sglang", points=["b1"], runs=1, timeouts=T)
    assert ok["mismatches"] == [] and ok["contract_sha256"] == contract.sha256
    raw = _rows(ok["paths"]["raw"])
    assert {r["contract_sha256"] for r in raw} == {contract.sha256}
    assert all(int(r["output_tokens"]) == contract.prompts.output_tokens for r in raw)
    assert all(int(r["prompt_tokens"]) == contract.prompts.prompt_tokens for r in raw)
    assert all(float(r["acceptance_length"]) > 1 and r["provenance"] == "measured" for r in raw)
    runs = _rows(ok["paths"]["runs"])
    assert float(runs[0]["mean_acceptance_length"]) > 1 and float(runs[0]["tokens_per_s"]) > 0
    bad = run_http_contract(contract, vllm.url, tmp_path / "bad", kind="vllm", points=["b1"], runs=1, timeouts=T)
    assert bad["mismatches"] and bad["contract_sha256"] == ""
    assert {r["contract_sha256"] for r in _rows(bad["paths"]["raw"])} == {""}
    assert "not a measurement of the contract" in bad["paths"]["summary"].read_text()


def test_cli_runs_without_local_model_folders(sglang, tmp_path):
    """In HTTP mode the server holds the models: a contract naming no local model folders is fine."""
    from eagle4.cli import main

    (tmp_path / "contracts").mkdir()
    shutil.copytree(ROOT / "data" / "prompts", tmp_path / "data" / "prompts")
    (tmp_path / "pyproject.toml").write_text("")
    text = CONTRACT.read_text().replace('target = "models/default/target"', 'target = "served/elsewhere"')
    (tmp_path / "contracts" / "c.toml").write_text(text)
    out = tmp_path / "out"
    rc = main(["workload", "http", "--kind", "sglang", "--url", sglang.url, "--contract",
               str(tmp_path / "contracts" / "c.toml"), "--points", "b1", "--runs", "1", "--out", str(out),
               "--timeout", "60"])
    assert rc == 0 and len(_rows(out / "http_raw.csv")) == 1


# ---- what a real server may do wrong ---------------------------------------------------------------------
class _Stub(BaseHTTPRequestHandler):
    """sglang-compatible metadata (matching the default contract), then a configurable stream."""

    protocol_version = "HTTP/1.1"
    mode = "silent"
    contract = None

    def log_message(self, *a):
        pass

    def _json(self, obj):
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        d = self.contract.decode
        if self.path.startswith("/v1/models"):
            self._json({"data": [{"id": "stub"}]})
        else:
            self._json({"speculative_algorithm": "EAGLE", "speculative_num_steps": d.tree_depth,
                        "speculative_eagle_topk": d.node_top_k, "speculative_num_draft_tokens": d.verify_num})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.startswith("/v1/tokenize"):
            self._json({"tokens": [0, 5, 6, 7]})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        if self.mode == "silent":
            time.sleep(3)
            return
        # "text only": sglang-like chunks without meta_info, so tokens cannot be counted
        for obj in ({"text": "a"}, {"text": "abc"}):
            self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\n\n")
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")


@pytest.fixture()
def stub(contract):
    handler = type("H", (_Stub,), {"contract": contract})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield handler, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_silent_server_is_an_error_and_writes_nothing(stub, contract, tmp_path):
    handler, url = stub
    handler.mode = "silent"
    t0 = time.perf_counter()
    with pytest.raises(HttpBenchError, match="requests failed.*no data within 1 s"):
        run_http_contract(contract, url, tmp_path, kind="sglang", points=["b1"], runs=1, timeouts=Timeouts(1.0, 1.0))
    assert time.perf_counter() - t0 < 2.5 * (contract.runs.warmup + 1) + 5  # bounded by the timeout
    assert not any(tmp_path.iterdir()), "no measured row for a silent server"


def test_uncountable_stream_fails_the_request(stub, client):
    handler, url = stub
    handler.mode = "text"
    r = stream_one(client, url, "sglang", [0, 5], 4, model="stub", temperature=0.0, timeouts=T)
    assert not r.ok and "cannot be counted" in r.error


def test_dead_server_is_an_error(contract, tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    with pytest.raises(HttpBenchError, match="unreachable"):
        run_http_contract(contract, f"http://127.0.0.1:{port}", tmp_path, kind="vllm", points=["b1"], runs=1,
                          timeouts=Timeouts(2.0, 1.0))
    assert not any(tmp_path.iterdir())


def test_timeouts_come_from_the_contract_and_the_flag(contract):
    from eagle4.workload.http_client import contract_timeouts

    t = contract_timeouts(contract)
    assert (t.request_s, t.connect_s) == (contract.http.request_timeout_s, contract.http.connect_timeout_s)
    assert t.request_s >= 60, "the default must suit a slow 2-core CI runner"
    assert contract_timeouts(contract, 7.0).request_s == 7.0
