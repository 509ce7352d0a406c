"""The smoothed LAST objective (P), its DC split ``g - h``, and their gradients.

Variables (after the paper's change of variables ``u_j = |w_j| d_j``, ``v_j = |w_j|``), batched
over ``H`` independent heads so that one-vs-all trains as one tensor problem:

- ``U`` [H, n, N], ``v`` [H, N]: atoms and thresholds of each head;
- ``groups`` [H, N, G]: one-hot, which group each atom scores for. A binary head has G = 2 groups
  (atoms with sign -1 and +1); a shared multi-class dictionary has one group per class;
- ``targets`` [H, m]: the group each sample should win.

With ``Q = q(X U - v)`` the smoothed features (``q(t) = softplus(beta t) / beta``) and
``S = Q @ groups`` the group scores, the multi-class hinge (Crammer-Singer)
``max(0, 1 + max_{c != t} S_c - S_t) = max(S_t, 1 + max_{c != t} S_c) - S_t`` is a convex function
of ``(U, v)`` minus a convex one, which gives

    g = (nu/2) ||v||^2 + sum_i (S_{i,t_i} + hinge_i)       (convex: the max form above)
    h = sum_i S_{i,t_i}                                     (convex)

and (P) = g - h. With two groups this is exactly the paper's binary problem: ``S_1 - S_0`` is the
score ``sum_j s_j q(u_j^T x - v_j)`` and the hinge is ``L(y * score)``.

A shared dictionary may also hold atoms that vote AGAINST a class c (negative output weight). Such
an atom sits in every group but c (its row of ``groups`` is ``1 - e_c``): the group scores stay
convex and differ from the class scores ``s = Q @ atom_votes(groups)`` (for-atoms minus
against-atoms) by one constant per sample, so the multi-class hinge is unchanged. With
``ovr_weight`` = lam > 0 the loss adds one-vs-all's binary hinges on the class scores,
``lam * sum_c max(0, 1 - t_c s_c)`` (``t_c = +1`` for the sample's class, else -1). Each is
``max(a, 1 + b) - a`` with ``a`` the atoms voting for ``t_c`` (for-y or against-c atoms, all in
the target group), so ``h`` becomes ``(1 + lam) sum_i S_{i,t_i}`` and ``g`` gains
``lam * (S_t + sum_c max(0, 1 - t_c s_c))``.

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


# Atoms per head from which a batched product is as fast as one product for all heads (1 thread:
# 1.1-1.4x faster with one product at 60-300 atoms, 3-6 % slower at 400; benchmarks/head_products.py).
_BATCHED_FROM_ATOMS = 256


def _one_product(heads: int, atoms: int) -> bool:
    """Whether ``heads`` heads of ``atoms`` atoms each are faster as one matrix product."""
    return heads > 1 and atoms < _BATCHED_FROM_ATOMS


def head_products(X: Tensor, U: Tensor) -> Tensor:
    """``X U_h`` for every head h: [H, m, N], from ONE matrix product ``X [U_1 ... U_H]``.

    A batched product reads ``X`` once per head, and with few atoms per head (one-vs-all's heads)
    it is bound by that reading: on 4000 MNIST rows, 10 heads of 10 atoms, one thread, one product
    took 8 ms against 44 ms (``benchmarks/head_products.py``). The result may be a view in the
    product's memory layout.
    """
    H, n, N = U.shape
    if not _one_product(H, N):
        return torch.matmul(X, U)
    return (X @ U.transpose(0, 1).reshape(n, H * N)).view(-1, H, N).transpose(0, 1)


def pull_back(X: Tensor, R: Tensor) -> Tensor:
    """``X^T R_h`` for every head h: [H, n, N] (a gradient by ``U`` from one by ``X U - v``), as one
    matrix product for the reason given in :func:`head_products`."""
    H, m, N = R.shape
    if not _one_product(H, N):
        return X.T @ R
    return (X.T @ R.transpose(0, 1).reshape(m, H * N)).view(-1, H, N).transpose(0, 1).contiguous()


def pre_activations(X: Tensor, U: Tensor, v: Tensor) -> Tensor:
    """``X U - v`` for every head: [H, m, N]."""
    return head_products(X, U) - v[:, None, :]


def _rival_terms(S: Tensor, target_score: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """Hinge losses [H, m] against ``target_score`` and ``A`` [H, m, G], the derivative of each
    loss by the rival scores ``S_c`` (1 on the best rival where its margin term is active, 0
    elsewhere). The target's own column never counts.
    """
    margins = (1.0 + S - target_score[..., None]).scatter(-1, targets[..., None], float("-inf"))
    best, rival = margins.max(dim=-1)
    A = torch.zeros_like(S).scatter_(-1, rival[..., None], 1.0)
    return torch.relu(best), A.mul_((best > 0).to(S.dtype)[..., None])


def _h_weight(ovr_weight: float) -> float:
    """How many times ``h`` counts each sample's target score: ``1 + lam``."""
    return 1.0 + ovr_weight


def atom_votes(groups):
    """Class votes of each atom, [..., N, G]: the one-hot row of an atom voting for a class, ``-e_c``
    for an atom voting against class c (its group row ``1 - e_c``: in more than one group).
    Takes torch tensors or numpy arrays."""
    return groups - 1.0 * (groups.sum(-1) > 1)[..., None]


def _ovr_hinges(s: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """One-vs-all hinges ``sum_c max(0, 1 - t_c s_c)`` [H, m] of the class scores ``s`` [H, m, G]
    and their derivative by ``s`` (``-t_c`` where active)."""
    t = 2.0 * F.one_hot(targets, s.shape[-1]).to(s.dtype) - 1.0
    margins = 1.0 - t * s
    active = (margins > 0).to(s.dtype)
    return (margins * active).sum(dim=-1), -t * active


def group_scores(X: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float) -> Tensor:
    """Smoothed group scores ``S`` [H, m, G]."""
    return smooth_relu(pre_activations(X, U, v), beta) @ groups


def _target_scores(S: Tensor, targets: Tensor) -> Tensor:
    return S.gather(-1, targets[..., None]).squeeze(-1)


def hinge_losses(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                 beta: float, ovr_weight: float = 0.0) -> Tensor:
    """Per-sample loss of the smoothed scores, [H, m]: the multi-class hinge (+ the binary ones)."""
    return _losses(smooth_relu(pre_activations(X, U, v), beta), targets, groups, ovr_weight)[0]


def _losses(Q: Tensor, targets: Tensor, groups: Tensor, ovr_weight: float
            ) -> tuple[Tensor, Tensor]:
    """Per-sample losses [H, m] of the smoothed features ``Q`` and the target scores ``S_t``."""
    n_groups = groups.shape[-1]
    scores = Q @ _score_weights(groups, ovr_weight)
    target_score = _target_scores(scores[..., :n_groups], targets)
    losses = _rival_terms(scores[..., :n_groups], target_score, targets)[0]
    if ovr_weight:
        losses = losses + ovr_weight * _ovr_hinges(scores[..., n_groups:], targets)[0]
    return losses, target_score


def g_terms(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
            beta: float, ovr_weight: float = 0.0) -> Tensor:
    """Per-sample terms ``(1 + lam) S_t + loss`` of ``g`` (for lam = 0:
    ``max(S_t, 1 + max_{c != t} S_c)``), [H, m]."""
    losses, target_score = _losses(smooth_relu(pre_activations(X, U, v), beta), targets, groups, ovr_weight)
    return _h_weight(ovr_weight) * target_score + losses


def regulariser(U: Tensor, v: Tensor, nu: float, mu: float = 0.0) -> Tensor:
    """``(nu/2) ||v||^2 + (mu/2) ||U||^2`` per head, [H] (``mu = 0`` is the paper's objective)."""
    return 0.5 * nu * (v * v).sum(dim=1) + 0.5 * mu * (U * U).sum(dim=(1, 2))


def objective(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
              beta: float, nu: float, mu: float = 0.0, ovr_weight: float = 0.0) -> Tensor:
    """The objective of (P) for each head, [H]: hinge losses summed over samples + regulariser."""
    return (hinge_losses(X, targets, U, v, groups, beta, ovr_weight).sum(dim=1)
            + regulariser(U, v, nu, mu))


def g_value(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
            beta: float, nu: float, mu: float = 0.0, ovr_weight: float = 0.0) -> Tensor:
    """The convex part ``g`` for each head, [H]."""
    return g_terms(X, targets, U, v, groups, beta, ovr_weight).sum(dim=1) + regulariser(U, v, nu, mu)


def h_value(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float,
            ovr_weight: float = 0.0) -> Tensor:
    """The concave-part generator ``h`` for each head, [H]."""
    S = group_scores(X, U, v, groups, beta)
    return _h_weight(ovr_weight) * _target_scores(S, targets).sum(dim=1)


def h_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
               beta: float, ovr_weight: float = 0.0) -> tuple[Tensor, Tensor]:
    """``(dh/dU, dh/dv)`` summed over the samples of ``X``: [H, n, N] and [H, N].

    ``dh/dQ_ij`` is ``1 + lam`` where atom j scores for sample i's target group, so the gradient is
    the sigmoid of the pre-activation masked to those atoms, pulled back through ``X U - v``.
    """
    R = _h_pre_activation_gradient(pre_activations(X, U, v), beta, groups, targets,
                                   _h_weight(ovr_weight))
    return pull_back(X, R), -R.sum(dim=1)


def _h_pre_activation_gradient(Z: Tensor, beta: float, groups: Tensor, targets: Tensor, weight: float) -> Tensor:
    """``dh / dZ`` [H, m, N]: ``weight`` times the sigmoid on the atoms of each sample's target group."""
    return torch.sigmoid(beta * Z).mul_(_group_mask(groups, targets)).mul_(weight)


def hinge_losses_and_h_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                                beta: float, ovr_weight: float = 0.0
                                ) -> tuple[Tensor, Tensor, Tensor]:
    """``hinge_losses`` and ``h_gradient`` from one pass: ``(losses [H, m], dh/dU, dh/dv)``.

    DCA needs both at every new iterate (the objective to record, the gradient to linearise at);
    sharing the matrix product ``X U - v`` saves a third of that pass.
    """
    Z = pre_activations(X, U, v)
    losses = _losses(smooth_relu(Z, beta), targets, groups, ovr_weight)[0]
    R = _h_pre_activation_gradient(Z, beta, groups, targets, _h_weight(ovr_weight))
    return losses, pull_back(X, R), -R.sum(dim=1)


