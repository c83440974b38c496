"""Statistics of repeated runs: median, percentiles and coefficient of variation (numpy)."""

from __future__ import annotations

import numpy as np


def cov(values) -> float:
    """Sample coefficient of variation (std with ddof=1 over the mean)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        raise ValueError("CoV needs at least two runs")
    m = v.mean()
    if m == 0:
        raise ValueError("CoV of values with mean 0 is undefined")
    return float(v.std(ddof=1) / abs(m))


def summarize(values) -> dict:
    v = np.asarray(values, dtype=np.float64)
    return {"n": int(v.size), "median": float(np.median(v)), "p50": float(np.percentile(v, 50)),
            "p99": float(np.percentile(v, 99)), "min": float(v.min()), "max": float(v.max()),
            "mean": float(v.mean()), "cov": cov(v) if v.size >= 2 else float("nan")}
