"""``settings.resolve``: every "auto" and default of a LAST fit, resolved in one table, and the fit
running with what it resolved."""

from __future__ import annotations

import pytest

from lastedge.train import LASTClassifier
from lastedge.train.settings import (FULL_BATCH_LIMIT, MINIBATCH_SIZE, SHARED_ATOMS_AGAINST,
                                     SHARED_OVR_HINGE_WEIGHT, FitSettings, resolve)

FAST_LAST = dict(n_atoms=4, max_dca_iter=2, inner_iter=30, verbose=0, random_state=0)


def resolved(n_samples: int = 90, n_classes: int = 3, **params) -> FitSettings:
    return resolve(LASTClassifier(**params), n_samples, n_classes)


@pytest.mark.parametrize("batch_size, n_samples, batch", [
    (None, FULL_BATCH_LIMIT - 1, None),  # the paper's limit
    (None, FULL_BATCH_LIMIT, MINIBATCH_SIZE),
    ("full", 10 * FULL_BATCH_LIMIT, None),
    (16, 90, 16),
    (90, 90, None),  # a batch of every row is full batch
    (1000, 90, None),
])
def test_batch_size(batch_size, n_samples, batch):
    assert resolved(n_samples, batch_size=batch_size).batch_size == batch


@pytest.mark.parametrize("n_classes, params, solver, inner_iter, surrogate, line_search", [
    (3, {}, "lbfgs", 300, "dc", False),  # one-vs-all in full batch, mu="auto": L-BFGS, the paper's majoriser
    (2, {"multiclass": "shared"}, "lbfgs", 300, "dc", False),  # two classes: one binary head, as above
    (3, {"mu": 0.0}, "adam", 300, "dc", False),  # ... without a weight decay (the paper's objective), Adam
    (2, {"mu": 0.0, "multiclass": "shared"}, "adam", 300, "dc", False),
    (2, {"mu": 1.0}, "lbfgs", 300, "dc", False),
    (3, {"multiclass": "shared"}, "adam", 100, "tight", False),  # a shared dictionary: shorter solves
    (3, {"multiclass": "shared", "mu": 1.0}, "adam", 100, "tight", False),  # ... and keeps Adam
    (3, {"multiclass": "shared", "inner_solver": "lbfgs"}, "lbfgs", 300, "dc", False),  # L-BFGS: the paper's
    (3, {"inner_solver": "subgradient"}, "subgradient", 1000, "dc", False),  # the paper's T
    (3, {"batch_size": 16}, "adam", 300, "tight", True),  # minibatches: tight, with the line search
    (3, {"batch_size": 16, "mu": 1.0}, "adam", 300, "tight", True),
    (3, {"batch_size": 16, "inner_solver": "subgradient"}, "subgradient", 5000, "tight", True),  # the paper's T
    (3, {"multiclass": "shared", "inner_iter": 7}, "adam", 7, "tight", False),  # asked for
])
def test_solver_iterations_majoriser_and_line_search(n_classes, params, solver, inner_iter, surrogate, line_search):
    settings = resolved(n_classes=n_classes, **params)
    assert (settings.solver, settings.inner_iter, settings.surrogate, settings.line_search) == (
        solver, inner_iter, surrogate, line_search)


def test_lbfgs_on_minibatches_is_refused():
    with pytest.raises(ValueError, match="inner_solver='lbfgs' needs full-batch solves: give batch_size='full'"):
        resolved(batch_size=16, inner_solver="lbfgs")


@pytest.mark.parametrize("params, tol, patience", [
    ({}, 1e-3, 3),  # full batch: the paper's delta on the parameters
    ({"batch_size": 16}, 1e-4, 3),  # minibatches: the fall of the objective per row
    ({"batch_size": 16, "tol": 0.5, "n_iter_no_change": 5}, 0.5, 5),
    ({"batch_size": 16, "early_stopping": True}, 1e-4, None),  # the hold-out decides
])
def test_tol_and_patience(params, tol, patience):
    settings = resolved(**params)
    assert (settings.tol, settings.patience) == (tol, patience)


