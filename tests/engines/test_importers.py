"""Engine result importers: each format's fields land in the right row fields, every row carries
engine/version/device/scenario/commit/file hash, and malformed files fail in one line naming file and field."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from eagle4.engines import ResultFormatError, import_file, import_results

DATA = Path(__file__).resolve().parents[1] / "data" / "engine_results"


def _one_line_error(fn, *needles):
    with pytest.raises(ResultFormatError) as e:
        fn()
    msg = str(e.value)
    assert "\n" not in msg
    for n in needles:
        assert n in msg, msg
    return msg


def test_spec_bench_rows_keep_identity_scenario_and_hash():
    rows = {r.label: r for r in import_results(DATA / "eagle3" / "micro-1")}
    spec = rows["Speculative_Single_Context32K_3tokens"]
    path = DATA / "eagle3" / "micro-1" / spec.file
    raw = json.loads(path.read_text())
    assert spec.file_sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (spec.engine, spec.device, spec.engine_version) == ("turbomind", raw["system"]["gpu_name"],
                                                               raw["system"]["turbomind_build_id"])
    assert spec.commit == json.loads((path.parent / "meta.json").read_text())["commit"]  # from the folder sidecar
    assert (spec.context, spec.batch, spec.spec_tokens, spec.decode_steps) == (32768, 1, 3, 512)
    assert spec.metrics["output_tokens_per_s"] == raw["throughput_tokens_per_sec"]["mean"]
    assert spec.metrics["mean_acceptance_length"] == raw["eagle_speculation"]["mean_acceptance_length"]
    assert spec.metrics["fraction_steps_accept_ge2"] == raw["eagle_speculation"]["fraction_steps_accept_ge2"]
    assert spec.metrics["memory_gb_mean"] == raw["memory_gb"]["mean"]
    assert spec.runs == raw["total_runs"] and spec.provenance == "measured"
    base = rows["Baseline_Single_Context32K"]
    assert base.spec_tokens == 0 and "mean_acceptance_length" not in base.metrics


def test_vllm_serve_json_uses_metadata_and_percent_rate():
    rows = sorted(import_results(DATA / "vllm"), key=lambda r: r.spec_tokens)
    base, spec = rows
    raw = json.loads((DATA / "vllm" / spec.file).read_text())
    assert spec.engine == "vllm" and spec.engine_version == raw["version"] and spec.device == raw["device"]
    assert (spec.context, spec.batch, spec.spec_tokens, spec.decode_steps) == (16384, raw["max_concurrency"], 3, 512)
    assert spec.metrics["mean_acceptance_rate"] == pytest.approx(raw["spec_decode_acceptance_rate"] / 100)
    assert spec.metrics["mean_acceptance_length"] == raw["spec_decode_acceptance_length"]
    assert spec.metrics["tpot_ms_mean"] == raw["mean_tpot_ms"]
    assert base.spec_tokens == 0 and "mean_acceptance_length" not in base.metrics


def test_sglang_jsonl_one_row_per_line_with_sidecar():
    rows = import_results(DATA / "sglang")
    assert [r.line for r in rows] == [1, 2]
    lines = [json.loads(x) for x in (DATA / "sglang" / rows[0].file).read_text().splitlines()]
    for r, raw in zip(rows, lines, strict=True):
        assert r.engine == "sglang" and r.engine_version == raw["server_info"]["version"]
        assert (r.context, r.batch, r.decode_steps) == (raw["random_input_len"], raw["max_concurrency"],
                                                         raw["random_output_len"])
        assert r.spec_tokens == 3 and r.device.startswith("NVIDIA")  # from the per-file sidecar
        assert r.metrics["mean_acceptance_length"] == raw["accept_length"]
        assert r.where == f"{r.file}:{r.line}"


@pytest.fixture
def spec_file(tmp_path):
    src = DATA / "eagle3" / "micro-1" / "bench"
    shutil.copy(src / "speculative_single_context32k_3tokens.json", tmp_path / "s.json")
    shutil.copy(src / "meta.json", tmp_path / "meta.json")
    return tmp_path / "s.json"


def _edit(p: Path, fn):
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def test_malformed_spec_bench_fields(spec_file):
    _edit(spec_file, lambda d: d["throughput_tokens_per_sec"].pop("mean"))
    _one_line_error(lambda: import_file(spec_file), "s.json", "throughput_tokens_per_sec.mean", "missing")
    _edit(spec_file, lambda d: d["throughput_tokens_per_sec"].update(mean="fast"))
    _one_line_error(lambda: import_file(spec_file), "s.json", "throughput_tokens_per_sec.mean", "fast")
    _edit(spec_file, lambda d: d["throughput_tokens_per_sec"].update(mean=float("nan")))
    _one_line_error(lambda: import_file(spec_file), "throughput_tokens_per_sec.mean", "finite")


def test_stub_baseline_is_not_a_measurement(spec_file):
    _edit(spec_file, lambda d: d.update(total_runs=0))
    _one_line_error(lambda: import_file(spec_file), "s.json", "total_runs", "stub")


def test_missing_identity_names_the_field_and_sidecar(spec_file):
    (spec_file.parent / "meta.json").unlink()
    _one_line_error(lambda: import_file(spec_file), "s.json", "'commit'", "meta.json")


def test_sidecar_never_overrides_the_file(spec_file):
    (spec_file.parent / "s.json.meta.json").write_text(json.dumps({"device": "NVIDIA A100"}))
    _one_line_error(lambda: import_file(spec_file), "'device'", "A100")
    (spec_file.parent / "s.json.meta.json").write_text(json.dumps({"gpu": "x"}))
    _one_line_error(lambda: import_file(spec_file), "s.json.meta.json", "'gpu'", "unknown")


def test_syntax_and_unknown_format(tmp_path):
    (tmp_path / "a.json").write_text('{"throughput_tokens_per_sec": {"mean": 1.0,}')
    _one_line_error(lambda: import_results(tmp_path), "a.json:1", "JSON syntax")
    (tmp_path / "a.json").write_text('{"tokens": 5}')
    _one_line_error(lambda: import_results(tmp_path), "a.json", "(format)")
    (tmp_path / "a.json").unlink()
    (tmp_path / "b.jsonl").write_text((DATA / "sglang" / "sglang_eagle3_32k.jsonl").read_text() + "{oops\n")
    _one_line_error(lambda: import_results(tmp_path), "b.jsonl:3", "JSON syntax")


def test_vllm_without_metadata_names_missing_field(tmp_path):
    src = next((DATA / "vllm").glob("*103000.json"))
    d = json.loads(src.read_text())
    for k in ("device", "commit"):
        d.pop(k)
    (tmp_path / "v.json").write_text(json.dumps(d))
    _one_line_error(lambda: import_results(tmp_path), "v.json", "'device'", "missing")


@pytest.mark.parametrize("name,want", [("deep.json", "deep.json"), ("deep.jsonl", "deep.jsonl:2"),
                                       ("meta.json", "meta.json")])
def test_json_nested_too_deep_is_one_line_naming_the_file(tmp_path, name, want):
    """JSON nested 100k deep gave a RecursionError with no file name; now one line names the file."""
    deep = "[" * 100_000 + "]" * 100_000
    if name == "meta.json":
        shutil.copy(next((DATA / "vllm").glob("*103000.json")), tmp_path / "v.json")
        (tmp_path / name).write_text(deep)
    else:
        (tmp_path / name).write_text("{}\n" + deep + "\n" if name.endswith(".jsonl") else deep)
    _one_line_error(lambda: import_results(tmp_path), want, "nested too deep")
