"""The one stats module (eagle4.stats): each figure checked against an independent computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from eagle4 import stats

pytestmark = pytest.mark.cpu


def test_cov_is_the_sample_coefficient_of_variation():
    v = [10.0, 12.0, 11.0, 9.0, 13.0]
    m = sum(v) / 5
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / 4)
    assert stats.cov(v) == pytest.approx(sd / m)
    with pytest.raises(ValueError, match="two runs"):
        stats.cov([1.0])
    with pytest.raises(ValueError, match="mean 0"):
        stats.cov([1.0, -1.0])
    assert math.isnan(stats.cov_or_nan([1.0]))


def test_percentiles_interpolate_linearly_and_empty_is_nan():
    assert stats.percentile([1, 2, 3, 4], 50) == 2.5
    assert stats.percentile(list(range(101)), 99) == 99.0
    assert math.isnan(stats.percentile([], 50))
    s = stats.summarize([3.0, 1.0, 2.0])
    assert (s["n"], s["median"], s["min"], s["max"]) == (3, 2.0, 1.0, 3.0)


def test_paired_bootstrap_covers_the_estimate_and_respects_pairs():
    rng = np.random.default_rng(1)
    base = rng.uniform(2, 4, 40)
    appr = base * 0.9  # every pair drops exactly 10%: the paired interval collapses onto 0.1

    def drop(b, a, axis=-1):
        return (b.mean(axis) - a.mean(axis)) / b.mean(axis)

    lo, hi = stats.paired_bootstrap_ci(drop, [base, appr], n_resamples=500)
    assert lo == pytest.approx(0.1) and hi == pytest.approx(0.1)
    noisy = base * rng.uniform(0.8, 1.0, 40)
    lo, hi = stats.paired_bootstrap_ci(drop, [base, noisy], n_resamples=500)
    assert lo < drop(base, noisy) < hi
    assert all(math.isnan(x) for x in stats.paired_bootstrap_ci(drop, [[1.0], [1.0]]))
