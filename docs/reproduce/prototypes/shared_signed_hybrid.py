"""Prototype (issue 6), not product code: a shared dictionary with atoms voting for AND against
their class, trained on the multi-class hinge plus one-vs-all's binary hinges.

Before fitting it patches ``lastedge.train.problem`` and ``lastedge.train.objective`` so that
``LASTClassifier(multiclass="shared")`` trains this model (minibatches and the tight majoriser
only: the full-batch "dc" surrogate is not patched); docs/results.md records what it
measured and why it is not yet an option. One fit per call, one JSON line on stdout:

    python docs/reproduce/prototypes/shared_signed_hybrid.py ATOMS [--against 0.5] [--lam 1]
        [--seed 0] [--data ../shared/data/mnist.npz] [--threads 1] [--device cpu]

The model. Each class c has atoms voting for it (``P_c``, a sum of their features) and, a share
``--against`` of them, atoms voting against it (``N_c``); its score is ``s_c = P_c - N_c``: the
device model of one-vs-all (one signed weight per atom), at the same cost. The loss per sample is

    max(0, 1 + max_{c != y} s_c - s_y) + lam * sum_c max(0, 1 - t_c s_c),   t_c = +1 if c = y else -1.

Both terms are differences of convex functions. For the first, add ``sum_c N_c`` to every score:
``T_c = P_c + sum_{c' != c} N_c'`` is convex and ``T_c - T_y = s_c - s_y``, so an atom against c
is put in every group but c and the trainer's multi-class machinery applies as it is. The second
is majorised tightly as the trainer majorises the first: the convex score that enters with a minus
sign (``P_c`` when ``t_c = +1``, ``N_c`` when ``t_c = -1``) is replaced by its linearisation at
the DCA anchor. With ``--lam 0`` and ``--against 0`` it is the issue's shared model (up to the
order in which atoms' start samples are drawn); with a large ``lam`` it approaches one-vs-all's
loss on one dictionary. The fitted estimator scores ``T_c``: ``s_c`` plus one constant per
sample, so the same predictions.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from lastedge.train import LASTClassifier, objective, problem

REPO = Path(__file__).resolve().parents[3]
SETTINGS = dict(multiclass="shared", preprocess="center-l2", shift_augment=1, image_shape=(28, 28),
                max_dca_iter=12, inner_iter=300, batch_size=1000, mu=0.0, verbose=0)


def signed_layout(against: float):
    """``problem.shared_layout`` with the first ``round(against * n_c)`` atoms of class c against it."""
    plain = problem.shared_layout

    def layout(y_index, n_classes, n_atoms, atoms_per_class):
        targets, groups = plain(y_index, n_classes, n_atoms, atoms_per_class)
        g = groups[0]
        atom_class = g.argmax(1)
        for c in range(n_classes):
            atoms = np.flatnonzero(atom_class == c)
            g[atoms[:int(round(against * len(atoms)))]] = 1.0 - np.eye(n_classes, dtype=np.float32)[c]
        return targets, g[None]
    return layout


def initial_atoms(Z, targets, groups, rng, active_fraction):
    """Atoms start on samples of a class they vote for (against c: any other class)."""
    n_heads, n_atoms, _ = groups.shape
    U0 = np.empty((1, Z.shape[1], n_atoms), dtype=np.float32)
    probe = Z[rng.choice(len(Z), size=min(len(Z), 2000), replace=False)]
    rows, inverse = np.unique(groups[0], axis=0, return_inverse=True)
    for r, row in enumerate(rows):
        atoms = np.flatnonzero(inverse.ravel() == r)
        pool = np.flatnonzero(row[targets[0]] > 0)
        U0[0][:, atoms] = Z[rng.choice(pool, size=len(atoms), replace=len(pool) < len(atoms))].T
    if active_fraction is not None:
        U0[0] *= problem._activation_scale(probe @ U0[0], active_fraction)
    return U0, np.ones((n_heads, n_atoms), dtype=np.float32)


def _for_and_against(groups):
    """[N, C] masks: atom j votes for class c / against class c."""
    g = groups[0]
    against = g.sum(1) > 1
    return torch.where(against[:, None], 0.0, g), torch.where(against[:, None], 1.0 - g, 0.0)


def add_binary_hinges(lam: float) -> None:
    """Add ``lam * sum_c max(0, 1 - t_c s_c)`` to the objective and to the tight majoriser."""
    hinge_losses, tight_data_weights = objective.hinge_losses, objective.tight_data_weights

    def losses(X, targets, U, v, groups, beta, hinge="max"):
        for_c, against_c = _for_and_against(groups)
        s = objective.smooth_relu(objective.pre_activations(X, U, v), beta) @ (for_c - against_c)
        t = 2 * F.one_hot(targets, groups.shape[-1]).to(s.dtype) - 1
        return hinge_losses(X, targets, U, v, groups, beta, hinge) + lam * torch.relu(1 - t * s).sum(-1)

    def majoriser(X, targets, U, v, groups, beta, U_k, v_k, hinge="max"):
        terms, R = tight_data_weights(X, targets, U, v, groups, beta, U_k, v_k, hinge)
        for_c, against_c = _for_and_against(groups)
        Z, Z_k = objective.pre_activations(X, U, v), objective.pre_activations(X, U_k, v_k)
        slope, slope_k = torch.sigmoid(beta * Z), torch.sigmoid(beta * Z_k)
        Q = objective.smooth_relu(Z, beta)
        linear = objective.smooth_relu(Z_k, beta) + slope_k * (Z - Z_k)
        own = F.one_hot(targets, groups.shape[-1]).to(Z.dtype)
        margin = torch.where(own > 0, 1 - linear @ for_c + Q @ against_c, 1 + Q @ for_c - linear @ against_c)
        active = (margin > 0).to(Z.dtype)
        a_own, a_rival = active * own, active * (1 - own)
        dZ = (slope * (a_own @ against_c.T + a_rival @ for_c.T)
              - slope_k * (a_own @ for_c.T + a_rival @ against_c.T))
        return terms + lam * torch.relu(margin).sum(-1), R + lam * dZ

    objective.hinge_losses, objective.tight_data_weights = losses, majoriser


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("atoms", type=int, help="total atoms")
    p.add_argument("--against", type=float, default=0.5, help="share of each class's atoms voting against it")
    p.add_argument("--lam", type=float, default=1.0, help="weight of the one-vs-all hinges")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    p.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "mnist.npz")
    args = p.parse_args()
    problem.shared_layout, problem.initial_atoms = signed_layout(args.against), initial_atoms
    add_binary_hinges(args.lam)
    data = np.load(args.data)
    X, y = data["X_train"].reshape(len(data["y_train"]), -1), data["y_train"]
    X_test, y_test = data["X_test"].reshape(len(data["y_test"]), -1), data["y_test"]
    model = LASTClassifier(args.atoms, random_state=args.seed, n_jobs=args.threads, device=args.device,
                           **SETTINGS)
    start = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    print(json.dumps({"atoms": args.atoms, "against": args.against, "lam": args.lam, "seed": args.seed,
                      "fit_s": round(time.time() - start, 1),
                      "test_error_pct": round(100 * (1 - model.score(X_test, y_test)), 2)}), flush=True)


if __name__ == "__main__":
    main()
