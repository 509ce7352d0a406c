"""The shared dictionary's loss (``multiclass="shared"``): atoms voting against their class, and
one-vs-all's hinges added to the multi-class one. The loss, its DC split, the tight majoriser,
DCA's descent, the layout and the stored model, tested against written-out math."""

import numpy as np
import pytest
import torch

from lastedge.train import LASTClassifier, objective, problem
from lastedge.train.dca import DCASettings, run_dca
from lastedge.train.solvers import make_inner_solver
from lastedge.train.subproblem import Data, full_objective

BETA, NU = 100.0, 1.0
CLASSES = 4


def signed_problem(seed, m=40, n=6, atoms=12, dtype=torch.float64):
    """One head, four classes, three atoms each: two voting for the class, one against it."""
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(m, n, generator=gen, dtype=dtype)
    U = 0.7 * torch.randn(1, n, atoms, generator=gen, dtype=dtype)
    v = 0.5 + torch.rand(1, atoms, generator=gen, dtype=dtype)
    targets = torch.randint(CLASSES, (1, m), generator=gen)
    atom_class = torch.arange(atoms) % CLASSES
    against = torch.arange(atoms) >= 2 * CLASSES
    one_hot = torch.nn.functional.one_hot(atom_class, CLASSES).to(dtype)
    G = torch.where(against[:, None], 1 - one_hot, one_hot)[None]
    return X, targets, U, v, G, one_hot * torch.where(against, -1.0, 1.0).to(dtype)[:, None]


def written_out_losses(X, targets, U, v, signed_votes, ovr_weight):
    """Per sample: the multi-class hinge of the class scores s = (for-atoms - against-atoms) plus
    ``ovr_weight * sum_c max(0, 1 - t_c s_c)``."""
    s = (torch.nn.functional.softplus(BETA * (X @ U[0] - v[0])) / BETA) @ signed_votes
    y = targets[0]
    margins = torch.relu(1 + s - s[torch.arange(len(y)), y][:, None])
    margins[torch.arange(len(y)), y] = 0.0
    multi = margins.amax(1)
    t = 2.0 * torch.nn.functional.one_hot(y, CLASSES).to(s.dtype) - 1
    return (multi + ovr_weight * torch.relu(1 - t * s).sum(1))[None]


OVR_WEIGHTS = [0.0, 0.7, 1.0]


