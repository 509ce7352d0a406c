"""The smoothed LAST objective (P), its DC split ``g - h``, and their gradients.

Variables (after the paper's change of variables ``u_j = |w_j| d_j``, ``v_j = |w_j|``), batched
over ``H`` independent heads so that one-vs-all trains as one tensor problem:

- ``U`` [H, n, N], ``v`` [H, N]: atoms and thresholds of each head;
- ``groups`` [H, N, G]: one-hot, which group each atom scores for. A binary head has G = 2 groups
  (atoms with sign -1 and +1); a shared multi-class dictionary has one group per class;
- ``targets`` [H, m]: the group each sample should win.

With ``Q = q(X U - v)`` the smoothed features (``q(t) = softplus(beta t) / beta``) and
``S = Q @ groups`` the group scores, two multi-class hinges are offered (``hinge``):

- "max" (Crammer-Singer): ``max(0, 1 + max_{c != t} S_c - S_t) = max(S_t, 1 + max_{c != t} S_c) - S_t``;
- "sum" (Weston-Watkins): ``sum_{c != t} max(0, 1 + S_c - S_t) = sum_{c != t} max(S_t, 1 + S_c) - (G-1) S_t``,

each a convex function of ``(U, v)`` minus a convex one, which gives, with ``k = 1`` ("max") or
``k = G - 1`` ("sum"),

    g = (nu/2) ||v||^2 + sum_i (k S_{i,t_i} + hinge_i)       (convex: the max form above)
    h = k sum_i S_{i,t_i}                                     (convex)

and (P) = g - h. With two groups both hinges are exactly the paper's binary problem: ``S_1 - S_0``
is the score ``sum_j s_j q(u_j^T x - v_j)`` and the hinge is ``L(y * score)``.

All functions take plain tensors so that solvers can call them on a minibatch or on all data.
Values are sums over samples, as in the paper (the solvers rescale to means).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

Tensor = torch.Tensor


def smooth_relu(Z: Tensor, beta: float) -> Tensor:
    """``q(z) = log(1 + exp(beta z)) / beta``, the softplus smoothing of ``max(0, z)``."""
    return F.softplus(Z, beta=beta, threshold=20.0)


def pre_activations(X: Tensor, U: Tensor, v: Tensor) -> Tensor:
    """``X U - v`` for every head: [H, m, N]."""
    return torch.matmul(X, U) - v[:, None, :]


HINGES = ("max", "sum")


def _rival_terms(S: Tensor, target_score: Tensor, targets: Tensor, hinge: str) -> tuple[Tensor, Tensor]:
    """Hinge losses [H, m] against ``target_score`` and ``A`` [H, m, G], the derivative of each
    loss by the rival scores ``S_c`` (1 on every rival whose margin term is active, 0 elsewhere).

    "max" charges the best rival only; "sum" every rival. The target's own column never counts.
    """
    margins = (1.0 + S - target_score[..., None]).scatter(-1, targets[..., None], float("-inf"))
    if hinge == "sum":
        active = margins > 0
        return torch.where(active, margins, 0.0).sum(dim=-1), active.to(S.dtype)
    if hinge != "max":
        raise ValueError(f"hinge must be one of {HINGES}, got {hinge!r}")
    best, rival = margins.max(dim=-1)
    A = torch.zeros_like(S).scatter_(-1, rival[..., None], 1.0)
    return torch.relu(best), A.mul_((best > 0).to(S.dtype)[..., None])


def _h_weight(groups: Tensor, hinge: str) -> int:
    """``k``: how many times ``h`` counts each sample's target score (1 for "max", G - 1 for "sum")."""
    return groups.shape[-1] - 1 if hinge == "sum" else 1


def group_scores(X: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float) -> Tensor:
    """Smoothed group scores ``S`` [H, m, G]."""
    return smooth_relu(pre_activations(X, U, v), beta) @ groups


def _target_scores(S: Tensor, targets: Tensor) -> Tensor:
    return S.gather(-1, targets[..., None]).squeeze(-1)


def hinge_losses(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                 beta: float, hinge: str = "max") -> Tensor:
    """Per-sample hinge loss of the smoothed scores, [H, m]."""
    S = group_scores(X, U, v, groups, beta)
    return _rival_terms(S, _target_scores(S, targets), targets, hinge)[0]


def g_terms(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
            beta: float, hinge: str = "max") -> Tensor:
    """Per-sample terms ``k S_t + hinge`` of ``g`` (for "max": ``max(S_t, 1 + max_{c != t} S_c)``), [H, m]."""
    S = group_scores(X, U, v, groups, beta)
    target_score = _target_scores(S, targets)
    losses = _rival_terms(S, target_score, targets, hinge)[0]
    return _h_weight(groups, hinge) * target_score + losses


def regulariser(U: Tensor, v: Tensor, nu: float, mu: float = 0.0) -> Tensor:
    """``(nu/2) ||v||^2 + (mu/2) ||U||^2`` per head, [H] (``mu = 0`` is the paper's objective)."""
    return 0.5 * nu * (v * v).sum(dim=1) + 0.5 * mu * (U * U).sum(dim=(1, 2))


def objective(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
              beta: float, nu: float, mu: float = 0.0, hinge: str = "max") -> Tensor:
    """The objective of (P) for each head, [H]: hinge losses summed over samples + regulariser."""
    return hinge_losses(X, targets, U, v, groups, beta, hinge).sum(dim=1) + regulariser(U, v, nu, mu)


