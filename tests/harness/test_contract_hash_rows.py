"""A csv or ledger row without a contract hash is refused, never taken as the gated contract's (issue 10.4)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from eagle4.budget.trace import _measured_accepts
from eagle4.gates import consecutive_green
from eagle4.gates.metrics import Ctx, MissingMetric, bytes_per_token_ratio

SHA = "a" * 64


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path


def _bytes_rows(sha_of_lm: str) -> list[dict]:
    rows = []
    for backend, lm, tot in (("unfused", 400.0, 400.0), ("fused", 100.0, 100.0)):
        rows.append({"contract_sha256": sha_of_lm, "backend": backend, "component": "lm", "batch": "all",
                     "bytes_per_token": lm, "provenance": "csim"})
        rows.append({"contract_sha256": SHA, "backend": backend, "component": "TOTAL", "batch": "all",
                     "bytes_per_token": tot, "provenance": "csim"})
    return rows


def test_bytes_rows_without_contract_hash_are_refused(tmp_path):
    _write(tmp_path / "reports" / "bytes_per_token.csv", _bytes_rows(""))
    ctx = Ctx(tmp_path / "reports", SHA, "cpu", tmp_path)
    with pytest.raises(MissingMetric, match=r"2 row\(s\) carry no contract_sha256"):
        bytes_per_token_ratio(None, ctx)
    _write(tmp_path / "reports" / "bytes_per_token.csv", _bytes_rows(SHA))
    assert bytes_per_token_ratio(None, ctx).value == pytest.approx(4.0)  # the same rows with the hash pass


def test_measured_accepts_without_contract_column_are_refused(tmp_path):
    p = _write(tmp_path / "accept.csv", [{"accept_length": 3, "provenance": "measured"}])
    assert _measured_accepts(p, SHA) is None
    p = _write(tmp_path / "accept2.csv", [{"contract_sha256": SHA, "accept_length": 3, "provenance": "measured"},
                                          {"contract_sha256": "", "accept_length": 5, "provenance": "measured"}])
    assert _measured_accepts(p, SHA) == [3]


def test_ledger_rows_without_contract_hash_never_count_green(tmp_path):
    cols = ["timestamp", "run_id", "contract_sha256", "gate", "status", "hw"]
    _write(tmp_path / "gate_ledger.csv", [dict(zip(cols, ("t", str(i), "", "g", "PASS", "cpu"), strict=True))
                                          for i in range(3)])
    assert consecutive_green(tmp_path, "g", SHA) == 0
    assert consecutive_green(tmp_path, "g", "") == 0
