"""Deterministic kernel cases (the catalog) and the dump file format."""

from __future__ import annotations

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
