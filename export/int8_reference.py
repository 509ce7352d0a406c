"""The integer graph of a full-int8 (or 16x8) export, evaluated in numpy: the reference the C
model must match.

The constants are the full-int8 TFLite file's own (``tflite._layers``: int8 dictionary and
weights, int32 biases, the activations' scales and zero points), so the C model and the int8
TFLite file are the same numbers; for 16x8 (``int16x8.tensors``) the activations are int16. The arithmetic follows TFLite's reference integer
FULLY_CONNECTED kernel (and CMSIS-NN's): int32 accumulation of ``(q_x - z_x) * q_w`` plus the
bias, then the hidden layer requantised to int8 by ``MultiplyByQuantizedMultiplier`` (an int32
multiplier with 31 fractional bits and a power-of-two shift, rounded once, as LiteRT's kernels
do; LiteRT's 16x8 kernels round the same way) and clamped at the ReLU's zero. The scores stay
int32 (``score_scale`` each); ``quantized_scores`` requantises them as the file's output layer does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lastedge.runtime import Model

from .calibration import DEFAULT_MARGIN, Ranges
from .metadata import check_model
from . import int16x8
from .options import ExportOptions
from .tflite import _layers  # the int8 TFLite file's tensors: one source for both formats

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's ``QuantizeMultiplier``: ``real ~= multiplier * 2**(shift - 31)`` with an int32
    ``multiplier`` in [2**30, 2**31) (or 0), and ``shift`` at most 30."""
    if not real >= 0 or not math.isfinite(real):
        raise ValueError(f"a requantisation multiplier must be finite and >= 0, got {real}")
    if real == 0:
        return 0, 0
    fraction, shift = math.frexp(real)
    fixed = math.floor(fraction * (1 << 31) + 0.5)  # std::round: half away from zero (fraction > 0)
    if fixed == 1 << 31:
        fixed, shift = fixed // 2, shift + 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return INT32_MAX, 30
    return fixed, shift


def requantize(acc: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """``MultiplyByQuantizedMultiplier`` with one rounding (TFLite's ``TFLITE_SINGLE_ROUNDING``
    kernels, LiteRT's, and CMSIS-NN's ``CMSIS_NN_USE_SINGLE_ROUNDING``): ``acc * multiplier /
    2**(31 - shift)`` rounded half up, in int64 (the callers clamp it to int8)."""
    total = 31 - shift  # >= 1: quantize_multiplier keeps shift <= 30
    return (np.asarray(acc, np.int64) * np.int64(multiplier) + (np.int64(1) << (total - 1))) >> total


@dataclass(frozen=True)
class IntegerGraph:
    """The integer constants of a full-int8 or 16x8 export and the arithmetic that uses them.

    Shapes: ``dictionary`` int8 [atoms, features], ``weights`` int8 [outputs, atoms] (as stored
    in the TFLite file), biases int32 (int64 for 16x8); activations (input, features, output
    scores) int8 or int16, ``activation_dtype``. Weight scales are per tensor (what microcontroller
    runtimes take; atoms get their own scale from ``atom_scaling``'s unit columns), so every
    int32 score has one scale and the largest one is the prediction.
    """

    input_scale: float
    input_zero_point: int
    dictionary: np.ndarray
    hidden_bias: np.ndarray
    hidden_multiplier: int
    hidden_shift: int
    feature_zero_point: int
    weights: np.ndarray
    output_bias: np.ndarray
    score_scale: float
    output_multiplier: int
    output_shift: int
    output_scale: float
    output_zero_point: int
    ranges: Ranges
    activation_dtype: np.dtype

    @classmethod
    def build(cls, model: Any, calibration: Any, *, margin: float = DEFAULT_MARGIN,
              precision: str = "int8") -> "IntegerGraph":
        """The graph ``to_tflite(model, ..., precision="int8", calibration=..., margin=...)`` writes
        (``precision="int16x8"``: the graph of ``int16x8.tensors``)."""
        model = check_model(model)
        return cls.from_ranges(model, Ranges.measure(model, calibration, margin), precision)

    @classmethod
    def from_ranges(cls, model: Model, ranges: Ranges, precision: str = "int8") -> "IntegerGraph":
        """The graph for already measured activation ranges."""
        if precision not in ("int8", "int16x8"):
            raise ValueError(f"precision must be int8 or int16x8, got {precision!r}")
        layers = (_layers(model, ExportOptions("tflite", "int8"), ranges) if precision == "int8"
                  else int16x8.tensors(model, ranges))
        x, dictionary, bias1, features, weights, bias2, scores = layers

        def multipliers(inputs: Any, layer: Any, output: Any) -> tuple[int, int]:
            # as TFLite's GetQuantizedConvolutionMultipler: the float32 scales' product in double
            return quantize_multiplier(float(inputs.scale[0]) * float(layer.scale[0])
                                       / float(output.scale[0]))

        m1, s1 = multipliers(x, dictionary, features)
        m2, s2 = multipliers(features, weights, scores)
        return cls(
            input_scale=float(x.scale[0]), input_zero_point=int(x.zero_point[0]),
            dictionary=dictionary.data, hidden_bias=bias1.data, hidden_multiplier=m1,
            hidden_shift=s1, feature_zero_point=int(features.zero_point[0]),
            weights=weights.data, output_bias=bias2.data,
            score_scale=float(features.scale[0]) * float(weights.scale[0]),
            output_multiplier=m2, output_shift=s2, output_scale=float(scores.scale[0]),
            output_zero_point=int(scores.zero_point[0]), ranges=ranges,
            activation_dtype=np.dtype(x.dtype))

    @property
    def n_features(self) -> int:
        return self.dictionary.shape[1]

    @property
    def limits(self) -> tuple[int, int]:
        """The activations' integer range: [-128, 127] or [-32768, 32767]."""
        info = np.iinfo(self.activation_dtype)
        return int(info.min), int(info.max)

    def quantize(self, Z: np.ndarray) -> np.ndarray:
        """Float32 values already divided by the input scale, to the input's integers (round half
        to even, as ``numpy.round`` and the C's ``quantize`` do; saturating)."""
        return np.clip(np.round(Z) + self.input_zero_point, *self.limits).astype(self.activation_dtype)

    def features(self, Q: np.ndarray) -> np.ndarray:
        """The soft-threshold features [rows, atoms] (int8 or int16 levels) of input rows ``Q``."""
        Q = np.asarray(Q, np.int64) - self.input_zero_point
        acc = Q @ self.dictionary.T.astype(np.int64) + self.hidden_bias
        f = requantize(acc, self.hidden_multiplier, self.hidden_shift) + self.feature_zero_point
        return np.clip(f, self.feature_zero_point, self.limits[1])  # the ReLU: real 0 is the zero point

    def scores(self, Q: np.ndarray) -> np.ndarray:
        """The int32 scores [rows, outputs] of int8 input rows ``Q`` (real = ``score_scale`` times)."""
        f = self.features(Q) - self.feature_zero_point
        acc = f @ self.weights.T.astype(np.int64) + self.output_bias
        if np.any((acc < INT32_MIN) | (acc > INT32_MAX)):
            raise ValueError("an int32 score overflowed: the weights' int8 scale is too fine")
        return acc.astype(np.int32)

    def quantized_scores(self, Q: np.ndarray) -> np.ndarray:
        """The scores of the TFLite file's int8 (int16) output tensor for input rows ``Q``."""
        q = requantize(self.scores(Q), self.output_multiplier, self.output_shift)
        return np.clip(q + self.output_zero_point, *self.limits).astype(self.activation_dtype)
