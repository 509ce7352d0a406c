"""``preprocess="auto"``: the preprocessing chosen from the training rows before a fit.

The paper's unit l2 norm (``"l2"``) suits images and signals, whose contrast carries no class
information; but it throws away each row's norm, which is all that separates some tabular classes
(concentric circles), and lets one large column (a raw CSV column in the thousands) swamp the rest.
``"standardize"`` keeps the norm and puts the columns on one scale. A 5-nearest-neighbour vote
(cheap, nothing to tune) is counted under each, leave-one-out over (a subsample of) the training
rows. "standardize" is chosen only when it is right on clearly more rows than "l2" (by more than
two standard errors of the paired difference and at least one percent of the rows); where the
two are close the paper's "l2" stays. Measurements: docs/generalisation.md.
"""

from __future__ import annotations

import numpy as np
from sklearn.neighbors import NearestNeighbors

from lastedge.runtime.preprocess import Preprocess

from . import distributed
from .distributed import Shard

AUTO = "auto"
NEIGHBOURS = 5
MAX_ROWS = 2000  # subsample: the choice costs about a second on any data size
SEED = 0  # a fixed subsample: the choice is a property of the data, and "auto" draws nothing from
# the fit's random state, so a fit that chose "l2" is the fit of preprocess="l2"


def hits(X: np.ndarray, y: np.ndarray, kind: str) -> np.ndarray:
    """Whether each row's leave-one-out vote of its nearest neighbours, under ``kind``, is its label."""
    Z = Preprocess.fit(kind, X).apply(X)
    k = min(NEIGHBOURS, len(X) - 1)
    _, index = NearestNeighbors(n_neighbors=k + 1, algorithm="brute").fit(Z).kneighbors(Z)
    neighbours = y[index[:, 1:]]  # the first is the row itself (or a duplicate of it)
    votes = np.zeros((len(X), int(y.max()) + 1), dtype=np.int64)
    np.add.at(votes, (np.arange(len(X))[:, None], neighbours), 1)
    return votes.argmax(axis=1) == y


def paired_counts(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``[standardize right and l2 wrong, l2 right and standardize wrong, rows voted on]`` over
    (a subsample of) the rows ``X`` with class indices ``y``."""
    if len(X) < 2:
        return np.zeros(3, dtype=np.int64)
    rows = np.sort(np.random.RandomState(SEED).permutation(len(X))[:MAX_ROWS])
    X, y = X[rows], np.asarray(y)[rows]
    l2, standardized = (hits(X, y, kind) for kind in ("l2", "standardize"))
    return np.array([np.sum(standardized & ~l2), np.sum(l2 & ~standardized), len(X)], dtype=np.int64)


def choose(counts: np.ndarray) -> str:
    """"standardize" when it wins clearly on the ``paired_counts``, else "l2"."""
    better, worse, n_rows = (int(c) for c in counts)
    gain = better - worse
    return "standardize" if gain > 2.0 * np.sqrt(better + worse) and gain >= 0.01 * n_rows else "l2"


def resolve(kind: str, X: np.ndarray, y: np.ndarray, shard: Shard | None = None) -> str:
    """``kind``, or for "auto" the kind chosen on the rows ``X`` with class indices ``y`` (in a
    distributed fit, this rank's ``shard``: the counts of every rank decide, alike on all)."""
    if kind != AUTO:
        return kind
    return choose(distributed.summed(paired_counts(X, y), shard))
