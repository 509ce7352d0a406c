"""Input preprocessing recorded in a model and applied identically by every backend.

Kinds:
- ``"none"``: raw features.
- ``"l2"``: each sample scaled to unit l2 norm (the paper's texture setting).
- ``"center-l2"``: each sample centred to zero mean, then unit l2 norm (the paper's digits setting).
- ``"standardize"``: per-feature ``(x - mean) / scale`` with statistics from the training set.

A sample whose norm is zero stays zero (no division by zero, no NaN).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

KINDS = ("none", "l2", "center-l2", "standardize")

# Norms whose float32 sum of squares neither overflowed nor lost precision to underflow; rows
# outside (and zero rows) are normalised again in float64, so l2 stays scale-invariant.
_SAFE_NORMS = (1e-18, 1e18)


@dataclass(frozen=True)
class Preprocess:
    """A preprocessing step and its parameters (``mean``/``scale`` only for ``"standardize"``)."""

    kind: str = "none"
    mean: np.ndarray | None = field(default=None, repr=False)
    scale: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"preprocess must be one of {KINDS}, got {self.kind!r}")
        has_stats = self.mean is not None or self.scale is not None
        if self.kind == "standardize":
            if self.mean is None or self.scale is None:
                raise ValueError("preprocess 'standardize' needs both mean and scale")
            mean, scale = _real_float32(self.mean, "mean"), _real_float32(self.scale, "scale")
            if mean.ndim != 1 or mean.shape != scale.shape:
                raise ValueError(
                    f"standardize mean and scale must be 1-D of equal length, "
                    f"got shapes {mean.shape} and {scale.shape}"
                )
            if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
                raise ValueError("standardize mean must be finite and scale finite and > 0")
            object.__setattr__(self, "mean", mean)
            object.__setattr__(self, "scale", scale)
        elif has_stats:
            raise ValueError(f"preprocess {self.kind!r} takes no mean/scale")

    @classmethod
    def fit(cls, kind: str, X: np.ndarray) -> "Preprocess":
        """Build the step for ``kind``, learning per-feature statistics from ``X`` when needed."""
        if kind != "standardize":
            return cls(kind)
        X = np.asarray(X, dtype=np.float64)
        return cls.standardizing(X.mean(axis=0), X.std(axis=0), len(X))

    @classmethod
    def standardizing(cls, mean: np.ndarray, scale: np.ndarray, n_rows: int) -> "Preprocess":
        """``"standardize"`` with the per-feature mean and standard deviation (float64) of
        ``n_rows`` rows, e.g. summed over the ranks of a distributed fit; features of no spread
        stay unscaled."""
        scale = np.array(scale, dtype=np.float64)
        scale[_unscalable(mean, scale, n_rows)] = 1.0  # leave them centred, unscaled
        return cls("standardize", mean, scale)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Return the preprocessed float32 copy of a 2-D array ``X``.

        Written for small batches too (a device classifies one row at a time): one copy, then
        in-place arithmetic.
        """
        if self.kind == "none":
            return np.asarray(X, dtype=np.float32)
        X = np.asarray(X)
        if self.kind == "standardize":  # the mean off first, in the input's precision (written to
            Z = np.empty(X.shape, dtype=np.float32)  # float32 as it goes): rows near 1e8 keep their digits
            np.subtract(X, self.mean, out=Z, casting="same_kind")
            Z /= self.scale
            return Z
        Z = np.array(X, dtype=np.float32)
        if self.kind == "center-l2":  # a sum or difference beyond float32 leaves inf or NaN, whose
            with np.errstate(over="ignore", invalid="ignore"):  # row is redone in float64 below
                Z -= np.add.reduce(Z, axis=1, keepdims=True) / np.float32(Z.shape[1])
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
        if len(norms) and not (_SAFE_NORMS[0] < norms.min() and norms.max() < _SAFE_NORMS[1]):
            unsafe = ~((norms > _SAFE_NORMS[0]) & (norms < _SAFE_NORMS[1]))  # NaN: centring overflowed
            Z[unsafe] = self._normalised_in_float64(X[unsafe])
            norms[unsafe] = 1.0
        Z /= norms[:, None]
        return Z

    def _normalised_in_float64(self, X: np.ndarray) -> np.ndarray:
        """The l2 (or center-l2) form of rows whose float32 arithmetic overflowed or underflowed
        (values near 1e19 or 1e-19 and beyond) or that are zero: float64 holds the squares of any
        float32 value, so this is exact to float32 rounding; a zero row stays zero."""
        Z = np.asarray(X, dtype=np.float64)
        if self.kind == "center-l2":
            Z = Z - Z.mean(axis=1, keepdims=True)
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
        return (Z / np.where(norms > 0, norms, 1.0)[:, None]).astype(np.float32)

    def check_width(self, n_features: int) -> None:
        """Raise if the recorded statistics do not match ``n_features`` inputs."""
        if self.mean is not None and self.mean.shape[0] != n_features:
            raise ValueError(
                f"preprocess statistics have {self.mean.shape[0]} features, model has {n_features}"
            )

    def describe(self) -> dict[str, Any]:
        """The JSON-serialisable part (kind only; statistics travel as arrays)."""
        return {"kind": self.kind}


def _unscalable(mean: np.ndarray, scale: np.ndarray, n_rows: int) -> np.ndarray:
    """Which features ``"standardize"`` leaves unscaled: constant ones, whose computed spread is
    zero or no more than the rounding of a float64 mean of ``n_rows`` equal values (about
    ``n_rows * eps / 2`` of the mean: 1.6e-8 for 1000 rows of 1e6 + 0.1, which dividing by would
    turn into -2e7), and spreads below float32's smallest normal number, too small for the model's
    float32 scale. Relative to the mean, so a feature of tiny but real spread (1e-20) is scaled."""
    rounding = n_rows * np.finfo(np.float64).eps * np.abs(mean)
    return (scale <= rounding) | (scale < np.finfo(np.float32).tiny)


def _real_float32(values: Any, name: str) -> np.ndarray:
    """``values`` (an array, or a list read from a file's metadata) as float32, or a ``ValueError``
    naming ``name`` when they are no real numbers; values beyond float32 become inf (refused after)."""
    try:
        array = np.asarray(values)
    except ValueError:  # ragged nested lists
        raise ValueError(f"standardize {name} must be an array of real numbers") from None
    if array.dtype.kind not in "biuf":  # text, complex, objects (a dict, an integer beyond 64 bits)
        raise ValueError(f"standardize {name} must be an array of real numbers, got dtype {array.dtype}")
    with np.errstate(over="ignore"):
        return array.astype(np.float32)
