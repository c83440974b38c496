"""`eagle4 check --backend NAME DUMP...` and `eagle4 run --backend NAME --dump DUMP --out OUT`."""

from __future__ import annotations

import sys

from eagle4.backends import get_backend
from eagle4.cases.dump import DumpError, load_dump, save_dump
from eagle4.compare import missing_expectations
from eagle4.parity import Outcome, judge, run_case
from eagle4.spec import SpecError


def _backend(args):
    opts = {"kernel_src": args.kernel_src} if getattr(args, "kernel_src", None) else {}
    if getattr(args, "xclbin", None):
        opts["xclbin"] = args.xclbin  # the xrt backend's board image (else EAGLE4_XCLBIN)
    b = get_backend(args.backend, **opts)
    b.require()
    return b


def check_one(backend, path) -> tuple[bool, str]:
    """(passed, report) for one dump. A PASS needs an expectation for every non-optional output; the
    report names any output that was not compared."""
    case = load_dump(path)
    missing = missing_expectations(case.kernel, case.expected)
    if missing:
        return False, (f"FAIL {case.kernel} {case.case_id} ({path}): the dump holds no expectation for "
                       f"{missing}; nothing passes without evidence (expected_<name> for every non-optional output)")
    actual = run_case(backend, case)
    verdict = judge(case, Outcome(case.expected, None), actual, require_all=True)
    if not verdict.ok:
        return False, verdict.report
    res = verdict.result
    compared = [d.name for d in res.outputs]
    extra = f"; not compared (no expectation): {res.not_compared}" if res.not_compared else ""
    return True, f"PASS {case.kernel} {case.case_id} ({path}): compared {compared}{extra}"


def cmd_check(args) -> int:
    backend = _backend(args)
    failed = 0
    for path in args.dumps:
        try:
            ok, report = check_one(backend, path)
        except (DumpError, SpecError, ValueError, KeyError, OSError) as e:  # one bad file never aborts the rest
            ok, report = False, f"ERROR {path}: {e}" if str(path) not in str(e) else f"ERROR {e}"
        print(report, file=sys.stderr if report.startswith("ERROR") else sys.stdout)
        failed += not ok
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
    from eagle4.vcs import git_state
    producer = {"backend": backend.name, "device": info.device, **info.details, "git": git_state(),
                "source_dump": str(args.dump), "source_sha256": case.meta.get("sha256")}
    save_dump(args.out, case, outcome.outputs, producer)
    print(f"wrote {args.out}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("check", help="run a backend on dumps and compare with their expected outputs")
    p.add_argument("--backend", required=True, help="ref, csim, cuda, xrt")
    p.add_argument("--kernel-src", help="cuda backend: a user's cost_draft_tree_kernel.cu")
    p.add_argument("--xclbin", help="xrt backend: the xclbin to load (else EAGLE4_XCLBIN)")
    p.add_argument("dumps", nargs="+", metavar="DUMP")
    p.set_defaults(func=cmd_check)
    r = sub.add_parser("run", help="run a backend on a dump's inputs and write its outputs as a dump")
    r.add_argument("--backend", required=True)
    r.add_argument("--kernel-src")
    r.add_argument("--xclbin")
    r.add_argument("--dump", required=True)
    r.add_argument("--out", required=True)
    r.set_defaults(func=cmd_run)
