"""Deterministic kernel cases (the catalog) and the dump file format."""

from __future__ import annotations

import itertools
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


# The §13 matrix of the two draft kernels. K1 and K2 share it so that every K1 shape has its K2 successor.
DRAFT_MATRIX_B = (1, 7, 128)
DRAFT_MATRIX_KW = ((8, 1), (8, 3), (8, 8), (10, 6), (1, 1), (4, 4))
DRAFT_MATRIX_SEEDS = (0, 1, 2)


def draft_matrix() -> Iterator[tuple[int, int, int, int, int]]:
    """The draft matrix points ``(i, B, K, W, s)`` in catalog order: batch size, then (K, W), then the
    seed variant ``s``; point ``i`` draws from seed ``5000 + i``."""
    points = itertools.product(DRAFT_MATRIX_B, DRAFT_MATRIX_KW, DRAFT_MATRIX_SEEDS)
    for i, (B, (K, W), s) in enumerate(points):
        yield i, B, K, W, s
