"""Choosing LAST's hyper-parameters on held-out training rows (never on the test set).

Weight decay ``mu`` chosen this way was the one change from the paper's objective that helped on
every data set measured (docs/results.md); the shared model's ``atoms_against`` and
``ovr_hinge_weight`` help on MNIST and USPS but not on small data, so they are chosen the same way.
Used by ``lastedge train --mu A,B,...`` (and its other grids) and the benchmarks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import is_classifier
from sklearn.model_selection import GridSearchCV, ParameterGrid, StratifiedShuffleSplit, check_cv

from .params import python_scalar

Monitor = Callable[[int, Any], bool | None]  # (candidate index, its fitted estimator) -> stop?


def holdout_split(fraction: float, seed: int | None) -> StratifiedShuffleSplit:
    """One stratified split that holds out ``fraction`` of the rows (for fits too slow to repeat)."""
    return StratifiedShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)


def candidate_grid(grid: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """Every combination of ``grid`` (parameter name -> candidate values) in the order
    :func:`choose_params` fits them: increasing values, names sorted, the last varying fastest;
    each value keeps its type (numpy scalars become the Python number of their kind)."""
    return list(ParameterGrid(_ordered(grid)))


def choose_params(estimator: Any, grid: Mapping[str, Sequence[float]], X: np.ndarray, y: np.ndarray,
                  cv: Any, verbose: int = 0, monitor: Monitor | None = None,
                  ) -> tuple[dict[str, float], list[tuple[dict[str, float], float]]]:
    """``(best parameters, [(parameters, held-out accuracy), ...])`` over every combination of
    ``grid`` (parameter name -> candidate values) for ``estimator``.

    The accuracy is averaged over the splits of ``cv`` (a fold count or a splitter such as
    :func:`holdout_split`). Candidates come in the order of :func:`candidate_grid` (increasing
    values, the last name varying fastest), and ties keep the first: the smallest values. Integer
    parameters such as ``n_atoms`` refuse ``4.0``, so values keep their type. Nothing is refitted
    on all rows.

    ``monitor(k, estimator)``, if given, is called after candidate ``k`` (counted from 0) has been
    fitted and scored on every split, with its estimator fitted on the last one; returning True
    stops the grid there, as LASTClassifier's monitor stops DCA: the candidates not yet fitted are
    left out of the result (they are ``candidate_grid(grid)[len(result[1]):]``) and the best is
    chosen among those scored. ``lastedge train`` stops its grid so on Ctrl-C.
    """
    if not grid or not all(len(values) for values in grid.values()):
        raise ValueError(f"choosing parameters needs at least one candidate value for each, got {dict(grid)}")
    ordered = _ordered(grid)
    scorer = _RecordingScorer(check_cv(cv, y, classifier=is_classifier(estimator)).get_n_splits(X, y), monitor)
    search = GridSearchCV(estimator, ordered, cv=cv, scoring=scorer, refit=False, error_score="raise",
                          verbose=verbose)
    try:
        search.fit(X, y)
    except _GridStopped:
        pass
    candidates = list(zip(ParameterGrid(ordered), scorer.mean_scores))
    best = max(candidates, key=lambda candidate: candidate[1])  # max keeps the first of equals
    return best[0], candidates


def _ordered(grid: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    """``grid`` with its names sorted and each one's values increasing, as Python numbers."""
    return {name: sorted(python_scalar(value) for value in grid[name]) for name in sorted(grid)}


class _GridStopped(Exception):
    """Raised through GridSearchCV by :class:`_RecordingScorer` when the monitor stops the grid."""


class _RecordingScorer:
    """GridSearchCV's scorer (the estimator's own ``score``, accuracy for a classifier, as with
    ``scoring=None``) that keeps each candidate's mean score as the search goes, and calls the
    monitor after each candidate's last split: the search's only hook between candidate fits."""

    def __init__(self, n_splits: int, monitor: Monitor | None):
        self.n_splits, self.monitor = n_splits, monitor
        self.split_scores: list[float] = []
        self.mean_scores: list[float] = []

    def __call__(self, estimator: Any, X: np.ndarray, y: np.ndarray) -> float:
        score = estimator.score(X, y)
        self.split_scores.append(score)
        if len(self.split_scores) == self.n_splits:  # one job: GridSearchCV fits a candidate's splits in a row
            # as GridSearchCV's mean_test_score: np.average over the splits, in float64
            self.mean_scores.append(float(np.average(np.array(self.split_scores, dtype=np.float64))))
            self.split_scores = []
            if self.monitor is not None and self.monitor(len(self.mean_scores) - 1, estimator):
                raise _GridStopped
        return score


def choose_mu(estimator: Any, grid: Sequence[float], X: np.ndarray, y: np.ndarray,
              cv: Any, verbose: int = 0) -> tuple[float, dict[float, float]]:
    """``(best mu, {mu: held-out accuracy})``: :func:`choose_params` over ``mu`` alone."""
    best, candidates = choose_params(estimator, {"mu": grid}, X, y, cv, verbose)
    return best["mu"], {params["mu"]: score for params, score in candidates}

