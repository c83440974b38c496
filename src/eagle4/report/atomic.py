"""Atomic artifact writes: every writer to reports/ goes through here.

A file is written to a temporary sibling and renamed over the target only when the writer finished
without an exception, so an interrupted or failed run leaves the previous artifact in place and
never a half-written one (a rename within one folder is atomic on POSIX).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", *, newline: str | None = None,
                encoding: str | None = "utf-8") -> Iterator[IO]:
    """``with atomic_open(p, "w", newline="") as fh: ...``: ``fh`` is a temporary file beside ``p`` that
    replaces ``p`` when the block exits normally and is deleted when it raises (``p`` stays as it was)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_open: mode {mode!r}; only 'w' and 'wb' (to append, use append_text)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        kw = {} if "b" in mode else {"newline": newline, "encoding": encoding}
        with os.fdopen(fd, mode, **kw) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():  # keep the target's permissions (mkstemp creates 0600)
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    with atomic_open(path, "w", encoding=encoding) as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


#: how long an append waits for another writer's lock before it gives up with a one-line error
APPEND_LOCK_TIMEOUT_S = 60.0


def append_text(path: str | os.PathLike, text: str, *, header: str = "") -> Path:
    """Append ``text`` (whole lines) to ``path`` atomically: the old content plus the new lines replace the
    file in one rename. A last line cut short by an earlier crash gets its line end first, so it stays one
    (malformed) row and never swallows the first new one; ``header`` is written when the file is new.

    The read-modify-write is serialized across processes by a lock file beside ``path``
    (``.<name>.lock``): concurrent writers (parallel gate runs sharing one ledger) lose no row."""
    from filelock import FileLock, Timeout

    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path}: is a folder, not a file to append to")
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path.with_name(f".{path.name}.lock")), timeout=APPEND_LOCK_TIMEOUT_S)
    try:
        with lock:
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            if old and not old.endswith("\n"):
                old += "\n"
            return write_text(path, (old or header) + text)
    except Timeout:
        raise TimeoutError(f"{path}: another writer held its lock for over {APPEND_LOCK_TIMEOUT_S:g} s") from None


def write_csv(path: str | os.PathLike, fields: list[str], rows: list[dict]) -> Path:
    """Rows as CSV (``fields`` in order, extra keys ignored, floats as ``%.9g``); an empty result is
    refused, never written as a header-only file."""
    import csv

    if not rows:
        raise RuntimeError(f"refusing to write an empty results file {path}")
    with atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.9g}" if isinstance(v, float) else v) for k, v in r.items()})
    return Path(path)
