"""Deterministic kernel cases (the catalog) and the dump file format."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    """One kernel invocation: scalars, inputs and prior buffer contents (sentinels included)."""

    kernel: str  # spec key
    case_id: str  # unique, stable: "<kernel>/<name>"
    params: dict
    inputs: dict[str, np.ndarray]
    seed: int | None = None
    tags: tuple[str, ...] = ()
    note: str = ""
    expected: dict[str, np.ndarray] | None = None  # set for dumps and goldens
    meta: dict = field(default_factory=dict)  # provenance of a loaded dump


# The §13 matrix of K1 and K2: one grid of batch, (K, W) and seed index.
MATRIX_B = (1, 7, 128)
MATRIX_KW = ((8, 1), (8, 3), (8, 8), (10, 6), (1, 1), (4, 4))
MATRIX_SEEDS = (0, 1, 2)


def matrix_points() -> Iterator[tuple[int, int, int, int, int, int]]:
    """(B, K, W, s, seed, n) of every §13 matrix point in catalog order: ``seed`` = 5000 + the point's
    index, ``n`` = index + 1."""
    n = 0
    for B in MATRIX_B:
        for K, W in MATRIX_KW:
            for s in MATRIX_SEEDS:
                n += 1
                yield B, K, W, s, 4999 + n, n
