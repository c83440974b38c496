"""The per-card store of GPU measurements: ``reports/cards/<card slug>/<contract name>/`` holds the latest committed
measurement of one contract on one card, the only committed evidence a CPU cannot regenerate.

A record holds what the GPU benches wrote, unchanged (a raw CSV over 1 MB is committed gzipped, ``*.csv.gz``):

* the kernel bench (``scripts/bench_h100_kernels.sh``): ``cuda_kernel_times_raw.csv`` (one row per run and point),
  ``cuda_kernel_times.csv`` (its summary), ``cuda_kernel_ncu_raw.csv``, the manifest ``h100_env_manifest.txt`` and
  the bench's output ``kernel_bench_log.txt``; a bench of several contracts is filed as one record per contract,
  each with its own contract's rows;
* the end-to-end bench (``scripts/bench_h100_e2e.sh``): ``<prefix>_raw.csv``, ``<prefix>_runs.csv`` and the rest of
  its files (``E2E_PREFIXES``), with its output ``e2e_bench_log.txt``.

A contract's GPU figures are judged on the record of its ``[baseline] card`` (:func:`baseline_dir`). The rules every
record keeps are checked over every record by ``tests/harness/test_card_records.py``: the folder names a card of the
table and a contract; every row measured, on that one card, under that contract's hash; the manifest names the same
card, contract hash and commit; >= the contract's runs per point; the summary's medians, CoV and roofline (at the
card's declared peak) recomputed from the raw rows.

    python -m eagle4.perf.records steps DIR   # a sign-off call's step logs: prints each unclean step, exit 1 if any
"""

from __future__ import annotations

import csv
import gzip
import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from eagle4.cards import Card, card_of_slug
from eagle4.contract import as_contract, baseline_card

REPO = Path(__file__).resolve().parents[3]
CARDS_DIR = Path("reports") / "cards"

KERNEL_RAW = "cuda_kernel_times_raw.csv"
KERNEL_SUMMARY = "cuda_kernel_times.csv"
KERNEL_NCU = "cuda_kernel_ncu_raw.csv"
KERNEL_MANIFEST = "h100_env_manifest.txt"
KERNEL_LOG = "kernel_bench_log.txt"
E2E_LOG = "e2e_bench_log.txt"
E2E_PREFIXES = ("h100_baseline", "h100_e2e")  # bench_h100_e2e.sh: the static-batch run mode's files, the serving modes'
TP_E2E = re.compile(r"^tp(\d+)_e2e$")  # eagle4.workload.tp_run bench: rows of the contract with [model] tp = N


def prefix_tp(prefix: str) -> int | None:
    """The tensor-parallel degree a ``tp<N>_e2e`` record's rows were measured at (their contract hash is the
    contract's with ``[model] tp = N``); None for the single-process benches' prefixes."""
    m = TP_E2E.match(prefix)
    return int(m.group(1)) if m else None

# lines of the kernel manifest (scripts/bench_h100_kernels.sh writes it)
GIT_COMMIT = r"^git_commit: ([0-9a-f]{40})$"
KERNEL_SRC = r"^kernel_src (?:cost_draft_tree_kernel\.cu|cuda) ([0-9a-f]{64})$"  # one file, or our folder
DEVICE = r"^device (.+?) sm \d+"  # torch's name of GPU 0
CONTRACT = r"^contract: contracts/(\S+)\.toml sha256 ([0-9a-f]{64})$"  # one line per contract benched (re.findall)


@dataclass(frozen=True)
class Record:
    card: Card
    contract: str  # the contract's name ([contract] name, the file's stem)
    path: Path

    def file(self, name: str) -> Path | None:
        """``name`` in the record, or its gzipped form; None if neither is there."""
        for p in (self.path / name, self.path / f"{name}.gz"):
            if p.is_file():
                return p
        return None

    def need(self, name: str) -> Path:
        p = self.file(name)
        if p is None:
            raise FileNotFoundError(f"{self.path}: no {name} (nor {name}.gz)")
        return p

    @property
    def has_kernel_bench(self) -> bool:
        return self.file(KERNEL_RAW) is not None

    @property
    def e2e_prefixes(self) -> list[str]:
        tp = sorted({p for p in (n.name.partition("_raw.csv")[0] for n in self.path.glob("tp*_e2e_raw.csv*"))
                     if TP_E2E.match(p)})
        return [p for p in E2E_PREFIXES if self.file(f"{p}_raw.csv") is not None] + tp


def record_dir(card: Card, contract_name: str, root: Path = REPO) -> Path:
    return Path(root) / CARDS_DIR / card.slug / contract_name


def baseline_dir(contract, root: Path = REPO) -> Path:
    """Where the record of the contract's ``[baseline] card`` lives (whether or not it exists yet)."""
    c = as_contract(contract)
    card = baseline_card(c)  # ContractError where the contract names none
    return record_dir(card, c.contract.name, root)


def baseline_file(contract, name: str, root: Path = REPO) -> Path:
    """``name`` (or its gzipped form, where that is what is committed) in the record of the contract's baseline card."""
    d = baseline_dir(contract, root)
    return next((p for p in (d / name, d / f"{name}.gz") if p.is_file()), d / name)


def all_records(root: Path = REPO) -> list[Record]:
    """Every record of the store; ValueError (naming it) for a folder that names no card of the table."""
    out = []
    for d in sorted((Path(root) / CARDS_DIR).glob("*/*")):
        if d.is_dir():
            out.append(Record(card_of_slug(d.parent.name), d.name, d))
    return out


