"""``mu="auto"``: the weight decay chosen on held-out training rows where full-batch fits are cheap
(``train.mu_choice``), else the first candidate."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from lastedge.train import LASTClassifier, mu_choice

FAST = dict(n_atoms=4, max_dca_iter=3, inner_iter=20, verbose=0, random_state=0)


@functools.cache
def problem(n_rows: int = 300, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    return make_classification(n_rows, 10, n_informative=5, n_classes=n_classes, flip_y=0.1, random_state=0)


def fit(X: np.ndarray, y: np.ndarray, **params) -> LASTClassifier:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 3 DCA iterations
        return LASTClassifier(**{**FAST, **params}).fit(X, y)


def test_auto_scores_every_candidate_on_the_hold_out_and_fits_the_best_on_all_rows():
    X, y = problem()
    chosen = fit(X, y)
    assert list(chosen.mu_choice_) == list(mu_choice.CANDIDATES)
    assert all(0 <= score <= 1 for score in chosen.mu_choice_.values())
    # the final fit is the fit of that weight decay on all rows, from the same random state
    fixed = fit(X, y, mu=chosen.mu_, preprocess=chosen.preprocess_.kind)
    np.testing.assert_array_equal(chosen.coef_, fixed.coef_)
    np.testing.assert_array_equal(chosen.dictionary_, fixed.dictionary_)
    unit_rows = fit(X, y, preprocess="l2")
    factor = max(unit_rows.mu_choice_, key=unit_rows.mu_choice_.__getitem__)
    assert unit_rows.mu_ == pytest.approx(factor, rel=1e-5)  # l2 rows: mean squared norm 1


def test_the_choice_draws_nothing_from_the_random_state(monkeypatch):
    """A fit that keeps the first candidate is the fit of that candidate alone, without a choice."""
    X, y = problem()
    monkeypatch.setattr(mu_choice, "CANDIDATES", (0.1, 0.1))  # a tie: the first is kept
    tied = fit(X, y)
    monkeypatch.setattr(mu_choice, "CANDIDATES", (0.1,))
    alone = fit(X, y)
    assert tied.mu_choice_ is not None and alone.mu_choice_ is None
    np.testing.assert_array_equal(tied.coef_, alone.coef_)
    assert tied.mu_ == alone.mu_


@pytest.mark.parametrize("params, rows", [
    ({"mu": 0.5}, 300),  # a number is kept
    ({}, mu_choice.MIN_ROWS - 1),  # too few rows to hold out
    ({"batch_size": 100}, 300),  # minibatches: Adam, no cheap fits
    ({"multiclass": "shared"}, 300),  # a shared dictionary: Adam
    ({"inner_solver": "adam"}, 300),
])
def test_no_choice_where_it_does_not_apply(params, rows):
    X, y = problem(rows, 3)
    fitted = fit(X, y, **params)
    assert fitted.mu_choice_ is None
    if "mu" not in params:  # the first candidate
        assert fitted.mu_ == pytest.approx(mu_choice.CANDIDATES[0] * np.mean(np.sum(fitted.preprocess_.apply(X) ** 2, 1)),
                                           rel=1e-4)


def test_a_warm_start_continues_with_the_weight_decay_it_chose(monkeypatch):
    X, y = problem()
    estimator = fit(X, y, warm_start=True)
    first, choice = estimator.mu_, dict(estimator.mu_choice_)
    monkeypatch.setattr(mu_choice, "CANDIDATES", (5.0, 6.0))  # neither chosen nor the fallback again
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(X, y)
    assert estimator.mu_ == pytest.approx(first, rel=1e-6) and estimator.mu_choice_ == choice


def test_a_class_too_small_to_hold_out_keeps_the_first_candidate():
    X, y = problem(300, 2)
    y = y.copy()
    y[0] = 2  # a third class of one row: no stratified hold-out
    fitted = fit(X, y)
    assert fitted.mu_choice_ is None
    assert fitted.predict(X).shape == (300,)


def test_verbose_names_each_candidate_and_its_score(capsys):
    X, y = problem()
    fit(X, y, verbose=1)
    err = capsys.readouterr().err
    assert "mu='auto': fitting 2 weight decays on 240 rows to score them on 60 held out" in err
    assert err.count("held-out rows") == len(mu_choice.CANDIDATES)


def test_a_given_mu_factor_is_fitted_without_a_hold_out():
    """``mu_factor`` fixes the weight decay in the default's unit: the fit the choice makes when it
    chooses that factor (the unit ``LASTClassifierCV`` searches in)."""
    X, y = problem()
    chosen = fit(X, y, preprocess="standardize")
    given = fit(X, y, preprocess="standardize", mu_factor=chosen.mu_factor_)
    assert chosen.mu_choice_ is not None and given.mu_choice_ is None
    assert given.mu_factor_ == chosen.mu_factor_ and given.mu_ == chosen.mu_
    np.testing.assert_array_equal(given.coef_, chosen.coef_)
    other = mu_choice.CANDIDATES[1] if chosen.mu_factor_ == mu_choice.CANDIDATES[0] else mu_choice.CANDIDATES[0]
    scaled = fit(X, y, preprocess="standardize", mu_factor=other)
    mean_squared_norm = np.mean(np.sum(scaled.preprocess_.apply(X) ** 2, 1))
    assert scaled.mu_ == pytest.approx(other * mean_squared_norm, rel=1e-4)
    assert fit(X, y, mu=0.5).mu_factor_ is None


@pytest.mark.parametrize("params, named", [
    ({"mu": 0.5, "mu_factor": 0.3}, "mu_factor applies to mu='auto' only"),
    ({"mu_factor": -1.0}, "mu_factor"),
])
def test_a_bad_mu_factor_is_a_value_error_naming_it(params, named):
    X, y = problem()
    with pytest.raises(ValueError, match=named):
        fit(X, y, **params)
