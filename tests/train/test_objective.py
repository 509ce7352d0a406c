"""The math of LAST, tested as math: the DC split, the gradients, and DCA's descent property."""

import numpy as np
import pytest
import torch

from lastedge.train import objective
from lastedge.train.dca import DCASettings, run_dca
from lastedge.train.solvers import InnerSolver, make_inner_solver, minibatch_indices
from lastedge.train.subproblem import Data, SubProblem, full_objective, h_gradient, objective_and_h_gradient

BETA, NU = 100.0, 1.0


def random_problem(seed, heads=3, m=40, n=6, atoms=5, groups=2, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    X = torch.randn(m, n, generator=gen, dtype=dtype)
    U = 0.7 * torch.randn(heads, n, atoms, generator=gen, dtype=dtype)
    v = 0.5 + torch.rand(heads, atoms, generator=gen, dtype=dtype)
    targets = torch.randint(groups, (heads, m), generator=gen)
    atom_group = torch.arange(atoms) % groups
    G = torch.nn.functional.one_hot(atom_group, groups).to(dtype).expand(heads, -1, -1).contiguous()
    return X, targets, U, v, G


def paper_objective(X, y_sign, U, v, signs, beta, nu):
    """(P) for one binary head written directly from the paper: sum_i L(y_i sum_j s_j q(.)) + nu/2 |v|^2."""
    q = torch.nn.functional.softplus(beta * (X @ U - v)) / beta
    margin = y_sign * (q @ signs)
    return torch.clamp(1 - margin, min=0).sum() + 0.5 * nu * (v ** 2).sum()


def rival_hinges(S, targets):
    """The multi-class hinge written out per rival: the max over c != t of max(0, 1 + S_c - S_t)."""
    margins = torch.relu(1 + S - S.gather(-1, targets[..., None]))
    margins = margins.scatter(-1, targets[..., None], 0.0)
    return margins.amax(-1)


@pytest.mark.parametrize("heads, atoms", [(1, 7), (3, 5), (2, objective._BATCHED_FROM_ATOMS)])
def test_head_products_and_pull_back_are_each_heads_own_products(heads, atoms):
    """One product for all heads (few atoms per head) or a batched one: each head's own X U_h and X^T R_h."""
    gen = torch.Generator().manual_seed(0)
    X = torch.randn(30, 6, generator=gen, dtype=torch.float64)
    U = torch.randn(heads, 6, atoms, generator=gen, dtype=torch.float64)
    R = torch.randn(heads, 30, atoms, generator=gen, dtype=torch.float64)
    products, pulled = objective.head_products(X, U), objective.pull_back(X, R)
    assert products.shape == (heads, 30, atoms) and pulled.shape == (heads, 6, atoms)
    for h in range(heads):
        torch.testing.assert_close(products[h], X @ U[h])
        torch.testing.assert_close(pulled[h], X.T @ R[h])


@pytest.mark.parametrize("seed", range(4))
def test_g_minus_h_is_the_objective(seed):
    X, targets, U, v, G = random_problem(seed, groups=3)
    g = objective.g_value(X, targets, U, v, G, BETA, NU)
    h = objective.h_value(X, targets, U, v, G, BETA)
    expected = objective.objective(X, targets, U, v, G, BETA, NU)
    torch.testing.assert_close(g - h, expected, rtol=1e-10, atol=1e-10)
    S = objective.group_scores(X, U, v, G, BETA)
    written_out = rival_hinges(S, targets).sum(1) + 0.5 * NU * (v * v).sum(1)
    torch.testing.assert_close(expected, written_out)


@pytest.mark.parametrize("seed", range(3))
def test_two_groups_match_the_papers_binary_objective(seed):
    X, targets, U, v, G = random_problem(seed, heads=1)
    signs = G[0, :, 1] - G[0, :, 0]
    y_sign = 2.0 * targets[0].to(X.dtype) - 1
    ours = objective.objective(X, targets, U, v, G, BETA, NU)[0]
    torch.testing.assert_close(ours, paper_objective(X, y_sign, U[0], v[0], signs, BETA, NU))


@pytest.mark.parametrize("seed", range(3))
def test_h_gradient_matches_autograd(seed):
    X, targets, U, v, G = random_problem(seed, groups=3)
    U.requires_grad_(True)
    v.requires_grad_(True)
    objective.h_value(X, targets, U, v, G, BETA).sum().backward()
    dU, dv = objective.h_gradient(X, targets, U.detach(), v.detach(), G, BETA)
    torch.testing.assert_close(dU, U.grad)
    torch.testing.assert_close(dv, v.grad)


@pytest.mark.parametrize("groups", [2, 3])
@pytest.mark.parametrize("seed", range(3))
def test_g_gradient_matches_autograd(seed, groups):
    X, targets, U, v, G = random_problem(seed, groups=groups)
    U.requires_grad_(True)
    v.requires_grad_(True)
    objective.g_value(X, targets, U, v, G, BETA, 0.0).sum().backward()
    terms, R = objective.g_data_weights(X, targets, U.detach(), v.detach(), G, BETA)
    dU, dv = X.T @ R, -R.sum(1)
    g = objective.g_value(X, targets, U.detach(), v.detach(), G, BETA, 0.0)
    torch.testing.assert_close(terms.sum(1), g)
    torch.testing.assert_close(dU, U.grad)
    torch.testing.assert_close(dv, v.grad)


def assert_close_to_scale(actual, expected, rtol=1e-5):
    """Equal to ``rtol`` relative to the largest entry: softplus's derivative above its threshold
    (beta z > 20) is 1 where the sigmoid is 1 - 2e-9, and a sum over samples that cancels (one
    ``v_j``'s gradient) magnifies that relative to the entry."""
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=rtol * float(expected.abs().max()))