def g_data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                   beta: float, ovr_weight: float = 0.0) -> tuple[Tensor, Tensor]:
    """Per-sample terms of ``g`` (without the ``nu`` term) and ``R = d terms / d(X U - v)``.

    Returns ``(terms [H, m], R [H, m, N])``; the gradient of the terms' sum is ``(X^T R, -sum_i R)``.
    Where a margin term is exactly 0 the target group's gradient is taken (a valid subgradient).
    """
    return _data_weights(X, targets, U, v, groups, beta, ovr_weight, _h_weight(ovr_weight))


def loss_gradient(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor,
                  beta: float, ovr_weight: float = 0.0) -> tuple[Tensor, Tensor]:
    """``(d/dU, d/dv)`` of the hinge losses summed over the samples of ``X`` (no regulariser):
    [H, n, N] and [H, N], in closed form.

    What autograd of :func:`hinge_losses` gives (an inactive margin, or one exactly 0, adds
    nothing), from one pass and without a graph: the SGD baseline's step on a minibatch of 10
    rows is bound by per-operation overhead, which autograd multiplies.
    """
    R = _data_weights(X, targets, U, v, groups, beta, ovr_weight, 0.0)[1]
    return pull_back(X, R), -R.sum(dim=1)


def _data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float,
                  ovr_weight: float, target_weight: float) -> tuple[Tensor, Tensor]:
    """Per-sample ``target_weight * S_t + losses`` and ``R``, their derivative by ``X U - v``
    (``g``'s terms at ``target_weight = 1 + lam``, the losses alone at 0)."""
    Z = pre_activations(X, U, v)
    weights = _score_weights(groups, ovr_weight)
    scores = smooth_relu(Z, beta) @ weights
    S = scores[..., :groups.shape[-1]]
    target_score = _target_scores(S, targets)
    losses, A = _rival_terms(S, target_score, targets)
    # d terms / dS: A on the rivals, target_weight - (active rivals) on the target group.
    dS = A.scatter_add_(-1, targets[..., None], (target_weight - A.sum(dim=-1))[..., None])
    terms = target_weight * target_score + losses
    if ovr_weight:
        terms, dS = _add_ovr_hinges(terms, dS, scores, targets, ovr_weight)
    return terms, torch.sigmoid(beta * Z).mul_(dS @ weights.transpose(1, 2))


