"""Choosing LAST's hyper-parameters on held-out training rows (never on the test set).

Weight decay ``mu`` chosen this way was the one change from the paper's objective that helped on
every data set measured (see the benchmarks page). Used by ``lastedge train --mu A,B,...`` and
the benchmarks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone, is_classifier
from sklearn.model_selection import ParameterGrid, StratifiedShuffleSplit, check_cv

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
                  n_jobs: int | None = None) -> tuple[dict[str, float], list[tuple[dict[str, float], float]]]:
    """``(best parameters, [(parameters, held-out accuracy), ...])`` over every combination of
    ``grid`` (parameter name -> candidate values) for ``estimator``.

    The accuracy is averaged over the splits of ``cv`` (a fold count or a splitter such as
    :func:`holdout_split`). Candidates come in the order of :func:`candidate_grid` (increasing
    values, the last name varying fastest), and ties keep the first: the smallest values. Integer
    parameters such as ``n_atoms`` refuse ``4.0``, so values keep their type. Nothing is refitted
    on all rows. ``verbose`` prints a line per candidate: its accuracy and time.

    ``monitor(k, estimator)``, if given, is called after candidate ``k`` (counted from 0) has been
    fitted and scored on every split, with its estimator fitted on the last one; returning True
    stops the grid there, as LASTClassifier's monitor stops DCA: the candidates not yet fitted are
    left out of the result (they are ``candidate_grid(grid)[len(result[1]):]``) and the best is
    chosen among those scored. ``lastedge train`` stops its grid so on Ctrl-C.

    ``n_jobs`` (None: one at a time) fits the candidates x splits through ``joblib.Parallel``, so
    the backend chosen with ``joblib.parallel_config`` (processes, or ``"dask"`` on a cluster) runs
    them. With a ``monitor`` and ``n_jobs=None`` the candidates are fitted one by one so that a
    stop saves the rest; otherwise every fit runs first and the monitor only trims the result.
    """
    if not grid or not all(len(values) for values in grid.values()):
        raise ValueError(f"choosing parameters needs at least one candidate value for each, got {dict(grid)}")
    X, y = np.asarray(X), np.asarray(y)
    splits = list(check_cv(cv, y, classifier=is_classifier(estimator)).split(X, y))
    grid_params = candidate_grid(grid)
    if verbose:
        print(f"choosing {', '.join(sorted(grid))}: {len(grid_params)} candidates, {len(splits)} split(s) each")
    candidates: list[tuple[dict[str, float], float]] = []
    batch = None if monitor is not None and n_jobs is None else _fit_all(
        estimator, grid_params, X, y, splits, n_jobs)
    for k, params in enumerate(grid_params):
        started = time.perf_counter()
        fits = batch[k] if batch is not None else [_fit_and_score(estimator, params, X, y, split)
                                                    for split in splits]
        fitted = fits[-1][1]
        candidates.append((params, float(np.mean([score for score, _ in fits]))))
        if verbose:
            named = ", ".join(f"{name}={value}" for name, value in params.items())
            print(f"candidate {k + 1}/{len(grid_params)} {named}: held-out accuracy {candidates[-1][1]:.4f} "
                  f"({time.perf_counter() - started:.1f} s)")
        if monitor is not None and monitor(k, fitted):
            break
    best = max(candidates, key=lambda candidate: candidate[1])  # max keeps the first of equals
    return best[0], candidates


def _fit_and_score(estimator: Any, params: dict[str, float], X: np.ndarray, y: np.ndarray,
                   split: tuple[np.ndarray, np.ndarray]) -> tuple[float, Any]:
    """``(held-out accuracy, fitted estimator)`` of one candidate on one split (a joblib task)."""
    train, held_out = split
    fitted = clone(estimator).set_params(**params).fit(X[train], y[train])
    return fitted.score(X[held_out], y[held_out]), fitted


def _fit_all(estimator: Any, grid_params: list[dict[str, float]], X: np.ndarray, y: np.ndarray,
             splits: list[tuple[np.ndarray, np.ndarray]], n_jobs: int | None) -> list[list[tuple[float, Any]]]:
    """Every candidate's ``[(accuracy, fitted), ...]`` over ``splits``, fitted through joblib."""
    flat = Parallel(n_jobs=n_jobs)(delayed(_fit_and_score)(estimator, params, X, y, split)
                                   for params in grid_params for split in splits)
    return [flat[k * len(splits):(k + 1) * len(splits)] for k in range(len(grid_params))]


def _ordered(grid: Mapping[str, Sequence[float]]) -> dict[str, list[float]]:
    """``grid`` with its names sorted and each one's values increasing, as Python numbers."""
    return {name: sorted(python_scalar(value) for value in grid[name]) for name in sorted(grid)}


def choose_mu(estimator: Any, grid: Sequence[float], X: np.ndarray, y: np.ndarray,
              cv: Any, verbose: int = 0) -> tuple[float, dict[float, float]]:
    """``(best mu, {mu: held-out accuracy})``: :func:`choose_params` over ``mu`` alone."""
    best, candidates = choose_params(estimator, {"mu": grid}, X, y, cv, verbose)
    return best["mu"], {params["mu"]: score for params, score in candidates}

