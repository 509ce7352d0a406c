"""Rows built from the model's own atoms, for checks that must reach its features: the parity
check's threshold probes, and the check rows of an export given no data.

Random rows rarely reach an atom's threshold (1 % of standard normal rows fire any atom of a
center-l2 digits model, none of a model without preprocessing), so a row is built for an atom
``d`` and a level: in preprocessed space, ``z = level * d / |d|^2 + u`` with ``u`` random and
orthogonal to ``d``, so that ``z @ d == level`` to rounding. For the normalising preprocessings z
is a unit row instead (zero-mean for center-l2), which is then its own preprocessed form; a level
that no unit row reaches (``|level| > |d|``) gives no row, and so does a row beyond float32 (the
level of an atom whose column is nearly zero) or whose float32 scores overflow: the Python model
refuses such rows, so nothing could be compared on them.
"""

from __future__ import annotations

import numpy as np

from lastedge.runtime import Model
from lastedge.runtime.model import FLOAT32_MAX


def _centred(model: Model, d: np.ndarray) -> np.ndarray:
    """The part of atom ``d`` (or of each column of a dictionary) that a preprocessed row reads:
    a center-l2 row is zero-mean."""
    return d - d.mean(axis=0) if model.preprocess.kind == "center-l2" else d


def _orthogonal_unit(model: Model, direction: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """A random unit vector that a preprocessed row can hold (``_centred``), orthogonal to
    ``direction``; None in one dimension, where there is none."""
    u = _centred(model, rng.standard_normal(direction.shape[0]))
    u -= (u @ direction) / (direction @ direction) * direction
    norm = np.linalg.norm(u)
    return None if norm < 1e-6 else u / norm


def _preprocessed_row(model: Model, d: np.ndarray, level: float,
                      rng: np.random.Generator) -> np.ndarray | None:
    """A preprocessed row ``z`` with ``z @ d == level`` plus a random part orthogonal to ``d``;
    None when no valid row has that level."""
    normalised = model.preprocess.kind in ("l2", "center-l2")
    direction = _centred(model, d)
    norm = np.linalg.norm(direction)
    if norm == 0:
        return None
    u = _orthogonal_unit(model, direction, rng)
    if not normalised:
        side = 0.0 if u is None else (abs(level) or 1.0) / norm * u
        return level * direction / norm**2 + side
    a = level / norm
    if u is None or not abs(a) <= 1:
        return None
    return a * direction / norm + np.sqrt(1 - a * a) * u


def _rows_at_levels(model: Model, atoms: np.ndarray, levels: np.ndarray, seed: int = 0) -> np.ndarray:
    """Raw rows, one per ``(atom, level)`` pair that can be reached, whose preprocessed form ``z``
    has ``z @ d_atom == level``."""
    rng = np.random.default_rng(seed)
    rows = [_preprocessed_row(model, model.dictionary[:, j].astype(np.float64), float(level), rng)
            for j, level in zip(atoms, levels)]
    return _raw(model, np.asarray([z for z in rows if z is not None]).reshape(-1, model.n_features))


def _raw(model: Model, Z: np.ndarray) -> np.ndarray:
    """Raw float32 rows whose preprocessed form is ``Z`` (a unit row is its own l2 form), those
    that ``scorable`` keeps."""
    if model.preprocess.kind == "standardize":
        Z = Z * model.preprocess.scale + model.preprocess.mean
    return scorable(model, Z)


def scorable(model: Model, rows: np.ndarray) -> np.ndarray:
    """The ``rows`` that float32 holds and whose float32 scores stay finite, as float32: the only
    rows the Python model scores, and so the only ones an exported file can be compared on."""
    rows = np.asarray(rows, dtype=np.float64)
    rows = rows[np.abs(rows).max(axis=1) <= FLOAT32_MAX].astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return rows[np.isfinite(model.features(rows) @ model.weights).all(axis=1)]


def threshold_rows(model: Model, count: int = 16, seed: int = 0) -> np.ndarray:
    """Raw rows whose preprocessed form lands exactly (to rounding) on an atom's threshold."""
    atoms = np.random.default_rng(seed).permutation(model.n_atoms)[:count]
    return _rows_at_levels(model, atoms, np.full(len(atoms), float(model.alpha)), seed)


def _spreads(model: Model) -> np.ndarray:
    """How far each atom's synthetic levels stray from its threshold alpha: for unit rows, as far
    as they reach (``|d| - |alpha|``; negative for an atom no unit row fires, whose rows then stay
    below its threshold), else ``|alpha| / 2`` (``|d|`` when alpha is 0)."""
    norms = np.linalg.norm(_centred(model, model.dictionary.astype(np.float64)), axis=0)
    if model.preprocess.kind in ("l2", "center-l2"):
        return norms - abs(model.alpha)
    return np.full(model.n_atoms, abs(model.alpha) / 2) if model.alpha else norms


def synthetic_rows(model: Model, count: int, seed: int = 0) -> np.ndarray:
    """Deterministic check rows for an export given no data: each at a level spread evenly around
    one atom's threshold (so about half fire it) with a random part that reaches other atoms;
    standard normal rows when no atom can be reached."""
    rng = np.random.default_rng(seed)
    atoms = np.resize(rng.permutation(model.n_atoms), count)
    levels = model.alpha + rng.uniform(-1, 1, count) * _spreads(model)[atoms]
    rows = _rows_at_levels(model, atoms, levels, seed)
    if len(rows):
        return rows
    return _raw(model, rng.standard_normal((count, model.n_features)))
