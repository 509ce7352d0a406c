"""The baselines SparseCodingSVM (codes that solve the lasso, scores of the SVM) and
KMeansCentroidClassifier (the nearest centroid's class), and bad input for each."""

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_blobs
from sklearn.exceptions import NotFittedError
from sklearn.metrics import pairwise_distances_argmin

from lastedge.train.baselines import C_GRID
from lastedge.train.centroids import KMeansCentroidClassifier
from lastedge.train.sparse_coding import SparseCodingSVM


# --- SparseCodingSVM ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sparse_coder(binary):
    X, y, _, _ = binary
    return SparseCodingSVM(10, preprocess="standardize", random_state=0).fit(X, y)


def test_sparse_coding_accuracy_far_above_chance(binary, sparse_coder):
    _, _, X_test, y_test = binary
    assert sparse_coder.score(X_test, y_test) > 0.9  # measured 0.96; chance is 0.5


def test_sparse_codes_solve_the_lasso(binary, sparse_coder):
    """Optimality of ``0.5 ||z - D a||^2 + lambda ||a||_1``: ``D^T (z - D a) = lambda sign(a)`` on
    the non-zero codes and ``|D^T (z - D a)| <= lambda`` on the zeros."""
    _, _, X_test, _ = binary
    Z = sparse_coder.preprocess_.apply(X_test).astype(np.float64)
    codes, D, lam = sparse_coder.transform(X_test), sparse_coder.atoms_, sparse_coder.l1_penalty
    np.testing.assert_allclose(np.linalg.norm(D, axis=0), 1.0, rtol=1e-12)
    gradient = (Z - codes @ D.T) @ D
    active = codes != 0
    assert active.any() and (~active).any()
    np.testing.assert_allclose(gradient[active], lam * np.sign(codes[active]), atol=1e-8)
    assert np.all(np.abs(gradient[~active]) <= lam + 1e-8)
    assert sparse_coder.feature_sparsity(X_test) == pytest.approx(np.mean(~active))


def test_sparse_coding_scores_are_the_svm_on_rescaled_codes(binary, sparse_coder):
    _, _, X_test, _ = binary
    scores = sparse_coder.decision_function(X_test)
    codes = sparse_coder.transform(X_test) / sparse_coder.feature_scale_
    np.testing.assert_allclose(scores, sparse_coder.svm_.decision_function(codes))
    predicted = sparse_coder.classes_[(scores > 0).astype(int)]
    np.testing.assert_array_equal(sparse_coder.predict(X_test), predicted)
    again = SparseCodingSVM(10, preprocess="standardize", random_state=0).fit(*binary[:2])
    np.testing.assert_array_equal(again.atoms_, sparse_coder.atoms_)
    np.testing.assert_array_equal(again.svm_.coef_, sparse_coder.svm_.coef_)


def test_sparse_coding_multiclass_with_string_labels():
    X, y = make_blobs(n_samples=150, centers=3, n_features=6, cluster_std=3.0, random_state=0)
    labels = np.array(["cat", "dog", "emu"])[y]
    model = SparseCodingSVM(6, preprocess="standardize", random_state=0).fit(X[:90], labels[:90])
    scores = model.decision_function(X[90:])
    assert scores.shape == (60, 3)
    np.testing.assert_array_equal(model.predict(X[90:]), model.classes_[scores.argmax(axis=1)])
    assert model.score(X[90:], labels[90:]) > 0.85  # measured 0.95; chance is 0.33


@pytest.mark.parametrize("params, match", [
    ({"n_atoms": 0}, "n_atoms must be an integer >= 1, got 0"),
    ({"l1_penalty": 0.0}, "l1_penalty must be a finite number > 0, got 0.0"),
    ({"l1_penalty": np.nan}, "l1_penalty must be a finite number > 0, got nan"),
    ({"C": 0.0}, "C must be a finite number > 0 or None, got 0.0"),
    ({"preprocess": "l1"}, "preprocess must be one of .*'l1'"),
])
def test_sparse_coding_bad_parameters(binary, params, match):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match=match):
        SparseCodingSVM(**{"n_atoms": 4, **params}).fit(X, y)


def test_sparse_coding_bad_input(binary, sparse_coder):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match="single class"):
        SparseCodingSVM(2).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="NaN"):
        SparseCodingSVM(2).fit(np.where(X > 2, np.nan, X), y)
    with pytest.raises(NotFittedError):
        SparseCodingSVM(2).predict(X)
    with pytest.raises(ValueError, match="12 features"):
        sparse_coder.predict(X[:, :5])


