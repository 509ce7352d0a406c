"""``warm_start``: a fit continues the previous one, as one longer run would."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from lastedge.train import LASTClassifier


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X.astype(np.float32), y


def fitted(X, y, **params):
    settings = {"n_atoms": 6, "preprocess": "l2", "inner_iter": 40, "random_state": 0, "verbose": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LASTClassifier(**settings).fit(X, y)


def continued(clf, X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return clf.set_params(warm_start=True, **params).fit(X, y)


@pytest.mark.slow
@pytest.mark.parametrize("params", [{}, {"multiclass": "shared", "n_atoms": 20}, {"inner_solver": "lbfgs", "mu": 0.1},
                                    {"batch_size": 200}, {"batch_size": 200, "multiclass": "shared", "n_atoms": 20},
                                    {"batch_size": 200, "early_stopping": True}],
                         ids=["full batch", "shared", "lbfgs", "minibatch", "minibatch shared", "early stopping"])
def test_three_iterations_then_three_more_are_six_in_one_go(digits, params):
    """Minibatch Adam carries its moments and step, and the minibatches follow on."""
    X, y = digits
    X, y = (X[:600], y[:600]) if "batch_size" not in params else (X, y)
    once = fitted(X, y, max_dca_iter=6, **params)
    twice = continued(fitted(X, y, max_dca_iter=3, **params), X, y)
    np.testing.assert_array_equal(twice.dictionary_, once.dictionary_)
    np.testing.assert_array_equal(twice.coef_, once.coef_)
    last = [entry["objective"] for entry in (once.history_ if "multiclass" in params else once.history_[0])[3:]]
    assert [entry["objective"] for entry in (twice.history_ if "multiclass" in params else twice.history_[0])] == last
    assert twice.n_iter_ == 3


def test_a_first_fit_with_warm_start_is_a_fresh_fit_and_a_clone_starts_afresh(digits):
    X, y = digits[0][:600], digits[1][:600]
    fresh = fitted(X, y, max_dca_iter=2)
    np.testing.assert_array_equal(fitted(X, y, max_dca_iter=2, warm_start=True).dictionary_, fresh.dictionary_)
    warm = continued(fitted(X, y, max_dca_iter=2), X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        np.testing.assert_array_equal(clone(warm).set_params(warm_start=False).fit(X, y).dictionary_,
                                      fresh.dictionary_)


def test_the_preprocessing_is_kept_not_refitted(digits):
    X, y = digits[0][:600], digits[1][:600]
    clf = fitted(X, y, max_dca_iter=2, preprocess="standardize")
    mean = clf.preprocess_.mean.copy()
    continued(clf, X[:300] + 5, y[:300])
    np.testing.assert_array_equal(clf.preprocess_.mean, mean)


@pytest.mark.parametrize("change, message", [
    (lambda X, y: (X, np.where(y == 9, 8, y), {}), "warm_start continues a fit of the classes"),
    (lambda X, y: (X[:, :60], y, {}), "warm_start continues a fit of 64 features, got 60"),
    (lambda X, y: (X, y, {"n_atoms": 7}), r"10 head\(s\) of 6 atoms, the parameters now give 10 of 7"),
], ids=["classes", "features", "n_atoms"])
def test_a_warm_start_that_cannot_continue_says_why(digits, change, message):
    X, y = digits[0][:600], digits[1][:600]
    clf = fitted(X, y, max_dca_iter=1)
    before = (clf.classes_.copy(), clf.n_features_in_, clf.predict(X))
    X2, y2, params = change(X, y)
    with pytest.raises(ValueError, match=message):
        continued(clf, X2, y2, **params)
    # the previous fit is kept whole: the refused data set classes_ before (predictions mislabelled)
    assert np.array_equal(clf.classes_, before[0]) and clf.n_features_in_ == before[1]
    np.testing.assert_array_equal(clf.set_params(n_atoms=6).predict(X), before[2])
