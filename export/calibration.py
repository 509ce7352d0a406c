"""Calibration rows and the activation ranges that int8 files are quantized to.

Both formats quantize the same three tensors (the preprocessed input, the soft-threshold features,
the scores) to ranges measured here on the user's calibration rows. Rows at test time can go past
the calibrated maximum, where int8 values saturate; the largest int8 score errors come from there,
not from rounding. So each range is widened by ``margin`` (a fraction of its width), and
``clipped_fraction`` reports how much of a data set still falls outside.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from lastedge.runtime import Model, check_input
from lastedge.runtime.model import in_row_blocks

from .atom_scaling import graph_parameters
from .quantize import affine_params

MIN_CALIBRATION_ROWS = 20
DEFAULT_MARGIN = 0.1
UNSEEN_SIDE = 0.1  # share of the scores' width given to a sign that no calibration score had


def check_calibration(X: Any, model: Model, *, min_rows: int = MIN_CALIBRATION_ROWS) -> np.ndarray:
    """Validate raw calibration rows: 2-D, real, finite, ``model.n_features`` wide, enough of them,
    not all the same."""
    if X is None:
        raise ValueError(
            "int8 static quantization needs calibration rows (a few hundred typical inputs); "
            "pass calibration=X, or precision='int8-dynamic', which needs none"
        )
    try:
        X = check_input(X, model.n_features)
    except (TypeError, ValueError) as err:
        raise type(err)(f"calibration rows: {err}") from None
    if X.shape[0] < min_rows:
        raise ValueError(f"need at least {min_rows} calibration rows, got {X.shape[0]}")
    if np.array_equal(X.min(axis=0), X.max(axis=0)):  # one row's ranges: wrong on real data
        raise ValueError("the calibration rows are all the same; int8 ranges need varied typical inputs")
    return X.astype(np.float32)


def check_margin(margin: Any) -> float:
    """``margin`` as a float, if it is a number in [0, 10] (a fraction of each range's width)."""
    if isinstance(margin, bool) or not isinstance(margin, Real) or not 0 <= margin <= 10:
        raise ValueError(f"margin must be a number in [0, 10], got {margin!r}")
    return float(margin)


TENSORS = ("input", "features", "scores")  # what ``activations`` returns, in this order


def activations(model: Model, X: np.ndarray, input_is_raw: bool = False) -> dict[str, np.ndarray]:
    """The model's three tensors for raw rows ``X``, in float64 from the float32 preprocessed rows:
    ``input`` (preprocessed; raw rows if ``input_is_raw``, as earlier files quantized them
    when standardisation was folded into their first MatMul), ``features`` (the graph's,
    atoms rescaled by :mod:`.atom_scaling`) and ``scores``."""
    Z = model.preprocess.apply(X).astype(np.float64)
    D, threshold, W = graph_parameters(model)
    features = np.maximum(Z @ D - threshold, 0)
    return {"input": np.asarray(X, np.float64) if input_is_raw else Z, "features": features,
            "scores": features @ W}


@dataclass(frozen=True)
class Ranges:
    """Real ranges ``(lo, hi)`` of the input, the features and the scores; each contains 0."""

    input: tuple[float, float]
    features: tuple[float, float]
    scores: tuple[float, float]
    rows: int
    margin: float

    @classmethod
    def measure(cls, model: Model, X: Any, margin: float = DEFAULT_MARGIN) -> "Ranges":
        """Measure the ranges on raw calibration rows ``X`` and widen each by ``margin``."""
        margin = check_margin(margin)
        X = check_calibration(X, model)

        def extremes(rows: np.ndarray) -> np.ndarray:  # [1, tensor, (min, max)]
            return np.array([[(v.min(), v.max()) for v in activations(model, rows).values()]])

        # in blocks of rows: 60000 MNIST rows through 4000 atoms would hold 2 GB of float64 at once
        per_block = in_row_blocks(extremes, X, model.row_width)
        ranges = {name: _widened(float(low), float(high), margin) for name, low, high
                  in zip(TENSORS, per_block[:, :, 0].min(axis=0), per_block[:, :, 1].max(axis=0))}
        ranges["scores"] = _with_both_signs(*ranges["scores"])
        for name, (lo, hi) in ranges.items():  # both formats' files need a float32 scale for each
            affine_params(lo, hi, f"the calibrated {name} range")
        return cls(**ranges, rows=X.shape[0], margin=margin)

    def describe(self) -> dict[str, Any]:
        """The JSON form stored in file metadata (the input range is always the preprocessed
        rows'; ``input_is_raw`` stays in the contract for readers of older files)."""
        return {"input": list(self.input), "features": list(self.features),
                "scores": list(self.scores), "rows": self.rows, "margin": self.margin,
                "input_is_raw": False}


def _widened(lo: float, hi: float, margin: float) -> tuple[float, float]:
    """``[lo, hi]`` stretched to contain 0 and widened by ``margin`` of its width on each side
    that is not 0 (a range ending at 0, such as the features' after the ReLU, keeps that end)."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi - lo == 0:
        hi = 1.0  # an all-zero tensor still needs a valid scale
    pad = (hi - lo) * margin
    return (lo - pad if lo < 0 else 0.0, hi + pad if hi > 0 else 0.0)


def _with_both_signs(lo: float, hi: float) -> tuple[float, float]:
    """A scores range that holds int8 levels on both sides of 0, the binary decision boundary: a
    sign no calibration score had gets ``UNSEEN_SIDE`` of the width (a range ending at 0 would
    saturate every score of that sign to 0, and a binary file would never predict that class)."""
    side = UNSEEN_SIDE * (hi - lo)
    return (-side if lo == 0 else lo, side if hi == 0 else hi)


def clipped_fraction(model: Model, X: np.ndarray, ranges: dict[str, Any]) -> dict[str, float]:
    """Fraction of each quantized tensor's values outside its calibrated range (``Ranges.describe()``
    form), for raw rows ``X``."""
    def outside(rows: np.ndarray) -> np.ndarray:  # [rows, tensor]: values outside the range
        values = activations(model, rows, ranges["input_is_raw"])
        return np.stack([np.count_nonzero((values[name] < ranges[name][0]) | (values[name] > ranges[name][1]),
                                          axis=1) for name in TENSORS], axis=1)

    counts = in_row_blocks(outside, X, model.row_width).sum(axis=0)
    widths = (model.n_features, model.n_atoms, model.n_outputs)
    return {name: float(count / (len(X) * width)) for name, count, width in zip(TENSORS, counts, widths)}