# binary, one-vs-all, shared; shared with atoms voting against a class (group row 1 - e_c), with
# and without one-vs-all's hinges added
@pytest.mark.parametrize("heads, groups, against, ovr_weight",
                         [(1, 2, False, 0.0), (10, 2, False, 0.0), (1, 10, False, 0.0),
                          (1, 4, True, 0.0), (1, 4, True, 0.7)])
@pytest.mark.parametrize("seed", range(2))
def test_loss_gradient_matches_autograd_of_the_hinge_losses(seed, heads, groups, against, ovr_weight):
    """The closed-form gradient the SGD baseline steps on, against autograd of ``hinge_losses``."""
    X, targets, U, v, G = random_problem(seed, heads=heads, m=60, n=8, atoms=20, groups=groups)
    if against:
        G[:, ::3] = 1 - G[:, ::3]
    assert objective.has_one_group_per_atom(G) != against
    U_, v_ = U.clone().requires_grad_(True), v.clone().requires_grad_(True)
    losses = objective.hinge_losses(X, targets, U_, v_, G, BETA, ovr_weight)
    assert (losses > 0).float().mean() > 0.2  # active margins: the gradient is not trivially 0
    losses.sum().backward()
    dU, dv = objective.loss_gradient(X, targets, U, v, G, BETA, ovr_weight)
    assert_close_to_scale(dU, U_.grad)
    assert_close_to_scale(dv, v_.grad)


@pytest.mark.parametrize("groups", [2, 3])
@pytest.mark.parametrize("surrogate", ["dc", "tight"])
def test_subproblem_gradient_matches_finite_differences(surrogate, groups):
    X, targets, U, v, G = random_problem(5, heads=2, groups=groups)
    problem = SubProblem(Data(X, targets, G), U, v, BETA, NU, 1e-4, mu=0.3, surrogate=surrogate)
    U1, v1 = U + 0.01, v * 1.1  # away from the linearisation point
    _, dU, dv = problem.value_and_grad(U1, v1)
    direction_U = torch.randn_like(U1)
    direction_v = torch.randn_like(v1)
    step = 1e-6
    plus = problem.value(U1 + step * direction_U, v1 + step * direction_v)
    minus = problem.value(U1 - step * direction_U, v1 - step * direction_v)
    numeric = (plus - minus) / (2 * step)
    analytic = (dU * direction_U).sum((1, 2)) + (dv * direction_v).sum(1)
    torch.testing.assert_close(numeric, analytic, rtol=1e-4, atol=1e-7)


