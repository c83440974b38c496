"""Numeric settings taken from the environment (the timeouts and bounds of waits): one parser, whose error names
the variable and its value. Callers read a setting where they use it, so a bad value fails that use with one
line (the CLI prints ValueErrors as such) instead of failing every import of the module."""

from __future__ import annotations

import math
import os


def seconds(name: str, default: float) -> float:
    """Environment variable ``name`` as seconds, ``default`` where it is unset or blank. The value must be a
    positive, finite number: every wait the harness makes is bounded, so "inf" is refused like "soon" or "0"."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return float(default)
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not 0 < v < math.inf:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {raw!r}")
    return v
