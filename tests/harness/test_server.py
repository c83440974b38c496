"""``eagle4 workload serve``: the endpoints real vLLM and sglang clients call, and the bounds that keep
one request from exhausting the server (issue 42 finding 1, issue 43 finding 3)."""

from __future__ import annotations

import json
import resource
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import torch

from eagle4.contract import load_contract
from eagle4.workload.engine import DeviceEngine
from eagle4.workload.server import ENGINE_NAME, MODEL_NAME, EngineServer

CONTRACT = Path(__file__).resolve().parents[2] / "contracts" / "default.toml"
pytestmark = pytest.mark.cpu


@pytest.fixture(scope="module")
def engine():
    torch.set_num_threads(1)
    return DeviceEngine(load_contract(CONTRACT), "ref")


@pytest.fixture(scope="module")
def vllm(engine):
    with EngineServer(engine, dialect="vllm", read_timeout_s=3.0) as s:
        yield s


@pytest.fixture(scope="module")
def sglang(engine):
    with EngineServer(engine, dialect="sglang") as s:
        yield s


@pytest.fixture()
def client():
    with httpx.Client(timeout=60) as c:
        yield c


def _sse(text: str) -> list[dict]:
    return [json.loads(ln[6:]) for ln in text.splitlines() if ln.startswith("data: ") and ln != "data: [DONE]"]


def test_models_entry_names_its_root_and_length(client, vllm, engine):
    m = client.get(vllm.url + "/v1/models").json()["data"][0]
    assert m["id"] == MODEL_NAME and m["root"] == engine.paths[0] and m["max_model_len"] == 1024
    assert {"object", "created", "owned_by"} <= set(m)


def test_chat_completions_stream_and_detokenize(client, vllm, engine):
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": [{"type": "text", "text": "def f(x):"}]}],
            "max_completion_tokens": 12, "stream": True, "stream_options": {"include_usage": True}}
    r = client.post(vllm.url + "/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    chunks = _sse(r.text)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["usage"]["completion_tokens"] == 12
    assert chunks[-1]["usage"]["prompt_tokens"] == len(engine.tokenizer.encode("def f(x):"))
    ids = engine.tokenizer.encode("hello world", bos=False)
    d = client.post(vllm.url + "/detokenize", json={"model": MODEL_NAME, "tokens": ids}).json()
    assert d["prompt"] == engine.tokenizer.decode(ids) and text


def test_vllm_speculative_config_matches_its_counters(client, vllm, engine):
    info = client.get(vllm.url + "/server_info").json()
    n = engine.params.verify_num - 1
    assert f"num_spec_tokens={n})" in info["vllm_config"] and info["engine"] == ENGINE_NAME and info["version"]
    js = client.get(vllm.url + "/server_info", params={"config_format": "json"}).json()
    assert js["vllm_config"]["speculative_config"]["num_speculative_tokens"] == n

    def counters():
        out = {}
        for ln in client.get(vllm.url + "/metrics").text.splitlines():
            if ln.startswith("vllm:spec_decode"):
                out[ln.split("{")[0]] = float(ln.split()[-1])
        return out

    a = counters()
    client.post(vllm.url + "/v1/completions", json={"prompt": "import os", "max_tokens": 20})
    b = counters()
    drafts = b["vllm:spec_decode_num_drafts_total"] - a["vllm:spec_decode_num_drafts_total"]
    assert drafts > 0
    assert b["vllm:spec_decode_num_draft_tokens_total"] - a["vllm:spec_decode_num_draft_tokens_total"] == n * drafts


def test_sglang_flush_cache_makes_acceptance_per_run(client, sglang):
    def run():
        r = client.post(sglang.url + "/generate", json={"text": "class A:", "sampling_params": {"max_new_tokens": 24}})
        assert r.status_code == 200
        return r.json()["meta_info"]

    assert client.post(sglang.url + "/flush_cache").status_code == 200
    m = run()
    acc = client.get(sglang.url + "/server_info").json()["internal_states"][0]["avg_spec_accept_length"]
    assert m["spec_verify_ct"] > 0 and 1 < acc <= 1 + (m["completion_tokens"] - 1) / m["spec_verify_ct"]
    assert client.get(sglang.url + "/flush_cache").status_code == 200
    info = client.get(sglang.url + "/get_server_info").json()
    assert info["internal_states"][0]["avg_spec_accept_length"] is None and info["version"]
    assert client.get(sglang.url + "/get_model_info").json()["model_path"]
    assert client.get(sglang.url + "/model_info").status_code == 200


@pytest.mark.parametrize("body", [
    {"prompt": list(range(3, 1103)), "max_tokens": 4},          # 1,100 tokens > max_model_len 1024
    {"prompt": "x", "max_tokens": 10**9},
    {"prompt": [5, 6, 7], "max_tokens": 1022},                   # 3 + 1022 > 1024
    {"prompt": "x", "max_tokens": 4, "temperature": float("nan")},
    {"prompt": "x", "max_tokens": 4, "temperature": float("inf")},
    {"prompt": "x", "max_tokens": 4, "temperature": -1},
    {"prompt": "x", "max_tokens": "4"},
])
def test_out_of_bounds_requests_are_400(client, vllm, body):
    r = client.post(vllm.url + "/v1/completions", content=json.dumps(body), headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    assert "message" in r.json()["error"]


def test_sglang_max_new_tokens_bounded(client, sglang):
    r = client.post(sglang.url + "/generate", json={"input_ids": [5, 6], "sampling_params": {"max_new_tokens": 10**9}})
    assert r.status_code == 400


def _rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)


def test_ten_megabyte_prompt_refused_quickly(client, vllm):
    big = "word " * (2 << 20)  # 10 MiB of text
    t = time.monotonic()
    r = client.post(vllm.url + "/v1/completions", json={"prompt": big, "max_tokens": 4})
    assert r.status_code == 413 and time.monotonic() - t < 5
    assert _rss_gb() < 2.0
    assert client.get(vllm.url + "/health").status_code == 200


def test_negative_content_length_is_400(vllm):
    host, port = vllm.sock.getsockname()[:2]
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: -5\r\n\r\n{}")
        assert s.recv(200).split(b"\r\n")[0].split()[1] == b"400"


def test_idle_connections_and_a_long_generation_do_not_block_health(client, vllm):
    host, port = vllm.sock.getsockname()[:2]
    idle = []
    for _ in range(31):  # headers announcing a body that never comes
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n")
        idle.append(s)
    long = threading.Thread(target=lambda: httpx.post(vllm.url + "/v1/completions", timeout=120,
                                                      json={"prompt": "import sys", "max_tokens": 600}))
    long.start()
    try:
        time.sleep(0.5)
        for _ in range(5):
            t = time.monotonic()
            assert client.get(vllm.url + "/health", timeout=5).status_code == 200
            assert time.monotonic() - t < 1.0
            time.sleep(0.2)
        # the body never came: each idle request is answered 408 within the read timeout, not held for ever
        idle[0].settimeout(10)
        assert idle[0].recv(200).split(b"\r\n")[0].split()[1] == b"408"
    finally:
        for s in idle:
            s.close()
        long.join(timeout=120)
