"""Archived H100 results: rows measured under a contract that is no longer the current one.

They stay on record in ``reports/archive/<name>/`` beside the exact contract file that produced them
(and the files that contract pins: prompts, model configs), and are judged against that contract only
(tests/harness/test_committed_h100_*.py check every row's hash against it). Nothing that feeds the
current contract's gates or reports (signoff, compare-fpga, the throughput gate) reads these folders:
for the current contract such a baseline is missing until it is re-measured.

``ARCHIVED`` is the explicit list: folder name -> the contract file in it. The folder name ends with
the first 12 hex digits of that contract's hash; the file keeps the stem the bench used (its rows'
``contract`` column).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[3]  # src/eagle4/contract/archive.py -> repository root
ARCHIVE_DIR = REPO / "reports" / "archive"
ARCHIVED: dict[str, str] = {
    # byte-level vocabulary-260 toy pair, default contract of 85b0535 (H100 e2e + kernel bench, 2026-11-26)
    "h100_toy_pair_b6befd65731f": "default.toml",
}


def archived_contract_path(name: str) -> Path:
    return ARCHIVE_DIR / name / ARCHIVED[name]


def load_archived_contract(name: str):
    """The archived contract, its pinned files resolved (and verified) inside its archive folder."""
    from eagle4.contract import load_contract

    return load_contract(archived_contract_path(name), root=ARCHIVE_DIR / name)
