"""Choosing LAST's weight decay ``mu`` on held-out training rows (never on the test set).

Weight decay chosen this way was the one change from the paper's objective that helped on every
data set measured (docs/results.md). Used by ``lastedge train --mu A,B,...`` and the benchmarks.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit


def holdout_split(fraction: float, seed: int | None) -> StratifiedShuffleSplit:
    """One stratified split that holds out ``fraction`` of the rows (for fits too slow to repeat)."""
    return StratifiedShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)


def choose_mu(estimator: Any, grid: list[float] | tuple[float, ...], X: np.ndarray, y: np.ndarray,
              cv: Any, verbose: int = 0) -> tuple[float, dict[float, float]]:
    """``(best mu, {mu: held-out accuracy})`` for ``estimator`` at each ``mu`` of ``grid``.

    The accuracy is averaged over the splits of ``cv`` (a fold count or a splitter such as
    :func:`holdout_split`); ties keep the smaller ``mu``. Nothing is refitted on all rows.
    """
    grid = sorted(float(mu) for mu in grid)
    search = GridSearchCV(estimator, {"mu": grid}, cv=cv, refit=False, error_score="raise", verbose=verbose)
    search.fit(X, y)
    scores = {mu: float(score) for mu, score in zip(grid, search.cv_results_["mean_test_score"])}
    return max(scores, key=scores.get), scores
