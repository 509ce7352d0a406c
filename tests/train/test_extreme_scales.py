"""Raw rows (``preprocess="none"``) of scales float32 cannot train on as they are.

Rows near 1e38 or 1e-38 are trained on divided by their scale, by LASTClassifier and the SGD
baseline alike, and the atoms divided by it after (``train.base.training_scale``); the model must
then be as good as on unit-order rows, in every place where DCA's iterates become the model (the
end, early stopping, the monitor), and a model whose atoms float32 cannot hold is refused with a
ValueError.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning

from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier, last
from lastedge.train.base import training_scale

FLOAT32 = np.finfo(np.float32)
FIT = dict(n_atoms=6, preprocess="none", max_dca_iter=10, inner_iter=50, verbose=0, random_state=0)
CONFIGS = {"ovr-full": dict(batch_size="full"), "ovr-minibatch": dict(batch_size=100),
           "shared-full": dict(multiclass="shared", batch_size="full"),
           "shared-minibatch": dict(multiclass="shared", batch_size=100),
           "ovr-lbfgs": dict(batch_size="full", mu=1e-3)}  # "auto": L-BFGS with a weight decay


@functools.cache
def easy_problem(n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Well-separated classes, 8 features of unit-order values."""
    return make_classification(300, 8, n_informative=4, class_sep=2.0, n_classes=n_classes, random_state=0)


def scaled_rows(X: np.ndarray, scale: str) -> np.ndarray:
    """``X`` times ``scale``, or with its largest value near float32's maximum ("near max"), or its
    smallest near float32's smallest normal number ("near min normal")."""
    if scale == "near max":
        return X * (0.9 * FLOAT32.max / np.abs(X).max())
    if scale == "near min normal":
        return X * (4 * FLOAT32.tiny / np.abs(X).min())
    return X * float(scale)


def fit_without_warnings(X: np.ndarray, y: np.ndarray, monitor=None, **params) -> LASTClassifier:
    """A fit in which any warning but DCA's ConvergenceWarning (10 iterations) is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's or torch's overflow warnings: none
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LASTClassifier(**{**FIT, **params}).fit(X, y, monitor=monitor)


@functools.cache
def unscaled(config: str, n_classes: int) -> LASTClassifier:
    return fit_without_warnings(*easy_problem(n_classes), **CONFIGS[config])


def check_trains_as_well(config: str, n_classes: int, scale: str) -> LASTClassifier:
    X, y = easy_problem(n_classes)
    X = scaled_rows(X, scale)
    estimator = fit_without_warnings(X, y, **CONFIGS[config])
    assert np.isfinite(estimator.dictionary_).all() and np.isfinite(estimator.coef_).all()
    assert estimator.dictionary_.any()
    expected = unscaled(config, n_classes).score(*easy_problem(n_classes))
    assert estimator.score(X, y) >= expected - 0.02 and expected > 0.9
    return estimator


@pytest.mark.parametrize("scale", ["4e36", "near max", "3e-34", "1e13", "1e-9"])
@pytest.mark.parametrize("config", ["ovr-full", "ovr-minibatch", "shared-full", "shared-minibatch"])
def test_three_classes_train_as_well_at_extreme_scales(config, scale):
    check_trains_as_well(config, 3, scale)


@pytest.mark.parametrize("scale", ["near max", "near min normal"])
@pytest.mark.parametrize("config", ["ovr-full", "ovr-minibatch"])
def test_two_classes_train_as_well_at_extreme_scales(config, scale):
    check_trains_as_well(config, 2, scale)


@pytest.mark.parametrize("scale", ["4e36", "near max"])
def test_a_weight_decay_trains_on_huge_rows(scale):
    check_trains_as_well("ovr-lbfgs", 3, scale)


@pytest.mark.parametrize("scale", ["4e36", "3e-34"])
@pytest.mark.parametrize("config", ["ovr-full", "shared-full"])
def test_the_recorded_objectives_are_those_of_the_rows_as_given(config, scale):
    estimator = check_trains_as_well(config, 3, scale)
    reference = unscaled(config, 3)
    if estimator.mu_choice_ is not None:  # a hold-out choice, which rounding may tip: the same decay
        reference = fit_without_warnings(*easy_problem(3), **{**CONFIGS[config], "mu": estimator.mu_ / float(scale) ** 2})
    history, reference = estimator.history_, reference.history_
    if config.startswith("ovr"):  # one list per head: compare each head's
        history, reference = [h[0] for h in history], [h[0] for h in reference]
    else:
        history, reference = history[:1], reference[:1]
    # the first DCA iteration starts from the same point: the same objective of (P) after its solve, to
    # rounding (which can tip L-BFGS's line search a little: 0.5 % measured; a wrong scale is off by far more)
    assert [r["objective"] for r in history] == pytest.approx([r["objective"] for r in reference], rel=1e-2)


@pytest.mark.parametrize("scale", ["4e36", "3e-34"])
def test_every_iterate_becomes_a_model_of_the_rows_as_given(scale):
    """The monitor's and early stopping's models score as the unscaled fit's, iteration by iteration."""
    X, y = easy_problem(3)

    def fit(X: np.ndarray) -> tuple[LASTClassifier, list[float]]:
        scores = []

        def monitor(k: int, estimator: LASTClassifier) -> None:
            assert np.isfinite(estimator.dictionary_).all() and estimator.dictionary_.any()
            scores.append(estimator.score(X, y))

        return fit_without_warnings(X, y, monitor, **CONFIGS["ovr-minibatch"], early_stopping=True), scores

    (estimator, scores), (reference, reference_scores) = fit(scaled_rows(X, scale)), fit(X)
    assert len(scores) == len(estimator.validation_scores_) == estimator.n_iter_
    n = min(estimator.n_iter_, reference.n_iter_)  # rounding may stop either a little later
    np.testing.assert_allclose(scores[:n], reference_scores[:n], atol=0.02)
    np.testing.assert_allclose(estimator.validation_scores_[:n], reference.validation_scores_[:n], atol=0.04)
    assert estimator.best_validation_score_ >= 0.9  # 27 of the 30 held-out rows; chance is 1/3


