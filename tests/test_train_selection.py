"""Choosing the weight decay ``mu`` on held-out rows (``train.selection``)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from lastedge.train.selection import choose_mu, holdout_split


class RightOnlyAtOneMu(ClassifierMixin, BaseEstimator):
    """Knows the rule of ``rows`` (label = x mod 3) when ``mu == good``; else always says class 0."""

    def __init__(self, mu=0.0, good=1.0):
        self.mu, self.good = mu, good

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return X[:, 0].astype(int) % 3 if self.mu == self.good else np.zeros(len(X), int)


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
