"""A shared dictionary trained as independent parts (``sub_dictionaries``): each part is the fit a
smaller shared model would make, and the joined model averages their class scores."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning

from lastedge.runtime import Model
from lastedge.train import LASTClassifier

SIGNED = dict(multiclass="shared", atoms_against=0.5, ovr_hinge_weight=1.0, preprocess="center-l2",
              random_state=0, verbose=0)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return X[:600], y[:600]


@pytest.mark.filterwarnings("ignore", category=ConvergenceWarning)
def test_each_part_trains_as_a_smaller_shared_model_and_scores_are_averaged(digits):
    X, y = digits
    joined = LASTClassifier(40, sub_dictionaries=2, max_dca_iter=3, **SIGNED).fit(X, y)
    half = LASTClassifier(20, max_dca_iter=3, **SIGNED).fit(X, y)
    # Full batch: the first part starts where the smaller model starts and never sees the second.
    np.testing.assert_array_equal(joined.dictionary_[:, :20], half.dictionary_)
    np.testing.assert_array_equal(2 * joined.coef_[:20], half.coef_)
    assert [r["objective"] for r in joined.history_[0]] == [r["objective"] for r in half.history_]
    assert len(joined.history_) == 2 and joined.converged_.shape == (2,)
    # The second part started elsewhere; the device model is one dictionary, one weight per atom.
    assert not np.allclose(joined.dictionary_[:, 20:], half.dictionary_)
    model = joined.to_model()
    assert model.n_atoms == 40 and np.all(np.count_nonzero(model.weights, axis=1) == 1)
    second = Model(joined.dictionary_[:, 20:], 2 * joined.coef_[20:], joined.classes_, 1.0, joined.preprocess_)
    np.testing.assert_allclose(joined.decision_function(X),
                               (half.decision_function(X) + second.decision_function(X)) / 2,
                               rtol=1e-5, atol=1e-5)


@pytest.mark.filterwarnings("ignore", category=ConvergenceWarning)
def test_parts_train_on_minibatches(digits):
    X, y = digits
    clf = LASTClassifier(60, sub_dictionaries=3, batch_size=100, inner_iter=30, max_dca_iter=3, **SIGNED).fit(X, y)
    assert clf.dictionary_.shape == (64, 60) and len(clf.history_) == 3
    assert np.all(np.count_nonzero(clf.coef_, axis=1) == 1)
    assert clf.score(X, y) > 0.9


@pytest.mark.parametrize("n_atoms, parts", [(25, 2), (20, 3), (30, 4)])
def test_atoms_that_do_not_split_into_parts_of_a_class_each_are_refused(digits, n_atoms, parts):
    X, y = digits
    with pytest.raises(ValueError, match=f"sub_dictionaries={parts} needs n_atoms"):
        LASTClassifier(n_atoms, sub_dictionaries=parts, **SIGNED).fit(X, y)


@pytest.mark.parametrize("value", [0, -1, 1.5, "2"])
def test_bad_part_counts_are_rejected_by_name(digits, value):
    X, y = digits
    with pytest.raises((ValueError, TypeError), match="sub_dictionaries"):
        LASTClassifier(40, sub_dictionaries=value, **SIGNED).fit(X, y)
