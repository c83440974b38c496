#!/usr/bin/env python3
"""One-shot H100 dump: every catalog case run on the cuda backend, written as a dump with provenance.

    python scripts/dump_h100_goldens.py --out DIR [--select-mb 15] [--tar FILE] [--compare]
        [--no-dump] [--skip-large] [--kernel K] [--max-per-kernel N] [--git-commit SHA]

* every case of ``eagle4.cases.catalog.all_cases()`` runs on the GPU through ``CudaBackend``; cases
  the kernel refuses (PreconditionError) have no outputs and are not dumped;
* ``--compare`` also compares each case with the reference (CPU) and prints a verdict line;
* ``--select-mb`` keeps a subset under that many MB for committing (tests/goldens/h100/): cases
  tagged ``large`` are skipped first, then each kernel's largest dumps until the total fits; the
  selection and what was left out (and why) go to ``MANIFEST.json`` beside the dumps;
* ``--tar`` packs the selected dumps and the manifest into one tar file (the device returns few files);
* ``--no-dump`` only runs the cases (used under compute-sanitizer);
* ``--max-per-kernel N`` keeps each kernel's first N cases in catalog order (a bounded set for
  ``compute-sanitizer --tool racecheck``, whose per-launch cost is high).
Producer metadata: backend, provenance, GPU name, driver, CUDA, torch, nvcc, kernel source hash, git commit.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))


def safe_name(case_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "__", case_id)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--select-mb", type=float, default=15.0)
    ap.add_argument("--tar", default=None)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--no-dump", action="store_true")
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--kernel", default=None, help="only these kernels (spec keys, comma-separated)")
    ap.add_argument("--max-per-kernel", type=int, default=None, help="only each kernel's first N cases")
    ap.add_argument("--git-commit", default=os.environ.get("EAGLE4_GIT_COMMIT"))
    ap.add_argument("--kernel-src", default=None)
    args = ap.parse_args(argv)

    from eagle4.backends.cuda import CudaBackend
    from eagle4.cases.catalog import all_cases
    from eagle4.cases.dump import save_dump
    from eagle4.parity import judge, reference_outcome, run_case
    from eagle4.report import atomic

    backend = CudaBackend(kernel_src=args.kernel_src)
    backend.require()
    info = backend.device_info()
    commit = args.git_commit
    if not commit:
        from eagle4.report.env_manifest import git_state
        commit = git_state()["commit"]
    producer = {"backend": backend.name, "provenance": backend.provenance, "device": info.device,
                **info.details, "git": {"commit": commit, "dirty": os.environ.get("EAGLE4_GIT_DIRTY", "unknown")},
                "git_commit": commit,
                "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    cases = all_cases(include_large=not args.skip_large)
    if args.kernel:
        cases = [c for c in cases if c.kernel in args.kernel.split(",")]
    if args.max_per_kernel is not None:
        seen: dict[str, int] = {}
        kept = []
        for c in cases:
            seen[c.kernel] = seen.get(c.kernel, 0) + 1
            if seen[c.kernel] <= args.max_per_kernel:
                kept.append(c)
        cases = kept
    out = Path(args.out) if args.out else None
    written: list[dict] = []
    refused = mismatched = 0
    t0 = time.time()
    for c in cases:
        outcome = run_case(backend, c)
        verdict = ""
        if args.compare:
            v = judge(c, reference_outcome(c), outcome)
            verdict = "PASS" if v.ok else "FAIL"
            if not v.ok:
                mismatched += 1
                print(v.report[:3000], flush=True)
        if outcome.error:
            refused += 1
            print(f"refused {c.case_id}: {outcome.error[:200]} {verdict}", flush=True)
            continue
        if out is not None and not args.no_dump:
            path = out / f"{safe_name(c.case_id)}.npz"
            save_dump(path, c, outcome.outputs, producer)
            written.append({"case_id": c.case_id, "kernel": c.kernel, "file": path.name,
                            "bytes": path.stat().st_size, "tags": list(c.tags)})
    print(f"ran {len(cases)} cases in {time.time() - t0:.1f}s on {info.device}: {refused} refused by preconditions, "
          f"{mismatched} mismatching the reference" if args.compare else
          f"ran {len(cases)} cases in {time.time() - t0:.1f}s on {info.device}: {refused} refused", flush=True)
    if out is None or args.no_dump:
        return 1 if mismatched else 0

    # selection for committing
    budget = args.select_mb * 1e6
    keep = [w for w in written if "large" not in w["tags"]]
    skipped = [dict(w, reason="tagged large") for w in written if "large" in w["tags"]]
    total = sum(w["bytes"] for w in keep)
    by_kernel: dict[str, list[dict]] = {}
    for w in keep:
        by_kernel.setdefault(w["kernel"], []).append(w)
    while total > budget:
        # drop the largest dump of the kernel that holds the most bytes, keeping >= 3 per kernel
        k = max(by_kernel, key=lambda k: (sum(w["bytes"] for w in by_kernel[k]) if len(by_kernel[k]) > 3 else -1))
        if len(by_kernel[k]) <= 3:
            break
        big = max(by_kernel[k], key=lambda w: w["bytes"])
        by_kernel[k].remove(big)
        keep.remove(big)
        skipped.append(dict(big, reason=f"size budget {args.select_mb} MB"))
        total -= big["bytes"]
    manifest = {"producer": producer, "selected_bytes": total, "budget_mb": args.select_mb,
                "selected": sorted(keep, key=lambda w: w["case_id"]),
                "skipped": sorted(skipped, key=lambda w: w["case_id"]), "n_written": len(written)}
    atomic.write_text(out / "MANIFEST.json", json.dumps(manifest, indent=1, sort_keys=True))
    print(f"selected {len(keep)} of {len(written)} dumps, {total / 1e6:.2f} MB; skipped {len(skipped)}")
    if args.tar:
        with tarfile.open(args.tar, "w") as tf:
            tf.add(out / "MANIFEST.json", arcname="MANIFEST.json")
            for w in keep:
                tf.add(out / w["file"], arcname=w["file"])
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