def g_value(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
            beta: float, nu: float, mu: float = 0.0, hinge: str = "max") -> Tensor:
    """The convex part ``g`` for each head, [H]."""
    return g_terms(X, targets, U, v, groups, beta, hinge).sum(dim=1) + regulariser(U, v, nu, mu)


def h_value(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float,
            hinge: str = "max") -> Tensor:
    """The concave-part generator ``h`` for each head, [H]."""
    S = group_scores(X, U, v, groups, beta)
    return _h_weight(groups, hinge) * _target_scores(S, targets).sum(dim=1)


def h_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
               beta: float, hinge: str = "max") -> tuple[Tensor, Tensor]:
    """``(dh/dU, dh/dv)`` summed over the samples of ``X``: [H, n, N] and [H, N].

    ``dh/dQ_ij`` is ``k`` where atom j scores for sample i's target group, so the gradient is the
    sigmoid of the pre-activation masked to those atoms, pulled back through ``X U - v``.
    """
    R = _h_pre_activation_gradient(pre_activations(X, U, v), beta, groups, targets, hinge)
    return X.T @ R, -R.sum(dim=1)


def _h_pre_activation_gradient(Z: Tensor, beta: float, groups: Tensor, targets: Tensor, hinge: str) -> Tensor:
    """``dh / dZ`` [H, m, N]: ``k`` times the sigmoid on the atoms of each sample's target group."""
    return torch.sigmoid(beta * Z).mul_(_group_mask(groups, targets)).mul_(_h_weight(groups, hinge))


def hinge_losses_and_h_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                                beta: float, hinge: str = "max") -> tuple[Tensor, Tensor, Tensor]:
    """``hinge_losses`` and ``h_gradient`` from one pass: ``(losses [H, m], dh/dU, dh/dv)``.

    DCA needs both at every new iterate (the objective to record, the gradient to linearise at);
    sharing the matrix product ``X U - v`` saves a third of that pass.
    """
    Z = pre_activations(X, U, v)
    S = smooth_relu(Z, beta) @ groups
    losses = _rival_terms(S, _target_scores(S, targets), targets, hinge)[0]
    R = _h_pre_activation_gradient(Z, beta, groups, targets, hinge)
    return losses, X.T @ R, -R.sum(dim=1)


def g_data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                   beta: float, hinge: str = "max") -> tuple[Tensor, Tensor]:
    """Per-sample terms of ``g`` (without the ``nu`` term) and ``R = d terms / d(X U - v)``.

    Returns ``(terms [H, m], R [H, m, N])``; the gradient of the terms' sum is ``(X^T R, -sum_i R)``.
    Where a margin term is exactly 0 the target group's gradient is taken (a valid subgradient).
    """
    Z = pre_activations(X, U, v)
    S = smooth_relu(Z, beta) @ groups
    target_score = _target_scores(S, targets)
    losses, A = _rival_terms(S, target_score, targets, hinge)
    k = _h_weight(groups, hinge)
    # d terms / dS: A on the rivals, k - (active rivals) on the target group.
    dS = A.scatter_add_(-1, targets[..., None], (k - A.sum(dim=-1))[..., None])
    return k * target_score + losses, _pull_back(Z, beta, dS, groups)


def tight_data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float,
                       U_k: Tensor, v_k: Tensor, hinge: str = "max") -> tuple[Tensor, Tensor]:
    """Per-sample terms of the tight majoriser at ``(U_k, v_k)`` and ``R = d terms / d(X U - v)``.

    The hinge only falls as ``S_t`` grows, and ``S_t`` lies above its linearisation ``lin_k S_t``
    at the anchor (it is convex), so the hinge with ``lin_k S_t`` in place of ``S_t`` (e.g.
    ``max(0, 1 + max_{c != t} S_c - lin_k S_t)`` for "max") majorises it, equals it at the anchor
    and is convex. It is never above the DC split's term ``g_i - lin_k h_i``, which also charges a
    correctly classified sample for every change of its target-group features (the Bregman gap
    ``k (S_t - lin_k S_t)``). Returns ``(terms [H, m], R [H, m, N])``.
    """
    Z = pre_activations(X, U, v)
    Z_k = pre_activations(X, U_k, v_k)
    target_mask = _group_mask(groups, targets)
    slope_k = torch.sigmoid(beta * Z_k).mul_(target_mask)
    target_k = (smooth_relu(Z_k, beta) * target_mask).sum(dim=-1)
    linearised_target = target_k + (slope_k * (Z - Z_k)).sum(dim=-1)
    S = smooth_relu(Z, beta) @ groups
    terms, A = _rival_terms(S, linearised_target, targets, hinge)
    R = _pull_back(Z, beta, A, groups).sub_(slope_k.mul_(A.sum(dim=-1, keepdim=True)))
    return terms, R


def _pull_back(Z: Tensor, beta: float, dS: Tensor, groups: Tensor) -> Tensor:
    """``d / dZ`` of a function of the group scores whose gradient by ``S`` is ``dS`` [H, m, G]."""
    return torch.sigmoid(beta * Z).mul_(dS @ groups.transpose(1, 2))


def _group_mask(groups: Tensor, chosen: Tensor) -> Tensor:
    """[H, m, N] mask: 1 where atom j belongs to the group ``chosen[h, i]``."""
    by_group = groups.transpose(1, 2)  # [H, G, N]
    index = chosen[:, :, None].expand(-1, -1, by_group.shape[-1])
    return by_group.gather(1, index)
