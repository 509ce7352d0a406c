"""From labels to the tensor problem: heads, atom signs/groups, sample targets, and the start point.

One-vs-all with C classes is C binary heads trained together; a binary task is one head. Each head
has N atoms split into a negative group (sign -1) and a positive group (sign +1); the paper fixes
these signs before training (:func:`atom_signs`).
"""

from __future__ import annotations

import numpy as np
import torch

from .objective import atom_votes

Tensor = torch.Tensor
# Each start atom is scaled to exceed the threshold on this share of the training rows.
INIT_ACTIVE_FRACTION = 0.05


def atom_signs(n_atoms: int, positive_fraction: float) -> np.ndarray:
    """Sign vector of one head: ``round(fraction * N)`` entries +1 (at least one of each sign).

    With a single atom there is room for one sign only: it is +1 (the head can still say "no" by
    staying below the threshold).
    """
    if n_atoms == 1:
        return np.ones(1)
    n_positive = int(np.clip(round(positive_fraction * n_atoms), 1, n_atoms - 1))
    return np.r_[-np.ones(n_atoms - n_positive), np.ones(n_positive)]


def binary_heads(y_index: np.ndarray, n_classes: int) -> np.ndarray:
    """Target group (1 = positive) of every sample for every head, [H, m].

    Two classes give one head whose positive class is ``classes[1]``; more give one head per class.
    """
    if n_classes == 2:
        return (y_index == 1)[None, :].astype(np.int64)
    return (y_index[None, :] == np.arange(n_classes)[:, None]).astype(np.int64)


def shared_layout(y_index: np.ndarray, n_classes: int, n_atoms: int,
                  atoms_against: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """One head, one group per class: ``targets`` [1, m] (the class), ``groups`` [1, N, C].

    Atoms go to classes in proportion to class frequency (largest remainders); every class gets at
    least one. Of class c's ``n_c`` atoms,
    ``round(atoms_against * n_c)`` (at most ``n_c - 1``) vote against c instead of for it: their
    group row is ``1 - e_c`` (see :func:`objective.atom_votes`).
    """
    if n_atoms < n_classes:
        raise ValueError(f"multiclass='shared' needs n_atoms >= the number of classes ({n_classes}), "
                         f"got {n_atoms}")
    share = np.bincount(y_index, minlength=n_classes) / len(y_index) * n_atoms
    counts = np.maximum(1, np.floor(share).astype(int))
    while counts.sum() < n_atoms:
        counts[np.argmax(share - counts)] += 1
    while counts.sum() > n_atoms:
        counts[np.argmax(np.where(counts > 1, counts - share, -np.inf))] -= 1
    atom_class = np.repeat(np.arange(n_classes), counts)
    groups = np.eye(n_classes, dtype=np.float32)[atom_class]
    for c, count in enumerate(counts):
        against = np.flatnonzero(atom_class == c)[:min(int(round(atoms_against * count)), count - 1)]
        groups[against] = 1.0 - groups[against]
    return y_index[None, :].astype(np.int64), groups[None]


def sign_groups(signs: np.ndarray) -> np.ndarray:
    """One-hot groups [H, N, 2] from signs [H, N]: group 0 = sign -1, group 1 = sign +1."""
    return np.stack([signs < 0, signs > 0], axis=-1).astype(np.float32)


def initial_atoms(Z: np.ndarray, targets: np.ndarray, groups: np.ndarray, rng: np.random.RandomState
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Start point ``(U0 [H, n, N], v0 [H, N])``: atoms are training samples, thresholds 1.

    As in the paper, each atom is a random training sample; it is drawn from the samples whose
    target is the atom's group, so positive atoms start on positive samples (an atom voting against
    class c: on a sample of another class). ``v0 = 1``.

    Each atom is then scaled so that it starts above the threshold on ``INIT_ACTIVE_FRACTION`` of
    the training samples. Unscaled (the paper's), unit-norm data give ``u^T x <= ||u|| ||x|| = 1``:
    every feature starts at or below the threshold, the smoothed gradients are ~exp(-beta * gap),
    and the first DCA iterations barely move.
    """
    n_heads, n_atoms, _ = groups.shape
    U0 = np.empty((n_heads, Z.shape[1], n_atoms), dtype=np.float32)
    probe = Z[rng.choice(len(Z), size=min(len(Z), 2000), replace=False)]
    for h in range(n_heads):
        kind = _atom_kinds(groups[h])
        for g in np.unique(kind):
            atoms = np.flatnonzero(kind == g)
            pool = np.flatnonzero(groups[h][atoms[0]][targets[h]] > 0)
            pool = pool if len(pool) else np.arange(len(Z))
            U0[h][:, atoms] = Z[rng.choice(pool, size=len(atoms), replace=len(pool) < len(atoms))].T
        U0[h] *= _activation_scale(probe @ U0[h], INIT_ACTIVE_FRACTION)
    return U0, np.ones((n_heads, n_atoms), dtype=np.float32)


def _atom_kinds(groups: np.ndarray) -> np.ndarray:
    """Per atom of one head: the group c it votes for, or ``G + c`` when it votes against c."""
    votes = atom_votes(groups)
    return np.where(votes.min(axis=1) < 0, groups.shape[1] + votes.argmin(axis=1), votes.argmax(axis=1))


def _activation_scale(responses: np.ndarray, active_fraction: float) -> np.ndarray:
    """Per-atom factor that puts the ``1 - active_fraction`` quantile of responses at 1.

    Any level whose inverse float32 holds counts (raw rows of 1e-9 respond at 1e-16; an absolute
    floor of 1e-12 left their atoms unscaled and never active); zero responses keep factor 1.
    """
    tiny = np.finfo(np.float32).tiny
    level = np.quantile(responses, 1.0 - active_fraction, axis=0)
    fallback = np.abs(responses).max(axis=0)
    level = np.where(level > tiny, level, np.where(fallback > tiny, fallback, 1.0))
    return (1.0 / level).astype(np.float32)