@pytest.mark.parametrize("ovr_weight", OVR_WEIGHTS)
@pytest.mark.parametrize("seed", range(3))
def test_atom_votes_loss_and_g_minus_h(seed, ovr_weight):
    X, targets, U, v, G, signed_votes = signed_problem(seed)
    torch.testing.assert_close(objective.atom_votes(G), signed_votes[None])
    losses = objective.hinge_losses(X, targets, U, v, G, BETA, ovr_weight)
    torch.testing.assert_close(losses, written_out_losses(X, targets, U, v, signed_votes, ovr_weight))
    g = objective.g_value(X, targets, U, v, G, BETA, NU, ovr_weight=ovr_weight)
    h = objective.h_value(X, targets, U, v, G, BETA, ovr_weight)
    expected = objective.objective(X, targets, U, v, G, BETA, NU, ovr_weight=ovr_weight)
    torch.testing.assert_close(g - h, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("ovr_weight", OVR_WEIGHTS)
def test_g_and_h_gradients_match_autograd(ovr_weight):
    X, targets, U, v, G, _ = signed_problem(4)
    for value, gradient in ((objective.h_value, objective.h_gradient), (objective.g_terms, None)):
        U_, v_ = U.clone().requires_grad_(True), v.clone().requires_grad_(True)
        value(X, targets, U_, v_, G, BETA, ovr_weight).sum().backward()
        if gradient is None:
            terms, R = objective.g_data_weights(X, targets, U, v, G, BETA, ovr_weight)
            torch.testing.assert_close(terms, objective.g_terms(X, targets, U, v, G, BETA, ovr_weight))
            dU, dv = X.T @ R, -R.sum(1)
        else:
            dU, dv = gradient(X, targets, U, v, G, BETA, ovr_weight)
        torch.testing.assert_close(dU, U_.grad)
        torch.testing.assert_close(dv, v_.grad)


def test_g_is_convex_along_random_segments():
    """Midpoint convexity of ``g``'s data terms (what DCA needs of the convex part)."""
    X, targets, U, v, G, _ = signed_problem(5)
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        U2 = U + 0.5 * torch.randn(U.shape, generator=gen, dtype=U.dtype)
        v2 = v + 0.5 * torch.rand(v.shape, generator=gen, dtype=v.dtype)
        g = [objective.g_terms(X, targets, a, b, G, BETA, 1.0)
             for a, b in ((U, v), (U2, v2), ((U + U2) / 2, (v + v2) / 2))]
        assert torch.all(g[2] <= (g[0] + g[1]) / 2 + 1e-10)


@pytest.mark.parametrize("ovr_weight", OVR_WEIGHTS)
@pytest.mark.parametrize("seed", range(3))
def test_tight_majoriser_lies_between_the_loss_and_the_dc_term(seed, ovr_weight):
    """Per sample: loss <= tight term <= the DC split's term, equal at the anchor; and the tight
    term's ``R`` is its own gradient."""
    X, targets, U_k, v_k, G, _ = signed_problem(seed)
    k = 1 + ovr_weight
    gen = torch.Generator().manual_seed(100 + seed)
    for scale in (0.0, 0.05, 0.5):
        U = (U_k + scale * torch.randn(U_k.shape, generator=gen, dtype=U_k.dtype)).requires_grad_(True)
        v = (v_k + scale * torch.rand(v_k.shape, generator=gen, dtype=v_k.dtype)).requires_grad_(True)
        tight, R = objective.tight_data_weights(X, targets, U, v, G, BETA, U_k, v_k, ovr_weight)
        tight.sum().backward()
        torch.testing.assert_close(X.T @ R.detach(), U.grad)
        torch.testing.assert_close(-R.detach().sum(1), v.grad)
        U, v, tight = U.detach(), v.detach(), tight.detach()
        losses = objective.hinge_losses(X, targets, U, v, G, BETA, ovr_weight)
        Z, Z_k = objective.pre_activations(X, U, v), objective.pre_activations(X, U_k, v_k)
        mask = objective._group_mask(G, targets)
        h_k = (objective.smooth_relu(Z_k, BETA) * mask).sum(-1)
        linearised_h = k * (h_k + (torch.sigmoid(BETA * Z_k) * mask * (Z - Z_k)).sum(-1))
        dc = objective.g_terms(X, targets, U, v, G, BETA, ovr_weight) - linearised_h
        assert torch.all(losses <= tight + 1e-10) and torch.all(tight <= dc + 1e-10)
        if scale == 0.0:
            torch.testing.assert_close(tight, losses)


@pytest.mark.slow
@pytest.mark.parametrize("surrogate, solver", [("dc", "lbfgs"), ("tight", "adam"), ("tight", "lbfgs")])
@pytest.mark.parametrize("seed", range(2))
def test_full_batch_dca_objective_never_rises(seed, surrogate, solver):
    X, targets, U, v, G, _ = signed_problem(seed, m=60, dtype=torch.float32)
    settings = DCASettings(NU, BETA, 1e-4, 8, 0.0, make_inner_solver(solver, 60, None, 1e-4),
                           surrogate=surrogate, line_search=False)
    data = Data(X, targets, G.float(), 1.0)
    result = run_dca(data, U, v, settings, seed=seed)
    values = [float(full_objective(data, U, v, BETA, NU)[0])] + [r["objective"] for r in result.history[0]]
    assert values[-1] < values[0], "DCA made no progress at all"
    for before, after in zip(values, values[1:]):
        assert after <= before * (1 + 1e-6) + 1e-12


def test_layout_puts_a_share_of_each_class_against_it_and_keeps_one_for_it():
    y_index = np.repeat(np.arange(3), [50, 30, 20])
    _, groups = problem.shared_layout(y_index, 3, 20, atoms_against=0.5)
    votes = objective.atom_votes(groups[0])
    assert np.all((votes != 0).sum(axis=1) == 1)
    assert (votes > 0).sum(axis=0).tolist() == [5, 3, 2] and (votes < 0).sum(axis=0).tolist() == [5, 3, 2]
    _, groups = problem.shared_layout(y_index, 3, 3, atoms_against=0.9)
    assert np.all(objective.atom_votes(groups[0]) == np.eye(3)), "a class with one atom keeps it for itself"
    Z = np.repeat(np.eye(3), [50, 30, 20], axis=0).astype(np.float32)
    _, groups = problem.shared_layout(y_index, 3, 30, atoms_against=0.5)
    U0, _ = problem.initial_atoms(Z, y_index[None], groups, np.random.RandomState(0))
    start_class = U0[0].argmax(axis=0)
    votes = objective.atom_votes(groups[0])
    assert np.all(start_class[votes.max(1) > 0] == votes.argmax(1)[votes.max(1) > 0])
    assert np.all(start_class[votes.min(1) < 0] != votes.argmin(1)[votes.min(1) < 0])


def test_estimator_stores_negative_weights_on_the_class_an_atom_votes_against():
    rng = np.random.RandomState(1)
    X = rng.randn(120, 4) + np.repeat(np.eye(3, 4) * 4, 40, axis=0)
    y = np.repeat(["a", "b", "c"], 40)
    clf = LASTClassifier(n_atoms=12, multiclass="shared", batch_size=40, max_dca_iter=4, inner_iter=40,
                         random_state=0, verbose=0).fit(X, y)  # on minibatches: atoms against
    weights = clf.to_model().weights
    assert weights.shape == (12, 3) and np.all((weights != 0).sum(axis=1) == 1)
    assert (weights < 0).sum(axis=0).tolist() == [2, 2, 2] and (weights > 0).sum(axis=0).tolist() == [2, 2, 2]
    assert clf.score(X, y) > 0.9
    features = clf.transform(X)
    np.testing.assert_allclose(clf.decision_function(X), features @ weights, rtol=1e-5, atol=1e-5)
