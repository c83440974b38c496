"""Stagewise numeric parity between two implementations of one model (e.g. an engine's EAGLE3
draft head against a reference): per stage (``fc_out``, ``attn_out``, ``ffn_out``,
``prehead_hidden``, ``logits``, ...) mean and max absolute difference, cosine similarity and the
top-k overlap of logits, against thresholds from the contract; the report names the first stage, in
the declared (model) order, that diverges.

Dumps are ``.npz`` or ``.safetensors`` with one tensor per stage name. Safetensors are read by a
small memory-mapped reader (the format is an 8-byte header length, a JSON header and raw
little-endian data), so bf16 stays bf16 and a large logits dump is not copied into memory; stages
are compared in row chunks in float64. A malformed dump raises :class:`StageDumpError` with one line
naming the file and the field (stage).
"""

from __future__ import annotations

import json
import math
import struct
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from eagle4.npz_bounds import npz_violations

try:  # bf16 in safetensors dumps
    from ml_dtypes import bfloat16 as _BF16
except ImportError:  # pragma: no cover
    _BF16 = None

_ST_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": _BF16, "I64": np.int64,
              "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
ROW_CHUNK = 4096


class StageDumpError(ValueError):
    """A stage dump is missing or malformed; one line naming the file and the field."""


class StageThreshold(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    min_cosine: float | None = Field(None, ge=-1, le=1, description="per-row cosine (last axis); the minimum row must reach it")
    max_abs_diff: float | None = Field(None, ge=0)
    max_mean_abs_diff: float | None = Field(None, ge=0)
    top_k: int | None = Field(None, ge=1, description="k of the top-k overlap (logits)")
    min_topk_overlap: float | None = Field(None, ge=0, le=1, description="mean over rows of |top-k(ref) & top-k(cand)| / k")

    @model_validator(mode="after")
    def _some(self):
        if (self.top_k is None) != (self.min_topk_overlap is None):
            raise ValueError(f"stage {self.name}: top_k and min_topk_overlap go together")
        if all(v is None for v in (self.min_cosine, self.max_abs_diff, self.max_mean_abs_diff, self.min_topk_overlap)):
            raise ValueError(f"stage {self.name}: declare at least one threshold")
        return self


class StageParity(BaseModel):
    """``[gates.parity]``: two dumps (paths under the results folder) and per-stage thresholds, in model order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: str
    candidate: str
    stages: list[StageThreshold] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self):
        names = [s.name for s in self.stages]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"stages: duplicate name(s) {dup}")
        return self


@dataclass
class StageResult:
    name: str
    shape: tuple
    ok: bool
    mean_abs_diff: float
    max_abs_diff: float
    cosine_min: float  # minimum over rows
    cosine_mean: float
    topk_overlap: float | None = None
    reasons: list[str] = field(default_factory=list)

    def line(self) -> str:
        tk = "" if self.topk_overlap is None else f" top-k overlap {self.topk_overlap:.4f}"
        return (f"{self.name:16s} {'ok' if self.ok else 'DIVERGES':8s} shape {list(self.shape)} mean|d| "
                f"{self.mean_abs_diff:.3g} max|d| {self.max_abs_diff:.3g} cos min {self.cosine_min:.5f} "
                f"mean {self.cosine_mean:.5f}{tk}" + "".join(f"; {r}" for r in self.reasons))


@dataclass
class ParityReport:
    stages: list[StageResult]
    files: dict[str, str]  # role -> relative path

    @property
    def first_divergent(self) -> StageResult | None:
        return next((s for s in self.stages if not s.ok), None)

    @property
    def ok(self) -> bool:
        return self.first_divergent is None

    def text(self) -> str:
        head = f"stage parity: {self.files['candidate']} vs reference {self.files['reference']}"
        first = self.first_divergent
        tail = f"first diverging stage: {first.name}" if first else "no stage diverges"
        return "\n".join([head, *("  " + s.line() for s in self.stages), tail])


#: the largest stage array an .npz dump may hold uncompressed (logits of a 128k vocabulary over 2k tokens)
MAX_STAGE_ENTRY_BYTES = 1 << 30


class _Dump:
    """Name -> array access to one dump file (memory-mapped for safetensors)."""

    def __init__(self, path: Path, shown: str):
        self.path, self.shown = path, shown
        if not path.is_file():
            raise StageDumpError(f"{shown}: stage dump does not exist")
        if path.suffix == ".npz":
            try:
                bad = next(npz_violations(path, MAX_STAGE_ENTRY_BYTES), None)
                if bad is not None:
                    raise StageDumpError(f"{shown}: field '{bad[0]}': {bad[1]}")
                self._npz = np.load(path, allow_pickle=False)
            except StageDumpError:
                raise
            except Exception as e:  # noqa: BLE001 - zip/npy errors vary; report them in one line
                raise StageDumpError(f"{shown}: not a readable .npz ({type(e).__name__}: {e})") from None
            self.names = list(self._npz.files)
        elif path.suffix == ".safetensors":
            self._header, self._base = self._read_header()
            self.names = [k for k in self._header if k != "__metadata__"]
        else:
            raise StageDumpError(f"{shown}: unknown dump format {path.suffix!r} (use .npz or .safetensors)")

    def _read_header(self):
        size = self.path.stat().st_size
        with open(self.path, "rb") as fh:
            raw = fh.read(8)
            if len(raw) < 8:
                raise StageDumpError(f"{self.shown}: field '(header)': file too short for a safetensors header")
            (n,) = struct.unpack("<Q", raw)
            if n > min(size - 8, 100 << 20):
                raise StageDumpError(f"{self.shown}: field '(header)': header length {n} exceeds the file")
            try:
                header = json.loads(fh.read(n))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise StageDumpError(f"{self.shown}: field '(header)': not JSON ({e})") from None
        if not isinstance(header, dict):
            raise StageDumpError(f"{self.shown}: field '(header)': expected a JSON object")
        return header, 8 + n

    def get(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise StageDumpError(f"{self.shown}: field '{name}': stage missing (the dump has {sorted(self.names)})")
        if hasattr(self, "_npz"):
            try:  # a CRC error, an object array, a truncated entry: one line naming file and stage
                a = self._npz[name]
            except (zipfile.BadZipFile, ValueError, OSError, EOFError, MemoryError) as e:
                raise StageDumpError(f"{self.shown}: field '{name}': unreadable ({type(e).__name__}: {e})") from None
        else:
            info = self._header[name]
            try:
                dt = _ST_DTYPES[info["dtype"]]
                shape = tuple(int(d) for d in info["shape"])
                b, e = (int(x) for x in info["data_offsets"])
            except (KeyError, TypeError, ValueError):
                raise StageDumpError(f"{self.shown}: field '{name}': bad header entry {info!r}") from None
            if dt is None:
                raise StageDumpError(f"{self.shown}: field '{name}': dtype {info['dtype']} needs ml_dtypes")
            nbytes = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
            if e - b != nbytes or self._base + e > self.path.stat().st_size:
                raise StageDumpError(f"{self.shown}: field '{name}': data_offsets [{b}, {e}] do not hold "
                                     f"{shape} {info['dtype']} inside the file")
            a = np.memmap(self.path, dtype=dt, mode="r", offset=self._base + b, shape=shape) if nbytes else \
                np.zeros(shape, dt)
        if a.dtype.kind not in "fiub" and not (_BF16 is not None and a.dtype == _BF16):
            raise StageDumpError(f"{self.shown}: field '{name}': dtype {a.dtype} is not numeric")
        return a


def _rows(a: np.ndarray) -> np.ndarray:
    return a.reshape(1, -1) if a.ndim <= 1 else a.reshape(-1, a.shape[-1])


def compare_stage(t: StageThreshold, ref: np.ndarray, cand: np.ndarray, where: str) -> StageResult:
    if ref.shape != cand.shape:
        raise StageDumpError(f"{where}: field '{t.name}': shape {list(cand.shape)} differs from the reference "
                             f"shape {list(ref.shape)}")
    R, C = _rows(ref), _rows(cand)
    n, width = R.shape
    s_abs = 0.0
    m_abs = 0.0
    cos: list[np.ndarray] = []
    overlap: list[np.ndarray] = []
    nonfinite = 0
    for i in range(0, max(n, 1), ROW_CHUNK):
        r = np.asarray(R[i:i + ROW_CHUNK], dtype=np.float64)
        c = np.asarray(C[i:i + ROW_CHUNK], dtype=np.float64)
        nonfinite += int((~np.isfinite(r)).sum() + (~np.isfinite(c)).sum())
        d = np.abs(r - c)
        s_abs += float(d.sum())
        m_abs = max(m_abs, float(d.max(initial=0.0)))
        nr, nc = np.linalg.norm(r, axis=1), np.linalg.norm(c, axis=1)
        dot = (r * c).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            cs = np.where((nr == 0) & (nc == 0), 1.0, dot / (nr * nc))
        cos.append(np.where((nr == 0) ^ (nc == 0), 0.0, cs))
        if t.top_k is not None:
            k = min(t.top_k, width)
            tr = np.argsort(-r, axis=1, kind="stable")[:, :k]
            tc = np.argsort(-c, axis=1, kind="stable")[:, :k]
            overlap.append(np.array([len(set(a_).intersection(b_)) / k for a_, b_ in zip(tr, tc, strict=True)]))
    cosv = np.concatenate(cos) if cos else np.ones(1)
    res = StageResult(t.name, tuple(ref.shape), True, s_abs / max(R.size, 1), m_abs, float(np.min(cosv)),
                      float(np.mean(cosv)), float(np.mean(np.concatenate(overlap))) if overlap else None)
    if nonfinite:
        res.reasons.append(f"{nonfinite} non-finite value(s) (NaN/Inf) in the stage")
    checks = [("min cosine", res.cosine_min, ">=", t.min_cosine), ("max |diff|", res.max_abs_diff, "<=", t.max_abs_diff),
              ("mean |diff|", res.mean_abs_diff, "<=", t.max_mean_abs_diff),
              (f"top-{t.top_k} overlap", res.topk_overlap, ">=", t.min_topk_overlap)]
    for what, v, op, lim in checks:
        if lim is None:
            continue
        good = (not math.isnan(v)) and (v >= lim if op == ">=" else v <= lim)
        if not good:
            res.reasons.append(f"{what} {v:.6g} not {op} {lim:g}")
    res.ok = not res.reasons
    return res


def compare_stages(spec: StageParity, base_dir) -> ParityReport:
    base = Path(base_dir)
    ref = _Dump(base / spec.reference, str(base / spec.reference))
    cand = _Dump(base / spec.candidate, str(base / spec.candidate))
    out = []
    for t in spec.stages:
        r = ref.get(t.name)
        c = cand.get(t.name)
        out.append(compare_stage(t, r, c, cand.shown))
    return ParityReport(out, {"reference": spec.reference, "candidate": spec.candidate})
