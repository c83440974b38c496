"""The checkout's commit, in one format for every artifact: the full sha, ``-dirty`` when tracked
files differ from it. ``EAGLE4_GIT_COMMIT`` wins (a copied tree without .git, e.g. on the GPU
machine, must be told); "unknown" when neither says. Never a guess, never ``HEAD``."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


_SHA = re.compile(r"^[0-9a-f]{7,40}(-dirty)?$")


def _given_commit() -> str | None:
    """EAGLE4_GIT_COMMIT when set: a hex sha (``-dirty`` allowed) or "unknown"; ``HEAD`` or any other name
    is refused (a row must say which code ran, and a ref names none once the tree moves on)."""
    v = os.environ.get("EAGLE4_GIT_COMMIT")
    if not v:
        return None
    v = v.strip()
    if v != "unknown" and not _SHA.match(v):
        raise ValueError(f"EAGLE4_GIT_COMMIT={v!r} is not a commit sha: pass `git rev-parse HEAD` (or 'unknown')")
    return v


def git_state(repo: Path | str = REPO, timeout_s: float = 20) -> dict:
    """{"commit": full sha or "unknown", "dirty": bool or "unknown"}."""
    given = _given_commit()
    if given:
        return {"commit": given, "dirty": "unknown (commit given by EAGLE4_GIT_COMMIT)"}
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "HEAD"], capture_output=True,
                             text=True, timeout=timeout_s)
        if out.returncode != 0:
            return {"commit": "unknown", "dirty": "unknown"}
        # the artifact pack (reports/) is what a run writes, not the code it ran: a publishing run
        # (`eagle4 signoff --reports reports`) must not stamp its own rows -dirty
        st = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no", "--", ".",
                             ":(exclude)reports"], capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": "unknown"}
    dirty = bool(st.stdout.strip()) if st.returncode == 0 else "unknown"
    return {"commit": out.stdout.strip(), "dirty": dirty}


def git_commit(repo: Path | str | None = None) -> str:
    """The commit stamped on result rows: ``<sha>`` or ``<sha>-dirty`` (or the environment's)."""
    given = _given_commit()
    if given:
        return given
    g = git_state(repo or REPO)
    return g["commit"] + ("-dirty" if g["dirty"] is True else "")
