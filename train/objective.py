"""The smoothed LAST objective (P), its DC split ``g - h``, and their gradients.

Variables (after the paper's change of variables ``u_j = |w_j| d_j``, ``v_j = |w_j|``), batched
over ``H`` independent heads so that one-vs-all trains as one tensor problem:

- ``U`` [H, n, N], ``v`` [H, N]: atoms and thresholds of each head;
- ``groups`` [H, N, G]: one-hot, which group each atom scores for. A binary head has G = 2 groups
  (atoms with sign -1 and +1); a shared multi-class dictionary has one group per class;
- ``targets`` [H, m]: the group each sample should win.

With ``Q = q(X U - v)`` the smoothed features (``q(t) = softplus(beta t) / beta``) and
``S = Q @ groups`` the group scores, the per-sample hinge is
``max(0, 1 + max_{c != t} S_c - S_t) = max(S_t, 1 + max_{c != t} S_c) - S_t``, which gives

    g = (nu/2) ||v||^2 + sum_i max(S_{i,t_i}, 1 + max_{c != t_i} S_{i,c})     (convex)
    h = sum_i S_{i,t_i}                                                     (convex)

and (P) = g - h. With two groups this is exactly the paper's binary problem: ``S_1 - S_0`` is the
score ``sum_j s_j q(u_j^T x - v_j)`` and the hinge is ``L(y * score)``.

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


def _target_and_rival(S: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Target-group score, best rival score and the rival's index, each [H, m]."""
    target_score = S.gather(-1, targets[..., None]).squeeze(-1)
    rivals = S.scatter(-1, targets[..., None], float("-inf"))
    rival_score, rival = rivals.max(dim=-1)
    return target_score, rival_score, rival


def group_scores(X: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float) -> Tensor:
    """Smoothed group scores ``S`` [H, m, G]."""
    return smooth_relu(pre_activations(X, U, v), beta) @ groups


def hinge_losses(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                 beta: float) -> Tensor:
    """Per-sample hinge loss of the smoothed scores, [H, m]."""
    S = group_scores(X, U, v, groups, beta)
    target_score, rival_score, _ = _target_and_rival(S, targets)
    return torch.relu(1.0 + rival_score - target_score)


def g_terms(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
            beta: float) -> Tensor:
    """Per-sample terms ``max(S_t, 1 + max_{c != t} S_c)`` of ``g``, [H, m]."""
    S = group_scores(X, U, v, groups, beta)
    target_score, rival_score, _ = _target_and_rival(S, targets)
    return torch.maximum(target_score, 1.0 + rival_score)


def regulariser(U: Tensor, v: Tensor, nu: float, mu: float = 0.0) -> Tensor:
    """``(nu/2) ||v||^2 + (mu/2) ||U||^2`` per head, [H] (``mu = 0`` is the paper's objective)."""
    return 0.5 * nu * (v * v).sum(dim=1) + 0.5 * mu * (U * U).sum(dim=(1, 2))


def objective(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
              beta: float, nu: float, mu: float = 0.0) -> Tensor:
    """The objective of (P) for each head, [H]: hinge losses summed over samples + regulariser."""
    return hinge_losses(X, targets, U, v, groups, beta).sum(dim=1) + regulariser(U, v, nu, mu)


def g_value(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
            beta: float, nu: float, mu: float = 0.0) -> Tensor:
    """The convex part ``g`` for each head, [H]."""
    return g_terms(X, targets, U, v, groups, beta).sum(dim=1) + regulariser(U, v, nu, mu)


def h_value(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float) -> Tensor:
    """The concave-part generator ``h`` for each head, [H]."""
    S = group_scores(X, U, v, groups, beta)
    return S.gather(-1, targets[..., None]).squeeze(-1).sum(dim=1)


