"""`eagle4 check --backend NAME DUMP...` and `eagle4 run --backend NAME --dump DUMP --out OUT`."""

from __future__ import annotations

import sys

from eagle4.backends import get_backend
from eagle4.cases.dump import DumpError, load_dump, save_dump
from eagle4.parity import Outcome, judge, run_case


def _backend(args):
    opts = {"kernel_src": args.kernel_src} if getattr(args, "kernel_src", None) else {}
    b = get_backend(args.backend, **opts)
    b.require()
    return b


def cmd_check(args) -> int:
    backend = _backend(args)
    failed = 0
    for path in args.dumps:
        try:
            case = load_dump(path)
        except DumpError as e:
            print(f"ERROR {e}", file=sys.stderr)
            failed += 1
            continue
        actual = run_case(backend, case)
        verdict = judge(case, Outcome(case.expected, None), actual)
        print(verdict.report if not verdict.ok else f"PASS {case.kernel} {case.case_id} ({path})")
        failed += not verdict.ok
    print(f"{len(args.dumps) - failed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def cmd_run(args) -> int:
    backend = _backend(args)
    case = load_dump(args.dump)
    outcome = run_case(backend, case)
    if outcome.error:
        print(f"{case.case_id}: {outcome.error}", file=sys.stderr)
        return 1
    info = backend.device_info()
    from eagle4.report.env_manifest import git_state
    producer = {"backend": backend.name, "device": info.device, **info.details, "git": git_state(),
                "source_dump": str(args.dump), "source_sha256": case.meta.get("sha256")}
    save_dump(args.out, case, outcome.outputs, producer)
    print(f"wrote {args.out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("check", help="run a backend on dumps and compare with their expected outputs")
    p.add_argument("--backend", required=True, help="ref, csim, cuda, xrt")
    p.add_argument("--kernel-src", help="cuda backend: a user's cost_draft_tree_kernel.cu")
    p.add_argument("dumps", nargs="+", metavar="DUMP")
    p.set_defaults(func=cmd_check)
    r = sub.add_parser("run", help="run a backend on a dump's inputs and write its outputs as a dump")
    r.add_argument("--backend", required=True)
    r.add_argument("--kernel-src")
    r.add_argument("--dump", required=True)
    r.add_argument("--out", required=True)
    r.set_defaults(func=cmd_run)
