"""The paired bootstrap leaves the process's warning filters alone and tells degenerate resamples apart itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pcctune.evaluation import interval
from pcctune.evaluation.compare import paired_bootstrap
from pcctune.evaluation.interval import bootstrap_interval


def test_the_filters_another_thread_sees_stay_as_they_are_during_a_degenerate_bootstrap(monkeypatch):
    filters, listed = warnings.filters, list(warnings.filters)
    seen: list[bool] = []  # per statistic call: the filters as any thread would see them meanwhile
    statistic = interval.correlations_along

    def watched(*args, **kwargs):
        seen.append(warnings.filters is filters and warnings.filters == listed)
        return statistic(*args, **kwargs)

    monkeypatch.setattr(interval, "correlations_along", watched)
    assert bootstrap_interval(np.array([0.1, 0.5, 0.2, 0.9]), np.array([1.0, 3.0, 2.0, 5.0]), seed=0) is None
    assert seen and all(seen)
    assert warnings.filters is filters and warnings.filters == listed


@pytest.mark.parametrize(
    "scored",
    [
        lambda: bootstrap_interval(np.array([0.1, 0.5, 0.2, 0.9]), np.array([1.0, 3.0, 2.0, 5.0]), seed=0),
        lambda: bootstrap_interval(np.arange(30.0), np.arange(30.0) ** 2, seed=0),  # every resample ranks alike
        lambda: paired_bootstrap(np.arange(30.0), np.sin(np.arange(30.0)), np.sin(np.arange(30.0)), resamples=300),
    ],
    ids=["a resample with a constant column", "a score that does not vary", "identical models"],
)
def test_degenerate_resamples_have_no_bca_interval_and_raise_no_warning(scored):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = scored()
    assert [str(w.message) for w in caught] == []
    if hasattr(result, "verdict"):
        assert (result.low, result.high, result.verdict) == (0.0, 0.0, "tie")
    else:
        assert result is None
