"""Writing hand-made artifact rows (CSV, header from the first row) for the gate and validity tests."""

from __future__ import annotations

import csv


def write_rows(path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
