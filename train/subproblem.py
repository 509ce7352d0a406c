"""The convex sub-problem that each DCA iteration solves.

At the iterate ``(U_k, v_k)`` DCA linearises ``h`` and minimises, for every head,

    F_k(U, v) = g(U, v) - <A, U> - <b, v>,   (A, b) = grad h(U_k, v_k),   subject to v >= eps.

Solvers see it scaled to a mean over samples (``F_k / m``), so that a step size means the same
thing whatever the data set size; the minimiser is unchanged. On a minibatch ``B`` the data term is
averaged over ``B`` and the rest divided by ``m``: the paper's per-sample function
``p(U, v; x_i, y_i)`` averaged over the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import objective
from .distributed import Shard, rank, sum_over_ranks

Tensor = torch.Tensor

# Rows per chunk when a pass over all data would otherwise allocate [H, m, N] at once.
_CHUNK_ELEMENTS = 2**25


@dataclass
class Data:
    """Training rows on the solver's device: inputs [m, n], target groups [H, m], atom groups and
    the weight of one-vs-all's binary hinges added to the multi-class hinge (a shared
    dictionary's, 0 = none).

    In a distributed fit (:mod:`.distributed`) ``X`` and ``targets`` hold this rank's ``shard``
    of the rows: ``n_samples`` counts every rank's, row indices are global, and sums over rows
    are summed over the ranks (:meth:`summed`). Without a shard every such step is the identity.
    """

    X: Tensor
    targets: Tensor
    groups: Tensor
    ovr_weight: float = 0.0
    shard: Shard | None = None

    def heads(self, index: Tensor) -> Data:
        """The same rows for the heads ``index`` only."""
        return Data(self.X, self.targets[index], self.groups[index], self.ovr_weight, self.shard)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0] if self.shard is None else self.shard.total

    def count(self, index: Tensor | None) -> int:
        """How many rows ``index`` names, on every rank together (all rows when ``None``)."""
        return self.n_samples if index is None else index.shape[0]

    def rows(self, index: Tensor | None) -> tuple[Tensor, Tensor]:
        """Inputs and targets of the rows ``index`` (all rows when ``None``) held here."""
        if index is None:
            return self.X, self.targets
        if self.shard is not None:
            index = self.shard.local(index)
        return self.X[index], self.targets[:, index]

    def summed(self, *tensors: Tensor) -> tuple[Tensor, ...]:
        """The tensors (sums over this rank's rows) summed over the ranks; as they are without a shard."""
        return tensors if self.shard is None else sum_over_ranks(*tensors)

    def mean_over_rows(self, terms: Tensor, count: int) -> Tensor:
        """Per head, the mean of ``terms`` [H, rows] over the ``count`` rows of every rank."""
        if self.shard is None:
            return terms.mean(dim=1)
        return self.summed(terms.sum(dim=1))[0] / count

    def once(self, tensor: Tensor) -> Tensor:
        """``tensor`` on one rank, zeros on the others: a term that :meth:`summed` adds once."""
        return tensor if self.shard is None or rank() == 0 else torch.zeros_like(tensor)

    def chunks(self, n_heads: int, n_atoms: int):
        """Yield ``(X, targets)`` row chunks small enough for an [H, rows, N] temporary."""
        step = max(1, _CHUNK_ELEMENTS // max(1, n_heads * n_atoms))
        for start in range(0, self.n_samples, step):
            yield self.X[start:start + step], self.targets[:, start:start + step]


def full_objective(data: Data, U: Tensor, v: Tensor, beta: float, nu: float, mu: float = 0.0) -> Tensor:
    """The objective of (P) per head on all rows, accumulated in float64, [H]."""
    total = data.once(objective.regulariser(U.double(), v.double(), nu, mu))
    for X, targets in data.chunks(U.shape[0], U.shape[2]):
        hinge = objective.hinge_losses(X, targets, U, v, data.groups, beta, data.ovr_weight)
        total = total + hinge.double().sum(dim=1)
    return data.summed(total)[0]


def h_gradient(data: Data, U: Tensor, v: Tensor, beta: float) -> tuple[Tensor, Tensor]:
    """``grad h`` at ``(U, v)`` over all rows, summed: ([H, n, N], [H, N])."""
    A = torch.zeros_like(U)
    b = torch.zeros_like(v)
    for X, targets in data.chunks(U.shape[0], U.shape[2]):
        dA, db = objective.h_gradient(X, targets, U, v, data.groups, beta, data.ovr_weight)
        A += dA
        b += db
    return data.summed(A, b)


def objective_and_h_gradient(data: Data, U: Tensor, v: Tensor, beta: float, nu: float,
                             mu: float = 0.0) -> tuple[Tensor, Tensor, Tensor]:
    """``full_objective`` and ``h_gradient`` at ``(U, v)`` in one pass over the rows."""
    total = data.once(objective.regulariser(U.double(), v.double(), nu, mu))
    A, b = torch.zeros_like(U), torch.zeros_like(v)
    for X, targets in data.chunks(U.shape[0], U.shape[2]):
        hinge, dA, db = objective.hinge_losses_and_h_gradient(X, targets, U, v, data.groups, beta,
                                                                  data.ovr_weight)
        total = total + hinge.double().sum(dim=1)
        A += dA
        b += db
    return data.summed(total, A, b)


SURROGATES = ("tight", "dc")


class SubProblem:
    """``F_k / m`` for every head, with its value and gradient on a minibatch or on all rows.

    ``surrogate`` picks the convex majoriser of (P) at ``(U_k, v_k)``: "dc" is the paper's
    ``g - <grad h(U_k, v_k), .>``; "tight" is ``(nu/2)||v||^2 + sum_i max(0, 1 + rival_i - lin_k S_t)``
    (:func:`objective.tight_data_weights`), which needs no ``grad h`` over all rows.
    """

    def __init__(self, data: Data, U_k: Tensor, v_k: Tensor, beta: float, nu: float, eps: float,
                 mu: float = 0.0, h_grad: tuple[Tensor, Tensor] | None = None, surrogate: str = "dc"):
        """``h_grad``: ``grad h`` at ``(U_k, v_k)`` when the caller already has it (DCA does)."""
        if surrogate not in SURROGATES:
            raise ValueError(f"surrogate must be one of {SURROGATES}, got {surrogate!r}")
        self.data, self.beta, self.nu, self.mu, self.eps = data, beta, nu, mu, eps
        self.surrogate, self.U_k, self.v_k = surrogate, U_k, v_k
        # read once here, not at every step (on a GPU, reading a tensor's value waits for its queue)
        self._one_group_per_atom = objective.has_one_group_per_atom(data.groups) if surrogate == "tight" else None
        if surrogate == "dc":
            A, b = h_grad if h_grad is not None else h_gradient(data, U_k, v_k, beta)
        else:  # no linear term: the linearisation sits inside each sample's term
            A, b = torch.zeros_like(U_k), torch.zeros_like(v_k)
        m = data.n_samples
        self.A, self.b = A, b
        self._neg_A_over_m, self._neg_b_over_m = -A / m, -b / m

    def _data_weights(self, X: Tensor, targets: Tensor, U: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Per-sample data terms [H, rows] and their derivative ``R`` by ``X U - v``."""
        if self.surrogate == "dc":
            return objective.g_data_weights(X, targets, U, v, self.data.groups, self.beta, self.data.ovr_weight)
        return objective.tight_data_weights(X, targets, U, v, self.data.groups, self.beta,
                                            self.U_k, self.v_k, self.data.ovr_weight, self._one_group_per_atom)

    def _data_terms(self, X: Tensor, targets: Tensor, U: Tensor, v: Tensor) -> Tensor:
        if self.surrogate == "dc":
            return objective.g_terms(X, targets, U, v, self.data.groups, self.beta, self.data.ovr_weight)
        return self._data_weights(X, targets, U, v)[0]

    def _linear_part(self, U: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(regulariser - <A,U> - <b,v>) / m`` per head (float64), and its gradient.

        The value is accumulated in float64: near a DCA solution the sub-problem changes by less
        than float32 can resolve in these sums, and the best-iterate rule compares such values.
        """
        m = self.data.n_samples
        U64, v64 = U.double(), v.double()
        value = objective.regulariser(U64, v64, self.nu, self.mu)
        if self.surrogate == "dc":
            value = value - (self.A.double() * U64).sum((1, 2)) - (self.b.double() * v64).sum(1)
        value = value / m
        return value, *self._linear_gradient(U, v)

    def _linear_gradient(self, U: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Gradient of ``(regulariser - <A,U> - <b,v>) / m`` (fresh tensors, safe to add into)."""
        m = self.data.n_samples
        dU = self._neg_A_over_m + (self.mu / m) * U if self.mu else self._neg_A_over_m.clone()
        return dU, self._neg_b_over_m + (self.nu / m) * v

    def gradient(self, U: Tensor, v: Tensor, index: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Gradients of the scaled sub-problem on the rows ``index``, without its value.

        The minibatch steps need no value, and skipping it (a float64 pass over ``U``) and adding
        the matrix product into the linear term's gradient in place saves about a third of a step.
        """
        X, targets = self.data.rows(index)
        R = self._data_weights(X, targets, U, v)[1]
        rows = self.data.count(index)
        dU, dv = self._linear_gradient(U, v)
        data_dU, data_dv = self.data.summed(objective.pull_back(X, R), R.sum(dim=1))
        dU.add_(data_dU, alpha=1.0 / rows)
        return dU, dv.sub_(data_dv, alpha=1.0 / rows)

    def value_and_grad(self, U: Tensor, v: Tensor, index: Tensor | None = None
                       ) -> tuple[Tensor, Tensor, Tensor]:
        """Value [H] (float64) and gradients of the scaled sub-problem on the rows ``index``."""
        X, targets = self.data.rows(index)
        terms, R = self._data_weights(X, targets, U, v)
        rows = self.data.count(index)
        lin_value, lin_dU, lin_dv = self._linear_part(U, v)
        data_dU, data_dv = self.data.summed(objective.pull_back(X, R), R.sum(dim=1))
        return (self.data.mean_over_rows(terms.double(), rows) + lin_value, data_dU / rows + lin_dU,
                lin_dv - data_dv / rows)

    def value(self, U: Tensor, v: Tensor, index: Tensor | None = None) -> Tensor:
        """Value [H] (float64) of the scaled sub-problem on the rows ``index`` (all if None)."""
        if index is not None:
            X, targets = self.data.rows(index)
            terms = self._data_terms(X, targets, U, v).double()
            return self.data.mean_over_rows(terms, self.data.count(index)) + self._linear_part(U, v)[0]
        total = torch.zeros(U.shape[0], dtype=torch.float64, device=U.device)
        for X, targets in self.data.chunks(U.shape[0], U.shape[2]):
            total += self._data_terms(X, targets, U, v).double().sum(1)
        return self.data.summed(total)[0] / self.data.n_samples + self._linear_part(U, v)[0]
