"""preprocess="auto": "standardize" where the row norm or the columns' scales carry the classes,
the paper's "l2" elsewhere, and a fit identical to the explicit kind's."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_wine, make_circles

from lastedge.train import KMeansCentroidClassifier, LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train.preprocess_choice import choose, paired_counts, resolve

FAST = {"n_atoms": 6, "max_dca_iter": 2, "inner_iter": 30, "verbose": 0, "random_state": 3}


def circles():
    return make_circles(400, noise=0.1, factor=0.5, random_state=0)


def class_index(y):
    return np.unique(y, return_inverse=True)[1]


@pytest.mark.parametrize("data, expected", [
    (circles, "standardize"),  # the norm is the class: l2 leaves one angle, at chance
    (lambda: load_wine(return_X_y=True), "standardize"),  # raw columns from 0.1 to 1680
    (lambda: load_digits(return_X_y=True), "l2"),  # images: the paper's unit norm
])
def test_auto_chooses_standardize_only_where_it_clearly_wins(data, expected):
    X, y = data()
    assert resolve("auto", X, class_index(y)) == expected


def test_an_explicit_kind_is_kept():
    X, y = circles()
    assert resolve("l2", X, y) == "l2" and resolve("none", X, y) == "none"


@pytest.mark.parametrize("counts, expected", [
    ([0, 0, 0], "l2"),  # nothing voted on
    ([10, 10, 100], "l2"),  # a tie
    ([30, 5, 100], "standardize"),  # 25 more rows right, 5 standard errors
    ([3, 0, 1000], "l2"),  # 3 rows: under two standard errors (2 * sqrt(3))
    ([9, 0, 1000], "l2"),  # clear, but under one percent of the rows
    ([5, 30, 100], "l2"),  # l2 wins
])
def test_standardize_needs_a_clear_and_sizeable_win(counts, expected):
    assert choose(np.array(counts)) == expected


@pytest.mark.parametrize("n_rows", [2, 3, 5])
def test_a_handful_of_rows_still_gets_a_choice(n_rows):
    X = np.arange(n_rows * 3, dtype=float).reshape(n_rows, 3)
    y = np.arange(n_rows) % 2
    counts = paired_counts(X, y)
    assert counts[2] == n_rows and choose(counts) in ("l2", "standardize")


def test_the_counts_are_over_a_subsample_of_large_data():
    X, y = load_digits(return_X_y=True)
    X, y = np.tile(X, (2, 1)), np.tile(y, 2)
    assert paired_counts(X, y)[2] == 2000


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 2 DCA iterations
@pytest.mark.parametrize("data, chosen", [(circles, "standardize"), (lambda: load_digits(return_X_y=True), "l2")])
def test_an_auto_fit_is_the_fit_of_the_kind_it_chose(data, chosen):
    """The choice draws nothing from the random state: the same start, the same model."""
    X, y = data()
    auto = LASTClassifier(**FAST).fit(X, y)
    explicit = LASTClassifier(**FAST, preprocess=chosen).fit(X, y)
    assert auto.preprocess_.kind == chosen and auto.model_.preprocess.kind == chosen
    np.testing.assert_array_equal(auto.dictionary_, explicit.dictionary_)
    np.testing.assert_array_equal(auto.coef_, explicit.coef_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_auto_rescues_circles_where_l2_is_at_chance():
    X, y = circles()
    X_test, y_test = make_circles(400, noise=0.1, factor=0.5, random_state=1)
    params = {"n_atoms": 10, "max_dca_iter": 10, "verbose": 0, "random_state": 3}
    assert LASTClassifier(**params).fit(X, y).score(X_test, y_test) >= 0.95  # measured 0.995
    assert LASTClassifier(**params, preprocess="l2").fit(X, y).score(X_test, y_test) <= 0.65  # 0.49


@pytest.mark.parametrize("estimator", [
    lambda: SGDSoftThresholdClassifier(4, max_iter=200, step_sizes=(0.01,), verbose=0, random_state=0),
    lambda: KMeansCentroidClassifier(4, random_state=0),
])
def test_every_estimator_defaults_to_auto(estimator):
    X, y = circles()
    model = estimator()
    assert model.preprocess == "auto"
    assert model.fit(X, y).preprocess_.kind == "standardize"
