"""Choosing hyper-parameters such as the weight decay ``mu`` on held-out rows (``train.selection``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

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