@pytest.mark.parametrize("method", ["predict", "decision_function", "transform", "feature_sparsity"])
def test_rows_beyond_float32_are_refused_after_fit_as_in_fit(binary, sparse_coder, l1_encoder, method):
    # Fit refuses them; the lasso codes (and the encoder's codes) of such rows were all zero, so
    # every row got the same class.
    X, _, _, _ = binary
    for fitted in (sparse_coder, l1_encoder):
        if hasattr(fitted, method):
            with pytest.raises(ValueError, match="beyond float32's range"):
                getattr(fitted, method)(X[:3] * 1e100)


# --- KMeansCentroidClassifier ------------------------------------------------------------------

@pytest.fixture(scope="module")
def centroid_model(digits):
    X, y, _, _ = digits
    return KMeansCentroidClassifier(40, preprocess="center-l2", random_state=0).fit(X, y)


def test_centroids_digits_accuracy_far_above_chance(digits, centroid_model):
    _, _, X_test, y_test = digits
    assert centroid_model.score(X_test, y_test) > 0.9  # measured 0.95; chance is 0.10


def test_centroids_predict_the_nearest_centroids_class(digits, centroid_model):
    _, _, X_test, _ = digits
    Z = centroid_model.preprocess_.apply(X_test)
    nearest = pairwise_distances_argmin(Z, centroid_model.centroids_)
    expected = centroid_model.classes_[centroid_model.centroid_classes_[nearest]]
    np.testing.assert_array_equal(centroid_model.predict(X_test), expected)
    assert centroid_model.centroids_.shape == (40, 64)
    np.testing.assert_array_equal(np.bincount(centroid_model.centroid_classes_), 4)


def test_centroids_split_and_class_means(binary):
    X, y, _, _ = binary
    split = KMeansCentroidClassifier(7, random_state=0).fit(X, y)
    np.testing.assert_array_equal(np.bincount(split.centroid_classes_), [4, 3])  # kappa = 0.5
    means = KMeansCentroidClassifier(2, preprocess="none", random_state=0).fit(X, y)
    for c in (0, 1):  # one centroid per class: the class mean
        np.testing.assert_allclose(means.centroids_[c], X[y == c].mean(axis=0), atol=1e-6)


def test_centroids_same_seed_same_model(digits, centroid_model):
    X, y, _, _ = digits
    again = KMeansCentroidClassifier(40, preprocess="center-l2", random_state=0).fit(X, y)
    np.testing.assert_array_equal(again.centroids_, centroid_model.centroids_)


@pytest.mark.parametrize("params, match", [
    ({"n_atoms": 0}, "n_atoms must be an integer >= 1, got 0"),
    ({"n_atoms": True}, "n_atoms must be an integer >= 1, got True"),
    ({"preprocess": "pca"}, "preprocess must be one of .*'pca'"),
])
def test_centroids_bad_parameters(binary, params, match):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match=match):
        KMeansCentroidClassifier(**{"n_atoms": 4, **params}).fit(X, y)


def test_centroids_bad_input(binary):
    X, y, _, _ = binary
    with pytest.raises(ValueError, match="n_atoms=1 gives some of the 2 classes no atom"):
        KMeansCentroidClassifier(1).fit(X, y)
    with pytest.raises(ValueError, match="class 1 has 3 training rows, fewer than its 5 atoms"):
        KMeansCentroidClassifier(10).fit(np.r_[X[y == 0], X[y == 1][:3]], np.r_[y[y == 0], [1, 1, 1]])
    with pytest.raises(ValueError, match="single class"):
        KMeansCentroidClassifier(2).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="NaN"):
        KMeansCentroidClassifier(2).fit(np.where(X > 2, np.nan, X), y)
    with pytest.raises(ValueError, match="beyond float32's range"):  # was 10% accurate on digits
        KMeansCentroidClassifier(2).fit(X * 1e300, y)
    with pytest.raises(NotFittedError):
        KMeansCentroidClassifier(2).predict(X)
    with pytest.raises(ValueError, match="beyond float32's range"):  # was class 0 for every row
        KMeansCentroidClassifier(2).fit(X, y).predict(X * 1e300)


@pytest.mark.slow
def test_sparse_coding_chooses_C_by_cross_validation_when_asked():
    X, y = load_digits(return_X_y=True)
    model = SparseCodingSVM(20, C=None, preprocess="center-l2", random_state=0).fit(X[:300], y[:300])
    assert model.C_ in C_GRID
    assert model.score(X[300:500], y[300:500]) > 0.7  # measured 0.785; chance is 0.1