@pytest.mark.parametrize("n_classes, multiclass, batch_size, shares, against, weight", [
    (3, "shared", 16, True, SHARED_ATOMS_AGAINST, SHARED_OVR_HINGE_WEIGHT),  # on minibatches
    (3, "shared", None, True, 0.0, 0.0),  # in full batch: the plain multi-class hinge
    (2, "shared", 16, False, 0.0, 0.0),  # two classes: one binary head
    (3, "ovr", 16, False, 0.0, 0.0)])
def test_a_shared_dictionary_on_minibatches_votes_against_classes_with_one_vs_all_hinges(
        n_classes, multiclass, batch_size, shares, against, weight):
    settings = resolved(n_classes=n_classes, multiclass=multiclass, batch_size=batch_size)
    assert (settings.shares_dictionary, settings.atoms_against, settings.ovr_hinge_weight) == (shares, against, weight)


def test_step_sizes_are_passed_as_a_tuple():
    assert resolved(step_sizes=[0.1, 0.01]).step_sizes == (0.1, 0.01)
    assert resolved().step_sizes is None


def handed_to_dca(monkeypatch, small_blobs, n_classes: int, params: dict):
    """The ``DCASettings`` and ``Data`` that ``fit`` hands to DCA (DCA not run)."""
    import lastedge.train.last as last

    class Handed(Exception):
        pass

    def run_dca(data, U, v, settings, **kwargs):
        raise Handed(settings, data)

    monkeypatch.setattr(last, "run_dca", run_dca)
    X, y = small_blobs(n_classes=n_classes)
    with pytest.raises(Handed) as handed:
        LASTClassifier(**{**FAST_LAST, "n_atoms": 6, **params}).fit(X, y)
    return handed.value.args


@pytest.mark.parametrize("n_classes, params", [
    (3, {"inner_iter": None}), (3, {"multiclass": "shared", "inner_iter": None}), (2, {"mu": 1.0}),
    (3, {"batch_size": 16, "tol": 0.01, "early_stopping": True}), (3, {"multiclass": "shared", "batch_size": 16}),
])
def test_fit_runs_dca_with_the_resolved_settings(monkeypatch, small_blobs, n_classes, params):
    dca, data = handed_to_dca(monkeypatch, small_blobs, n_classes, params)
    rows = 90 - (9 if params.get("early_stopping") else 0)  # the hold-out is taken first
    settings = resolve(LASTClassifier(**{**FAST_LAST, "n_atoms": 6, **params}), rows, n_classes)
    solver = dca.inner_solver
    assert (solver.method, solver.n_iter, solver.batch_size) == (settings.solver, settings.inner_iter,
                                                                 settings.batch_size)
    assert (dca.tol, dca.surrogate, dca.line_search, dca.n_iter_no_change) == (
        settings.tol, settings.surrogate, settings.line_search, settings.patience)
    assert data.ovr_weight == settings.ovr_hinge_weight
    against = bool((data.groups.sum(-1) > 1).any())  # an atom voting against a class is in every other group
    assert against == (settings.atoms_against > 0)


def test_minibatches_of_500_rows_from_the_full_batch_limit(monkeypatch, small_blobs):
    import lastedge.train.settings as settings

    monkeypatch.setattr(settings, "FULL_BATCH_LIMIT", 60)  # blobs has 90 rows
    solver = handed_to_dca(monkeypatch, small_blobs, 3, {"inner_iter": None})[0].inner_solver
    assert (solver.method, solver.batch_size, solver.n_iter) == ("adam", 500, 300)


def test_minibatch_dca_with_the_line_search_trains(small_blobs, fit_quietly):
    X, y = small_blobs(n_classes=3)
    clf = fit_quietly(LASTClassifier(**{**FAST_LAST, "n_atoms": 6, "max_dca_iter": 3}, batch_size=16), X, y)
    assert clf.score(X, y) > 0.9
    assert all(r["extrapolation"] >= 0 for head in clf.history_ for r in head)
