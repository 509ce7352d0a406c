"""The estimators refuse bad training data, bad devices and threads with clear errors, and train the
same classifier on rows of any scale, dtype or memory layout."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train.base import available_accelerator, flushes_denormals, thread_count, usable_device

FAST_LAST = dict(n_atoms=4, max_dca_iter=2, inner_iter=30, verbose=0, random_state=0)
FAST_SGD = dict(n_atoms=4, max_iter=100, step_sizes=(0.1,), verbose=0, random_state=0)


def with_value(X: np.ndarray, value: float) -> np.ndarray:
    X = X.copy()
    X[3, 1] = value
    return X


@pytest.mark.parametrize("cls", [LASTClassifier, SGDSoftThresholdClassifier])
@pytest.mark.parametrize("change, error, match", [
    (lambda X, y: (with_value(X, np.nan), y), ValueError, "NaN"),
    (lambda X, y: (with_value(X, -np.inf), y), ValueError, "infinity"),
    (lambda X, y: (X, np.zeros_like(y)), ValueError, "single class"),
    (lambda X, y: (X[:0], y[:0]), ValueError, "0 sample"),
    (lambda X, y: (X[:10], y[:9]), ValueError, "inconsistent numbers of samples"),
    # finite in float64, infinite in float32: was a model of NaNs, or a fit whose rows predict refuses
    (lambda X, y: (with_value(X, 1e300), y), ValueError, "beyond float32's range"),
], ids=["nan", "inf", "one-class", "empty", "length-mismatch", "beyond-float32"])
def test_bad_training_data_is_refused(small_blobs, cls, change, error, match):
    X, y = change(*small_blobs())
    with pytest.raises(error, match=match):
        cls(verbose=0).fit(X, y)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_sgd_refuses_a_diverged_fit(small_blobs, optimizer):
    # every candidate step overflows the atoms; the model would hold infinities
    X, y = small_blobs()
    with pytest.raises(ValueError, match=r"training diverged with step 1e\+37 .*give smaller step_sizes"):
        SGDSoftThresholdClassifier(**{**FAST_SGD, "step_sizes": (1e37,), "optimizer": optimizer}).fit(X, y)


def test_n_jobs_minus_one_trains_on_every_core_then_restores_the_threads(small_blobs):
    X, y = small_blobs()
    threads_during_fit = []
    before = torch.get_num_threads()
    LASTClassifier(**{**FAST_LAST, "n_jobs": -1}).fit(
        X, y, monitor=lambda k, estimator: threads_during_fit.append(torch.get_num_threads()))
    assert threads_during_fit[0] == os.cpu_count()
    assert torch.get_num_threads() == before


def test_thread_count_follows_scikit_learn():
    cores = os.cpu_count()
    assert [thread_count(n) for n in (3, -1, -2, -cores - 5)] == [3, cores, max(1, cores - 1), 1]


@pytest.mark.parametrize("flushing", [True, False])
def test_fit_restores_the_denormal_setting(small_blobs, fit_quietly, flushing):
    if not torch.set_flush_denormal(flushing) and flushing:
        pytest.skip("this CPU cannot flush denormals")
    try:
        X, y = small_blobs(n_classes=2)
        fit_quietly(LASTClassifier(**FAST_LAST), X, y)
        tiny = torch.tensor([1e-20], dtype=torch.float32)
        assert ((tiny * tiny).item() == 0.0) is flushing  # 1e-40 is a denormal float32
        assert flushes_denormals() is flushing
    finally:
        torch.set_flush_denormal(False)


@pytest.mark.parametrize("cls", [LASTClassifier, SGDSoftThresholdClassifier])
@pytest.mark.parametrize("device, match", [
    ("gpu", "device must name a torch device such as 'cpu' or 'cuda', got 'gpu'"),
    ("cuda:99", "device 'cuda:99' is not usable with this torch build and machine"),  # no such GPU anywhere
    ("meta", "device 'meta' cannot train: lastedge trains on cpu, cuda, mps or xpu devices"),  # no data
    ("hpu", "device 'hpu' cannot train"),  # was a ModuleNotFoundError, reported as "torch is not installed"
])
def test_unusable_device_is_refused_before_training(small_blobs, cls, device, match):
    X, y = small_blobs()
    with pytest.raises(ValueError, match=match):
        cls(device=device, verbose=0).fit(X, y)


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"),
                                                 (False, False, "cpu")])
def test_auto_device_is_the_gpu_torch_sees_else_the_cpu(cuda, mps, expected, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert available_accelerator() == expected


def test_auto_device_trains_on_this_machine(small_blobs, fit_quietly):
    X, y = small_blobs()
    clf = fit_quietly(LASTClassifier(**FAST_LAST, device="auto"), X, y)
    assert clf.score(X, y) > 0.9 and clf.__sklearn_tags__().non_deterministic
    assert usable_device("auto") == torch.device(available_accelerator())


def gpu_out_of_memory(*args, **kwargs):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.19 GiB total)\nmore")


@pytest.mark.parametrize("cls, trainer", [
    (LASTClassifier, "lastedge.train.last.run_dca"),
    (SGDSoftThresholdClassifier, "lastedge.train.sgd.SGDSoftThresholdClassifier._descend"),
])
def test_device_out_of_memory_is_a_memory_error_saying_what_to_change(small_blobs, cls, trainer, monkeypatch):
    """torch's OutOfMemoryError (a RuntimeError, raised by GPUs) becomes the MemoryError a CPU gives."""
    X, y = small_blobs()
    threads = torch.get_num_threads()
    monkeypatch.setattr(trainer, gpu_out_of_memory)
    with pytest.raises(MemoryError, match=r"^device 'cpu' ran out of memory \(CUDA out of memory\. Tried to "
                                          r"allocate 2\.00 GiB \(GPU 0; 79\.19 GiB total\)\); try a smaller "
                                          r"batch_size, fewer atoms or rows, or device='cpu'$"):
        cls(**(FAST_LAST if cls is LASTClassifier else FAST_SGD)).fit(X, y)
    assert torch.get_num_threads() == threads  # the fit's torch settings were restored on the way out


