"""Serving-benchmark importers (issue 42): the engine is the one measured (the file's server info),
not the client's ``--backend``; per-chunk and per-token ITL keep distinct names; request failures are
carried (never assumed 0); a run in which every request failed is an INVALID scenario with its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eagle4.engines import ResultFormatError, import_file
from eagle4.engines.figures import figure

DATA = Path(__file__).resolve().parents[1] / "data" / "engine_results"
SIDE = {"device": "NVIDIA H200", "commit": "abc123", "spec_tokens": 3}


def _sglang_line(**kw) -> dict:
    d = json.loads((DATA / "sglang" / "sglang_eagle3_32k.jsonl").read_text().splitlines()[0])
    d.update(kw)
    return d


def _write(tmp_path, name, objs, side=None) -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(o) + "\n" for o in objs) if name.endswith(".jsonl") else json.dumps(objs[0]))
    if side is not None:
        (tmp_path / (name + ".meta.json")).write_text(json.dumps(side))
    return p


def _vllm(**kw) -> dict:
    d = json.loads(next((DATA / "vllm").glob("*103000.json")).read_text())
    d.update(kw)
    return d


def test_engine_is_the_server_measured_not_the_clients_backend(tmp_path):
    info = {"engine": "eagle4", "version": "0.1.0", "speculative_algorithm": "EAGLE"}
    p = _write(tmp_path, "a.jsonl", [_sglang_line(backend="sglang", server_info=info)], {**SIDE, "failed_requests": 0})
    (row,) = import_file(p)
    assert (row.engine, row.engine_version) == ("eagle4", "0.1.0")
    # no server info: the backend names no engine; a truthful sidecar is accepted
    p = _write(tmp_path, "b.jsonl", [_sglang_line(backend="vllm", server_info=None)],
               {**SIDE, "failed_requests": 0, "engine": "eagle4", "engine_version": "0.1.0"})
    assert import_file(p)[0].engine == "eagle4"
    p = _write(tmp_path, "c.jsonl", [_sglang_line(backend="vllm", server_info=None)], {**SIDE, "failed_requests": 0,
                                                                                        "engine_version": "1"})
    with pytest.raises(ResultFormatError, match="'engine': missing"):
        import_file(p)


def test_vllm_file_without_engine_metadata_is_refused(tmp_path):
    d = _vllm()
    d.pop("engine")
    p = _write(tmp_path, "v.json", [d])
    with pytest.raises(ResultFormatError, match="'engine': missing"):
        import_file(p)
    d["server_info"] = {"engine": "eagle4", "version": "0.1.0", "vllm_config": "..."}
    d.pop("version")
    p = _write(tmp_path, "w.json", [d])
    assert import_file(p)[0].identity()[:2] == ("eagle4", "0.1.0")


def test_itl_per_chunk_and_per_token_have_distinct_names(tmp_path):
    (v,) = import_file(_write(tmp_path, "v.json", [_vllm()]))
    assert v.metrics["itl_chunk_ms_mean"] == _vllm()["mean_itl_ms"] and "itl_token_ms_mean" not in v.metrics
    native = _write(tmp_path, "n.jsonl", [_sglang_line(backend="sglang")], {**SIDE, "failed_requests": 0})
    assert "itl_token_ms_mean" in import_file(native)[0].metrics
    oai = _write(tmp_path, "o.jsonl", [_sglang_line(backend="vllm", accept_length=None)],
                 {**SIDE, "failed_requests": 0})
    m = import_file(oai)[0].metrics
    assert "itl_chunk_ms_mean" in m and "itl_token_ms_mean" not in m
    assert not any(k.startswith("itl_ms") for k in {**v.metrics, **m})


def test_failures_are_carried_never_assumed(tmp_path):
    p = _write(tmp_path, "a.jsonl", [_sglang_line()], SIDE)
    with pytest.raises(ResultFormatError, match="'failed_requests': missing"):
        import_file(p)
    p = _write(tmp_path, "b.jsonl", [_sglang_line(errors=["", "HTTP 500", ""])], SIDE)
    assert import_file(p)[0].metrics["failed_requests"] == 1
    p = _write(tmp_path, "c.jsonl", [_sglang_line(errors=["", ""])], {**SIDE, "failed_requests": 3})
    with pytest.raises(ResultFormatError, match="file says 0"):
        import_file(p)


def test_all_failed_run_is_an_invalid_scenario_with_its_reason(tmp_path):
    d = _vllm(completed=0, failed=32, output_throughput=0.0, request_throughput=0.0,
              errors=["Not Found: HTTP 404 /v1/chat/completions"] * 32)
    (row,) = import_file(_write(tmp_path, "v.json", [d]))
    assert row.metrics["completed_requests"] == 0 and row.metrics["failed_requests"] == 32
    assert "output_tokens_per_s" not in row.metrics
    fig = figure([row], "output_tokens_per_s", "b4")
    assert fig.value is None and len(fig.reasons) == 1
    assert "no request completed" in fig.reasons[0] and "32 failed" in fig.reasons[0] and "404" in fig.reasons[0]
