"""The kernel bench's raw-row schema and its CSV files (atomic writes)."""

from __future__ import annotations

import csv
from pathlib import Path

from eagle4.report import atomic

RAW_FIELDS = ["contract", "kernel", "label", "impl", "mode", "same_computation", "point", "B", "W", "K", "H", "Q",
              "T", "V", "L", "S", "dtype", "run_index", "median_us", "p10_us", "p90_us", "mean_us", "n_launches",
              "launches_per_sample", "device", "driver", "torch", "cuda", "git_commit", "contract_sha256", "provenance",
              "timestamp_utc", "source"]  # source: "csv" (written by the run) or "log" (rows rebuilt from a bench log)


def write_csv(path: Path, rows: list[dict], fields: list[str]) -> None:
    """Atomic (temp + rename): an interrupted run leaves the previous file intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def read_csv(path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def ours_in_graph(summary: list[dict]) -> dict[tuple[str, str], dict]:
    """Our kernels' graph-mode rows of a summary (``cuda_kernel_times.csv``), by (contract, point)."""
    return {(s["contract"], s["point"]): s for s in summary if s["impl"] == "cuda" and s["mode"] == "graph"}