def h_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
               beta: float) -> tuple[Tensor, Tensor]:
    """``(dh/dU, dh/dv)`` summed over the samples of ``X``: [H, n, N] and [H, N].

    ``dh/dQ_ij`` is 1 where atom j scores for sample i's target group, so the gradient is the
    sigmoid of the pre-activation masked to those atoms, pulled back through ``X U - v``.
    """
    Z = pre_activations(X, U, v)
    R = torch.sigmoid(beta * Z) * _group_mask(groups, targets)
    return X.T @ R, -R.sum(dim=1)


def hinge_losses_and_h_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                                beta: float) -> tuple[Tensor, Tensor, Tensor]:
    """``hinge_losses`` and ``h_gradient`` from one pass: ``(losses [H, m], dh/dU, dh/dv)``.

    DCA needs both at every new iterate (the objective to record, the gradient to linearise at);
    sharing the matrix product ``X U - v`` saves a third of that pass.
    """
    Z = pre_activations(X, U, v)
    target_score, rival_score, _ = _target_and_rival(smooth_relu(Z, beta) @ groups, targets)
    R = torch.sigmoid(beta * Z).mul_(_group_mask(groups, targets))
    return torch.relu(1.0 + rival_score - target_score), X.T @ R, -R.sum(dim=1)


def g_data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                   beta: float) -> tuple[Tensor, Tensor]:
    """Per-sample terms of ``g`` (without the ``nu`` term) and ``R = d terms / d(X U - v)``.

    Returns ``(terms [H, m], R [H, m, N])``; the gradient of the terms' sum is ``(X^T R, -sum_i R)``.
    Where the two arguments of the max tie, the target group's gradient is taken (a valid
    subgradient).
    """
    Z = pre_activations(X, U, v)
    S = smooth_relu(Z, beta) @ groups
    target_score, rival_score, rival = _target_and_rival(S, targets)
    winner = torch.where(target_score >= 1.0 + rival_score, targets, rival)
    terms = torch.maximum(target_score, 1.0 + rival_score)
    return terms, torch.sigmoid(beta * Z).mul_(_group_mask(groups, winner))


def tight_data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float,
                       U_k: Tensor, v_k: Tensor) -> tuple[Tensor, Tensor]:
    """Per-sample terms of the tight majoriser at ``(U_k, v_k)`` and ``R = d terms / d(X U - v)``.

    The hinge ``max(0, 1 + max_{c != t} S_c - S_t)`` only falls as ``S_t`` grows, and ``S_t`` lies
    above its linearisation ``lin_k S_t`` at the anchor (it is convex), so
    ``max(0, 1 + max_{c != t} S_c - lin_k S_t)`` majorises the hinge, equals it at the anchor and is
    convex. It is never above the DC split's term ``max(S_t, 1 + max_{c != t} S_c) - lin_k S_t``,
    which also charges a correctly classified sample for every change of its target-group features
    (the Bregman gap ``S_t - lin_k S_t``). Returns ``(terms [H, m], R [H, m, N])``.
    """
    Z = pre_activations(X, U, v)
    Z_k = pre_activations(X, U_k, v_k)
    target_mask = _group_mask(groups, targets)
    slope_k = torch.sigmoid(beta * Z_k).mul_(target_mask)
    target_k = (smooth_relu(Z_k, beta) * target_mask).sum(dim=-1)
    linearised_target = target_k + (slope_k * (Z - Z_k)).sum(dim=-1)
    S = smooth_relu(Z, beta) @ groups
    rivals = S.scatter(-1, targets[..., None], float("-inf"))
    rival_score, rival = rivals.max(dim=-1)
    terms = torch.relu(1.0 + rival_score - linearised_target)
    R = torch.sigmoid(beta * Z).mul_(_group_mask(groups, rival)).sub_(slope_k)
    return terms, R.mul_((terms > 0).to(R.dtype)[..., None])


def _group_mask(groups: Tensor, chosen: Tensor) -> Tensor:
    """[H, m, N] mask: 1 where atom j belongs to the group ``chosen[h, i]``."""
    by_group = groups.transpose(1, 2)  # [H, G, N]
    index = chosen[:, :, None].expand(-1, -1, by_group.shape[-1])
    return by_group.gather(1, index)