def _score_weights(groups: Tensor, ovr_weight: float) -> Tensor:
    """The group table [H, N, G], with the atoms' class votes beside it ([H, N, 2G]) when
    one-vs-all's hinges are added: one product ``Q @ weights`` gives every score the loss needs."""
    return torch.cat([groups, atom_votes(groups)], dim=-1) if ovr_weight else groups


def _add_ovr_hinges(terms: Tensor, dS: Tensor, scores: Tensor, targets: Tensor, ovr_weight: float
                    ) -> tuple[Tensor, Tensor]:
    """``terms + lam * ovr hinges`` of the class votes ``scores[..., G:]`` (G: ``dS``'s groups), and
    ``dS`` extended by their derivative: the derivative by all the ``scores``."""
    ovr, d_votes = _ovr_hinges(scores[..., dS.shape[-1]:], targets)
    return terms + ovr_weight * ovr, torch.cat([dS, d_votes.mul_(ovr_weight)], dim=-1)


def tight_data_weights(X: Tensor, targets: Tensor, U: Tensor, v: Tensor, groups: Tensor, beta: float,
                       U_k: Tensor, v_k: Tensor, ovr_weight: float = 0.0,
                       one_group_per_atom: bool | None = None) -> tuple[Tensor, Tensor]:
    """Per-sample terms of the tight majoriser at ``(U_k, v_k)`` and ``R = d terms / d(X U - v)``.

    No loss term rises as the features of the target group's atoms grow (they vote for the
    sample's class, or against a rival), and each feature lies above its linearisation at the anchor
    (it is convex). So the loss with those features linearised (e.g.
    ``max(0, 1 + max_{c != t} S_c - lin_k S_t)``) majorises it, equals it at the anchor
    and is convex. It is never above the DC split's term ``g_i - lin_k h_i``, which also charges a
    correctly classified sample for every change of its target-group features (the Bregman gap
    ``(1 + lam) (S_t - lin_k S_t)``). An atom in the target group and in a rival's (one voting
    against a third class) cancels from their margin; it is linearised in both, so the majoriser
    charges no gap for it. Returns ``(terms [H, m], R [H, m, N])``.

    Where every atom is in one group and no one-vs-all hinges are added (binary and one-vs-all
    heads, a shared dictionary without atoms against), no target-group atom enters a rival's score,
    so the rivals are scored from the features themselves and the general case's mixing of
    linearised and exact features is skipped: the same values, 1.2x faster on one-vs-all heads
    (``benchmarks/tight_majoriser.py``). ``one_group_per_atom``: whether that holds (None: read it from ``groups``).
    """
    if one_group_per_atom is None:
        one_group_per_atom = has_one_group_per_atom(groups)
    Z = pre_activations(X, U, v)
    Z_k = pre_activations(X, U_k, v_k)
    target_mask = _group_mask(groups, targets)
    slope_k = torch.sigmoid(beta * Z_k).mul_(target_mask)
    Q_k = smooth_relu(Z_k, beta)
    step = (Z - Z_k).mul_(slope_k)
    linearised_target = (Q_k * target_mask).sum(dim=-1) + step.sum(dim=-1)
    if one_group_per_atom and not ovr_weight:
        terms, A = _rival_terms(smooth_relu(Z, beta) @ groups, linearised_target, targets)
        # d terms / dQ: A on the rivals' atoms; minus the active rivals on the (linearised) target's
        R = torch.sigmoid(beta * Z).mul_(A @ groups.transpose(1, 2))
        return terms, R.sub_(slope_k.mul_(A.sum(dim=-1, keepdim=True)))
    # The target group's atoms linearised, the others exact: lerp with weights 0 and 1 picks
    # exactly, several times faster than torch.where on CPU.
    Q = smooth_relu(Z, beta).lerp_(Q_k.add_(step), target_mask)
    weights = _score_weights(groups, ovr_weight)
    scores = Q @ weights
    terms, A = _rival_terms(scores[..., :groups.shape[-1]], linearised_target, targets)
    dS = A.scatter_add_(-1, targets[..., None], -A.sum(dim=-1, keepdim=True))
    if ovr_weight:
        terms, dS = _add_ovr_hinges(terms, dS, scores, targets, ovr_weight)
    R = torch.sigmoid(beta * Z).lerp_(slope_k, target_mask).mul_(dS @ weights.transpose(1, 2))
    # in row order whatever the layout of X U (several heads of few atoms: a view), so that sums
    # over its rows add in the same order for every number of heads
    return terms, R.contiguous()


def has_one_group_per_atom(groups: Tensor) -> bool:
    """Whether every atom is in exactly one group (no atom votes against a class)."""
    return bool((groups.sum(dim=-1) == 1).all())


def _group_mask(groups: Tensor, chosen: Tensor) -> Tensor:
    """[H, m, N] mask: 1 where atom j belongs to the group ``chosen[h, i]``.

    Rows of the contiguous [H, G, N] group table picked by index: 3x faster than a gather, whose
    index tensor is as large as the mask.
    """
    by_group = groups.transpose(1, 2).contiguous()  # [H, G, N]
    heads = torch.arange(by_group.shape[0], device=by_group.device)[:, None]
    return by_group[heads, chosen]
