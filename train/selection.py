"""Choosing LAST's hyper-parameters on held-out training rows (never on the test set).

Weight decay ``mu`` chosen this way was the one change from the paper's objective that helped on
every data set measured (docs/results.md); the shared model's ``atoms_against`` and
``ovr_hinge_weight`` help on MNIST and USPS but not on small data, so they are chosen the same way.
Used by ``lastedge train --mu A,B,...`` (and its other grids) and the benchmarks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit

from .params import python_scalar


def holdout_split(fraction: float, seed: int | None) -> StratifiedShuffleSplit:
    """One stratified split that holds out ``fraction`` of the rows (for fits too slow to repeat)."""
    return StratifiedShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)


def choose_params(estimator: Any, grid: Mapping[str, Sequence[float]], X: np.ndarray, y: np.ndarray,
                  cv: Any, verbose: int = 0) -> tuple[dict[str, float], list[tuple[dict[str, float], float]]]:
    """``(best parameters, [(parameters, held-out accuracy), ...])`` over every combination of
    ``grid`` (parameter name -> candidate values) for ``estimator``.

    The accuracy is averaged over the splits of ``cv`` (a fold count or a splitter such as
    :func:`holdout_split`). Candidates come in increasing values, the last name varying fastest,
    and ties keep the first: the smallest values. Each value keeps its type (numpy scalars become
    the Python number of their kind): integer parameters such as ``n_atoms`` refuse ``4.0``.
    Nothing is refitted on all rows.
    """
    if not grid or not all(len(values) for values in grid.values()):
        raise ValueError(f"choosing parameters needs at least one candidate value for each, got {dict(grid)}")
    names = sorted(grid)
    ordered = {name: sorted(python_scalar(value) for value in grid[name]) for name in names}
    search = GridSearchCV(estimator, ordered, cv=cv, refit=False, error_score="raise", verbose=verbose)
    search.fit(X, y)
    candidates = [({name: params[name] for name in names}, float(score))
                  for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"])]
    best = max(candidates, key=lambda candidate: candidate[1])  # max keeps the first of equals
    return best[0], candidates


def choose_mu(estimator: Any, grid: Sequence[float], X: np.ndarray, y: np.ndarray,
              cv: Any, verbose: int = 0) -> tuple[float, dict[float, float]]:
    """``(best mu, {mu: held-out accuracy})``: :func:`choose_params` over ``mu`` alone."""
    best, candidates = choose_params(estimator, {"mu": grid}, X, y, cv, verbose)
    return best["mu"], {params["mu"]: score for params, score in candidates}