@pytest.mark.parametrize("max_iter", [20, 149, 250])
def test_sgd_history_holds_at_most_the_progress_bars_50_checkpoints(small_blobs, max_iter):
    # Every max_iter // 50 steps recorded up to 99 points (149 steps: 75), past the bar's total
    # of 50 and each an objective over all training rows.
    X, y = small_blobs(n_classes=2, m=40)
    fitted = SGDSoftThresholdClassifier(**{**FAST_SGD, "max_iter": max_iter}).fit(X, y)
    steps = [record["iteration"] for record in fitted.history_]
    assert len(steps) <= 50 and steps[-1] == max_iter and steps == sorted(set(steps))


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_sgd_gives_the_same_classifier_on_rescaled_raw_rows(digits_data, optimizer):
    # Raw 0-16 digits pixels, and the same rows x 1000: the step on the atoms follows the data's
    # scale, so the grid's steps mean the same on both and the two fits agree.
    X, y = digits_data.X_train[:300], digits_data.y_train[:300]
    params = {**FAST_SGD, "n_atoms": 8, "max_iter": 300, "preprocess": "none", "optimizer": optimizer,
              "step_sizes": (0.1, 0.001) if optimizer == "sgd" else (0.01, 0.001)}
    small = SGDSoftThresholdClassifier(**params).fit(X, y)
    large = SGDSoftThresholdClassifier(**params).fit(1000.0 * X, y)
    assert small.step_ == large.step_
    np.testing.assert_allclose(large.coef_, small.coef_, rtol=1e-3, atol=1e-4)
    assert np.mean(large.predict(1000.0 * digits_data.X_test) == small.predict(digits_data.X_test)) > 0.99
    assert small.feature_sparsity(digits_data.X_test) < 0.99  # the atoms did not all die


@pytest.mark.parametrize("cls, params, scale", [(LASTClassifier, FAST_LAST, 1e-9),
                                               (LASTClassifier, FAST_LAST, 1e13),
                                               (SGDSoftThresholdClassifier, FAST_SGD, 1e-9)])
def test_the_same_classifier_on_raw_rows_of_any_scale(fit_quietly, digits_data, cls, params, scale):
    # The start atoms are scaled to the rows and LAST's Adam steps to the atoms; floors of 1e-12
    # on either (rows of 1e-9 give responses of 1e-16, rows of 1e13 atoms of 1e-15) left LAST
    # untrained (one class for every row) and SGD from unscaled atoms (14 % agreement).
    X, y = digits_data.X_train[:300], digits_data.y_train[:300]
    params = {**params, "n_atoms": 3 if cls is LASTClassifier else 4, "preprocess": "none"}
    plain = fit_quietly(cls(**params), X, y)
    scaled = fit_quietly(cls(**params), scale * X, y)
    assert plain.score(X, y) > 0.5  # chance is 0.1
    assert np.mean(scaled.predict(scale * X) == plain.predict(X)) > 0.95


@pytest.mark.parametrize("cls, params", [(LASTClassifier, FAST_LAST), (SGDSoftThresholdClassifier, FAST_SGD)])
def test_read_only_float32_rows_train_without_a_torch_warning(small_blobs, cls, params):
    # preprocess="none" passes float32 rows through: read-only ones (a memory map, or joblib's
    # copies in GridSearchCV(n_jobs=2)) made torch warn of "undefined behavior".
    X, y = small_blobs()
    X = X.astype(np.float32)
    X.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        fitted = cls(**{**params, "preprocess": "none"}).fit(X, y)
    assert fitted.score(X, y) > 0.5  # chance is 1/3


def test_feature_sparsity_counted_in_blocks_is_the_share_of_zero_features(tiny_last, digits_data):
    X = np.resize(digits_data.X_test, (2500, digits_data.X_test.shape[1]))  # more than one block
    assert tiny_last.feature_sparsity(X) == pytest.approx(np.mean(tiny_last.transform(X) == 0), abs=1e-12)


def test_wrong_width_or_nan_at_predict_is_refused(tiny_last, digits_data):
    with pytest.raises(ValueError, match="10 features.*expecting 64"):
        tiny_last.predict(digits_data.X_test[:, :10])
    X = digits_data.X_test[:5].copy()
    X[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        tiny_last.decision_function(X)
