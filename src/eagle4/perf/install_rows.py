"""Install a sign-off call's bench as the committed H100 kernel rows: the step after
``scripts/h100_kernel_signoff.sh``, so that every install files the same things in the same places.

    python -m eagle4.perf.install_rows SIGNOFF_DIR [--log FILE] [--repo DIR]

``SIGNOFF_DIR`` is the script's ``--out`` folder; ``--log`` its own output (kept as the record's ``signoff_log.txt``).
Everything is checked before anything is written, and a failed check changes nothing:

* the record's steps are clean (``signoff_record``) and its bench finished (``bench_log.txt`` ends in ``exit 0``);
* the bench measured our source, not the baseline it falls back to (``bench_source.txt``), and its manifest names the
  kernel source in the repository now (sha256 of ``cuda/cost_draft_tree_kernel.cu``) and a commit;
* its rows come from the baseline card, the H100 SXM, alone (``eagle4.perf.card``): ``reports/`` holds no other card's
  rows, whose roofline and anchors are another card's (keep such a bench under ``reports/cards/``);
* the committed rows are another commit's, and neither that commit's ``bench/`` folder nor this one's record exists.

Then, per file, each write atomic (``eagle4.report.atomic``): the committed rows (``ROW_FILES``) are copied into
``reports/h100_parity/<their commit>/bench/`` and replaced by the new ones; the bench's derived reports replace
theirs; the step logs go to ``reports/h100_parity/<commit>/``; the before/after (``compare_src*``) to
``reports/kernel_before_after/compare_src_<commit>*``. An interrupted install can leave some rows old and some new,
which ``tests/harness/test_committed_h100_results.py`` fails on (their commits differ): restore ``reports/`` from git
and run it again. The READMEs and the statements in that test are the author's to update;
``tests/harness/test_readme_figures.py`` then names every figure the READMEs quote that the new rows do not give.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from eagle4.contract import sha256_file
from eagle4.perf import h100_manifest
from eagle4.perf.card import BASELINE, UnknownCard, bench_card
from eagle4.perf.rows import read_csv
from eagle4.perf.signoff_record import unclean_steps
from eagle4.report.atomic import write_bytes

KERNEL_SRC = "cuda/cost_draft_tree_kernel.cu"
MANIFEST = h100_manifest.NAME
BENCH_LOG = "h100_kernel_bench_log.txt"
# the committed rows: what the bench measured and where (the other reports derive from them); the bench writes all
# but the log into its reports/ folder (its log is the sign-off folder's bench_log.txt)
BENCH_ROWS = ("cuda_kernel_times.csv", "cuda_kernel_times_raw.csv", "cuda_kernel_ncu_raw.csv", MANIFEST)
ROW_FILES = (*BENCH_ROWS, BENCH_LOG)
DERIVED = ("cuda_bytes_per_token.csv", "hotspots_ranked.md", "kernel_anchors.md")
RECORD_FILES = ("bench_source.txt", "build_new.txt", "build_old.txt")  # beside every *_log.txt but compare_src's


class InstallError(ValueError):
    """A check failed: the message names the file and what it says."""


@dataclass(frozen=True)
class Plan:
    commit: str  # the new rows' commit (7 hex digits)
    old_commit: str  # the committed rows' commit (7 hex digits)
    copies: tuple[tuple[Path, Path], ...]  # (from, to), in order


def _field(path: Path, pattern: str, what: str) -> str:
    if not path.is_file():
        raise InstallError(f"{path}: missing")
    value = h100_manifest.field(path, pattern)
    if value is None:
        raise InstallError(f"{path}: names no {what}")
    return value


def plan(signoff: Path, repo: Path, log: Path | None = None) -> Plan:
    """What the install would copy where, after every check (InstallError on the first that fails)."""
    reports, new = repo / "reports", signoff / "reports"
    bad = unclean_steps(signoff)
    if bad:
        raise InstallError(f"{signoff}: steps not clean: {'; '.join(bad)}")
    bench_log = signoff / "bench_log.txt"
    if not bench_log.is_file() or not bench_log.read_text(errors="replace").rstrip().endswith("exit 0"):
        raise InstallError(f"{bench_log}: the bench did not finish (no closing 'exit 0')")
    have = sha256_file(repo / KERNEL_SRC)
    benched = (signoff / "bench_source.txt").read_text().split() if (signoff / "bench_source.txt").is_file() else []
    if benched[:3] != [KERNEL_SRC, "sha256", have]:
        raise InstallError(f"{signoff / 'bench_source.txt'}: the bench measured {' '.join(benched[:3]) or 'nothing'}, "
                           f"not {KERNEL_SRC} as it is now (sha256 {have[:12]})")
    src = _field(new / MANIFEST, h100_manifest.KERNEL_SRC, "kernel source")
    if src != have:
        raise InstallError(f"{new / MANIFEST}: kernel_src {src[:12]}, but {KERNEL_SRC} is {have[:12]}")
    commit = _field(new / MANIFEST, h100_manifest.GIT_COMMIT, "git_commit")[:7]
    old = _field(reports / MANIFEST, h100_manifest.GIT_COMMIT, "git_commit")[:7]
    if old == commit:
        raise InstallError(f"{reports / MANIFEST}: the committed rows are already {commit}'s")
    for d in (reports / "h100_parity" / old / "bench", reports / "h100_parity" / commit):
        if d.exists():
            raise InstallError(f"{d}: exists already (an install ran before?)")
    for name in BENCH_ROWS + DERIVED:
        if not (new / name).is_file():
            raise InstallError(f"{new / name}: missing")
    times = new / "cuda_kernel_times.csv"
    try:
        card = bench_card(read_csv(times))
    except UnknownCard as e:
        raise InstallError(f"{times}: device: {e}") from None
    if card != BASELINE:
        raise InstallError(f"{times}: device: the rows are the {card.name}'s, not the baseline card's ({BASELINE.name}): "
                           "reports/ holds the baseline's rows alone; keep this bench under reports/cards/")
    if log is not None and not log.is_file():
        raise InstallError(f"{log}: missing")
    keep = reports / "h100_parity" / old / "bench"
    copies = [(reports / n, keep / n) for n in ROW_FILES if (reports / n).is_file()]
    copies += [(new / n, reports / n) for n in BENCH_ROWS + DERIVED] + [(bench_log, reports / BENCH_LOG)]
    record = reports / "h100_parity" / commit
    steps = [p for p in sorted(signoff.glob("*_log.txt")) if not p.name.startswith("compare_src")]
    copies += [(p, record / p.name) for p in steps + [signoff / n for n in RECORD_FILES] if p.is_file()]
    if log is not None:
        copies.append((log, record / "signoff_log.txt"))
    ba = reports / "kernel_before_after"
    copies += [(p, ba / p.name.replace("compare_src", f"compare_src_{commit}", 1))
               for p in sorted(signoff.glob("compare_src*")) if p.suffix in (".csv", ".txt")]
    return Plan(commit, old, tuple(copies))


def install(p: Plan) -> None:
    # the committed rows are copied away first: no old row is overwritten before its copy is in place
    for src, dst in p.copies:
        write_bytes(dst, src.read_bytes())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eagle4.perf.install_rows", description=__doc__.split("\n\n")[0])
    ap.add_argument("signoff", type=Path, help="scripts/h100_kernel_signoff.sh's --out folder")
    ap.add_argument("--log", type=Path, help="the script's own output (kept as signoff_log.txt)")
    ap.add_argument("--repo", type=Path, default=Path.cwd(), help="the repository (default: the current folder)")
    args = ap.parse_args(argv)
    try:
        p = plan(args.signoff, args.repo, args.log)
    except (InstallError, OSError) as e:
        print(f"install_rows: {e}", file=sys.stderr)
        return 1
    install(p)
    for src, dst in p.copies:
        print(f"{src} -> {dst.relative_to(args.repo) if dst.is_relative_to(args.repo) else dst}")
    print(f"installed {p.commit}'s rows; {p.old_commit}'s kept in reports/h100_parity/{p.old_commit}/bench/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
