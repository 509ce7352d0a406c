"""The SoftThresholdEncoderSVM baseline: the dictionary, the encoder as math, the exact Model, its
cross-validation and bad input (``test_sparse_coding_and_centroids.py``: the other baselines)."""

import warnings

import numpy as np
import pytest
from sklearn.decomposition import sparse_encode
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from lastedge.runtime import Model
from lastedge.train.baselines import ACTIVE_FRACTIONS, C_GRID, SoftThresholdEncoderSVM, unit_norm
from lastedge.train.centroids import KMeansCentroidClassifier
from lastedge.train.sparse_coding import SparseCodingSVM


@pytest.fixture(scope="module")
def digits_model(digits):
    X, y, _, _ = digits
    return SoftThresholdEncoderSVM(40, preprocess="center-l2", random_state=0).fit(X, y)


def test_digits_accuracy_far_above_chance(digits, digits_model):
    _, _, X_test, y_test = digits
    assert digits_model.score(X_test, y_test) > 0.85  # chance is 0.10


@pytest.mark.parametrize("dictionary", ["kmeans", "random"])
def test_binary_accuracy_far_above_chance(binary, dictionary):
    X, y, X_test, y_test = binary
    model = SoftThresholdEncoderSVM(20, dictionary=dictionary, C=None, preprocess="standardize",
                                    random_state=0).fit(X, y)
    assert model.score(X_test, y_test) > 0.75  # chance is 0.5