def read_csv(path: Path) -> list[dict]:
    """The rows of a CSV, gzipped or not; ``#`` lines before the header are skipped."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        lines = (ln for ln in f if not ln.startswith("#"))
        return list(csv.DictReader(lines))


def manifest_field(path: Path, pattern: str) -> str | None:
    """The first group of ``pattern`` on a line of the manifest at ``path``; None where no line matches."""
    m = re.search(pattern, Path(path).read_text(errors="replace"), re.M)
    return m.group(1) if m else None


# -- the independent floor (eagle4.workload.floor) of an e2e record's points. Every row of a points file carries its
# card and a finite floor, unless the bench that wrote the record had no floor yet: the bench's manifest (written by
# it, never edited) records the floor's measured ceilings since the floor exists (commit 694fe80), so a manifest
# without them says the record was measured before the floor. Such a record is shown as BEFORE_THE_FLOOR and is no
# baseline a gate passes on (tests/harness/test_card_e2e_records.py).
E2E_POINTS_GLOB = "*e2e*_points.csv"  # h100_e2e_points.csv, h200_e2e_partial_points.csv, ...
FLOOR_FIELD = "floor_step_s"
CARD_FIELD = "card"
FLOOR_ERA_FIELD = "measured_ceilings"
BEFORE_THE_FLOOR = "no floor (measured before the floor existed)"


def e2e_points_files(root: Path = REPO) -> list[Path]:
    """Every committed e2e points file of the store (plain or gzipped)."""
    d = Path(root) / CARDS_DIR
    return sorted({*d.glob(f"*/*/{E2E_POINTS_GLOB}"), *d.glob(f"*/*/{E2E_POINTS_GLOB}.gz")})


def points_manifest(points: Path) -> Path:
    """The manifest the bench wrote beside ``points`` (``<prefix>_manifest.json``)."""
    prefix = Path(points).name.removesuffix(".gz").removesuffix("_points.csv")
    return Path(points).with_name(f"{prefix}_manifest.json")


def measured_before_floor(points: Path) -> bool:
    """Whether the bench that wrote ``points`` had no floor: its manifest records no floor ceilings."""
    m = points_manifest(points)
    if not m.is_file():
        raise FileNotFoundError(f"{m}: missing: the manifest says which bench wrote {Path(points).name}")
    return FLOOR_ERA_FIELD not in json.loads(m.read_text())


def floor_or_card_missing(points: Path) -> list[str]:
    """One line per row of ``points`` without its card or a finite, positive floor, naming file, row and field."""
    out = []
    for i, r in enumerate(read_csv(points), start=1):
        where = f"{points}: data row {i} ({r.get('point') or '?'})"
        if not (r.get(CARD_FIELD) or "").strip():
            out.append(f"{where}: {CARD_FIELD} is missing")
        try:
            floor = float(r.get(FLOOR_FIELD) or "nan")
        except ValueError:
            floor = math.nan
        if not (math.isfinite(floor) and floor > 0):
            out.append(f"{where}: {FLOOR_FIELD} = {r.get(FLOOR_FIELD)!r}, not a finite floor")
    return out


# -- a GPU sign-off call's step logs (scripts/h100_kernel_signoff.sh writes one <step>_log.txt a step, each ending in
# "exit N"). A step is clean when its last exit line says 0 and its sanitizer summary, if any, counts no error and no
# hazard; a step redone in a second call (<step>_second_call_log.txt) is clean when that log is. signoff_log.txt and
# logs with no exit line are not steps.
SECOND_CALL = "_second_call_log.txt"
_EXIT = re.compile(r"^exit (\d+)", re.M)
_MEMCHECK = re.compile(r"ERROR SUMMARY: (\d+) error")
_RACECHECK = re.compile(r"RACECHECK SUMMARY: (\d+) hazard")


def _verdict(log: Path) -> tuple[bool, str | None]:
    """(whether the log is a step's: it has an exit line; why that step did not finish clean, None if it did)."""
    text = log.read_text(errors="replace")
    exits = _EXIT.findall(text)
    if not exits:
        return False, None
    found = [f"{n} {what}" for rx, what in ((_MEMCHECK, "memcheck errors"), (_RACECHECK, "racecheck hazards"))
             for n in rx.findall(text) if int(n)]
    if exits[-1] != "0":
        found.insert(0, f"exit {exits[-1]}" + (" (its time box ran out)" if exits[-1] == "124" else ""))
    return True, ", ".join(found) or None


def step_verdict(log: Path) -> str | None:
    """Why the step of this log did not finish clean (None: clean; also None for a log with no exit line)."""
    return _verdict(log)[1]


def unclean_steps(folder: Path) -> list[str]:
    """'<log>: why' for every step of a sign-off call's folder that did not finish clean and was not redone clean."""
    out = []
    for log in sorted(Path(folder).glob("*_log.txt")):
        if log.name == "signoff_log.txt" or log.name.endswith(SECOND_CALL):
            continue
        why = step_verdict(log)
        if why is None:
            continue
        redo = log.with_name(log.name[: -len("_log.txt")] + SECOND_CALL)
        if redo.exists() and _verdict(redo) == (True, None):
            continue
        out.append(f"{log.name}: {why}")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "steps" or not Path(args[1]).is_dir():
        print("usage: python -m eagle4.perf.records steps DIR (a sign-off call's --out directory)", file=sys.stderr)
        return 2
    bad = unclean_steps(Path(args[1]))
    for line in bad:
        print(f"{args[1]}: step not clean: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
