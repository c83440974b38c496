"""Read a folder of engine benchmark results into :class:`EngineRow` s.

Formats are recognised by their keys (one home per format: ``spec_bench``, ``vllm_bench``,
``sglang_bench``); a JSON file that none recognises is an error, never silently skipped. Sidecars:
``meta.json`` (applies to every result file of its folder) and ``<file>.meta.json`` (that file)
supply what a format does not record; see :mod:`eagle4.engines.rows`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from eagle4.engines import sglang_bench, spec_bench, vllm_bench
from eagle4.engines.rows import IDENTITY_FIELDS, SCENARIO_FIELDS, EngineRow, ResultFormatError, number

FORMATS = (spec_bench, vllm_bench, sglang_bench)
DEFAULT_PATTERNS = ("**/*.json", "**/*.jsonl")
MAX_RESULT_BYTES = 64 << 20  # a summary JSON is kilobytes; a bigger file is not a result summary
_META_KEYS = set(IDENTITY_FIELDS) | set(SCENARIO_FIELDS) | {"label", "failed_requests"}


def _is_sidecar(p: Path) -> bool:
    return p.name == "meta.json" or p.name.endswith(".meta.json")


def _parse(text: str, shown: str) -> Any:
    """``json.loads``, with nesting too deep for the parser (a result summary is a few levels deep) as a
    one-line error naming the file; JSONDecodeError goes to the caller."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ResultFormatError(f"{shown}: JSON nested too deep to parse (a result summary is a few levels "
                                "deep)") from None


def _load_json(path: Path, shown: str) -> Any:
    try:
        return _parse(path.read_text(encoding="utf-8"), shown)
    except UnicodeDecodeError as e:
        raise ResultFormatError(f"{shown}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ResultFormatError(f"{shown}:{e.lineno}: JSON syntax: {e.msg} (column {e.colno})") from None


def _sidecar(path: Path, shown: str) -> dict[str, Any]:
    obj = _load_json(path, shown)
    if not isinstance(obj, dict):
        raise ResultFormatError(f"{shown}: expected a JSON object of {sorted(_META_KEYS)}")
    unknown = sorted(set(obj) - _META_KEYS)
    if unknown:
        raise ResultFormatError(f"{shown}: field '{unknown[0]}': unknown (known: {sorted(_META_KEYS)})")
    return obj


def _records(path: Path, shown: str) -> list[tuple[int | None, Any]]:
    """(line, object) pairs: one for a JSON document, one per non-empty line of JSON lines."""
    size = path.stat().st_size
    if size > MAX_RESULT_BYTES:
        raise ResultFormatError(f"{shown}: {size} bytes, over the {MAX_RESULT_BYTES} byte limit of a result summary "
                                "(save without per-request details)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ResultFormatError(f"{shown}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    lines = [(i + 1, ln) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if not lines:
        raise ResultFormatError(f"{shown}: empty result file")
    if path.suffix != ".jsonl":
        try:
            return [(None, _parse(text, shown))]
        except json.JSONDecodeError as e:
            if e.msg != "Extra data":  # several documents: JSON lines under a .json name
                raise ResultFormatError(f"{shown}:{e.lineno}: JSON syntax: {e.msg} (column {e.colno})") from None
    out = []
    for no, ln in lines:
        try:
            out.append((no, _parse(ln, f"{shown}:{no}")))
        except json.JSONDecodeError as e:
            raise ResultFormatError(f"{shown}:{no}: JSON syntax: {e.msg} (column {e.colno})") from None
    return out


def _merge(parsed: dict, meta: dict, where: str, meta_name: str) -> dict:
    out = dict(parsed)
    for k in IDENTITY_FIELDS + SCENARIO_FIELDS + ("label",):
        mine, side = parsed.get(k), meta.get(k)
        if side is not None:
            side = number(f"{meta_name}", k, side, integer=True) if k in SCENARIO_FIELDS else str(side)
        if mine in (None, ""):
            out[k] = side
        elif side is not None and str(side) != str(mine):
            raise ResultFormatError(f"{where}: field '{k}': the file says {mine!r}, {meta_name} says {side!r}")
        if out.get(k) in (None, "") and k != "label":
            raise ResultFormatError(f"{where}: field '{k}': missing (the file does not record it; add it to "
                                    f"meta.json or {Path(where.split(':')[0]).name}.meta.json)")
    if "failed_requests" in out["metrics"]:  # serving benchmarks: failures are carried, never assumed
        mine, side = out["metrics"]["failed_requests"], meta.get("failed_requests")
        if side is not None:
            side = number(meta_name, "failed_requests", side, integer=True)
        if mine is None and side is None:
            raise ResultFormatError(f"{where}: field 'failed_requests': missing (the file does not say how many "
                                    "requests failed: save it with per-request details, or add failed_requests to "
                                    f"meta.json or {Path(where.split(':')[0]).name}.meta.json)")
        if mine is not None and side is not None and mine != side:
            raise ResultFormatError(f"{where}: field 'failed_requests': the file says {mine}, {meta_name} says {side}")
        out["metrics"] = {**out["metrics"], "failed_requests": mine if mine is not None else side}
    return out


def import_file(path, results_dir=None) -> list[EngineRow]:
    path = Path(path)
    root = Path(results_dir) if results_dir is not None else path.parent
    try:
        rel = path.relative_to(root).as_posix()  # the row's file: stable wherever the folder lives
    except ValueError:
        rel = path.name
    shown = str(path)  # errors name the file as the user can open it
    folder_meta, file_meta = path.parent / "meta.json", path.with_name(path.name + ".meta.json")
    meta: dict[str, Any] = {}
    names = []
    for side in (folder_meta, file_meta):
        if side.is_file():
            meta.update(_sidecar(side, str(side)))
            names.append(side.name)
    meta_name = " + ".join(names) or "no sidecar"
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    rows = []
    for line, obj in _records(path, shown):
        where = f"{shown}:{line}" if line else shown
        fmt = next((f for f in FORMATS if f.matches(obj)), None)
        if fmt is None:
            keys = sorted(obj)[:8] if isinstance(obj, dict) else type(obj).__name__
            raise ResultFormatError(f"{where}: field '(format)': not a known engine result (keys {keys}); expected "
                                    "throughput_tokens_per_sec (speculative benchmark), request_throughput + model_id "
                                    "(vLLM serve) or output_throughput + dataset_name (sglang bench_serving)")
        d = _merge(fmt.parse(obj, where), meta, where, meta_name)
        rows.append(EngineRow(engine=d["engine"], engine_version=d["engine_version"], device=d["device"],
                              commit=d["commit"], context=d["context"], batch=d["batch"],
                              spec_tokens=d["spec_tokens"], decode_steps=d["decode_steps"], metrics=d["metrics"],
                              file=rel, file_sha256=sha, format=fmt.FORMAT, label=d.get("label") or "", line=line,
                              runs=d["runs"], timestamp=d["timestamp"], extra=d["extra"]))
    return rows


def import_results(results_dir, patterns=DEFAULT_PATTERNS) -> list[EngineRow]:
    """Every engine result under ``results_dir`` matching ``patterns`` (sidecars excluded), sorted by path."""
    root = Path(results_dir)
    if not root.is_dir():
        raise ResultFormatError(f"{root}: results folder does not exist")
    files = sorted({p for pat in patterns for p in root.glob(pat) if p.is_file() and not _is_sidecar(p)})
    rows: list[EngineRow] = []
    for p in files:
        rows.extend(import_file(p, root))
    return rows
