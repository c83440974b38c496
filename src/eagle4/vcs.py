"""The checkout's commit, in one format for every artifact: the full sha, ``-dirty`` when tracked
files differ from it. ``EAGLE4_GIT_COMMIT`` wins (a copied tree without .git, e.g. on the GPU
machine, must be told); "unknown" when neither says. Never a guess, never ``HEAD``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def git_state(repo: Path | str = REPO, timeout_s: float = 20) -> dict:
    """{"commit": full sha or "unknown", "dirty": bool or "unknown"}."""
    if os.environ.get("EAGLE4_GIT_COMMIT"):
        return {"commit": os.environ["EAGLE4_GIT_COMMIT"], "dirty": "unknown (commit given by EAGLE4_GIT_COMMIT)"}
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "HEAD"], capture_output=True,
                             text=True, timeout=timeout_s)
        if out.returncode != 0:
            return {"commit": "unknown", "dirty": "unknown"}
        st = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.SubprocessError):
        return {"commit": "unknown", "dirty": "unknown"}
    dirty = bool(st.stdout.strip()) if st.returncode == 0 else "unknown"
    return {"commit": out.stdout.strip(), "dirty": dirty}


def git_commit(repo: Path | str | None = None) -> str:
    """The commit stamped on result rows: ``<sha>`` or ``<sha>-dirty`` (or the environment's)."""
    if os.environ.get("EAGLE4_GIT_COMMIT"):
        return os.environ["EAGLE4_GIT_COMMIT"]
    g = git_state(repo or REPO)
    return g["commit"] + ("-dirty" if g["dirty"] is True else "")