@pytest.fixture
def no_training(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(last, "run_dca", refuse)


def test_rows_too_short_for_float32_atoms_are_refused_before_training(no_training):
    X, y = easy_problem(3)
    X = X * (1e3 * FLOAT32.tiny / np.abs(X).max())  # atoms of 1 / (eps r) would pass 1e38
    with pytest.raises(ValueError, match=r"rows of scale .* need atoms beyond float32's range.*eps=0.0001"):
        LASTClassifier(**FIT).fit(X, y)
    with pytest.raises(ValueError, match=r"mu=0.001 cannot train on rows of scale .* overflows float32"):
        LASTClassifier(**FIT, mu=1e-3).fit(X * 1e5, y)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_model_whose_atoms_float32_cannot_hold_is_refused():
    X, y = easy_problem(3)
    X = scaled_rows(X, "near min normal")  # scale 1e-34: thresholds at eps need atoms past 1e38
    with pytest.raises(ValueError, match=r"rows of scale 1.\d+e-34 need atoms beyond float32's range"):
        LASTClassifier(**FIT, mu=0).fit(X, y)  # no weight decay holds the atoms back


def test_subgradient_steps_follow_the_rows_scale():
    """Raw rows times 1e3 fell from 85 to 73 % training accuracy (1e6: 62 %): the paper's fixed
    steps, bracketed three times 10x, could not reach the step they needed."""
    X, y = make_classification(400, 8, random_state=0)
    scores = {}
    for scale in (1.0, 1e-3, 1e3, 1e6):
        clf = LASTClassifier(n_atoms=6, preprocess="none", inner_solver="subgradient", max_dca_iter=5,
                             inner_iter=100, random_state=0, verbose=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            scores[scale] = clf.fit(X * scale, y).score(X * scale, y)
    assert scores[1.0] > 0.8 and all(abs(score - scores[1.0]) <= 0.02 for score in scores.values()), scores


@pytest.mark.parametrize("norm, expected", [(1.0, 1.0), (1.0 + 1e-6, 1.0), (3.0, 0.125), (1e3, 2.0**-20),
                                            (1e-3, 2.0**20)])
def test_the_subgradient_atom_scale_is_a_power_of_two_exactly_one_for_unit_rows(norm, expected):
    import torch

    from lastedge.train.base import root_mean_square_norm
    from lastedge.train.solvers import subgradient_atom_scale

    rows = torch.nn.functional.normalize(torch.randn(50, 7, generator=torch.Generator().manual_seed(0)), dim=1)
    assert subgradient_atom_scale(root_mean_square_norm((rows * norm).numpy())) == expected
    assert subgradient_atom_scale(root_mean_square_norm(np.zeros((3, 7)))) == 1.0 and subgradient_atom_scale(0.0) == 1.0


# --- the SGD baseline -------------------------------------------------------------------------------

SGD_FIT = dict(n_atoms=6, max_iter=500, verbose=0, random_state=0)


@pytest.fixture(scope="module")
def unscaled_accuracy() -> dict[tuple[str, str], float]:
    X, y = easy_problem(2)
    return {(preprocess, optimizer): SGDSoftThresholdClassifier(preprocess=preprocess, optimizer=optimizer,
                                                                **SGD_FIT).fit(X, y).score(X, y)
            for preprocess in ("none", "l2") for optimizer in ("sgd", "adam")}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("preprocess", ["none", "l2"])
@pytest.mark.parametrize("scale", ["1e13", "1e-9", "near max", "near min normal"])
def test_sgd_trains_as_well_at_absurd_scales(scale, preprocess, optimizer, unscaled_accuracy):
    X, y = easy_problem(2)
    X = scaled_rows(X, scale)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings or torch's: none
        estimator = SGDSoftThresholdClassifier(preprocess=preprocess, optimizer=optimizer, **SGD_FIT)
        estimator.fit(X, y)
        accuracy = estimator.score(X, y)
    assert np.isfinite(estimator.dictionary_).all() and np.isfinite(estimator.coef_).all()
    assert accuracy >= unscaled_accuracy[preprocess, optimizer] - 0.02 and accuracy > 0.9


def test_rows_beyond_float32_squares_train_on_the_rescaled_rows_as_the_same_descent():
    X, y = easy_problem(2)
    base = SGDSoftThresholdClassifier(preprocess="none", **SGD_FIT).fit(X, y)
    huge = SGDSoftThresholdClassifier(preprocess="none", **SGD_FIT).fit(X * 1e30, y)
    assert training_scale(X.astype(np.float32), 1e-4) == 1.0  # unit-order rows: trained as they are
    assert training_scale((X * 1e30).astype(np.float32), 1e-4) > 1e30
    assert np.mean(huge.predict(X * 1e30) == base.predict(X)) >= 0.98
    np.testing.assert_allclose(huge.dictionary_ * 1e30, base.dictionary_, rtol=1e-2,
                               atol=1e-3 * np.abs(base.dictionary_).max())


def test_rows_too_short_for_float32_atoms_are_refused_before_sgd_training(monkeypatch):
    X, y = easy_problem(2)
    X = X * (1e3 * FLOAT32.tiny / np.abs(X).max())  # atoms of 1 / (eps r) would pass 1e38

    def no_training(*args, **kwargs):
        raise AssertionError("trained")

    monkeypatch.setattr(SGDSoftThresholdClassifier, "_descend", no_training)
    with pytest.raises(ValueError, match=r"rows of scale .* need atoms beyond float32's range.*eps=0.0001"):
        SGDSoftThresholdClassifier(preprocess="none", **SGD_FIT).fit(X, y)
    with pytest.raises(ValueError, match=r"mu=0.001 cannot train on rows of scale .* overflows float32"):
        SGDSoftThresholdClassifier(preprocess="none", mu=1e-3, **SGD_FIT).fit(X * 1e5, y)
