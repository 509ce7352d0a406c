"""LASTBudgetSearch: the most accurate LAST model that fits a device's budget.

Like Edge Impulse's EON Tuner for its architectures: every candidate size and multiclass form is
costed before any fit (MACs, flash, latency from the target's ``lastedge bench`` figures, see
:mod:`~.device_cost`), those within the budget are scored on a stratified hold-out with
:func:`~.selection.choose_params`, the best is refitted on all rows, and the most accurate model
just over the budget is reported beside it, with how far over it is. Given ``settings`` (as
``lastedge train --auto`` with a budget), a second stage then chooses LASTClassifier settings such
as the preprocessing and ``mu`` for the chosen shape, on the same hold-out, before the one refit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .device_cost import BUDGET_NAMES, DeviceBudget, LatencyModel, describe_atoms
from .last import LASTClassifier
from .model_search import DEFAULT_PREPROCESS, RefittedBest, search_within, settings_candidates
from .selection import Grid, candidate_grid, holdout_split

FORMS = ("ovr", "shared")
SEARCHED = ("n_atoms", "multiclass")


class LASTBudgetSearch(RefittedBest, ClassifierMixin, BaseEstimator):
    """LASTClassifier whose atom count and multiclass form are the most accurate on a hold-out
    among those within a device budget, then refitted on all rows.

    Parameters
    ----------
    max_macs : int or None
        Most multiply-accumulates per prediction (``Model.macs_per_sample``).
    max_flash_bytes : int or None
        Most bytes of weights in ``flash_format`` (see :func:`~.device_cost.flash_bytes`).
    max_latency_us : float or None
        Most microseconds per single-row prediction as ``latency_model`` predicts it.
    flash_format : {"int8", "fp32"}
        Precision the model will be exported in; the flash budget counts its bytes.
    latency_model : LatencyModel or None
        The target's latency (:meth:`LatencyModel.from_bench`); needed by ``max_latency_us``, and
        otherwise reports each candidate's latency.
    multiclass : sequence of str
        Forms tried with more than two classes, ``"ovr"`` and/or ``"shared"`` (binary: one head).
    max_atoms : int
        Largest ``n_atoms`` tried, per head for ``"ovr"``, in all for ``"shared"``.
    n_sizes : int
        Sizes tried per form: the largest within the budget, then halved ``n_sizes - 1`` times.
    fit_over_budget : bool
        Also score each form's next size up (twice the largest that fits), to report what the
        budget costs in accuracy (``runner_up_``).
    holdout_fraction : float
        Share of the rows held out (stratified) to score the candidates.
    time_budget : float or None
        Seconds after which no further candidate is started; the best scored so far is kept.
        With ``settings``, the shapes start none after half of it, the settings none after all.
    settings : dict, sequence of dicts, "auto" or None
        LASTClassifier settings chosen after the shape, for the chosen atoms and form on the same
        hold-out: name -> candidate values (e.g. ``{"mu": [0, 1]}``), the candidates themselves
        (``[{"mu": 0}, ...]``), or ``"auto"``, the candidates of
        :class:`~.model_search.LASTClassifierCV` less the settings ``estimator_params`` fixes.
        The shapes are scored at ``estimator_params``' settings, which stay a candidate (and win
        ties); ``settings_results_`` lists them all, that one first, and ``best_params_`` holds
        both choices. None: the shape alone.
    refit : bool
        Refit the best on all rows as ``best_estimator_`` (False: the search only).
    estimator_params : dict or None
        Further LASTClassifier parameters shared by every candidate (e.g. ``mu``, ``preprocess``).
    random_state : int or None
        Seed of the hold-out split and of every fit.
    n_jobs : int or None
        Candidates fitted at once through joblib (see ``choose_params``; None: one at a time).
    verbose : int
        Prints a line per candidate when positive.
    """

    def __init__(self, *, max_macs: int | None = None, max_flash_bytes: int | None = None,
                 max_latency_us: float | None = None, flash_format: str = "int8",
                 latency_model: LatencyModel | None = None, multiclass: Sequence[str] = FORMS,
                 max_atoms: int = 512, n_sizes: int = 4, fit_over_budget: bool = True,
                 holdout_fraction: float = 0.2, time_budget: float | None = None,
                 settings: Grid | str | None = None, refit: bool = True,
                 estimator_params: Mapping[str, Any] | None = None, random_state: int | None = None,
                 n_jobs: int | None = None, verbose: int = 0):
        self.max_macs = max_macs
        self.max_flash_bytes = max_flash_bytes
        self.max_latency_us = max_latency_us
        self.flash_format = flash_format
        self.latency_model = latency_model
        self.multiclass = multiclass
        self.max_atoms = max_atoms
        self.n_sizes = n_sizes
        self.fit_over_budget = fit_over_budget
        self.holdout_fraction = holdout_fraction
        self.time_budget = time_budget
        self.settings = settings
        self.refit = refit
        self.estimator_params = estimator_params
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def budget(self) -> DeviceBudget:
        """The limits as a :class:`~.device_cost.DeviceBudget` (ValueError for a bad one)."""
        return DeviceBudget(self.max_macs, self.max_flash_bytes, self.max_latency_us, self.flash_format,
                            self.latency_model)

    def candidates(self, n_features: int, n_classes: int) -> list[dict[str, Any]]:
        """Every size tried for data of that shape, costed: ``{"multiclass", "n_atoms", "macs",
        "flash_bytes", "latency_us", "fits"}``, in the order they are fitted (each form's largest
        within the budget first, the forms alternating, then the sizes over the budget). A
        ValueError names the cost of the smallest model when none fits."""
        self._check_space()
        budget = self.budget()
        forms = [f for f in FORMS if f in self.multiclass] if n_classes > 2 else ["ovr"]
        def fits(n: int, form: str) -> bool:
            return not budget.excess(budget.cost(n_features, n_classes, n, form))

        within, over = [], []
        for form in forms:
            smallest = n_classes if form == "shared" and n_classes > 2 else 1
            largest = _largest(lambda n: fits(n, form), smallest, max(self.max_atoms, smallest))  # noqa: B023
            sizes = [] if largest is None else _halvings(largest, smallest, self.n_sizes)
            within.append([{"multiclass": form, "n_atoms": n} for n in sizes])
            if largest is None or largest < self.max_atoms:
                next_up = smallest if largest is None else min(2 * largest, self.max_atoms)
                over.append({"multiclass": form, "n_atoms": next_up})
        tried = [(row, True) for rank in range(self.n_sizes) for rows in within for row in rows[rank:rank + 1]]
        costed = [{**row, **budget.cost(n_features, n_classes, row["n_atoms"], row["multiclass"]), "fits": fit}
                  for row, fit in tried + [(row, False) for row in over]]
        if not any(row["fits"] for row in costed):
            raise ValueError(f"no model fits the budget: the smallest, {_described(costed, budget)}")
        return costed

    def fit(self, X: Any, y: Any, monitor: Callable[[int, Any], bool | None] | None = None) -> LASTBudgetSearch:
        """Score the candidates within the budget (and, with ``fit_over_budget``, the next size up
        of each form) on the hold-out, then the ``settings`` for the best of them, within
        ``time_budget``; refit the best on all rows. ``monitor(k, fitted)`` returning True stops
        the search after candidate ``k`` of its stage, and skips the settings (Ctrl-C)."""
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        classes = np.unique(y)
        table = self.candidates(X.shape[1], len(classes))
        base = self._base_estimator()
        grid = self._settings_candidates(base)
        split = list(holdout_split(self.holdout_fraction, self.random_state).split(X, y))  # both stages'
        started, stops = time.perf_counter(), []

        def watched(k: int, fitted: Any) -> bool:
            stops.append(bool(monitor is not None and monitor(k, fitted)))
            return stops[-1]

        shapes_time = self.time_budget if self.time_budget is None or not grid else self.time_budget / 2
        self.cv_results_ = self._score_shapes(base, table, X, y, split, shapes_time, watched)
        scored = [row for row in table if row["holdout_accuracy"] is not None and row["fits"]]
        best = max(scored, key=lambda row: (row["holdout_accuracy"], -row["macs"]))
        shape = {k: best[k] for k in SEARCHED}
        left = (0.0 if any(stops) else None if self.time_budget is None  # Ctrl-C: no settings
                else self.time_budget - (time.perf_counter() - started))
        base.set_params(**shape)
        self.settings_results_ = [] if not grid else [
            {**_own_settings(base, grid), "holdout_accuracy": best["holdout_accuracy"]},
            *self._score_settings(base, grid, X, y, split, left, watched)]
        chosen = max((row for row in self.settings_results_ if row["holdout_accuracy"] is not None),
                     key=lambda row: row["holdout_accuracy"], default=best)  # max keeps the first of equals
        self.best_params_ = {**shape, **{name: chosen[name] for name in _own_settings(base, grid)}}
        self.best_score_ = chosen["holdout_accuracy"]
        self.runner_up_ = _runner_up(table, self.budget())
        self.classes_ = classes
        if self.refit:
            self.best_estimator_ = base.set_params(**self.best_params_).fit(X, y)
        return self

    def _score_shapes(self, base: LASTClassifier, table: list[dict[str, Any]], X: np.ndarray, y: np.ndarray,
                      split: list[Any], time_budget: float | None, monitor: Callable[[int, Any], bool],
                      ) -> list[dict[str, Any]]:
        """``table`` with each row's ``"holdout_accuracy"`` (None: not fitted), scoring those within
        the budget, and with ``fit_over_budget`` the rest, in the table's order."""
        to_fit = [row for row in table if row["fits"] or self.fit_over_budget]
        results = search_within(base, [{k: row[k] for k in SEARCHED} for row in to_fit], X, y, split,
                                time_budget, self.n_jobs, self.verbose, monitor)
        for row in table:
            row["holdout_accuracy"] = None
        for row, result in zip(to_fit, results):
            row["holdout_accuracy"] = result["score"]
        return table

    def _score_settings(self, base: LASTClassifier, grid: list[dict[str, Any]], X: np.ndarray, y: np.ndarray,
                        split: list[Any], time_left: float | None, monitor: Callable[[int, Any], bool],
                        ) -> list[dict[str, Any]]:
        """``[{name: value, ..., "holdout_accuracy"}]`` over the candidates ``grid`` but ``base``'s
        own settings (scored already), in their order; None for those not fitted: all when
        ``time_left`` is spent (or 0: a stopped search)."""
        own = _own_settings(base, grid)
        candidates = [params for params in grid if {**own, **params} != own]
        spent = time_left is not None and time_left <= 0
        results = [] if spent or not candidates else search_within(
            base, candidates, X, y, split, time_left, self.n_jobs, self.verbose, monitor)
        scores = [result["score"] for result in results] + [None] * (len(candidates) - len(results))
        return [{**own, **params, "holdout_accuracy": score} for params, score in zip(candidates, scores)]

    def _base_estimator(self) -> LASTClassifier:
        """The LASTClassifier every candidate starts from (the shared settings)."""
        extra = dict(self.estimator_params or {})
        fixed = {*SEARCHED, "random_state"} & set(extra)
        if fixed:
            raise ValueError(f"estimator_params must not set {sorted(fixed)}: LASTBudgetSearch sets them")
        return LASTClassifier(**{"verbose": 0, **extra, "random_state": self.random_state})

    def _settings_candidates(self, base: LASTClassifier) -> list[dict[str, Any]]:
        """The settings searched after the shape, in their order ([] for none), every candidate
        checked before any fit (a bad value is named now, not after the shapes' search)."""
        if self.settings is None:
            return []
        refused = ("settings must be a dict of candidate values, a sequence of dicts, 'auto' or None, "
                   f"got {self.settings!r}")
        if isinstance(self.settings, str):
            if self.settings != "auto":
                raise ValueError(refused)
            return _auto_settings(self.estimator_params or {})
        if isinstance(self.settings, Mapping):
            single = [name for name, values in self.settings.items() if isinstance(values, str) or not np.iterable(values)]
            if single:
                raise ValueError(f"settings {single} must each be a sequence of candidate values, got {dict(self.settings)}")
        elif not np.iterable(self.settings) or not all(isinstance(params, Mapping) for params in self.settings):
            raise ValueError(refused)
        candidates = candidate_grid(self.settings)
        fixed = {*SEARCHED, "random_state"} & {name for params in candidates for name in params}
        if fixed:
            raise ValueError(f"settings must not set {sorted(fixed)}: LASTBudgetSearch sets them")
        for params in candidates:
            clone(base).set_params(**params)._check_params()
        return candidates

    def _check_space(self) -> None:
        """ValueError naming a bad search space (the budget checks itself)."""
        if isinstance(self.multiclass, str) or not set(self.multiclass) or not set(self.multiclass) <= set(FORMS):
            raise ValueError(f"multiclass must be a non-empty sequence of {FORMS}, got {self.multiclass!r}")
        for name in ("max_atoms", "n_sizes"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"time_budget must be positive seconds or None, got {self.time_budget!r}")
        if not 0 < self.holdout_fraction < 1:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction!r}")