def test_atoms_are_unit_norm_and_split_over_classes(digits_model):
    assert digits_model.atoms_.shape == (64, 40)
    np.testing.assert_allclose(np.linalg.norm(digits_model.atoms_, axis=0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(np.bincount(digits_model.atom_classes_), 4)


def test_binary_split_is_half_and_half(binary):
    X, y, _, _ = binary
    model = SoftThresholdEncoderSVM(7, alpha=0.3, random_state=0).fit(X, y)
    np.testing.assert_array_equal(np.bincount(model.atom_classes_), [4, 3])


def test_kmeans_atoms_are_centroids_of_their_class(binary):
    X, y, _, _ = binary
    model = SoftThresholdEncoderSVM(2, alpha=0.3, preprocess="none", random_state=0).fit(X, y)
    for c in (0, 1):  # one atom per class: the class mean, normalised
        mean = X[y == c].mean(axis=0)
        np.testing.assert_allclose(model.atoms_[:, c], mean / np.linalg.norm(mean), atol=1e-6)


def test_codes_are_the_one_sided_soft_threshold(digits, digits_model):
    X, _, _, _ = digits
    Z = X - X.mean(axis=1, keepdims=True)
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    alpha = digits_model.alpha_
    two_sided = sparse_encode(Z, digits_model.atoms_.T, algorithm="threshold", alpha=alpha)
    codes = digits_model.transform(X)
    np.testing.assert_allclose(codes, np.maximum(two_sided, 0), atol=1e-6)
    below = Z @ digits_model.atoms_ <= alpha - 1e-6
    assert below.any() and (~below).any()
    assert np.all(codes[below] == 0.0)  # exactly zero, not merely small
    assert digits_model.feature_sparsity(X) == pytest.approx(np.mean(codes == 0))


def test_model_reproduces_the_svm_exactly(digits, digits_model):
    _, _, X_test, _ = digits
    model = digits_model.to_model()
    assert isinstance(model, Model) and model.alpha == 1.0
    assert not digits_model.svm_.fit_intercept
    svm_scores = digits_model.svm_.decision_function(
        digits_model.transform(X_test) / digits_model.feature_scale_)
    np.testing.assert_allclose(model.decision_function(X_test), svm_scores, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(model.predict(X_test), digits_model.predict(X_test))
    np.testing.assert_array_equal(digits_model.predict(X_test),
                                  digits_model.classes_[svm_scores.argmax(axis=1)])


def test_model_round_trips_through_its_file(tmp_path, binary):
    X, y, X_test, _ = binary
    fitted = SoftThresholdEncoderSVM(10, alpha=0.2, random_state=0).fit(X, np.where(y, "yes", "no"))
    loaded = Model.load(fitted.to_model().save(tmp_path / "encoder.npz"))
    np.testing.assert_array_equal(loaded.predict(X_test), fitted.predict(X_test))
    assert set(fitted.predict(X_test)) <= {"yes", "no"}
    assert fitted.decision_function(X_test).shape == (len(X_test),)


def test_cross_validation_picks_the_best_of_the_grid(digits_model):
    results = digits_model.cv_results_
    assert len(results["mean_accuracy"]) == len(ACTIVE_FRACTIONS)  # C fixed at 1.0
    best = np.argmax(results["mean_accuracy"])
    assert digits_model.alpha_ == results["alpha"][best] and digits_model.C_ == 1.0
    assert np.all(np.diff(results["alpha"]) > 0)  # sparser codes as the grid goes on


def test_threshold_search_follows_the_scale_of_raw_rows(digits):
    # The candidate thresholds were rounded to 12 decimals: responses of rows near 1e-13 all
    # became 0, and the fit said that every response D^T z was <= 0.
    X, y, X_test, _ = digits
    plain = SoftThresholdEncoderSVM(20, preprocess="none", random_state=0).fit(X, y)
    small = SoftThresholdEncoderSVM(20, preprocess="none", random_state=0).fit(1e-13 * X, y)
    np.testing.assert_allclose(small.cv_results_["alpha"], 1e-13 * plain.cv_results_["alpha"], rtol=1e-6)
    assert np.mean(small.predict(1e-13 * X_test) == plain.predict(X_test)) > 0.95


def test_joint_search_and_fixed_parameters(binary):
    X, y, _, _ = binary
    searched = SoftThresholdEncoderSVM(10, C=None, random_state=0).fit(X, y)
    alphas, Cs = searched.cv_results_["alpha"], searched.cv_results_["C"]
    assert 1 <= len(np.unique(alphas)) <= len(ACTIVE_FRACTIONS) and np.all(alphas > 0)
    assert len(Cs) == len(np.unique(alphas)) * len(C_GRID) and set(Cs) == set(C_GRID)
    fixed = SoftThresholdEncoderSVM(10, alpha=0.25, C=3.0, random_state=0).fit(X, y)
    assert fixed.cv_results_ is None and (fixed.alpha_, fixed.C_) == (0.25, 3.0)


def test_same_seed_same_model(binary):
    X, y, _, _ = binary
    first, second = (SoftThresholdEncoderSVM(10, alpha=0.2, random_state=3).fit(X, y) for _ in range(2))
    np.testing.assert_array_equal(first.dictionary_, second.dictionary_)
    np.testing.assert_array_equal(first.coef_, second.coef_)


@pytest.mark.parametrize("params, match", [
    ({"n_atoms": 0}, "n_atoms must be an integer >= 1, got 0"),
    ({"n_atoms": 2.5}, "n_atoms must be an integer"),
    ({"dictionary": "pca"}, "dictionary must be one of .*'pca'"),
    ({"alpha": -0.1}, "alpha must be a finite number > 0 or None, got -0.1"),
    ({"C": 0}, "C must be a finite number > 0 or None, got 0"),
    ({"preprocess": "l1"}, "preprocess must be one of .*'l1'"),
    ({"cv": 1}, "cv must be an integer >= 2, got 1"),
])
def test_bad_parameters(binary, params, match):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match=match):
        SoftThresholdEncoderSVM(**{"n_atoms": 4, **params}).fit(X, y)


def test_bad_data(binary):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match="n_atoms=1 gives some of the 2 classes no atom"):
        SoftThresholdEncoderSVM(1, alpha=0.5).fit(X, y)
    with pytest.raises(ValueError, match="class 1 has 3 training rows, fewer than its 5 atoms"):
        SoftThresholdEncoderSVM(10, alpha=0.5).fit(np.r_[X[y == 0], X[y == 1][:3]],
                                                   np.r_[y[y == 0], [1, 1, 1]])
    with pytest.raises(ValueError, match="single class"):
        SoftThresholdEncoderSVM(2).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="NaN"):
        SoftThresholdEncoderSVM(2).fit(np.where(X > 2, np.nan, X), y)
    with pytest.raises(ValueError, match="beyond float32's range"):  # was fitted on rows predict refuses
        SoftThresholdEncoderSVM(2).fit(X * 1e300, y)
    zero_mean = np.array([[1.0, 0], [-1, 0], [0, 1], [0, -1]])  # each class's centroid is 0
    with pytest.raises(ValueError, match="no threshold alpha > 0"):
        SoftThresholdEncoderSVM(2, preprocess="none").fit(zero_mean, [0, 0, 1, 1])


