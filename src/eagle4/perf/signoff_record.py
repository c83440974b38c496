"""What a sign-off call's step logs say (``scripts/h100_kernel_signoff.sh`` writes one ``<step>_log.txt`` a step,
each ending in ``exit N``): the steps that did not finish clean, so that neither the script's own end nor a
committed record can pass over a step its time box stopped (exit 124) or a sanitizer that found something.

A step counts as clean when its last ``exit`` line says 0 and its sanitizer summary, if it has one, counts no
error and no hazard. A step redone in a second call is recorded beside it as ``<step>_second_call_log.txt``;
the step is clean when that log is. ``signoff_log.txt`` (the script's own output, which repeats its steps'
tails) and logs with no ``exit`` line (the smoke test's) are not steps here.

    python -m eagle4.perf.signoff_record DIR   # prints each unclean step; exit 1 if there is one
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

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


def unclean_steps(record: Path) -> list[str]:
    """'<log>: why' for every step of a sign-off record that did not finish clean and was not redone clean."""
    out = []
    for log in sorted(record.glob("*_log.txt")):
        if log.name == "signoff_log.txt" or log.name.endswith(SECOND_CALL):
            continue
        why = step_verdict(log)
        if why is None:
            continue
        redo = log.with_name(log.name[: -len("_log.txt")] + SECOND_CALL)
        if redo.exists() and _verdict(redo) == (True, None):  # redone, and clean
            continue
        out.append(f"{log.name}: {why}")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python -m eagle4.perf.signoff_record DIR (a sign-off call's --out directory)", file=sys.stderr)
        return 2
    bad = unclean_steps(Path(args[0]))
    for line in bad:
        print(f"{args[0]}: step not clean: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
