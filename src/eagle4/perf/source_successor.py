"""A host-only successor of the kernel source that the committed H100 rows timed, and the evidence it needs.

The committed rows time one source: its sha256 is in ``reports/h100_env_manifest.txt``. A later edit of
``cuda/cost_draft_tree_kernel.cu`` can leave every kernel's machine code as it was, for example argument checks,
launch selection or error messages. Such an edit may keep those rows until the next bench, but only on evidence
recorded in ``reports/h100_rows_successor.json`` (``SUCCESSOR``):

* **SASS.** Both sources' SASS digests (sha256 of ``cuobjdump -sass`` of every function of one build, with the
  tool line), and they must be equal. They are computed where nvcc is and declared here, because CI has no nvcc
  to recompute them.
* **Before/after.** A before/after of both sources in one process on the H100 (``kernel_bench compare-src``
  CSVs). It must cover every point of the committed rows, and at each one the new source must take within
  ``TOLERANCE`` of the old one's time. Where the CSV records each source's digest (its ``kernel_src_sha256`` column),
  those digests must be the record's two sources. Older CSVs name the sources only by path.
* **Sign-off record.** The successor's own sign-off record, whose ``bench_source.txt`` names the successor's
  sha256, with parity passed and every step clean (``signoff_record``).

The rows still name their own source and keep their provenance (measured on the H100 running that source).
The record only states why they still describe the current one. The next bench makes the manifest name the
current source again, and then a record left behind is stale and fails.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eagle4.perf.rows import read_csv
from eagle4.perf.signoff_record import unclean_steps

SUCCESSOR = "h100_rows_successor.json"
NEW_SRC = "cuda/cost_draft_tree_kernel.cu"  # how compare-src names the current source
TOLERANCE = 0.03  # new/old per point; the bench's own run rule is CoV <= 2% (compare-src takes medians of rounds)
_SHA = r"^[0-9a-f]{64}$"


class Successor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows_kernel_src_sha256: str = Field(pattern=_SHA, description="the source the rows timed (the manifest's)")
    kernel_src_sha256: str = Field(pattern=_SHA, description="the current source")
    commit: str = Field(pattern=r"^[0-9a-f]{7,40}$", description="the commit of the current source's sign-off")
    change: str = Field(min_length=1, description="what changed, in host code only")
    sass_tool: str = Field(min_length=1, description="how the SASS digests were computed, and where")
    sass_sha256_rows_source: str = Field(pattern=_SHA)
    sass_sha256_source: str = Field(pattern=_SHA)
    compare_src: list[str] = Field(min_length=1, description="compare-src CSVs, repository-relative")
    record: str = Field(min_length=1, description="the current source's sign-off record, repository-relative")


def load(path: Path) -> Successor:
    """The record, or ValueError naming the file and the field."""
    try:
        return Successor.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not JSON ({e})") from e
    except ValidationError as e:
        err = e.errors()[0]
        raise ValueError(f"{path}: field {'.'.join(map(str, err['loc'])) or '(top)'}: {err['msg']}") from e


def _ratios(rows: list[dict]) -> dict[tuple[str, str, str], float]:
    """new/old of our ops at each (contract, point, form) of one compare-src CSV: the old source is the other one."""
    times: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for r in rows:
        if r["impl"] == "cuda":
            times[(r["contract"], r["point"], r["form"])][r["kernel_src"]] = float(r["median_us"])
    out = {}
    for key, by_src in times.items():
        old = [t for src, t in by_src.items() if src != NEW_SRC]
        if NEW_SRC in by_src and len(old) == 1:
            out[key] = by_src[NEW_SRC] / old[0]
    return out


def _digest_problems(name: str, rows: list[dict], rec: Successor) -> list[str]:
    """Where a compare-src CSV's own digests (its ``kernel_src_sha256`` column) disagree with the record's sources.
    A CSV written before that column names its old source by path only, and the record's word stands for it."""
    want = {src: rec.kernel_src_sha256 if src == NEW_SRC else rec.rows_kernel_src_sha256
            for src in {r["kernel_src"] for r in rows if r["impl"] == "cuda"}}
    have = {r["kernel_src"]: r["kernel_src_sha256"] for r in rows if r["impl"] == "cuda" and r.get("kernel_src_sha256")}
    return [f"{name}: {src} is {sha[:12]}, the record says {want[src][:12]}"
            for src, sha in sorted(have.items()) if sha != want[src]]


def problems(rec: Successor, rows_sha: str, current_sha: str, row_points: set[tuple[str, str]],
             repo: Path) -> list[str]:
    """Why the record does not carry the rows of ``rows_sha`` over to ``current_sha`` (empty: it does)."""
    out = []
    if rec.rows_kernel_src_sha256 != rows_sha:
        out.append(f"it names rows of source {rec.rows_kernel_src_sha256[:12]}, the manifest {rows_sha[:12]}")
    if rec.kernel_src_sha256 != current_sha:
        out.append(f"it names source {rec.kernel_src_sha256[:12]}, cuda/cost_draft_tree_kernel.cu is {current_sha[:12]}")
    if rec.sass_sha256_rows_source != rec.sass_sha256_source:
        out.append("the two sources' SASS differ: a device-code change needs a new bench")
    for name in rec.compare_src:
        path = repo / name
        if not path.is_file():
            out.append(f"{name}: missing")
            continue
        rows = read_csv(path)
        ratios = _ratios(rows)
        out += _digest_problems(name, rows, rec)
        missing = sorted(p for p in row_points if not any(k[:2] == p for k in ratios))
        if missing:
            out.append(f"{name}: no before/after at {len(missing)} point(s) of the rows, e.g. {missing[0]}")
        out += [f"{name}: {c} {p}{f' ({form})' if form else ''} new/old {r:.3f}, outside 1 +- {TOLERANCE}"
                for (c, p, form), r in sorted(ratios.items()) if abs(r - 1.0) > TOLERANCE]
    record = repo / rec.record
    source = record / "bench_source.txt"
    if not source.is_file():
        out.append(f"{rec.record}: no bench_source.txt")
    elif rec.kernel_src_sha256 not in source.read_text():
        out.append(f"{rec.record}/bench_source.txt does not name source {rec.kernel_src_sha256[:12]}")
    if not (record / "pytest_log.txt").is_file():
        out.append(f"{rec.record}: no parity log (pytest_log.txt)")
    out += [f"{rec.record}: step not clean: {s}" for s in (unclean_steps(record) if record.is_dir() else [])]
    return out
