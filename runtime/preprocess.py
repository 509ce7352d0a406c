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
# outside are normed again after scaling by their largest value, so l2 stays scale-invariant.
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
            mean = np.asarray(self.mean, dtype=np.float32)
            scale = np.asarray(self.scale, dtype=np.float32)
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
        scale = X.std(axis=0)
        scale[scale < 1e-12] = 1.0  # constant features: leave them centred, unscaled
        return cls(kind, X.mean(axis=0), scale)

    def apply(self, X: np.ndarray) -> np.ndarray:
        """Return the preprocessed float32 copy of a 2-D array ``X``.

        Written for small batches too (a device classifies one row at a time): one copy, then
        in-place arithmetic, about 12 us for a 64-feature row with ``"center-l2"``.
        """
        if self.kind == "none":
            return np.asarray(X, dtype=np.float32)
        if self.kind == "standardize":  # the mean off first, in the input's precision: rows
            Z = (np.asarray(X) - self.mean).astype(np.float32, copy=False)  # near 1e9 keep their digits
            Z /= self.scale
            return Z
        Z = np.array(X, dtype=np.float32)
        if self.kind == "center-l2":  # the mean summed in float64: 64 values near 1e37 overflow float32
            Z -= (np.add.reduce(Z, axis=1, keepdims=True, dtype=np.float64) / Z.shape[1]).astype(np.float32)
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
        unsafe = ~((norms > _SAFE_NORMS[0]) & (norms < _SAFE_NORMS[1]))
        if unsafe.any():
            norms[unsafe] = _rescaled_norms(Z[unsafe])
        np.maximum(norms, np.finfo(np.float32).tiny, out=norms)  # a zero row stays zero
        Z /= norms[:, None]
        return Z

    def check_width(self, n_features: int) -> None:
        """Raise if the recorded statistics do not match ``n_features`` inputs."""
        if self.mean is not None and self.mean.shape[0] != n_features:
            raise ValueError(
                f"preprocess statistics have {self.mean.shape[0]} features, model has {n_features}"
            )

    def describe(self) -> dict[str, Any]:
        """The JSON-serialisable part (kind only; statistics travel as arrays)."""
        return {"kind": self.kind}


def _rescaled_norms(Z: np.ndarray) -> np.ndarray:
    """l2 norms of the rows of ``Z`` computed as ``peak * ||row / peak||`` (0 for a zero row)."""
    peaks = np.abs(Z).max(axis=1)
    scaled = Z / np.where(peaks > 0, peaks, 1)[:, None]
    return peaks * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