def test_one_pass_objective_and_h_gradient_match_the_separate_ones():
    X, targets, U, v, G = random_problem(7, heads=2, groups=3)
    data = Data(X, targets, G)
    value, A, b = objective_and_h_gradient(data, U, v, BETA, NU, 0.2)
    torch.testing.assert_close(value, full_objective(data, U, v, BETA, NU, 0.2))
    expected_A, expected_b = h_gradient(data, U, v, BETA)
    torch.testing.assert_close(A, expected_A)
    torch.testing.assert_close(b, expected_b)


@pytest.mark.parametrize("surrogate", ["dc", "tight"])
@pytest.mark.parametrize("mu, groups", [(0.0, 2), (0.3, 3)])
def test_minibatch_gradient_matches_value_and_grad(mu, groups, surrogate):
    """The value-free minibatch gradient (fused linear term) is the gradient of the same function."""
    X, targets, U, v, G = random_problem(6, heads=2, groups=groups)
    problem = SubProblem(Data(X, targets, G), U, v, BETA, NU, 1e-4, mu=mu, surrogate=surrogate)
    U1, v1, rows = U + 0.01, v * 1.1, torch.tensor([3, 1, 4, 1, 5, 9, 2, 6])
    _, dU, dv = problem.value_and_grad(U1, v1, rows)
    fused_dU, fused_dv = problem.gradient(U1, v1, rows)
    torch.testing.assert_close(fused_dU, dU)
    torch.testing.assert_close(fused_dv, dv)


@pytest.mark.slow
@pytest.mark.parametrize("surrogate, line_search", [("dc", False), ("tight", False), ("tight", True)])
@pytest.mark.parametrize("solver", ["adam", "subgradient", "lbfgs"])
@pytest.mark.parametrize("seed, groups", [(0, 2), (1, 2), (2, 3), (3, 3)])
def test_full_batch_dca_objective_never_rises(solver, seed, groups, surrogate, line_search):
    X, targets, U, v, G = random_problem(seed, heads=2, m=60, groups=groups, dtype=torch.float32)
    settings = DCASettings(NU, BETA, 1e-4, 8, 0.0, make_inner_solver(solver, 60, None, 1e-4),
                           mu=0.1 * seed, surrogate=surrogate, line_search=line_search)
    data = Data(X, targets, G)
    result = run_dca(data, U, v, settings, seed=seed)
    start = full_objective(data, U, v, BETA, NU, settings.mu)
    for head, records in enumerate(result.history):
        values = [float(start[head])] + [r["objective"] for r in records]
        assert values[-1] < values[0], "DCA made no progress at all"
        for before, after in zip(values, values[1:]):
            assert after <= before * (1 + 1e-6) + 1e-12


@pytest.mark.parametrize("seed", range(3))
def test_tight_surrogate_majorises_the_objective_and_lies_below_the_dc_one(seed):
    """Per sample: hinge <= tight term <= the DC split's term, with equality at the anchor."""
    X, targets, U_k, v_k, G = random_problem(seed, groups=3)
    gen = torch.Generator().manual_seed(100 + seed)
    for scale in (0.0, 0.05, 0.5):
        U = U_k + scale * torch.randn(U_k.shape, generator=gen, dtype=U_k.dtype)
        v = v_k + scale * torch.rand(v_k.shape, generator=gen, dtype=v_k.dtype)
        tight, _ = objective.tight_data_weights(X, targets, U, v, G, BETA, U_k, v_k)
        losses = objective.hinge_losses(X, targets, U, v, G, BETA)
        Z, Z_k = objective.pre_activations(X, U, v), objective.pre_activations(X, U_k, v_k)
        mask = objective._group_mask(G, targets)
        h_k = (objective.smooth_relu(Z_k, BETA) * mask).sum(-1)
        linearised_h = (h_k + (torch.sigmoid(BETA * Z_k) * mask * (Z - Z_k)).sum(-1))
        dc = objective.g_terms(X, targets, U, v, G, BETA) - linearised_h
        assert torch.all(losses <= tight + 1e-10) and torch.all(tight <= dc + 1e-10)  # float64 rounding
        if scale == 0.0:
            torch.testing.assert_close(tight, losses)
    # far from the anchor the DC term also charges the Bregman gap of well classified samples
    assert float((dc - tight).sum()) > 1e-3