def _own_settings(base: LASTClassifier, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """``base``'s values of every setting the candidates set, in their order."""
    names = dict.fromkeys(name for params in candidates for name in params)
    return {name: base.get_params()[name] for name in names}


def _auto_settings(fixed: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``settings="auto"``'s candidates: LASTClassifierCV's, less the preprocessing or weight
    decay that ``fixed`` (the shared ``estimator_params``) sets."""
    preprocess = [fixed["preprocess"]] if "preprocess" in fixed else list(DEFAULT_PREPROCESS)
    if "mu" in fixed or "mu_factor" in fixed:
        return [] if "preprocess" in fixed else [{"preprocess": p} for p in preprocess]
    return settings_candidates(preprocess)


def _largest(fits: Callable[[int], bool], smallest: int, most: int) -> int | None:
    """The largest n in [smallest, most] with ``fits(n)`` (a cost rising with n), None if none."""
    if not fits(smallest):
        return None
    low, high = smallest, most + 1  # fits(low); high does not fit or is past the range
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def _halvings(largest: int, smallest: int, count: int) -> list[int]:
    """``largest``, then halved (rounded) ``count - 1`` times, none below ``smallest``, no repeats."""
    sizes = [max(smallest, round(largest / 2**i)) for i in range(count)]
    return sorted(set(sizes), reverse=True)


def _runner_up(table: list[dict[str, Any]], budget: DeviceBudget) -> dict[str, Any] | None:
    """The most accurate candidate over the budget (the cheapest when none was scored), with
    ``"exceeds"``: {budget name: cost / limit}; None when every size tried fits."""
    over = [row for row in table if not row["fits"]]
    if not over:
        return None
    scored = [row for row in over if row["holdout_accuracy"] is not None]
    row = (max(scored, key=lambda row: (row["holdout_accuracy"], -row["macs"])) if scored
           else min(over, key=lambda row: row["macs"]))
    return {**row, "exceeds": budget.excess(row)}


def _described(costed: list[dict[str, Any]], budget: DeviceBudget) -> str:
    """The cheapest candidate and its costs against the budget, for an error message."""
    row = min(costed, key=lambda row: row["macs"])
    limits = ", ".join(f"{row[name]:,.6g} {label} (budget {getattr(budget, name):,.6g})"
                       for name, label in BUDGET_NAMES.items() if getattr(budget, name) is not None)
    return f"{row['multiclass']} with {describe_atoms(row)}, needs {limits}"
