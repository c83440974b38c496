"""A run's staging folder and how it is published, all or nothing.

A run (``eagle4 signoff``) reads the committed evidence (H100 baselines, acceptance impact, budget
sheets) and writes its own artifacts beside it. It does so in a staging folder: a copy of the
committed pack that nothing else reads. Only after every step finished is the result published:

* as a pack (``runs/signoff-<time>/``): the files the run wrote (new or changed against the copy)
  plus ``index.json`` naming each file (sha256, bytes) and the verdict; the staging folder becomes the
  pack by one rename;
* into a pack folder such as the committed ``reports/`` (``--reports reports``): each written file
  replaces its target by a rename (:mod:`eagle4.report.atomic`), with SIGINT/SIGTERM held back until
  the last one is in place.

An interrupted run publishes nothing: its staging folder is kept as ``<name>.interrupted/`` with an
``INTERRUPTED`` note, and the target folder stays byte-identical.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

from eagle4.report import atomic

INDEX = "index.json"
INTERRUPTED = "INTERRUPTED"


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with p.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot(folder: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under ``folder`` (dotfiles and dot-folders left out)."""
    folder = Path(folder)
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = _sha256(p)
    return out


def working_copy(committed: Path, dest: Path) -> Path:
    """Copy ``committed`` (dotfiles left out) to ``dest`` and return ``dest``; an empty ``dest``
    when nothing is committed. ``dest`` must not exist yet: a run never writes into another's pack."""
    if committed.is_dir():
        shutil.copytree(committed, dest, ignore=shutil.ignore_patterns(".*"))
    else:
        dest.mkdir(parents=True)
    return dest


def written(staging: Path, before: dict[str, str]) -> dict[str, str]:
    """The files the run wrote: new under ``staging`` or changed against ``before`` (path -> sha256)."""
    now = snapshot(staging)
    return {rel: sha for rel, sha in now.items() if before.get(rel) != sha}


def _prune(staging: Path, keep: dict[str, str]) -> None:
    """Remove from ``staging`` every file the run did not write, then the folders left empty."""
    for p in sorted(staging.rglob("*"), key=lambda q: len(q.parts), reverse=True):
        rel = p.relative_to(staging).as_posix()
        if p.is_file() or p.is_symlink():
            if rel not in keep:
                p.unlink()
        elif p.is_dir() and not any(p.iterdir()):
            p.rmdir()


def publish_pack(staging: Path, final: Path, before: dict[str, str], index: dict) -> Path:
    """Turn ``staging`` into the pack ``final``: only the files the run wrote, plus ``index.json``
    (``index`` and, per file, sha256 and bytes); one rename publishes it."""
    keep = written(staging, before)
    _prune(staging, keep)
    files = [{"path": rel, "sha256": sha, "bytes": (staging / rel).stat().st_size} for rel, sha in sorted(keep.items())]
    atomic.write_text(staging / INDEX, json.dumps({**index, "files": files}, indent=2) + "\n")
    if final.exists():
        raise FileExistsError(f"{final}: a pack of that name exists; a run never writes into another's pack")
    os.rename(staging, final)
    return final


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait (are delivered after the block) while the block runs."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def publish_into(staging: Path, target: Path, before: dict[str, str]) -> list[str]:
    """Replace, in ``target``, every file the run wrote in ``staging`` (each by a rename of a finished
    temporary sibling), with SIGINT/SIGTERM held until all are in place; the staging folder is removed."""
    keep = written(staging, before)
    with signals_held():
        for rel in sorted(keep):
            dest = target / rel
            if dest.is_dir():
                raise IsADirectoryError(f"{dest}: is a folder; cannot publish {rel} there")
            with atomic.atomic_open(dest, "wb") as fh, (staging / rel).open("rb") as src:
                shutil.copyfileobj(src, fh)
        shutil.rmtree(staging)
    return sorted(keep)


def mark_interrupted(staging: Path, before: dict[str, str], why: str) -> Path:
    """Keep what an interrupted run wrote as ``<staging>.interrupted`` (only its own files, an
    ``INTERRUPTED`` note saying why); nothing is published."""
    _prune(staging, written(staging, before))
    atomic.write_text(staging / INTERRUPTED, f"this run was interrupted and published nothing: {why}\n")
    dest = staging.with_name(staging.name.removesuffix(".staging") + ".interrupted")
    os.rename(staging, dest)
    return dest