def test_tight_surrogate_gradient_matches_autograd():
    X, targets, U_k, v_k, G = random_problem(8, groups=3)
    U = (U_k + 0.1).requires_grad_(True)
    v = (v_k * 0.9).requires_grad_(True)
    Z = objective.pre_activations(X, U, v)
    Z_k = objective.pre_activations(X, U_k, v_k)
    mask = objective._group_mask(G, targets)
    linearised = ((objective.smooth_relu(Z_k, BETA) + torch.sigmoid(BETA * Z_k) * (Z - Z_k)) * mask).sum(-1)
    S = objective.smooth_relu(Z, BETA) @ G
    rival_hinges(S.scatter(-1, targets[..., None], linearised[..., None]), targets).sum().backward()
    _, R = objective.tight_data_weights(X, targets, U.detach(), v.detach(), G, BETA, U_k, v_k)
    torch.testing.assert_close(X.T @ R, U.grad)
    torch.testing.assert_close(-R.sum(1), v.grad)


@pytest.mark.parametrize("groups", [2, 3])
def test_tight_surrogate_one_group_per_atom_shortcut_gives_the_general_values(groups):
    """Binary, one-vs-all and plain shared heads take a cheaper formula; it must agree with the
    general one (which mixes linearised and exact features for atoms in several groups)."""
    X, targets, U_k, v_k, G = random_problem(11, groups=groups)
    assert objective.has_one_group_per_atom(G)
    U, v = U_k + 0.2, v_k * 0.8  # away from the anchor, so that linearised and exact features differ
    shortcut = objective.tight_data_weights(X, targets, U, v, G, BETA, U_k, v_k, one_group_per_atom=True)
    general = objective.tight_data_weights(X, targets, U, v, G, BETA, U_k, v_k, one_group_per_atom=False)
    assert float(shortcut[0].sum()) > 0 and float(shortcut[1].abs().sum()) > 0
    torch.testing.assert_close(shortcut, general)
    against = random_problem(11, groups=3)[4].clone()
    against[:, 0] = 1.0 - against[:, 0]  # the first atom votes against a class: in the two others' groups
    assert not objective.has_one_group_per_atom(against)


def test_line_search_keeps_the_dca_point_unless_the_objective_falls():
    from lastedge.train.dca import extrapolated_point

    X, targets, U, v, G = random_problem(9, heads=2)
    data = Data(X, targets, G)
    settings = DCASettings(NU, BETA, 1e-4, 1, 0.0, make_inner_solver("lbfgs", 30, None, 1e-4))
    problem = SubProblem(data, U, v, BETA, NU, 1e-4, surrogate="tight")
    U1, v1, _ = settings.inner_solver.solve(problem, U, v, seed=0)
    U2, v2, factor = extrapolated_point(data, U, v, U1, v1, settings, seed=0)
    before = full_objective(data, U1, v1, BETA, NU)
    after = full_objective(data, U2, v2, BETA, NU)
    assert torch.all(after <= before) and torch.all(factor >= 0)
    stretched = factor > 0
    torch.testing.assert_close(U2[stretched], (U1 + factor[:, None, None] * (U1 - U))[stretched])


def test_solver_never_returns_worse_than_its_warm_start():
    X, targets, U, v, G = random_problem(11, heads=2, dtype=torch.float32)
    problem = SubProblem(Data(X, targets, G), U, v, BETA, NU, 1e-4)
    # absurdly large steps: every candidate diverges, so the warm start must come back
    solver = InnerSolver("subgradient", 40, None, 1e-4, step_sizes=(1e6,), max_extensions=0)
    U1, v1, _ = solver.solve(problem, U, v, seed=0)
    assert torch.all(problem.value(U1, v1) <= problem.value(U, v) + 1e-9)


