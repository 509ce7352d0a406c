"""The estimators' scikit-learn face: the shared checks, seeds, files, the encoder, input errors."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from sklearn.decomposition import sparse_encode
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from lastedge.runtime import Model
from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier, SoftThresholdEncoderSVM

FAST_LAST = dict(n_atoms=4, max_dca_iter=2, inner_iter=30, verbose=0, random_state=0)
FAST_SGD = dict(n_atoms=4, max_iter=100, step_sizes=(0.1,), verbose=0, random_state=0)
# one dictionary of 8 atoms for up to 4 classes (the checks' data)
FAST_SHARED = {**FAST_LAST, "n_atoms": 8, "multiclass": "shared"}


# check name -> why it is expected to fail (none at present; real trainer bugs are not listed)
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@parametrize_with_checks(
    [LASTClassifier(**FAST_LAST), LASTClassifier(**FAST_SHARED), SGDSoftThresholdClassifier(**FAST_SGD)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
)
def test_scikit_learn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the fast settings stop DCA early
        check(estimator)


@pytest.mark.parametrize("cls", [LASTClassifier, SGDSoftThresholdClassifier])
def test_estimators_declare_transformer_tags(cls):
    # They implement ``transform`` (the soft-threshold features), so they are transformers too.
    assert cls().__sklearn_tags__().transformer_tags.preserves_dtype == ["float32"]


# ------------------------------------------------------------------------------ seeds, files
@pytest.mark.parametrize("cls, params", [(LASTClassifier, FAST_LAST),
                                         (SGDSoftThresholdClassifier, FAST_SGD)])
def test_same_seed_gives_identical_dictionary(small_blobs, fit_quietly, cls, params):
    X, y = small_blobs()
    first = fit_quietly(cls(**params), X, y).dictionary_
    again = fit_quietly(cls(**params), X, y).dictionary_
    other = fit_quietly(cls(**{**params, "random_state": 1}), X, y).dictionary_
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_saved_model_gives_identical_scores(tiny_last, digits_data, tmp_path):
    path = tiny_last.to_model().save(tmp_path / "m.npz")
    loaded = Model.load(path)
    X = digits_data.X_test
    np.testing.assert_array_equal(loaded.decision_function(X), tiny_last.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), tiny_last.predict(X))
    assert loaded.meta["trainer"] == "LASTClassifier"


@pytest.mark.parametrize("cls, params, real", [(LASTClassifier, FAST_LAST, "nu"),
                                               (SoftThresholdEncoderSVM, {"alpha": 0.2}, "C")])
def test_model_records_numpy_parameters_as_numbers(small_blobs, fit_quietly, cls, params, real):
    # Values from a numpy grid (np.int64, np.float32) were recorded as 'np.int64(6)'.
    X, y = small_blobs()
    fitted = fit_quietly(cls(**{**params, "n_atoms": np.int64(6), real: np.float32(0.5)}), X, y)
    recorded = fitted.to_model().meta["params"]
    assert type(recorded["n_atoms"]) is int and recorded["n_atoms"] == 6 and recorded[real] == 0.5
    assert recorded["preprocess"] == "auto" and recorded["random_state"] == params.get("random_state")


def test_failed_save_leaves_no_file_behind(tiny_last, tmp_path, monkeypatch):
    def savez_then_die(file, **arrays):
        file.write(b"PK\x03\x04 half an archive")
        raise KeyboardInterrupt  # as if the process were interrupted mid-write

    monkeypatch.setattr(np, "savez", savez_then_die)
    with pytest.raises(KeyboardInterrupt):
        tiny_last.to_model().save(tmp_path / "m.npz")
    assert os.listdir(tmp_path) == []


def test_failed_save_keeps_the_previous_file(tiny_last, tmp_path, monkeypatch):
    path = tiny_last.to_model().save(tmp_path / "m.npz")
    before = path.read_bytes()
    monkeypatch.setattr(np, "savez", lambda file, **arrays: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        tiny_last.to_model().save(path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["m.npz"]


# ------------------------------------------------------------------------------ the encoder
def test_features_are_the_one_sided_soft_threshold(tiny_last, digits_data):
    X = digits_data.X_test
    centred = X - X.mean(axis=1, keepdims=True)
    Z = centred / np.linalg.norm(centred, axis=1, keepdims=True)  # center-l2, independently
    D = tiny_last.dictionary_.astype(np.float64)
    pre = Z @ D
    margin = 1e-5 * (1 + np.abs(Z) @ np.abs(D))  # float32 rounding of the model's MatMul
    features = tiny_last.transform(X)

    np.testing.assert_array_less(np.abs(features - np.maximum(pre - 1.0, 0.0)), margin)
    assert np.all(features[pre < 1 - margin] == 0)  # exactly zero below the threshold
    assert np.all(features[pre > 1 + margin] > 0)
    assert 0.05 < np.mean(features == 0) < 0.95  # both sides of the threshold are exercised
    encoded = sparse_encode(Z, D.T, algorithm="threshold", alpha=1.0, positive=True)
    np.testing.assert_array_less(np.abs(features - encoded), margin)


# ------------------------------------------------------------------------------ shapes
def test_string_labels_round_trip(small_blobs, fit_quietly):
    X, y = small_blobs(n_classes=2)
    labels = np.array(["cat", "dog"])[y]
    clf = fit_quietly(LASTClassifier(**FAST_LAST), X, labels)
    assert clf.classes_.tolist() == ["cat", "dog"]
    predicted = clf.predict(X)
    assert set(predicted) <= {"cat", "dog"}
    assert np.mean(predicted == labels) > 0.9  # well-separated blobs
    np.testing.assert_array_equal(clf.to_model().predict(X), predicted)


def test_binary_shapes_and_history(small_blobs, fit_quietly):
    X, y = small_blobs(n_classes=2)
    clf = fit_quietly(LASTClassifier(**FAST_LAST), X, y)
    scores = clf.decision_function(X)
    assert scores.shape == (len(X),)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(scores > 0).astype(int)])
    assert clf.coef_.shape == (FAST_LAST["n_atoms"], 1)
    assert isinstance(clf.history_, list) and 1 <= len(clf.history_) <= FAST_LAST["max_dca_iter"]
    for record in clf.history_:
        assert set(record) == {"objective", "step", "extrapolation", "change", "time"}
        assert np.isfinite(record["objective"])
    times = [record["time"] for record in clf.history_]
    assert times == sorted(times)


def test_one_vs_all_shapes_and_history(small_blobs, fit_quietly):
    X, y = small_blobs(n_classes=3)
    clf = fit_quietly(LASTClassifier(**FAST_LAST), X, y)
    assert clf.decision_function(X).shape == (len(X), 3)
    assert clf.dictionary_.shape == (X.shape[1], 3 * FAST_LAST["n_atoms"])
    assert clf.coef_.shape == (3 * FAST_LAST["n_atoms"], 3)
    assert len(clf.history_) == 3
    for head in clf.history_:
        assert isinstance(head, list) and len(head) >= 1
        assert all(set(record) == {"objective", "step", "extrapolation", "change", "time"} for record in head)


def test_convergence_warning_when_max_dca_iter_is_hit(small_blobs):
    X, y = small_blobs(n_classes=2)
    with pytest.warns(ConvergenceWarning, match="max_dca_iter=1"):
        LASTClassifier(**{**FAST_LAST, "max_dca_iter": 1, "tol": 0.0}).fit(X, y)


@pytest.mark.parametrize("batch_size, tol", [(None, "0.001"), (16, "0.0001")])
def test_default_tol_depends_on_full_batch_or_minibatch(small_blobs, batch_size, tol):
    """``tol=None`` is the paper's 1e-3 on the parameters in full batch, 1e-4 of objective per
    row on minibatches (the value the warning names)."""
    X, y = small_blobs(n_classes=2)
    with pytest.warns(ConvergenceWarning, match=f"tol={tol};"):
        LASTClassifier(**{**FAST_LAST, "max_dca_iter": 1}, batch_size=batch_size).fit(X, y)


@pytest.mark.parametrize("patience", [1, 2])
def test_minibatch_fit_stops_when_the_objective_stops_falling(small_blobs, fit_quietly, patience):
    """On minibatches ``tol`` is the fall of the objective per training row that counts as progress:
    a tol no DCA iteration can meet stops every head after ``n_iter_no_change`` iterations, as
    converged (no warning); with tol 0 any fall is progress."""
    X, y = small_blobs(n_classes=3)
    minibatch = {**FAST_LAST, "max_dca_iter": 8, "batch_size": 16, "n_iter_no_change": patience}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = LASTClassifier(**minibatch, tol=100.0).fit(X, y)  # (P) per row starts far below 100
    assert clf.n_iter_ == patience and clf.converged_.all()
    patient = fit_quietly(LASTClassifier(**minibatch, tol=0.0), X, y)
    assert patient.n_iter_ > patience


def test_minibatch_fit_with_early_stopping_stops_on_the_hold_out_only(small_blobs, fit_quietly):
    """With early stopping the hold-out score decides when to stop (as in scikit-learn), so even a
    tol no iteration can meet stops no head."""
    X, y = small_blobs(n_classes=3)
    clf = fit_quietly(LASTClassifier(**{**FAST_LAST, "max_dca_iter": 8}, batch_size=16, tol=100.0,
                                     early_stopping=True, validation_fraction=0.25, n_iter_no_change=2), X, y)
    assert not clf.converged_.any() and clf.n_iter_ == len(clf.validation_scores_) > 2


# ------------------------------------------------------------------- monitor, early stopping
def test_monitor_sees_every_iterate_and_can_stop_training(small_blobs):
    X, y = small_blobs(n_classes=3)
    seen = []

    def monitor(k, estimator):
        seen.append((k, float(np.mean(estimator.predict(X) == y))))  # predict works mid-fit
        return k == 1

    clf = LASTClassifier(**{**FAST_LAST, "max_dca_iter": 10, "tol": 0.0}).fit(X, y, monitor=monitor)
    assert [k for k, _ in seen] == [0, 1] and clf.n_iter_ == 2
    assert seen[-1][1] == float(np.mean(clf.predict(X) == y))  # the stopped iterate is kept


def test_early_stopping_keeps_the_best_validation_iterate(small_blobs):
    X, y = small_blobs(n_classes=2)
    clf = LASTClassifier(**{**FAST_LAST, "max_dca_iter": 6, "tol": 0.0}, early_stopping=True,
                         validation_fraction=0.25, n_iter_no_change=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # stopping early is not a failure
        clf.fit(X, y)
    scores = clf.validation_scores_
    assert 1 <= len(scores) <= 6 and clf.best_validation_score_ == max(scores)
    if len(scores) < 6:  # stopped: the last n_iter_no_change scores did not beat the best
        assert max(scores[-2:]) <= max(scores[:-2])


def test_refit_without_early_stopping_clears_the_validation_scores(small_blobs, fit_quietly):
    X, y = small_blobs(n_classes=2)
    clf = fit_quietly(LASTClassifier(**FAST_LAST, early_stopping=True, validation_fraction=0.25), X, y)
    assert clf.best_validation_score_ is not None
    fit_quietly(clf.set_params(early_stopping=False), X, y)
    assert clf.validation_scores_ is None and clf.best_validation_score_ is None


@pytest.mark.parametrize("params, match", [
    ({"validation_fraction": 1.0}, r"validation_fraction must be a finite number in \(0, 1\), got 1.0"),
    ({"n_iter_no_change": 0}, "n_iter_no_change must be an integer >= 1, got 0"),
])
def test_bad_early_stopping_parameters_are_refused(small_blobs, params, match):
    X, y = small_blobs()
    with pytest.raises(ValueError, match=match):
        LASTClassifier(**{**FAST_LAST, "early_stopping": True, **params}).fit(X, y)


@pytest.mark.parametrize("fraction, reason", [
    (0.999, "the resulting train set will be empty"),  # was "needs a validation set with every class"
    (0.01, "test_size = 1 should be greater or equal to the number of classes = 3"),
])
def test_a_hold_out_that_cannot_be_drawn_says_why(small_blobs, fraction, reason):
    X, y = small_blobs()
    with pytest.raises(ValueError, match=f"early_stopping cannot hold out validation_fraction={fraction} "
                                         f"of the 90 training rows, stratified by class: .*{reason}"):
        LASTClassifier(**FAST_LAST, early_stopping=True, validation_fraction=fraction).fit(X, y)
