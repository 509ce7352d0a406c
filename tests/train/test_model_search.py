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
from lastedge.train.model_search import AUTO_MU_FACTORS, settings_candidates

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
    ({"mu": "fixed"}, "mu"),
    ({"estimator_params": {"mu_factor": 0.3}}, "mu_factor"),
    ({"time_budget": 0}, "time_budget"),
    ({"holdout_fraction": 1.5}, "holdout_fraction"),
    ({"estimator_params": {"mu": 1.0}}, "mu"),
])
def test_bad_search_space_is_a_value_error_naming_it(digits_subset, bad, named):
    X, y = digits_subset
    with pytest.raises(ValueError, match=named):
        LASTClassifierCV(**{**FAST, **bad}).fit(X, y)


def test_the_default_space_is_the_defaults_unit_its_own_candidates_first(digits_subset):
    """mu="auto" searches ``mu_factor`` (the default's unit: a weight decay per unit of the
    preprocessed rows' mean squared norm), 0.1 and 0.3 (what the default chooses between) first."""
    assert settings_candidates(("l2",))[:2] == [{"preprocess": "l2", "mu_factor": 0.1},
                                                {"preprocess": "l2", "mu_factor": 0.3}]
    assert [c["mu_factor"] for c in settings_candidates()] == [f for f in AUTO_MU_FACTORS for _ in range(2)]
    X, y = digits_subset
    search = LASTClassifierCV(**{**FAST, "mu": "auto", "preprocess": ("standardize",), "time_budget": 1e-9}).fit(X, y)
    assert search.best_params_ == {"preprocess": "standardize", "mu_factor": 0.1}
    best = search.best_estimator_
    assert best.mu == "auto" and best.mu_factor_ == 0.1 and best.mu_choice_ is None
    assert best.mu_ == pytest.approx(0.1 * np.mean(np.sum(best.preprocess_.apply(X) ** 2, 1)), rel=1e-4)


def test_a_bad_mu_string_is_a_value_error():
    with pytest.raises(ValueError, match="mu must be 'auto'"):
        settings_candidates(mu="fixed")
