"""What a dynamic int8 ONNX file computes, evaluated in numpy from the file's own constants.

onnxruntime's dynamic quantization (``onnx_int8.quantize_dynamic``) stores the dictionary and
the output weights as uint8 (or symmetric int8: ``signed_weights``), one scale and zero point
each, and quantizes each MatMul's input as it runs (``DynamicQuantizeLinear``: the batch's
range, 0 included, in 255 steps). Its scores
are those of that integer graph, so parity compares them with ``DynamicGraph.scores``, the same
float32 operations on the same blocks of rows (bit-identical to onnxruntime's fused kernels on
x86 here), and ``DynamicGraph.problems`` checks that the file's 8-bit constants are the model's
rounded to the finest grid that spans them. Together they prove a file is the dynamic int8
quantization of its model on any rows, synthetic ones included; how often its predictions
agree with the float model's is then a property of the quantization, not of the export.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from lastedge.runtime import Model

from .atom_scaling import graph_parameters

LEVELS = 255  # uint8 steps
SYMMETRIC_LEVELS = 127  # int8 steps on each side of 0
# An implementation may round a value that falls on a step's edge the other way; one feature
# level of the largest weight bounds what that changes of a score (0.03 for a digits model,
# whose int8 scores stray from the float ones by up to 0.1).
FEATURE_STEPS_ALLOWED = 1
RTOL = 1e-4  # float32 rounding of the scales' products, relative to the terms a score sums
_F32 = np.float32


@dataclass(frozen=True)
class QuantizedConstant:
    """An 8-bit constant as stored: ``scale * (quantized - zero_point)``. ``symmetric``: int8
    about zero point 0 on the grid ``max|values| / 127`` (TFLite's hybrid weights); else uint8
    over the range of the values and 0 in ``LEVELS`` steps (onnxruntime's dynamic weights)."""

    quantized: np.ndarray  # int32 copies of the stored values
    scale: np.float32
    zero_point: int
    symmetric: bool = False

    @property
    def levels(self) -> np.ndarray:
        return self.quantized - self.zero_point

    def problems(self, name: str, values: np.ndarray) -> list[str]:
        """How these constants fail to be ``values`` (float32, as the float graph held them)
        rounded to the finest grid that spans them (and 0)."""
        if self.quantized.shape != values.shape:
            return [f"its {name} has shape {self.quantized.shape}, the model's {values.shape}"]
        kind = "int8" if self.symmetric else "uint8"
        if self.symmetric:
            if self.zero_point != 0:
                return [f"its {name} zero point is {self.zero_point}, not 0 (symmetric int8)"]
            finest = float(np.abs(values).max(initial=0.0)) / SYMMETRIC_LEVELS
        else:
            finest = float(max(values.max(initial=0.0), 0.0) - min(values.min(initial=0.0), 0.0)) / LEVELS
        scale = float(self.scale)
        if np.float32(finest) == 0 and scale > 0 and not np.any(self.levels):  # no step to find
            return []
        if not 0 < scale <= finest * (1 + 1e-5) + np.finfo(np.float32).tiny:
            return [f"its {name} step {scale:.6g} is not the finest {kind} step of the model's "
                    f"{name} ({finest:.6g})"]
        off = np.abs(scale * self.levels - values.astype(np.float64)).max(initial=0.0)
        if off > scale * (0.5 + 1e-3):
            return [f"its {name} differ from the model's by {off:.3g}, more than half a step ({scale / 2:.3g})"]
        return []


def _read_constant(constants: dict[str, np.ndarray], name: str) -> QuantizedConstant:
    """The 8-bit constant ``name``: symmetric when stored as int8 (``signed_weights``)."""
    quantized = constants[f"{name}_quantized"]
    return QuantizedConstant(quantized.astype(np.int32), _F32(constants[f"{name}_scale"]),
                             int(constants[f"{name}_zero_point"]), symmetric=quantized.dtype == np.int8)


def _quantize_input(X: np.ndarray) -> tuple[np.ndarray, np.float32]:
    """``DynamicQuantizeLinear`` of float32 ``X``: its levels about the zero point, and its step."""
    low, high = min(_F32(0), X.min()), max(_F32(0), X.max())
    scale = _F32((high - low) / _F32(LEVELS))
    if scale == 0:  # all zeros
        return np.zeros(X.shape, np.int32), scale
    zero_point = np.clip(np.rint(_F32(0) - low / scale), 0, LEVELS)
    return (np.clip(np.rint(X / scale) + zero_point, 0, LEVELS) - zero_point).astype(np.int32), scale


@dataclass(frozen=True)
class DynamicGraph:
    """The integer graph of a dynamic int8 file: 8-bit dictionary, float threshold, 8-bit weights."""

    dictionary: QuantizedConstant
    threshold: np.ndarray
    weights: QuantizedConstant
    TOLERANCE = f"{FEATURE_STEPS_ALLOWED} feature step(s) of its largest weight"

    @classmethod
    def read(cls, path: str | os.PathLike) -> DynamicGraph:
        """The constants of the file at ``path``, or a ``ValueError`` if it is not the graph that
        ``to_onnx(..., precision="int8-dynamic")`` writes."""
        import onnx
        from onnx import numpy_helper

        constants = {t.name: numpy_helper.to_array(t) for t in onnx.load(os.fspath(path)).graph.initializer}
        try:
            return cls(_read_constant(constants, "dictionary"), constants["threshold"].astype(np.float32),
                       _read_constant(constants, "weights"))
        except KeyError as missing:
            raise ValueError(f"{path} is no dynamic int8 file of lastedge's: it has no {missing} constant") from None

    def problems(self, model: Model) -> list[str]:
        """How the file's constants fail to be the model's (empty when they are)."""
        D, threshold, W = (p.astype(np.float32) for p in graph_parameters(model))
        found = self.dictionary.problems("dictionary", D) + self.weights.problems("weights", W)
        if self.threshold.shape != threshold.shape or not np.array_equal(self.threshold, threshold):
            found.append("its thresholds are not the model's")
        return found

    def scores(self, Z: np.ndarray) -> np.ndarray:
        """Scores and their tolerances, ``[n, 2 * outputs]``, of one batch of preprocessed rows
        ``Z`` (float32) as the file computes them: each MatMul's input quantized over the batch."""
        x, x_scale = _quantize_input(Z)
        projection = (x @ self.dictionary.levels).astype(_F32) * _F32(x_scale * self.dictionary.scale)
        features = np.maximum(projection - self.threshold, _F32(0))
        h, h_scale = _quantize_input(features)
        weights = self.weights.levels
        scores = (h @ weights).astype(_F32) * _F32(h_scale * self.weights.scale)
        feature_step = float(h_scale * self.weights.scale) * np.abs(weights).max(axis=0)
        magnitude = np.abs(h).astype(np.float64) @ np.abs(weights) * float(h_scale * self.weights.scale)
        tolerance = RTOL * (1 + magnitude) + FEATURE_STEPS_ALLOWED * feature_step
        return np.hstack([scores, tolerance])
