"""LASTClassifierCV: the search on a hold-out, its time budget, its refit and its contract."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from lastedge.train import LASTClassifier, LASTClassifierCV

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # fast settings

FAST = dict(n_atoms=4, preprocess=("l2",), mu=(0.0, 0.1), random_state=0,
            estimator_params={"max_dca_iter": 2, "inner_iter": 30})


@pytest.fixture(scope="module")
def digits_subset():
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [0, 1, 2])
    return X[keep][:240], y[keep][:240]


@parametrize_with_checks([LASTClassifierCV(**FAST)])
def test_scikit_learn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_search_scores_every_candidate_and_refits_the_best(digits_subset):
    X, y = digits_subset
    search = LASTClassifierCV(**{**FAST, "preprocess": ("l2", "standardize")}).fit(X, y)
    assert [r["params"] for r in search.cv_results_] == search.candidates()
    assert len(search.cv_results_) == 4
    assert search.best_score_ == max(r["score"] for r in search.cv_results_)
    assert isinstance(search.best_estimator_, LASTClassifier)
    assert search.best_estimator_.get_params()["mu"] == search.best_params_["mu"]
    assert search.best_estimator_.preprocess == search.best_params_["preprocess"]
    assert search.best_estimator_.n_features_in_ == X.shape[1]  # refitted on all rows
    np.testing.assert_array_equal(search.predict(X), search.best_estimator_.predict(X))
    np.testing.assert_array_equal(search.classes_, [0, 1, 2])
    assert search.score(X, y) > 0.5
    model = search.to_model()  # saved and exported like a LASTClassifier
    np.testing.assert_array_equal(model.predict(X), search.predict(X))


def test_a_spent_time_budget_keeps_the_first_candidate_only(digits_subset):
    X, y = digits_subset
    search = LASTClassifierCV(**{**FAST, "time_budget": 1e-9}).fit(X, y)
    assert [r["params"] for r in search.cv_results_] == [{"preprocess": "l2", "mu": 0.0}]
    assert search.best_params_ == {"preprocess": "l2", "mu": 0.0}


def test_clone_keeps_the_search_space():
    search = LASTClassifierCV(**FAST)
    assert clone(search).get_params() == search.get_params()


@pytest.mark.parametrize("bad, named", [
    ({"preprocess": ("l2", "whiten")}, "whiten"),
    ({"preprocess": "l2"}, "preprocess"),
    ({"mu": ()}, "mu"),
    ({"mu": (-1.0,)}, "mu"),
    ({"time_budget": 0}, "time_budget"),
    ({"holdout_fraction": 1.5}, "holdout_fraction"),
    ({"estimator_params": {"mu": 1.0}}, "mu"),
])
def test_bad_search_space_is_a_value_error_naming_it(digits_subset, bad, named):
    X, y = digits_subset
    with pytest.raises(ValueError, match=named):
        LASTClassifierCV(**{**FAST, **bad}).fit(X, y)
