"""`eagle4 freeze-reference`: record the reference's EXACT-output hash of every catalog case."""

from __future__ import annotations

import json
from pathlib import Path

from eagle4.cases.catalog import all_cases
from eagle4.parity import exact_output_hash, reference_outcome
from eagle4.report import atomic

DEFAULT = Path(__file__).resolve().parents[3] / "tests" / "parity" / "frozen_reference.json"


def cmd(args) -> int:
    path = Path(args.out)
    old = json.loads(path.read_text())["cases"] if path.is_file() else {}
    new = {c.case_id: exact_output_hash(c, reference_outcome(c)) for c in all_cases()}
    changed = sorted(k for k in new if k in old and old[k] != new[k])
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    import torch
    atomic.write_text(path, json.dumps({"note": "sha256 of the reference's EXACT outputs per case; "
                                       "regenerate with `eagle4 freeze-reference` and review",
                                "torch": torch.__version__, "cases": new}, indent=1, sort_keys=True) + "\n")
    print(f"{len(new)} cases frozen to {path}: {len(added)} added, {len(changed)} changed, {len(removed)} removed")
    for k in changed[:50]:
        print(f"  changed: {k}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("freeze-reference", help="freeze the reference's outputs of every catalog case")
    p.add_argument("--out", default=str(DEFAULT))
    p.set_defaults(func=cmd)
