"""Bounds of an ``.npz`` read, checked on the zip directory and each ``.npy`` header before anything is
inflated or allocated: an entry's declared uncompressed size under a limit, and a header whose shape
claims no more bytes than its entry holds (an 8 PiB shape in a 1 kB file). Python's zipfile stops
inflating an entry at its declared size, so the directory bounds the work."""

from __future__ import annotations

import math
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np


def npz_violations(path: str | Path, max_entry_bytes: int) -> Iterator[tuple[str, str]]:
    """(array name, reason) of each entry that breaks a bound; npy header errors propagate, an entry's bad CRC is
    left to the read of that entry."""
    with zipfile.ZipFile(path) as zf:
        for zi in zf.infolist():
            name = zi.filename.removesuffix(".npy")
            if zi.file_size > max_entry_bytes:
                yield name, f"{zi.file_size} bytes uncompressed, over the {max_entry_bytes} byte limit of an entry"
                continue
            try:
                with zf.open(zi) as f:
                    version = np.lib.format.read_magic(f)
                    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) \
                        else np.lib.format.read_array_header_2_0
                    shape, _, dtype = reader(f)
            except zipfile.BadZipFile:  # a small entry's CRC is checked as its header is read: the read of
                continue  # that entry reports it, naming the entry (its size bound held above)
            need = math.prod(shape) * dtype.itemsize
            if need > zi.file_size:
                yield name, f"header claims shape {shape} of {dtype} ({need} bytes), the entry holds {zi.file_size}"


__all__ = ["npz_violations"]
