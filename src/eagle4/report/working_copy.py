"""A working copy of the committed artifact pack: runs read the committed evidence (H100 baselines,
acceptance impact, budget sheets) and write their own artifacts beside it, without touching the
committed ``reports/``. Publishing into ``reports/`` is always an explicit choice of the caller."""

from __future__ import annotations

import shutil
from pathlib import Path


def working_copy(committed: Path, dest: Path) -> Path:
    """Copy ``committed`` (dotfiles left out) to ``dest`` and return ``dest``; an empty ``dest``
    when nothing is committed. ``dest`` must not exist yet: a run never writes into another's pack."""
    if committed.is_dir():
        shutil.copytree(committed, dest, ignore=shutil.ignore_patterns(".*"))
    else:
        dest.mkdir(parents=True)
    return dest
