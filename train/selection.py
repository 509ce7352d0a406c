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
from joblib import Parallel, delayed, effective_n_jobs
from sklearn.base import clone, is_classifier
from sklearn.model_selection import ParameterGrid, StratifiedShuffleSplit, check_cv

from .distributed import is_distributed
from .params import python_scalar

Monitor = Callable[[int, Any], bool | None]  # (candidate index, its fitted estimator) -> stop?


def holdout_split(fraction: float, seed: int | None) -> StratifiedShuffleSplit:
    """One stratified split that holds out ``fraction`` of the rows (for fits too slow to repeat)."""
    return StratifiedShuffleSplit(n_splits=1, test_size=fraction, random_state=seed)


Grid = Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]]  # values to combine, or the candidates


def candidate_grid(grid: Grid) -> list[dict[str, Any]]:
    """The candidates of ``grid`` in the order :func:`choose_params` fits them. A mapping
    (parameter name -> candidate values) gives every combination: increasing values, names sorted,
    the last varying fastest, each value keeping its type (numpy scalars become the Python number
    of their kind). A sequence of parameter dicts gives those candidates, in its order."""
    if isinstance(grid, Mapping):
        if not grid or not all(len(values) for values in grid.values()):
            raise ValueError(f"choosing parameters needs at least one candidate value for each, got {dict(grid)}")
        return list(ParameterGrid(_ordered(grid)))
    candidates = [dict(params) for params in grid]
    if not candidates or not all(candidates):
        raise ValueError(f"choosing parameters needs at least one candidate, each setting one, got {candidates}")
    return candidates


def choose_params(estimator: Any, grid: Grid, X: np.ndarray, y: np.ndarray,
                  cv: Any, verbose: int = 0, monitor: Monitor | None = None,
                  n_jobs: int | None = None) -> tuple[dict[str, Any], list[tuple[dict[str, Any], float]]]:
    """``(best parameters, [(parameters, held-out accuracy), ...])`` over the candidates of
    ``grid`` for ``estimator``: every combination of a mapping (parameter name -> candidate
    values), or the parameter dicts of a sequence (see :func:`candidate_grid`).

    The accuracy is averaged over the splits of ``cv`` (a fold count or a splitter such as
    :func:`holdout_split`). Candidates come in the order of :func:`candidate_grid` (for a mapping:
    increasing values, the last name varying fastest), and ties keep the first: for a mapping, the
    smallest values. Integer parameters such as ``n_atoms`` refuse ``4.0``, so values keep their
    type. Nothing is refitted on all rows. ``verbose`` prints a line per candidate: its accuracy
    and time.

    ``monitor(k, estimator)``, if given, is called after candidate ``k`` (counted from 0) has been
    fitted and scored on every split, with its estimator fitted on the last one; returning True
    stops the grid there, as LASTClassifier's monitor stops DCA: the candidates not yet fitted are
    left out of the result (they are ``candidate_grid(grid)[len(result[1]):]``) and the best is
    chosen among those scored. ``lastedge train`` stops its grid so on Ctrl-C or when its time
    budget is spent.

    ``n_jobs`` (None: one at a time) fits the candidates x splits through ``joblib.Parallel``, so
    the backend chosen with ``joblib.parallel_config`` (processes, or ``"dask"`` on a cluster) runs
    them. With a ``monitor`` they are fitted in rounds of as many candidates as there are workers
    (one candidate per round for ``n_jobs=None``), so that a stop saves the rounds after it;
    without one, all in one round.
    """
    if is_distributed():
        raise ValueError("choosing parameters runs in one process: with torch.distributed initialised on "
                         "several ranks, each rank would choose on its own hold-out rows; choose first, "
                         "then fit the chosen setting data-parallel")
    X, y = np.asarray(X), np.asarray(y)
    splits = list(check_cv(cv, y, classifier=is_classifier(estimator)).split(X, y))
    grid_params = candidate_grid(grid)
    if verbose:
        print(f"choosing {', '.join(sorted({name for params in grid_params for name in params}))}: "
              f"{len(grid_params)} candidates, {len(splits)} split(s) each")
    round_size = len(grid_params) if monitor is None else effective_n_jobs(n_jobs)
    candidates: list[tuple[dict[str, Any], float]] = []
    for first in range(0, len(grid_params), round_size):
        started = time.perf_counter()
        batch = _fit_all(estimator, grid_params[first:first + round_size], X, y, splits, n_jobs)
        for k, fits in enumerate(batch, first):
            candidates.append((grid_params[k], float(np.mean([score for score, _ in fits]))))
            if verbose:
                named = ", ".join(f"{name}={value}" for name, value in grid_params[k].items())
                print(f"candidate {k + 1}/{len(grid_params)} {named}: held-out accuracy {candidates[-1][1]:.4f} "
                      f"({time.perf_counter() - started:.1f} s)")
            if monitor is not None and monitor(k, fits[-1][1]):
                return max(candidates, key=lambda candidate: candidate[1])[0], candidates
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

