"""`eagle4 dump-catalog --backend NAME [--kernel K] --out DIR`: run catalog cases on a backend and
write each as a dump with the backend's provenance (the H100 one-shot dump is `--backend cuda`)."""

from __future__ import annotations

import re
from pathlib import Path

from eagle4.backends import get_backend
from eagle4.cases.catalog import all_cases, cases_for
from eagle4.cases.dump import save_dump
from eagle4.parity import run_case
from eagle4.spec import kernel_spec
from eagle4.vcs import git_state


def safe_name(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", case_id)


def cmd(args) -> int:
    backend = get_backend(args.backend)
    backend.require()
    info = backend.device_info()
    producer = {"backend": backend.name, "provenance": backend.provenance, "device": info.device, **info.details,
                "git": git_state()}
    if args.kernel:
        cases = cases_for(kernel_spec(args.kernel).key, include_large=args.include_large)
    else:
        cases = all_cases(include_large=args.include_large)
    if args.tag:
        cases = [c for c in cases if args.tag in c.tags]
    if args.limit:
        cases = cases[: args.limit]
    out = Path(args.out)
    written = refused = 0
    for c in cases:
        outcome = run_case(backend, c)
        if outcome.error:
            refused += 1  # precondition cases have no outputs to dump
            continue
        save_dump(out / f"{safe_name(c.case_id)}.npz", c, outcome.outputs, producer)
        written += 1
    print(f"wrote {written} dumps to {out} ({refused} refused by preconditions, not dumped)")
    return 0 if written else 1


def register(sub) -> None:
    p = sub.add_parser("dump-catalog", help="write catalog cases run on a backend as dumps")
    p.add_argument("--backend", default="ref")
    p.add_argument("--kernel")
    p.add_argument("--tag", help="only cases with this tag")
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--include-large", action="store_true")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd)