@pytest.mark.parametrize("cls, searching, given, searched", [
    (SoftThresholdEncoderSVM, {"n_atoms": 2, "dictionary": "random", "alpha": None, "C": None},
     {"alpha": 0.1, "C": 1.0}, "alpha and C"),
    (SparseCodingSVM, {"n_atoms": 4, "C": None}, {"C": 1.0}, "C"),
])
def test_cross_validation_that_fails_on_every_candidate_is_refused(binary, cls, searching, given, searched):
    # one row of class 1: the fold that holds it out trains on class 0 only, so scikit-learn scores
    # every candidate NaN, and argmax over NaNs used to pick the first candidate silently
    X, y, _, _ = binary
    X, y = np.r_[X[y == 0][:29], X[y == 1][:1]], np.r_[np.zeros(29, int), 1]
    with warnings.catch_warnings(), pytest.raises(
            ValueError, match=f"cannot choose {searched} by 3-fold cross-validation: the SVM failed on a "
                              f"fold for every candidate .class 1 has 1 training row.*give {searched} explicitly"):
        warnings.simplefilter("ignore")  # scikit-learn's own warnings about the folds
        cls(**searching, random_state=0).fit(X, y)
    assert cls(**{**searching, **given}, random_state=0).fit(X, y).score(X, y) > 0.9  # no folds needed


def test_predict_checks(binary):
    X, y, _, _ = binary
    with pytest.raises(NotFittedError):
        SoftThresholdEncoderSVM(4).predict(X)
    with pytest.raises(NotFittedError):  # was an AttributeError
        SoftThresholdEncoderSVM(4).transform(X)
    fitted = SoftThresholdEncoderSVM(4, alpha=0.3).fit(X, y)
    with pytest.raises(ValueError, match="12 features"):
        fitted.predict(X[:, :5])


@parametrize_with_checks([SoftThresholdEncoderSVM(6, alpha=0.1, preprocess="none", random_state=0),
                          SparseCodingSVM(2, l1_penalty=0.01, preprocess="none", random_state=0),
                          KMeansCentroidClassifier(6, preprocess="none", random_state=0)])
def test_scikit_learn_contract(estimator, check):
    check(estimator)  # no expected failures: every check passes on these fast configurations


# --- SoftThresholdEncoderSVM with an l1 dictionary ---------------------------------------------

def test_l1_dictionary_accuracy_and_atoms(binary, l1_encoder):
    _, _, X_test, y_test = binary
    assert l1_encoder.score(X_test, y_test) > 0.85  # measured 0.96; chance is 0.5
    assert l1_encoder.atoms_.shape == (12, 10) and l1_encoder.atom_classes_ is None  # unsupervised
    np.testing.assert_allclose(np.linalg.norm(l1_encoder.atoms_, axis=0), 1.0, rtol=1e-12)


def _lasso_objective(Z: np.ndarray, atoms: np.ndarray, l1_penalty: float) -> float:
    """``sum_i 0.5 * ||z_i - D a_i||^2 + l1_penalty * ||a_i||_1`` at the best codes, atoms as rows."""
    codes = sparse_encode(Z, atoms, algorithm="lasso_lars", alpha=l1_penalty)
    return 0.5 * np.sum((Z - codes @ atoms) ** 2) + l1_penalty * np.abs(codes).sum()


def test_l1_dictionary_lowers_its_objective(binary, l1_encoder):
    """The learned atoms fit the training rows' lasso objective better than as many random rows."""
    X, _, _, _ = binary
    Z = X / np.linalg.norm(X, axis=1, keepdims=True)
    samples = unit_norm(Z[np.random.RandomState(1).choice(len(Z), 10, replace=False)])
    learned = _lasso_objective(Z, l1_encoder.atoms_.T, l1_encoder.l1_penalty)
    assert learned < 0.9 * _lasso_objective(Z, samples, l1_encoder.l1_penalty)
