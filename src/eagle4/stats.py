"""Statistics of repeated measurements, in one place: CoV, percentiles, medians, the paired
bootstrap. Thin, documented wrappers over numpy/scipy so every report computes a number the same way.

* :func:`cov`: sample coefficient of variation, ``scipy.stats.variation(ddof=1)``;
* :func:`percentile`: ``np.percentile`` (linear interpolation), NaN for no values;
* :func:`summarize`: n, median, p50, p99, min, max, mean, CoV of one sample;
* :func:`paired_bootstrap_ci`: a percentile interval of a statistic of paired samples,
  ``scipy.stats.bootstrap(paired=True)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as _st


def cov(values) -> float:
    """Sample coefficient of variation (std with ddof=1 over the mean's magnitude)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2:
        raise ValueError("CoV needs at least two runs")
    m = v.mean()
    if m == 0:
        raise ValueError("CoV of values with mean 0 is undefined")
    return float(abs(_st.variation(v, ddof=1)))


def cov_or_nan(values) -> float:
    """:func:`cov`, or NaN where it is undefined (fewer than two values, mean 0)."""
    try:
        return cov(values)
    except ValueError:
        return float("nan")


def percentile(values, q) -> float:
    """The ``q``-th percentile (numpy's linear interpolation); NaN for no values."""
    v = np.asarray(values, dtype=np.float64)
    return float(np.percentile(v, q)) if v.size else float("nan")


def median(values) -> float:
    v = np.asarray(values, dtype=np.float64)
    return float(np.median(v)) if v.size else float("nan")


def summarize(values) -> dict:
    v = np.asarray(values, dtype=np.float64)
    return {"n": int(v.size), "median": median(v), "p50": percentile(v, 50), "p99": percentile(v, 99),
            "min": float(v.min()), "max": float(v.max()), "mean": float(v.mean()), "cov": cov_or_nan(v)}


def paired_bootstrap_ci(statistic: Callable[..., np.ndarray], samples: Sequence, *, confidence: float = 0.95,
                        n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*samples, axis=-1)`` resampling the *pairs*
    (element i of every sample together, e.g. one prompt's figures under two configurations).
    ``statistic`` must be vectorised over ``axis``. NaNs when fewer than two pairs."""
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    if len(arrays[0]) < 2:
        return float("nan"), float("nan")
    res = _st.bootstrap(arrays, statistic, paired=True, vectorized=True, n_resamples=n_resamples,
                        confidence_level=confidence, method="percentile", rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)
