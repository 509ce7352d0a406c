"""Where a ``LASTClassifier`` fit ended, for the next fit with ``warm_start=True``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lastedge.runtime import Preprocess

from .base import scaled_rows
from .solvers import Solver


@dataclass(frozen=True)
class WarmStart:
    """A fit's end: its iterate ``(U, v)`` on its rows divided by ``row_scale``, the atoms' groups
    (which the next fits keep), the fitted preprocessing, and its solver, whose minibatch Adam carries its moments and step
    when the next fit's schedule is the same (step trials re-run from a nearly optimal point shrink
    the step and stall DCA, see ``solvers._AdamMemory``)."""

    classes: np.ndarray
    preprocess: Preprocess
    row_scale: float
    groups: np.ndarray
    U: np.ndarray
    v: np.ndarray
    solver: Solver
    schedule: tuple
    seed: int  # of the DCA run that the fits continue
    iterations_done: int  # by every fit this one continues, its own included
    mu_factor: float  # mu="auto"'s weight decay per unit of the rows' mean squared norm, kept

    def prepare(self, estimator: Any, X: np.ndarray, y_index: np.ndarray) -> tuple:
        """``SoftThresholdBase._prepare``'s tuple for ``estimator``, starting from this fit's end
        (its atom layout checked by :func:`warm_start_from`)."""
        targets = estimator._layout(y_index)[0]
        Z = scaled_rows(estimator._preprocessed(X, fitted=self.preprocess), self.row_scale)
        return Z, self.row_scale, targets, self.groups, self.U, self.v


def warm_start_from(estimator: Any, X: np.ndarray, y_index: np.ndarray) -> WarmStart | None:
    """The previous fit's end, checked against this fit's classes, features and atom layout
    (None before any fit: ``warm_start`` then starts as a fresh fit does)."""
    warm = getattr(estimator, "_warm_state", None)
    if warm is None:
        return None
    if not np.array_equal(warm.classes, estimator.classes_):
        raise ValueError(f"warm_start continues a fit of the classes {warm.classes.tolist()}, got "
                         f"{estimator.classes_.tolist()}: set warm_start=False to start afresh")
    if X.shape[1] != warm.U.shape[1]:
        raise ValueError(f"warm_start continues a fit of {warm.U.shape[1]} features, got {X.shape[1]}")
    groups = estimator._layout(y_index)[1]
    if groups.shape != warm.groups.shape:
        raise ValueError(f"warm_start continues a fit of {warm.groups.shape[0]} head(s) of "
                         f"{warm.groups.shape[1]} atoms, the parameters now give {groups.shape[0]} of "
                         f"{groups.shape[1]} (n_atoms or multiclass changed): set warm_start=False to "
                         "start afresh")
    return warm
