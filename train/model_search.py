"""LASTClassifierCV: LAST with its preprocessing and weight decay chosen on held-out training rows.

Modelled on scikit-learn's ``LogisticRegressionCV``: the candidates (:func:`settings_candidates`,
the default's own weight decays first) are scored with
:func:`lastedge.train.selection.choose_params` (one stratified hold-out by default, for speed), the
search stops when ``time_budget`` seconds are spent, and the best settings are refitted on all rows
as ``best_estimator_``, the LASTClassifier that lastedge saves and exports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from lastedge.runtime.preprocess import KINDS

from .last import LASTClassifier
from .selection import choose_params, holdout_split

DEFAULT_PREPROCESS = ("l2", "standardize")
AUTO_MU_FACTORS = (0.1, 0.3, 0.0, 1.0)  # per unit of the rows' mean squared norm; mu="auto"'s two first


def settings_candidates(preprocess: Sequence[str] = DEFAULT_PREPROCESS,
                        mu: Sequence[float] | str = "auto") -> list[dict[str, Any]]:
    """The settings a search tries, in this order: each weight decay, each preprocessing in turn
    for each. ``mu="auto"`` tries ``mu_factor`` (with LASTClassifier's ``mu="auto"``) in
    ``AUTO_MU_FACTORS``: the default's own two candidates first, then the paper's objective (0) and
    a stronger decay, each scaled to the preprocessed rows as the default is; numbers are weight
    decays as given."""
    if isinstance(mu, str):
        if mu != "auto":
            raise ValueError(f"mu must be 'auto' or a non-empty sequence of non-negative numbers, got {mu!r}")
        return [{"mu_factor": factor, "preprocess": p} for factor in AUTO_MU_FACTORS for p in preprocess]
    return [{"mu": float(m), "preprocess": p} for m in mu for p in preprocess]


class RefittedBest:
    """Prediction through ``best_estimator_``, the best candidate refitted on all rows, for the
    searches that choose LASTClassifier settings."""

    def predict(self, X: Any) -> np.ndarray:
        """Classes predicted by the refitted ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores of the refitted ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.decision_function(X)

    def to_model(self) -> Any:
        """The refitted ``best_estimator_`` as a ``lastedge.runtime.Model``: what is saved and exported."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.to_model()


class LASTClassifierCV(RefittedBest, ClassifierMixin, BaseEstimator):
    """LASTClassifier whose ``preprocess`` and ``mu`` are chosen on a hold-out, then refitted.

    Parameters
    ----------
    n_atoms : int
        Atoms per head (fixed, not searched).
    multiclass : str
        ``"ovr"`` or ``"shared"`` (fixed, not searched).
    preprocess : sequence of str
        Candidate preprocessings, tried in this order for each ``mu``.
    mu : "auto" or sequence of float
        Candidate weight decays, tried in this order (the first with every preprocessing first);
        "auto": 0.1, 0.3, 0 and 1 times the preprocessed rows' mean squared norm (LASTClassifier's
        ``mu_factor``; its default chooses between the first two), see :func:`settings_candidates`.
    cv : int, splitter or None
        Folds or splitter; None holds out ``holdout_fraction`` of the rows once (stratified).
    holdout_fraction : float
        Share of the rows held out when ``cv`` is None.
    time_budget : float or None
        Seconds after which no further candidate is started; the best scored so far is kept.
    estimator_params : dict or None
        Further LASTClassifier parameters shared by every candidate (e.g. ``max_dca_iter``).
    random_state : int or None
        Seed of the hold-out split and of every fit.
    n_jobs : int or None
        Candidates fitted at once through joblib (see ``choose_params``; None: one at a time).
    verbose : int
        Prints a line per candidate when positive.
    """

    def __init__(self, n_atoms: int = 100, *, multiclass: str = "ovr",
                 preprocess: Sequence[str] = DEFAULT_PREPROCESS, mu: Sequence[float] | str = "auto",
                 cv: Any = None, holdout_fraction: float = 0.2, time_budget: float | None = None,
                 estimator_params: Mapping[str, Any] | None = None, random_state: int | None = None,
                 n_jobs: int | None = None, verbose: int = 0):
        self.n_atoms = n_atoms
        self.multiclass = multiclass
        self.preprocess = preprocess
        self.mu = mu
        self.cv = cv
        self.holdout_fraction = holdout_fraction
        self.time_budget = time_budget
        self.estimator_params = estimator_params
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    def candidates(self) -> list[dict[str, Any]]:
        """The settings in the order they are tried (:func:`settings_candidates`); ``lastedge train
        --auto`` tries them so too."""
        self._check_space()
        return settings_candidates(self.preprocess, self.mu)

    def fit(self, X: Any, y: Any) -> LASTClassifierCV:
        """Score the candidates on the hold-out within ``time_budget``, then refit the best on all rows."""
        X, y = validate_data(self, X, y)
        check_classification_targets(y)
        self._check_space()
        base = self._base_estimator()
        cv = holdout_split(self.holdout_fraction, self.random_state) if self.cv is None else self.cv
        self.cv_results_ = search_within(base, self.candidates(), X, y, cv, self.time_budget, self.n_jobs,
                                         self.verbose)
        best = max(self.cv_results_, key=lambda result: result["score"])  # max keeps the first of equals
        self.best_params_ = dict(best["params"])
        self.best_score_ = best["score"]
        self.best_estimator_ = base.set_params(**self.best_params_).fit(X, y)
        self.classes_ = self.best_estimator_.classes_
        return self

    def _base_estimator(self) -> LASTClassifier:
        """The LASTClassifier every candidate starts from (fixed settings only)."""
        extra = dict(self.estimator_params or {})
        fixed = {"n_atoms", "multiclass", "preprocess", "mu", "mu_factor", "random_state"} & set(extra)
        if fixed:
            raise ValueError(f"estimator_params must not set {sorted(fixed)}: they are LASTClassifierCV's own")
        return LASTClassifier(**{"verbose": 0, **extra, "n_atoms": self.n_atoms, "multiclass": self.multiclass,
                                 "random_state": self.random_state})

    def _check_space(self) -> None:
        """ValueError naming a bad search space or budget."""
        if isinstance(self.preprocess, str) or not len(self.preprocess):
            raise ValueError(f"preprocess must be a non-empty sequence of {KINDS}, got {self.preprocess!r}")
        unknown = [p for p in self.preprocess if p not in KINDS]
        if unknown:
            raise ValueError(f"preprocess candidates {unknown} are not among {KINDS}")
        if (self.mu != "auto" if isinstance(self.mu, str)
                else not len(self.mu) or any(not float(m) >= 0 for m in self.mu)):
            raise ValueError(f"mu must be 'auto' or a non-empty sequence of non-negative numbers, got {self.mu!r}")
        if self.time_budget is not None and not self.time_budget > 0:
            raise ValueError(f"time_budget must be positive seconds or None, got {self.time_budget!r}")
        if not 0 < self.holdout_fraction < 1:
            raise ValueError(f"holdout_fraction must be in (0, 1), got {self.holdout_fraction!r}")


def search_within(base: Any, candidates: list[dict[str, Any]], X: np.ndarray, y: np.ndarray, cv: Any,
                  time_budget: float | None, n_jobs: int | None = None, verbose: int = 0,
                  monitor: Callable[[int, Any], bool | None] | None = None) -> list[dict[str, Any]]:
    """``[{"params", "score", "fit_time"}, ...]``: :func:`~.selection.choose_params` over
    ``candidates`` in their order, starting none after ``time_budget`` seconds (the first always
    runs) or after ``monitor(k, fitted)`` returned True; ``verbose`` prints a line per candidate. ``fit_time`` is the seconds from the start
    of the candidate's round of ``n_jobs`` fits to its score."""
    started = time.perf_counter()
    last = [started]
    results: list[dict[str, Any]] = []

    def record(k: int, fitted: Any) -> bool:
        now = time.perf_counter()
        results.append({"params": candidates[k], "fit_time": now - last[0]})
        last[0] = now
        stop = bool(monitor is not None and monitor(k, fitted))
        return stop or (time_budget is not None and now - started >= time_budget)

    _, scored = choose_params(base, candidates, X, y, cv, verbose=verbose, monitor=record, n_jobs=n_jobs)
    for result, (_, score) in zip(results, scored):
        result["score"] = score
    return results
