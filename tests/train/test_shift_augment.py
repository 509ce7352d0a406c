"""Shifted copies of training images (``shift_augment``): the copies, the checks, the estimator."""

from __future__ import annotations

import numpy as np
import pytest

from lastedge.runtime.model import check_image_shape
from lastedge.train import LASTClassifier
from lastedge.train.augment import shift_offsets, shifted_copies

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST_LAST = dict(n_atoms=12, multiclass="shared", preprocess="center-l2", max_dca_iter=2,
                 inner_solver="adam", inner_iter=20, verbose=0, random_state=0)


def test_each_copy_is_the_image_moved_by_its_offset():
    images = np.zeros((2, 5, 6), dtype=np.float32)
    images[0, 2, 3] = 1.0
    images[1, 1, 1] = 2.0
    X, y = images.reshape(2, -1), np.array([4, 7])
    X_all, y_all = shifted_copies(X, y, (5, 6), max_shift=2)
    offsets = shift_offsets(2)
    assert len(offsets) == 8 and len(set(offsets)) == 8
    assert X_all.shape == (2 * 9, 30) and X_all.dtype == X.dtype
    np.testing.assert_array_equal(y_all, np.tile(y, 9))
    np.testing.assert_array_equal(X_all[:2], X)  # the originals come first
    for k, (down, right) in enumerate(offsets, start=1):
        moved = X_all[2 * k].reshape(5, 6)
        assert np.argwhere(moved == 1.0).tolist() == [[2 + down, 3 + right]]


def test_the_uncovered_strip_repeats_the_edge():
    image = np.arange(16, dtype=np.float32).reshape(1, 4, 4)
    X_all, _ = shifted_copies(image.reshape(1, -1), np.array([0]), (4, 4), max_shift=1)
    down_by_one = X_all[1 + shift_offsets(1).index((1, 0))].reshape(4, 4)
    np.testing.assert_array_equal(down_by_one[0], image[0, 0])  # the top row is repeated
    np.testing.assert_array_equal(down_by_one[1:], image[0, :3])


def test_colour_channels_move_together():
    images = np.zeros((1, 4, 4, 3), dtype=np.float32)
    images[0, 1, 1] = [1.0, 2.0, 3.0]
    X_all, _ = shifted_copies(images.reshape(1, -1), np.array([0]), (4, 4, 3), max_shift=1)
    right_by_one = X_all[1 + shift_offsets(1).index((0, 1))].reshape(4, 4, 3)
    np.testing.assert_array_equal(right_by_one[1, 2], [1.0, 2.0, 3.0])
    assert np.count_nonzero(right_by_one) == 3


def test_no_shift_returns_the_rows_as_they_are():
    X, y = np.ones((3, 4)), np.arange(3)
    X_all, y_all = shifted_copies(X, y, (2, 2), max_shift=0)
    assert X_all is X and y_all is y


@pytest.mark.parametrize("shape, n_features, match", [
    ((8,), 8, r"image_shape must be \(H, W\) or \(H, W, 3\), got \(8,\)"),
    ((2, 2, 2), 8, r"image_shape must be \(H, W\) or \(H, W, 3\)"),
    ((0, 4), 0, r"image_shape must be"),
    ("8x8", 64, r"image_shape must be"),
    ((8, 9), 64, r"image_shape \(8, 9\) holds 72 values, but the rows have 64 features"),
])
def test_bad_image_shapes_are_refused(shape, n_features, match):
    with pytest.raises(ValueError, match=match):
        check_image_shape(shape, n_features)


def test_shifts_that_leave_the_frame_or_go_backwards_are_refused():
    X, y = np.ones((2, 16)), np.arange(2)
    with pytest.raises(ValueError, match="a shift of 4 pixels would move 4x4 images out of their frame"):
        shifted_copies(X, y, (4, 4), max_shift=4)
    with pytest.raises(ValueError, match="the shift must be >= 0 pixels, got -1"):
        shifted_copies(X, y, (4, 4), max_shift=-1)


def test_the_estimator_trains_on_the_copies(digits_data):
    """Augmenting inside ``fit`` is training on the copies: the same random draws, the same model."""
    X, y = digits_data.X_train[:300], digits_data.y_train[:300]
    inside = LASTClassifier(**FAST_LAST, shift_augment=1, image_shape=(8, 8)).fit(X, y)
    outside = LASTClassifier(**FAST_LAST).fit(*shifted_copies(X, y, (8, 8), 1))
    np.testing.assert_array_equal(inside.dictionary_, outside.dictionary_)
    np.testing.assert_array_equal(inside.coef_, outside.coef_)
    assert inside.to_model().n_atoms == 12  # the copies cost nothing on the device
    assert inside.to_model().image_shape == (8, 8) and outside.to_model().image_shape is None


def test_early_stopping_holds_out_original_rows_only(digits_data, monkeypatch):
    X, y = digits_data.X_train[:300], digits_data.y_train[:300]
    seen = {}
    original = LASTClassifier._prepare

    def spy(self, X_fit, y_index, rng, *layout):
        seen["fit_rows"] = len(X_fit)
        return original(self, X_fit, y_index, rng, *layout)

    monkeypatch.setattr(LASTClassifier, "_prepare", spy)
    clf = LASTClassifier(**FAST_LAST, shift_augment=1, image_shape=(8, 8), early_stopping=True,
                         validation_fraction=0.2).fit(X, y)
    assert seen["fit_rows"] == 5 * 240  # 80 % of the rows and their 4 copies
    assert len(clf.validation_scores_) == clf.n_iter_


@pytest.mark.parametrize("params, match", [
    ({"shift_augment": 1}, "shift_augment needs image_shape"),
    ({"shift_augment": -1, "image_shape": (8, 8)}, "shift_augment must be an integer >= 0, got -1"),
    ({"shift_augment": 1.5, "image_shape": (8, 8)}, "shift_augment must be an integer >= 0, got 1.5"),
    ({"shift_augment": 1, "image_shape": (4, 4)}, r"image_shape \(4, 4\) holds 16 values, but the rows have 64"),
    ({"image_shape": (8, 8, 1)}, r"image_shape must be \(H, W\) or \(H, W, 3\) of integers >= 1 or None, got \(8, 8, 1\)"),
])
def test_bad_augmentation_parameters_are_refused(digits_data, params, match):
    X, y = digits_data.X_train, digits_data.y_train
    with pytest.raises(ValueError, match=match):
        LASTClassifier(**{**FAST_LAST, **params}).fit(X[:100], y[:100])
