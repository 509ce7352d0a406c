"""Training on a CUDA GPU gives the model a CPU fit gives, up to float summation order.

These run where torch sees a CUDA device (the GPU machine some tasks are lent); elsewhere they are
skipped, because there is nothing to run them on. A GPU fit is not bit-identical to a CPU fit
(kernels sum in another order, and DCA amplifies the difference over iterations), so the checks
compare what the user sees: accuracy, predictions and the saved model file.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from lastedge.runtime import Model
from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train.curves import head_histories

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# Full batch (L-BFGS, "dc" majoriser) and minibatches (Adam, "tight" majoriser, line search).
SCHEDULES = {"full": dict(batch_size="full", inner_iter=100),
             "minibatch": dict(batch_size=128, inner_iter=150)}


def fit_on(device: str, estimator_class=LASTClassifier, X=None, y=None, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator_class(device=device, random_state=0, verbose=0, **params).fit(X, y)


def assert_same_classifier(cpu, gpu, X_test, y_test) -> None:
    """Accuracy within 2 points, predictions agreeing on 95 % of rows, a plain float32 model."""
    assert abs(cpu.score(X_test, y_test) - gpu.score(X_test, y_test)) <= 0.02
    assert np.mean(cpu.predict(X_test) == gpu.predict(X_test)) >= 0.95
    for array in (gpu.dictionary_, gpu.coef_):
        assert isinstance(array, np.ndarray) and array.dtype == np.float32
        assert np.isfinite(array).all()


@pytest.mark.parametrize("multiclass", ["ovr", "shared"])
@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_cuda_fit_matches_the_cpu_fit(digits_data, multiclass, schedule):
    d = digits_data
    params = dict(n_atoms=30 if multiclass == "shared" else 6, multiclass=multiclass,
                  preprocess="center-l2", max_dca_iter=4, **SCHEDULES[schedule])
    cpu = fit_on("cpu", X=d.X_train, y=d.y_train, **params)
    gpu = fit_on("cuda", X=d.X_train, y=d.y_train, **params)
    assert gpu.score(d.X_test, d.y_test) > 0.85
    assert_same_classifier(cpu, gpu, d.X_test, d.y_test)
    # The first DCA iteration starts from the same point with the same minibatches: its objective
    # differs by rounding only.
    first_cpu, first_gpu = (np.array([head[0]["objective"] for head in head_histories(fit.history_)])
                            for fit in (cpu, gpu))
    np.testing.assert_allclose(first_gpu, first_cpu, rtol=0.05)


def test_cuda_binary_fit_with_early_stopping_and_shifted_copies(digits_data):
    d = digits_data
    keep_train, keep_test = d.y_train < 2, d.y_test < 2
    params = dict(n_atoms=8, preprocess="center-l2", max_dca_iter=4, batch_size=64, inner_iter=100,
                  early_stopping=True, shift_augment=1, image_shape=(8, 8))
    cpu = fit_on("cpu", X=d.X_train[keep_train], y=d.y_train[keep_train], **params)
    gpu = fit_on("cuda", X=d.X_train[keep_train], y=d.y_train[keep_train], **params)
    assert gpu.best_validation_score_ == max(gpu.validation_scores_) >= 0.95
    assert_same_classifier(cpu, gpu, d.X_test[keep_test], d.y_test[keep_test])


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_cuda_sgd_baseline_matches_the_cpu_fit(digits_data, optimizer):
    d = digits_data
    params = dict(n_atoms=6, preprocess="center-l2", optimizer=optimizer, max_iter=600, batch_size=64)
    cpu = fit_on("cpu", SGDSoftThresholdClassifier, d.X_train, d.y_train, **params)
    gpu = fit_on("cuda", SGDSoftThresholdClassifier, d.X_train, d.y_train, **params)
    assert gpu.score(d.X_test, d.y_test) > 0.8
    assert_same_classifier(cpu, gpu, d.X_test, d.y_test)


def test_cli_trains_on_cuda_and_the_model_file_runs_anywhere(run, capsys, tmp_path):
    out = tmp_path / "gpu.npz"
    code, _, err = run("train", "--data", "digits", "--device", "cuda", "--atoms", "6",
                       "--max-dca-iter", "2", "--inner-iter", "50", "--quiet", "--out", str(out))
    assert code == 0, err
    code, printed, err = run("predict", str(out), "--data", "digits")
    assert code == 0, err
    model = Model.load(out)
    assert model.dictionary.dtype == np.float32 and model.n_atoms == 60
    assert "accuracy" in printed.lower()


def test_cuda_warm_start_continues_on_the_gpu_and_from_a_cpu_fit(digits_data):
    """The minibatch Adam state a fit keeps (on the CPU) moves to the device of the next fit:
    2 + 2 DCA iterations on the GPU match 4 in one go there, and a CPU fit continues on the GPU."""
    d = digits_data
    params = dict(n_atoms=6, preprocess="center-l2", **SCHEDULES["minibatch"])
    once = fit_on("cuda", X=d.X_train, y=d.y_train, max_dca_iter=4, **params)
    twice = fit_on("cuda", X=d.X_train, y=d.y_train, max_dca_iter=2, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        twice.set_params(warm_start=True).fit(d.X_train, d.y_train)
        moved = fit_on("cpu", X=d.X_train, y=d.y_train, max_dca_iter=2, **params)
        moved.set_params(warm_start=True, device="cuda").fit(d.X_train, d.y_train)
    assert_same_classifier(once, twice, d.X_test, d.y_test)
    assert_same_classifier(once, moved, d.X_test, d.y_test)