@pytest.mark.parametrize("method, n_iter, batch_size, trial, checkpoint", [
    ("adam", 300, 100, 50, 15),        # minibatch Adam: trials of at least 50 steps
    ("adam", 5000, 100, 250, 250),     # ... or the paper's T / 20 when longer
    ("adam", 30, 100, 30, 1),          # ... never longer than the solve
    ("adam", 300, None, 15, 15),       # full batch (trials every DCA iteration): T / 20
    ("subgradient", 300, 100, 15, 15),
])
@pytest.mark.slow
def test_step_trial_lengths(method, n_iter, batch_size, trial, checkpoint, monkeypatch):
    solver = InnerSolver(method, n_iter, batch_size, 1e-4)
    assert (solver.trial_steps, solver.checkpoint_every) == (trial, checkpoint)
    X, targets, U, v, G = random_problem(13, heads=2, m=200, dtype=torch.float32)
    calls = []
    original = InnerSolver._continue

    def record(self, problem, run, rate, scale, start, stop, *args):
        calls.append((start, stop))
        return original(self, problem, run, rate, scale, start, stop, *args)

    monkeypatch.setattr(InnerSolver, "_continue", record)
    solver.solve(SubProblem(Data(X, targets, G), U, v, BETA, NU, 1e-4), U, v, seed=0)
    assert calls[0] == (1, trial) and calls[-1] == (trial + 1, n_iter)


@pytest.mark.parametrize("batch_size, grows", [(None, True), (1000, False)])
def test_only_solvers_that_rerun_their_trials_grow_the_step_grid(batch_size, grows):
    """Steps far too small: the largest candidate wins, so full-batch Adam tries larger ones;
    minibatch Adam, which carries its winner through the whole fit, stays inside its grid."""
    X, targets, U, v, G = random_problem(14, heads=2, m=200, dtype=torch.float32)
    solver = InnerSolver("adam", 60, batch_size, 1e-4, step_sizes=(1e-6, 1e-7))
    _, _, step = solver.solve(SubProblem(Data(X, targets, G), U, v, BETA, NU, 1e-4), U, v, seed=0)
    if grows:
        assert torch.all(step > 1e-6)
    else:
        torch.testing.assert_close(step, torch.full_like(step, 1e-6))


def test_minibatch_adam_carries_its_moments_and_step_across_dca_iterations():
    """Trials run once; later solves reuse the step and continue Adam's moments and step count."""
    X, targets, U, v, G = random_problem(12, heads=3, m=80, dtype=torch.float32)
    data = Data(X, targets, G)
    solver = InnerSolver("adam", 20, 16, 1e-4)
    U1, v1, first_step = solver.solve(SubProblem(data, U, v, BETA, NU, 1e-4), U, v, seed=0)
    memory = solver._memory
    assert memory is not None and memory.t == 20 and torch.equal(memory.rate, first_step)
    heads = torch.tensor([0, 2])  # head 1 converged: only the others go on
    problem = SubProblem(Data(X, targets[heads], G[heads]), U1[heads], v1[heads], BETA, NU, 1e-4)
    moment_before = memory.moments[0][1].clone()
    _, _, step = solver.solve(problem, U1[heads], v1[heads], seed=1, heads=heads)
    assert torch.equal(step, first_step[heads]) and memory.t == 40
    assert torch.equal(memory.moments[0][1], moment_before)  # the resting head's state is untouched


@pytest.mark.parametrize("block", [2**20, 64])
def test_minibatch_indices_drawn_in_blocks_are_the_per_step_draws(monkeypatch, block):
    """Indices are copied to the device in blocks (one copy per block, not per step), yet they are
    the values one ``torch.randint`` per step gives: the block size cannot change a fit."""
    monkeypatch.setattr("lastedge.train.solvers._INDEX_BLOCK", block)  # 64: 4 steps a block
    drawn = list(minibatch_indices(100, 16, 7, torch.Generator().manual_seed(3), "cpu"))
    generator = torch.Generator().manual_seed(3)
    per_step = [torch.randint(100, (16,), generator=generator) for _ in range(7)]
    assert len(drawn) == 7 and all(torch.equal(a, b) for a, b in zip(drawn, per_step))


class KeepsWarmStart:
    """A minibatch "solver" whose solves find nothing better than their warm start."""

    batch_size = 8

    def solve(self, problem, U0, v0, seed, heads=None):
        return U0.clone(), v0.clone(), torch.ones(U0.shape[0])


