"""Choosing hyper-parameters such as the weight decay ``mu`` on held-out rows (``train.selection``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import make_classification

from lastedge.train import LASTClassifier
from lastedge.train.params import check_value, integers
from lastedge.train.selection import choose_mu, choose_params, holdout_split


class RightOnlyAtOneMu(ClassifierMixin, BaseEstimator):
    """Knows the rule of ``rows`` (label = x mod 3) when ``mu == good`` and ``nu == good_nu``;
    else always says class 0."""

    def __init__(self, mu=0.0, good=1.0, nu=0.0, good_nu=0.0):
        self.mu, self.good, self.nu, self.good_nu = mu, good, nu, good_nu

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        right = self.mu == self.good and self.nu == self.good_nu
        return X[:, 0].astype(int) % 3 if right else np.zeros(len(X), int)


def rows(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    X = np.arange(n, dtype=float)[:, None]
    return X, np.arange(n) % 3


def test_the_best_mu_is_the_most_accurate_on_the_held_out_rows():
    X, y = rows()
    best, scores = choose_mu(RightOnlyAtOneMu(good=10.0), [10, 0, 1], X, y, holdout_split(0.25, seed=0))
    assert best == 10.0 and list(scores) == [0.0, 1.0, 10.0]  # scores in increasing mu
    assert scores[10.0] == 1.0 and scores[0.0] == pytest.approx(1 / 3)  # stratified: a third is class 0


def test_ties_keep_the_smaller_mu_and_folds_are_averaged():
    X, y = rows()
    best, scores = choose_mu(RightOnlyAtOneMu(good=-1.0), (3.0, 0.5, 10.0), X, y, cv=3)
    assert best == 0.5 and all(score == pytest.approx(1 / 3) for score in scores.values())


def test_holdout_split_is_stratified_and_seeded():
    X, y = rows()
    ((_, held),) = holdout_split(0.1, seed=4).split(X, y)
    assert len(held) == 6 and np.bincount(y[held]).tolist() == [2, 2, 2]
    assert held.tolist() == next(holdout_split(0.1, seed=4).split(X, y))[1].tolist()


def test_every_combination_of_two_grids_is_scored_in_increasing_values():
    X, y = rows()
    best, candidates = choose_params(RightOnlyAtOneMu(good=1.0, good_nu=5.0), {"nu": [5, 0], "mu": [1, 0, 2]},
                                     X, y, holdout_split(0.25, seed=0))
    assert best == {"mu": 1.0, "nu": 5.0}
    assert [tuple(params.values()) for params, _ in candidates] == [
        (0, 0), (0, 5), (1, 0), (1, 5), (2, 0), (2, 5)]  # names sorted, the last varies fastest
    assert [score for _, score in candidates] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 1, 1 / 3, 1 / 3])


def test_ties_over_two_grids_keep_the_smallest_values():
    X, y = rows()
    best, _ = choose_params(RightOnlyAtOneMu(good=-1.0), {"mu": [3, 2], "nu": [9, 4]}, X, y, cv=3)
    assert best == {"mu": 2.0, "nu": 4.0}


@pytest.mark.parametrize("grid", [{}, {"mu": []}])
def test_an_empty_grid_is_refused(grid):
    X, y = rows()
    with pytest.raises(ValueError, match="at least one candidate value"):
        choose_params(RightOnlyAtOneMu(), grid, X, y, cv=3)


# --- each candidate keeps its type --------------------------------------------------------------

class IntegerAtoms(ClassifierMixin, BaseEstimator):
    """Refuses a float ``n_atoms`` as the real estimators do; knows the rule (label = x mod 3)
    only when ``n_atoms == good`` and ``mu == good_mu``."""

    def __init__(self, n_atoms=1, mu=0.0, good=8, good_mu=0.0):
        self.n_atoms, self.mu, self.good, self.good_mu = n_atoms, mu, good, good_mu

    def fit(self, X, y):
        check_value("n_atoms", self.n_atoms, [integers(1)])
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        right = self.n_atoms == self.good and self.mu == self.good_mu
        return X[:, 0].astype(int) % 3 if right else np.zeros(len(X), int)


def test_an_integer_grid_reaches_the_estimator_and_the_results_as_integers():
    X, y = rows()
    best, candidates = choose_params(IntegerAtoms(good=8), {"n_atoms": [8, 4]}, X, y, holdout_split(0.25, 0))
    assert best == {"n_atoms": 8} and type(best["n_atoms"]) is int
    assert [(params, score) for params, score in candidates] == [({"n_atoms": 4}, pytest.approx(1 / 3)),
                                                                ({"n_atoms": 8}, 1.0)]
    assert all(type(params["n_atoms"]) is int for params, _ in candidates)


def test_numpy_and_mixed_grids_become_python_numbers_of_their_kind_in_increasing_order():
    X, y = rows()
    grid = {"n_atoms": np.array([8, 4]), "mu": [np.float32(0.5), 0]}
    best, candidates = choose_params(IntegerAtoms(good=4, good_mu=0.5), grid, X, y, cv=3)
    assert best == {"mu": 0.5, "n_atoms": 4} and (type(best["mu"]), type(best["n_atoms"])) == (float, int)
    assert [tuple(params.values()) for params, _ in candidates] == [(0, 4), (0, 8), (0.5, 4), (0.5, 8)]
    assert [tuple(map(type, params.values())) for params, _ in candidates] == [
        (int, int), (int, int), (float, int), (float, int)]  # 0 stays an int, float32 0.5 a float


def test_ties_over_an_integer_grid_keep_the_smallest():
    X, y = rows()
    best, _ = choose_params(IntegerAtoms(good=-1), {"n_atoms": [3, 2, 5]}, X, y, cv=3)
    assert best == {"n_atoms": 2} and type(best["n_atoms"]) is int


def test_lastclassifier_chooses_among_integer_dca_iterations():
    X, y = make_classification(300, 8, n_informative=4, class_sep=2.0, random_state=0)
    estimator = LASTClassifier(n_atoms=2, inner_iter=10, verbose=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: 1 or 2 DCA iterations cannot converge
        best, candidates = choose_params(estimator, {"max_dca_iter": [2, 1]}, X, y, holdout_split(0.25, 0))
    assert type(best["max_dca_iter"]) is int
    assert [params["max_dca_iter"] for params, _ in candidates] == [1, 2]


# ------------------------------------------------------------------- joblib
def test_n_jobs_fits_through_joblib_and_gives_the_serial_result():
    X, y = rows()
    grid = {"mu": [0, 1, 10], "nu": [0, 2]}
    serial = choose_params(RightOnlyAtOneMu(good=1.0, good_nu=2), grid, X, y, cv=3)
    threads = choose_params(RightOnlyAtOneMu(good=1.0, good_nu=2), grid, X, y, cv=3, n_jobs=2)
    assert threads == serial and serial[0] == {"mu": 1, "nu": 2}


def test_a_monitor_with_n_jobs_trims_the_result_where_it_stops():
    X, y = rows()
    seen = []
    best, scored = choose_params(RightOnlyAtOneMu(good=10.0), {"mu": [0, 1, 10]}, X, y, cv=2, n_jobs=2,
                                 monitor=lambda k, fitted: seen.append(fitted.mu) or k == 1)
    assert seen == [0, 1] and [params["mu"] for params, _ in scored] == [0, 1] and best == {"mu": 0}


def test_gridsearchcv_fits_lastclassifier():
    from sklearn.model_selection import GridSearchCV
    X, y = make_classification(n_samples=90, n_features=6, n_informative=4, n_classes=3, random_state=0)
    estimator = LASTClassifier(n_atoms=2, max_dca_iter=2, inner_iter=10, verbose=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: 2 DCA iterations cannot converge
        search = GridSearchCV(estimator, {"mu": [0.0, 1.0]}, cv=2, n_jobs=2).fit(X, y)
    assert search.best_params_["mu"] in (0.0, 1.0) and search.score(X, y) > 1 / 3
