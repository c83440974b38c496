"""H100 kernel bench: our CUDA ops against the strongest PyTorch anchors, one process per run.

``python -m eagle4.perf.kernel_bench run --contract C --run-index I --out raw_I.csv`` measures every
point of contract C once in this process (one *run*) and writes one raw row per
(point, impl, mode):

* ``impl=cuda, mode=graph``: our op (for ``draft_step``: K1 -> K2 -> K3, one launch of the source's
  ``draft_step`` op where it has one and EAGLE4_DRAFT_STEP_FUSED is not 0, else the three ops; the
  rows' label and the log say which: "K1-K3 (one launch)" / "K1-K3 (three launches)") in a CUDA graph, replays timed by CUDA events (``perf.timing``); with ``--eager`` also
  ``mode=eager``: back-to-back launches from Python (what an eager caller sees, launch overhead included);
* ``impl=torch_<name>, mode=graph``: each anchor of ``perf.anchors`` on the same tensors, same timer
  (an anchor in ``DEVICE_CHECKED`` is first checked against the reference; one that fails is logged, not timed).

``--kernels`` (or EAGLE4_BENCH_KERNELS) limits a run to some kernels' points (development; a report
needs every point). ``warm-anchors`` runs the ``torch.compile`` anchors once so that Inductor's on-disk
cache holds them before the runs start.

Independence between runs comes from separate processes (``scripts/bench_h100_kernels.sh``);
``summarize`` (``perf.kernel_report``) merges the raw files: median over runs, CoV, the run rule of
the contract, ours / best anchor and ours / HBM roofline per point. ``ncu-probe`` launches each of
our kernels once per point for Nsight Compute's DRAM byte counters (``perf.ncu``). Development aid:
``compare-src`` (before/after of kernel sources, e.g. a variant of a launch rule against ours).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from pathlib import Path

from eagle4 import stats
from eagle4.perf.points import DEFAULT_CONTRACT, BenchShape, Point, operating_points, shape_from_contract
from eagle4.perf.rows import RAW_FIELDS, read_csv, write_csv
from eagle4.vcs import git_commit


def env_fields(shape: BenchShape) -> dict:
    import torch

    from eagle4.backends.cuda import nvidia_driver

    return {"device": torch.cuda.get_device_name(0), "driver": nvidia_driver() or "unknown",
            "torch": torch.__version__, "cuda": str(torch.version.cuda),
            "git_commit": os.environ.get("EAGLE4_GIT_COMMIT") or _git_commit(),
            "contract_sha256": shape.contract_hash, "contract": Path(shape.contract_path).stem, "provenance": "measured"}


def _git_commit() -> str:
    return git_commit(DEFAULT_CONTRACT.parents[1])


STEP_KERNELS = (("draft_tree_score", "k1"), ("update_draft_state", "k2"), ("work_deltas", "k3"))


def step_fused() -> bool:
    """The draft step as one launch (the source's ``draft_step`` op) unless EAGLE4_DRAFT_STEP_FUSED=0."""
    return os.environ.get("EAGLE4_DRAFT_STEP_FUSED", "1") != "0"


def _ours(p: Point, backend, tensors, params, one_launch: bool | None = None):
    """Our op at point p. For ``draft_step``: the source's one-launch op when ``one_launch`` (default:
    ``step_fused()``) and the source has it, else K1, K2, K3 as three launches."""
    from eagle4.perf.inputs import abi_args

    if p.kernel == "draft_step":
        if _step_form(backend, one_launch) == "one launch":  # the form the rows' label names
            fused = backend.draft_step_op()
            args = [a for k, n in STEP_KERNELS for a in abi_args(k, tensors[n], params[n])]
            return lambda: fused(*args)
        calls = [(backend.op(k), abi_args(k, tensors[n], params[n])) for k, n in STEP_KERNELS]

        def fn():
            for op, args in calls:
                op(*args)
        return fn
    op, args = backend.op(p.kernel), abi_args(p.kernel, tensors, params)
    return lambda: op(*args)


def run_points(shape: BenchShape, points: list[Point], run_index: int, eager: bool = True, log=print) -> list[dict]:
    import torch

    from eagle4.backends.cuda import CudaBackend
    from eagle4.perf import timing
    from eagle4.perf.anchors import ANCHORS, DEVICE_CHECKED
    from eagle4.perf.inputs import make_call

    backend = CudaBackend()
    backend.require()
    dev = torch.device("cuda", 0)
    env = env_fields(shape)
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    rows: list[dict] = []

    def row(p, impl, mode, same, times, g, label=None):
        q = p.params
        r = {"kernel": p.kernel, "label": label or p.label, "impl": impl, "mode": mode, "same_computation": str(same).lower(),
             "point": p.pid, **{k: q.get(k, "") for k in ("B", "W", "K", "H", "Q", "T", "V", "L", "S")},
             "dtype": q.get("dtype", "float32"), "run_index": run_index,
             "median_us": f"{stats.median(times):.4f}", "p10_us": f"{stats.percentile(times, 10):.4f}",
             "p90_us": f"{stats.percentile(times, 90):.4f}", "mean_us": f"{stats.summarize(times)['mean']:.4f}",
             "n_launches": g * len(times), "launches_per_sample": g, "timestamp_utc": stamp, "source": "csv", **env}
        rows.append(r)
        return r

    for p in points:
        tensors, params = make_call(p, dev)
        fn = _ours(p, backend, tensors, params)
        t0 = timing.probe_us(fn)
        g, n = timing.sizes_for(t0)
        # short kernels: graph windows interleaved with eager ones, so that one slow stretch of the
        # host cannot move a run's median
        windows = 2 if t0 < 200 else 1
        tg, te = [], []
        for _ in range(windows):
            tg += timing.graph_times(fn, g, n)
            if eager:
                pb = int(min(100, max(5, 3000 / t0)))
                te += timing.eager_times(fn, pb, 25)
        # our draft step's rows say which form they time in their label ("K1-K3 (one launch)")
        form = _step_form(backend, None) if p.kernel == "draft_step" else None
        ours_label = f"{p.label} ({form})" if form else None
        rg = row(p, "cuda", "graph", True, tg, g, ours_label)
        msg = f"run {run_index} {shape_name(shape):14s} {p.pid:44s} ours {float(rg['median_us']):10.2f} us"
        if form:  # the same on its own line, for readers of the log
            log(f"run {run_index} {shape_name(shape)} {p.pid}: our draft step is {form}")
        if eager:
            row(p, "cuda", "eager", True, te, pb, ours_label)
        del fn
        for name, build, same in ANCHORS[p.kernel]:
            at, ap = make_call(p, dev)
            afn = build(at, ap)
            if name in DEVICE_CHECKED:
                try:
                    why = DEVICE_CHECKED[name](at, ap, afn())
                except Exception as e:  # e.g. Inductor failing to compile: the anchor is absent, said so
                    why = f"{type(e).__name__}: {str(e)[-300:]}"
                if why:  # not timed: a ratio to an anchor computing something else would mean nothing
                    log(f"run {run_index} {p.pid}: {name} does not match the reference, not timed: {why}")
                    del afn, at
                    continue
            try:
                ta0 = timing.probe_us(afn)
                ga, na = timing.sizes_for(ta0)
                times = sum((timing.graph_times(afn, ga, na) for _ in range(windows)), [])
            except Exception as e:  # a generated anchor that cannot be captured: absent, said so
                if name not in DEVICE_CHECKED:
                    raise
                log(f"run {run_index} {p.pid}: {name} could not be timed in a CUDA graph: {type(e).__name__}: {e}")
                del afn, at
                continue
            ra = row(p, name, "graph", same, times, ga)
            msg += f"  {name} {float(ra['median_us']):10.2f}"
            del afn, at
            torch.cuda.empty_cache()
        log(msg)
        del tensors
        torch.cuda.empty_cache()
    return rows


def select(points: list[Point], kernels: str | None) -> list[Point]:
    """The points of the comma-separated kernels (spec keys or draft_step); all for None or ""."""
    if not kernels:
        return points
    want = set(kernels.split(","))
    unknown = want - {p.kernel for p in points}
    if unknown:
        raise SystemExit(f"--kernels: no point of kernel(s) {', '.join(sorted(unknown))}")
    return [p for p in points if p.kernel in want]


def warm_anchors(shape: BenchShape, points: list[Point], log=print) -> None:
    """Runs each ``torch.compile`` anchor once per point, in bench order, so that Inductor's on-disk
    cache holds their kernels before the bench's processes start (a development aid: it can run
    beside the extension's build)."""
    import torch

    from eagle4.perf.anchors import ANCHORS, COMPILED
    from eagle4.perf.inputs import make_call

    dev = torch.device("cuda", 0)
    for p in points:
        for name, build, _ in ANCHORS[p.kernel]:
            if name in COMPILED:
                t, q = make_call(p, dev)
                build(t, q)()
                torch.cuda.synchronize()
                log(f"warm {shape_name(shape)} {p.pid} {name}")
                del t
                torch.cuda.empty_cache()


def shape_name(shape: BenchShape) -> str:
    return Path(shape.contract_path).stem


# before/after names its sources by content, not only by path (eagle4.perf.source_successor checks it)
COMPARE_FIELDS = ["contract", "point", "kernel_src", "kernel_src_sha256", "impl", "form", "median_us"]


def _step_form(backend, one_launch: bool | None) -> str:
    """Which form of our draft step ``_ours`` times for this backend."""
    one = step_fused() if one_launch is None else one_launch
    return "one launch" if one and backend.draft_step_op() is not None else "three launches"


def compare_sources(shape: BenchShape, sources: list[str], points: str = "all", rounds: int = 3,
                    log=print, kernels: str | None = None, step_forms: bool = False,
                    anchors: str | None = None) -> list[dict]:
    """Development aid (before/after on one card, one process): our op built from each kernel source,
    graph-timed at every point of the contract, the sources alternating ``rounds`` times per point so
    that drift hits them alike. With ``step_forms`` each source's draft step is also timed in its
    other form (three launches beside the one-launch op); at the points of the kernels in ``anchors``
    (comma-separated, or "all") the point's PyTorch anchors (not the ``torch.compile`` or
    device-checked ones) join the rotation on the same tensors. Returns
    one row per (point, source or anchor, form): the median over the rounds' per-window medians (graph
    mode, the bench's timer)."""
    import torch

    from eagle4.backends.cuda import CudaBackend, source_digest
    from eagle4.perf import timing
    from eagle4.perf.anchors import ANCHORS, COMPILED, DEVICE_CHECKED
    from eagle4.perf.inputs import make_call

    backends = [CudaBackend(kernel_src=src) for src in sources]
    for b in backends:
        b.require()
    digest = {src: source_digest(b.kernel_src) for src, b in zip(sources, backends, strict=True)}  # what each built
    dev = torch.device("cuda", 0)
    rows = []
    for p in select(operating_points(shape, points), kernels):
        tensors, params = make_call(p, dev)
        # (kernel_src, impl, form, fn): ours from each source first, in --src order
        impls = []
        for src, b in zip(sources, backends, strict=True):
            forms = [None]
            if step_forms and p.kernel == "draft_step" and b.draft_step_op() is not None:
                forms = [True, False]
            for one in forms:
                form = _step_form(b, one) if p.kernel == "draft_step" else ""
                impls.append((src, "cuda", form, _ours(p, b, tensors, params, one)))
        held = []
        if anchors and (anchors == "all" or p.kernel in anchors.split(",")):
            for name, build, _same in ANCHORS[p.kernel]:
                if name in COMPILED or name in DEVICE_CHECKED:
                    continue
                at, ap = make_call(p, dev)
                held.append(at)
                impls.append(("", name, "", build(at, ap)))
        g, n = timing.sizes_for(timing.probe_us(impls[0][3]))
        meds: list[list[float]] = [[] for _ in impls]
        for _ in range(rounds):
            for i, (_s, _i, _f, fn) in enumerate(impls):
                meds[i].append(stats.median(timing.graph_times(fn, g, n)))
        res = [stats.median(m) for m in meds]
        for (src, impl, form, _fn), m in zip(impls, res, strict=True):
            rows.append({"contract": shape_name(shape), "point": p.pid, "kernel_src": src,
                         "kernel_src_sha256": digest.get(src, ""), "impl": impl, "form": form, "median_us": f"{m:.4f}"})
        first = [m for (_s, impl, form, _fn), m in zip(impls, res, strict=True)
                 if impl == "cuda" and form in ("", _step_form(backends[0], None))]
        log(f"compare {shape_name(shape):14s} {p.pid:44s} " +
            "  ".join(f"{Path(src).name or impl}{' (' + form + ')' if form else ''} {m:9.2f}"
                      for (src, impl, form, _fn), m in zip(impls, res, strict=True)) +
            (f"  new/old {first[-1] / first[0]:.3f}" if len(sources) > 1 and len(first) > 1 else ""))
        del tensors, impls, held
        torch.cuda.empty_cache()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.perf.kernel_bench")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--contract", action="append", help="contract TOML (repeatable; default contracts/default.toml)")
    r.add_argument("--run-index", type=int, required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--points", default=os.environ.get("EAGLE4_BENCH_POINTS", "all"), choices=("all", "B1"))
    r.add_argument("--eager", action="store_true", help="also time our ops launched eagerly from Python")
    r.add_argument("--kernels", default=os.environ.get("EAGLE4_BENCH_KERNELS"),
                   help="only the points of these kernels (comma-separated spec keys or draft_step)")
    w = sub.add_parser("warm-anchors", help="fill Inductor's on-disk cache with the torch.compile anchors")
    w.add_argument("--contract", action="append")
    w.add_argument("--points", default="all", choices=("all", "B1"))
    s = sub.add_parser("summarize")
    s.add_argument("raw", nargs="+")
    s.add_argument("--contract", action="append")
    s.add_argument("--reports", default=str(DEFAULT_CONTRACT.parents[1] / "reports"))
    s.add_argument("--ncu-csv")
    s.add_argument("--ncu-points", default="B1", choices=("all", "B1"), help="the points the ncu profile probed")
    n = sub.add_parser("ncu-probe", help="each point's op launched once (under ncu, or compute-sanitizer at the "
                       "bench's launch shapes, which the catalog's small cases do not reach)")
    n.add_argument("--contract", action="append")
    n.add_argument("--points", default="all", choices=("all", "B1"))
    n.add_argument("--kernels", help="only the points of these kernels (comma-separated)")
    c = sub.add_parser("compare-src", help="our ops from several kernel sources, one process (before/after)")
    c.add_argument("--contract", action="append")
    c.add_argument("--src", action="append", required=True,
                   help="kernel source, a .cu file or a folder of them (repeatable; first = baseline)")
    c.add_argument("--points", default="all", choices=("all", "B1"))
    c.add_argument("--rounds", type=int, default=3)
    c.add_argument("--kernels", help="only the points of these kernels (comma-separated)")
    c.add_argument("--step-forms", action="store_true",
                   help="also time each source's draft step in its other form (one launch and three launches)")
    c.add_argument("--anchors", metavar="KERNELS",
                   help="also time the PyTorch anchors (not torch.compile's) at these kernels' points (comma-separated or all)")
    c.add_argument("--out", required=True, help="CSV of (contract, point, kernel_src, impl, form, median_us)")
    args = ap.parse_args(argv)
    shapes = [shape_from_contract(c) for c in (args.contract or [DEFAULT_CONTRACT])]
    if args.cmd == "run":
        rows = []
        for sh in shapes:
            rows += run_points(sh, select(operating_points(sh, args.points), args.kernels), args.run_index,
                               eager=args.eager, log=lambda m: print(m, flush=True))
        write_csv(Path(args.out), rows, RAW_FIELDS)
        return 0
    if args.cmd == "compare-src":
        rows = []
        for sh in shapes:
            rows += compare_sources(sh, args.src, args.points, args.rounds, log=lambda m: print(m, flush=True),
                                    kernels=args.kernels, step_forms=args.step_forms, anchors=args.anchors)
        write_csv(Path(args.out), rows, COMPARE_FIELDS)
        return 0
    if args.cmd == "warm-anchors":
        for sh in shapes:
            warm_anchors(sh, operating_points(sh, args.points), log=lambda m: print(m, flush=True))
        return 0
    if args.cmd == "ncu-probe":
        from eagle4.perf.ncu import ncu_probe

        for sh in shapes:
            ncu_probe(sh, select(operating_points(sh, args.points), args.kernels))
        return 0
    from eagle4.perf.kernel_report import write_reports

    try:
        return write_reports(shapes, [row for f in args.raw for row in read_csv(f)], Path(args.reports),
                             Path(args.ncu_csv) if args.ncu_csv else None, args.ncu_points)
    except ValueError as e:  # rows of two cards, an unknown card, mixed forms: refused before any file is written
        print(f"kernel_bench summarize: {', '.join(args.raw)}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
