"""Leftovers of the trainer audit: feature names out, typed parameter grids, SGD at absurd scales."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier, SoftThresholdEncoderSVM, SparseCodingSVM
from lastedge.train.base import training_scale
from lastedge.train.params import check_number
from lastedge.train.selection import choose_params, holdout_split

FLOAT32 = np.finfo(np.float32)


def easy_problem() -> tuple[np.ndarray, np.ndarray]:
    """Two well-separated classes, 8 features of unit-order values."""
    return make_classification(300, 8, n_informative=4, class_sep=2.0, random_state=0)


# --- get_feature_names_out -------------------------------------------------------------------

TRANSFORMERS = [
    LASTClassifier(n_atoms=3, max_dca_iter=2, inner_iter=10, verbose=0, random_state=0),
    SGDSoftThresholdClassifier(n_atoms=3, max_iter=20, step_sizes=(0.1,), verbose=0, random_state=0),
    SoftThresholdEncoderSVM(6, alpha=0.1, random_state=0),
    SparseCodingSVM(3, random_state=0),
]


@pytest.fixture(scope="module")
def three_classes() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(90, 6, n_informative=4, n_classes=3, random_state=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 2 DCA iterations
@pytest.mark.parametrize("estimator", TRANSFORMERS, ids=lambda e: type(e).__name__)
def test_feature_names_out_name_every_transform_column_after_the_class(estimator, three_classes):
    X, y = three_classes
    with pytest.raises(NotFittedError):
        estimator.get_feature_names_out()
    fitted = estimator.fit(X, y)
    names = fitted.get_feature_names_out()
    prefix = type(estimator).__name__.lower()
    assert names.dtype == object and len(names) == fitted.transform(X).shape[1]
    assert names.tolist() == [f"{prefix}{i}" for i in range(len(names))]
    assert fitted.get_feature_names_out([f"x{i}" for i in range(6)]).tolist() == names.tolist()
    with pytest.raises(ValueError, match="input_features"):
        fitted.get_feature_names_out(["a", "b"])  # validated against the 6 inputs seen in fit


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", TRANSFORMERS[:2], ids=lambda e: type(e).__name__)
def test_the_features_chain_through_column_transformers_and_pipelines(estimator, three_classes):
    X, y = three_classes
    columns = ColumnTransformer([("enc", estimator, [0, 1, 2, 3]), ("keep", "passthrough", [4, 5])])
    out = columns.fit_transform(X, y)
    names = columns.get_feature_names_out().tolist()
    prefix = type(estimator).__name__.lower()
    assert len(names) == out.shape[1] == 3 * 3 + 2  # three one-vs-all heads of 3 atoms, 2 kept
    assert names[0] == f"enc__{prefix}0" and names[-2:] == ["keep__x4", "keep__x5"]
    pipeline = make_pipeline(StandardScaler(), estimator).fit(X, y)
    assert len(pipeline.get_feature_names_out()) == pipeline.transform(X).shape[1]
    assert estimator.set_output(transform="default") is estimator  # set_output needs the names


# --- choose_params keeps each candidate's type -----------------------------------------------

class IntegerAtoms(ClassifierMixin, BaseEstimator):
    """Refuses a float ``n_atoms`` as the real estimators do; knows the rule (label = x mod 3)
    only when ``n_atoms == good`` and ``mu == good_mu``."""

    def __init__(self, n_atoms=1, mu=0.0, good=8, good_mu=0.0):
        self.n_atoms, self.mu, self.good, self.good_mu = n_atoms, mu, good, good_mu

    def fit(self, X, y):
        check_number(self, "n_atoms", integer=True, low=1)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        right = self.n_atoms == self.good and self.mu == self.good_mu
        return X[:, 0].astype(int) % 3 if right else np.zeros(len(X), int)


def rows(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=float)[:, None], np.arange(n) % 3


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
    X, y = easy_problem()
    estimator = LASTClassifier(n_atoms=2, inner_iter=10, verbose=0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: 1 or 2 DCA iterations cannot converge
        best, candidates = choose_params(estimator, {"max_dca_iter": [2, 1]}, X, y, holdout_split(0.25, 0))
    assert type(best["max_dca_iter"]) is int
    assert [params["max_dca_iter"] for params, _ in candidates] == [1, 2]


# --- SGD at absurd data scales ---------------------------------------------------------------

SGD_FIT = dict(n_atoms=6, max_iter=500, verbose=0, random_state=0)


def scaled_rows(X: np.ndarray, scale: str) -> np.ndarray:
    """``X`` times 1e13 or 1e-9, or with its largest value near float32's maximum, or its smallest
    near float32's smallest normal number."""
    if scale == "max":
        return X * (0.9 * FLOAT32.max / np.abs(X).max())
    if scale == "min normal":
        return X * (4 * FLOAT32.tiny / np.abs(X).min())
    return X * float(scale)


@pytest.fixture(scope="module")
def unscaled_accuracy() -> dict[tuple[str, str], float]:
    X, y = easy_problem()
    return {(preprocess, optimizer): SGDSoftThresholdClassifier(preprocess=preprocess, optimizer=optimizer,
                                                                **SGD_FIT).fit(X, y).score(X, y)
            for preprocess in ("none", "l2") for optimizer in ("sgd", "adam")}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("preprocess", ["none", "l2"])
@pytest.mark.parametrize("scale", ["1e13", "1e-9", "max", "min normal"])
def test_sgd_trains_as_well_at_absurd_scales(scale, preprocess, optimizer, unscaled_accuracy):
    X, y = easy_problem()
    X = scaled_rows(X, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings or torch's: none
        estimator = SGDSoftThresholdClassifier(preprocess=preprocess, optimizer=optimizer, **SGD_FIT)
        estimator.fit(X, y)
        accuracy = estimator.score(X, y)
    assert np.isfinite(estimator.dictionary_).all() and np.isfinite(estimator.coef_).all()
    assert accuracy >= unscaled_accuracy[preprocess, optimizer] - 0.02 and accuracy > 0.9


def test_rows_beyond_float32_squares_train_on_the_rescaled_rows_as_the_same_descent():
    X, y = easy_problem()
    base = SGDSoftThresholdClassifier(preprocess="none", **SGD_FIT).fit(X, y)
    huge = SGDSoftThresholdClassifier(preprocess="none", **SGD_FIT).fit(X * 1e30, y)
    assert training_scale(X.astype(np.float32), 1e-4) == 1.0  # unit-order rows: trained as they are
    assert training_scale((X * 1e30).astype(np.float32), 1e-4) > 1e30
    assert np.mean(huge.predict(X * 1e30) == base.predict(X)) >= 0.98
    np.testing.assert_allclose(huge.dictionary_ * 1e30, base.dictionary_, rtol=1e-2,
                               atol=1e-3 * np.abs(base.dictionary_).max())


def test_rows_too_short_for_float32_atoms_are_refused_before_training(monkeypatch):
    X, y = easy_problem()
    X = X * (1e3 * FLOAT32.tiny / np.abs(X).max())  # atoms of 1 / (eps r) would pass 1e38

    def no_training(*args, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(SGDSoftThresholdClassifier, "_descend", no_training)
    with pytest.raises(ValueError, match=r"rows of scale .* need atoms beyond float32's range.*eps=0.0001"):
        SGDSoftThresholdClassifier(preprocess="none", **SGD_FIT).fit(X, y)
    with pytest.raises(ValueError, match=r"mu=0.001 cannot train on rows of scale .* overflows float32"):
        SGDSoftThresholdClassifier(preprocess="none", mu=1e-3, **SGD_FIT).fit(X * 1e5, y)
