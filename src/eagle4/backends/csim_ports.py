"""C-sim port counters: the per-port byte counts a call reports, and the one writer of their CSV.

Every ``PORT(T)`` of the C-sim build counts the bytes its m_axi port moves into a ``PortCounter``
(``hls/include/eagle4_capi.h``). A call's counts are ``{port: (bytes read, bytes written)}``; a run's
rows (``port_rows``) are written to ``csim_port_bytes.csv`` by ``write_port_bytes_csv``, at the path the
caller names (the parity plugin: ``<reports dir>/csim_port_bytes.csv``).
"""

from __future__ import annotations

import csv
import ctypes
from pathlib import Path

from eagle4.report import atomic

PORT_BYTES_COLUMNS = ("kernel", "case_id", "port", "bytes_read", "bytes_written", "provenance")


class PortCounter(ctypes.Structure):
    _fields_ = [("bytes_read", ctypes.c_uint64), ("bytes_written", ctypes.c_uint64)]


def counts(counters) -> list[tuple[int, int]]:
    """(bytes read, bytes written) of each counter of a ``PortCounter`` array."""
    return [(int(c.bytes_read), int(c.bytes_written)) for c in counters]


def by_port(names, counted) -> dict[str, tuple[int, int]]:
    """{port: (bytes read, written)} of counters named ``names`` in order (repeated names add up)."""
    out: dict[str, tuple[int, int]] = {}
    for name, (r, w) in zip(names, counted, strict=False):
        r0, w0 = out.get(name, (0, 0))
        out[name] = (r0 + r, w0 + w)
    return out


def port_rows(kernel: str, case_id: str, port_bytes: dict) -> list[dict]:
    """The CSV rows of one call's ``{port: (bytes read, written)}``."""
    return [{"kernel": kernel, "case_id": case_id, "port": port, "bytes_read": r, "bytes_written": w,
             "provenance": "csim"} for port, (r, w) in port_bytes.items()]


def write_port_bytes_csv(rows, path) -> Path:
    """Write ``rows`` (dicts keyed by PORT_BYTES_COLUMNS; provenance defaults to 'csim') to a fresh CSV at
    ``path``, atomically replaced: one row per (kernel, case_id, port), the last given winning, sorted by
    that key."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    uniq = {(r["kernel"], r["case_id"], r["port"]): r for r in rows}
    with atomic.atomic_open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=PORT_BYTES_COLUMNS)
        w.writeheader()
        for key in sorted(uniq):
            w.writerow({"provenance": "csim", **uniq[key]})
    return path