class SwapsTwinAtoms(KeepsWarmStart):
    """Moves the parameters a lot without changing the objective: it swaps atoms 0 and 2, which
    vote for the same group, as minibatch noise moves parameters while the objective stands still."""

    def solve(self, problem, U0, v0, seed, heads=None):
        order = torch.tensor([2, 1, 0, 3, 4])
        return U0[..., order].clone(), v0[..., order].clone(), torch.ones(U0.shape[0])


@pytest.mark.parametrize("patience", [1, 3])
def test_minibatch_dca_retries_a_solve_that_kept_its_warm_start(patience):
    """A stalled minibatch solve is retried (its solver shrinks the step) ``n_iter_no_change``
    times in a row before the head stops."""
    X, targets, U, v, G = random_problem(13, heads=2, dtype=torch.float32)
    settings = DCASettings(NU, BETA, 1e-4, 10, 1e-3, KeepsWarmStart(), n_iter_no_change=patience)
    result = run_dca(Data(X, targets, G), U, v, settings, seed=0)
    assert all(len(records) == patience for records in result.history)
    assert result.converged == [True, True]


def test_minibatch_dca_stops_on_the_objective_not_on_moving_parameters():
    """On minibatches a head stops when (P) stops falling, although its parameters still move by far
    more than ``tol`` (the paper's rule would never stop it)."""
    X, targets, U, v, G = random_problem(13, heads=2, dtype=torch.float32)
    result = run_dca(Data(X, targets, G), U, v, DCASettings(NU, BETA, 1e-4, 10, 1e-3, SwapsTwinAtoms()), seed=0)
    assert all(len(records) == 3 for records in result.history) and result.converged == [True, True]
    assert all(record["change"] > 0.1 for records in result.history for record in records)


def test_shared_dictionary_with_two_classes_is_the_binary_problem():
    from lastedge.train import LASTClassifier

    rng = np.random.RandomState(0)
    X = np.r_[rng.randn(30, 5) + 1.0, rng.randn(30, 5) - 1.0]
    y = np.r_[np.zeros(30), np.ones(30)]
    params = dict(n_atoms=6, max_dca_iter=3, inner_iter=20, random_state=0, verbose=0)
    shared = LASTClassifier(multiclass="shared", **params).fit(X, y)
    binary = LASTClassifier(multiclass="ovr", **params).fit(X, y)
    np.testing.assert_array_equal(shared.dictionary_, binary.dictionary_)
    assert shared.history_ == [{**r, "time": s["time"]} for r, s in zip(binary.history_, shared.history_)]


def test_shared_layout_in_full_batch_gives_every_class_atoms_and_one_weight_per_atom():
    from lastedge.train import LASTClassifier

    rng = np.random.RandomState(1)
    X = rng.randn(90, 4) + np.repeat(np.eye(3, 4) * 4, 30, axis=0)
    y = np.repeat(["a", "b", "c"], 30)
    clf = LASTClassifier(n_atoms=7, multiclass="shared", max_dca_iter=3, inner_iter=30,
                         random_state=0, verbose=0).fit(X, y)
    weights = clf.to_model().weights
    assert weights.shape == (7, 3)
    assert np.all((weights != 0).sum(axis=1) == 1) and np.all((weights > 0).sum(axis=0) >= 2)
    assert clf.score(X, y) > 0.9
    with pytest.raises(ValueError, match="n_atoms >= the number of classes"):
        LASTClassifier(n_atoms=2, multiclass="shared", verbose=0).fit(X, y)


def test_lbfgs_runs_its_blas_on_one_thread_and_restores_it():
    """scipy's OpenBLAS threads fought torch's for the cores (benchmarks/lbfgs_blas_threads.py)."""
    from threadpoolctl import threadpool_info

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    X, targets, U, v, G = random_problem(10, heads=1)
    problem = SubProblem(Data(X, targets, G), U, v, BETA, NU, 1e-4)
    seen = []
    value_and_grad = problem.value_and_grad
    problem.value_and_grad = lambda *args: (seen.append(blas_threads()), value_and_grad(*args))[1]
    before = blas_threads()
    make_inner_solver("lbfgs", 5, None, 1e-4).solve(problem, U, v, seed=0)
    assert seen and all(threads == {1} for threads in seen)
    assert blas_threads() == before
