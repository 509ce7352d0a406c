"""What a dynamic-range int8 TFLite file computes, evaluated in numpy from the file's own constants.

``to_tflite(..., precision="int8-dynamic")`` writes two hybrid FULLY_CONNECTED kernels: float32
input, bias and output, symmetric int8 weights with one scale per tensor (tflite-runtime 2.14
refuses the per-channel hybrid op, version 12, and computed all-zero scores when per-channel
weights were written at version 9). As it runs, each kernel quantizes every input row on its
own: to int8 over the row's range, 0 included, with a zero point (``asymmetric_quantize_inputs``);
it sums int32 products with the weights and scales the sums back to float32.
``HybridGraph.scores`` evaluates that as TFLite's reference kernel does (tflite-runtime 2.14 on
x86 gave these scores bit for bit, on a digits model and 72 random ones).

Other kernels quantize the same rows with other float operations: LiteRT's XNNPACK delegate,
which runs these ops by default, computes a row's step in float32 instead of float64 and rounds
halves to even. So an element whose unrounded level lies within ``LEVEL_SLACK`` of a rounding
edge may take either neighbouring level (a digits row holds one value many times: all of its
copies flip together), and the features such a flip moves may round either way in turn.
``scores`` carries that through both layers as a bound per element and returns it with the
scores; outside those elements, kernels agree up to float32 rounding (``FLOAT_RTOL`` of the
magnitudes each layer sums). ``HybridGraph.problems`` checks that the file's int8 constants are
the model's rounded to the finest symmetric grid and its thresholds the model's own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lastedge.runtime import Model

from .atom_scaling import graph_parameters
from .dynamic_graph import QuantizedConstant
from .quantize import QMAX, QMIN

# How far (in levels) two kernels' unrounded levels of one element may lie apart: float32 and
# float64 steps, x * (1 / step) against x / step, and adding the zero point in float32 come to a
# few 1e-5 at level 128; an element nearer than this to a rounding edge may round either way.
LEVEL_SLACK = 1e-4
STEP_RTOL = 1e-6  # a row's step in float32 against float64: a few units of float32's last place
FLOAT_RTOL = 1e-5  # the kernels' float32 scaling and bias, relative to the magnitudes they sum
_F32 = np.float32
_STEPS = QMAX - QMIN  # 255 int8 steps over a row's range


def _round_half_away(u: np.ndarray) -> np.ndarray:
    """C's ``round``: to the nearest integer, halves away from zero."""
    whole = np.trunc(u)
    return np.where(np.abs(u - whole) == 0.5, whole + np.sign(u), np.rint(u))


@dataclass(frozen=True)
class _Rows:
    """One hybrid kernel's quantization of a batch of float32 rows (TFLite's
    ``AsymmetricQuantizeFloats``, row by row)."""

    levels: np.ndarray  # float64 [rows, n], integers: quantized value minus the row's zero point
    unrounded: np.ndarray  # float64 [rows, n]: the level before rounding and clamping
    step: np.ndarray  # float32 [rows]
    zero_point: np.ndarray  # float64 [rows], before it is rounded

    @classmethod
    def quantize(cls, X: np.ndarray) -> _Rows:
        low = X.min(axis=1, initial=0).astype(np.float64)  # the row's range, 0 included
        high = X.max(axis=1, initial=0).astype(np.float64)
        flat = low == high
        scale = np.where(flat, 1.0, (high - low) / _STEPS)
        from_min, from_max = QMIN - low / scale, QMAX - high / scale
        zero_point = np.where(abs(QMIN) + np.abs(low / scale) < QMAX + np.abs(high / scale),
                              from_min, from_max)
        nudged = np.clip(_round_half_away(zero_point), QMIN, QMAX)
        step = scale.astype(_F32)
        inverse = _F32(1) / step
        unrounded = (nudged.astype(_F32)[:, None] + X * inverse[:, None]).astype(np.float64)
        q = np.clip(_round_half_away(unrounded), QMIN, QMAX)
        levels = np.where(flat[:, None], 0.0, q - nudged[:, None])
        return cls(levels, unrounded - nudged[:, None], step, zero_point)

    def deviation(self, slack: np.ndarray) -> np.ndarray:
        """Per element, how far another valid kernel's dequantized value may lie from this one's,
        when its inputs may lie ``slack`` (float64, per element) from these rows."""
        step = self.step.astype(np.float64)[:, None]
        # the row's range moves with its extremes: its step by up to their slack / 255
        step_slack = step * STEP_RTOL + slack.max(axis=1, initial=0.0)[:, None] / _STEPS
        smallest_step = np.maximum(step - step_slack, np.finfo(np.float32).tiny)
        reach = LEVEL_SLACK + (slack + (np.abs(self.levels) + 1) * step_slack) / smallest_step
        edge = np.abs(self.unrounded - np.floor(self.unrounded) - 0.5)
        ambiguous = edge <= reach
        # a zero point near a half may round the other way: the clamped ends then move a level
        half_zero = np.abs(self.zero_point - np.floor(self.zero_point) - 0.5) <= LEVEL_SLACK
        ends = (self.unrounded + self.zero_point[:, None] < QMIN + 1) | (
            self.unrounded + self.zero_point[:, None] > QMAX - 1)
        ambiguous |= half_zero[:, None] & ends
        moved = np.where(ambiguous, np.floor(1 + reach), 0.0)  # levels another kernel may differ by
        return step * moved + step_slack * (np.abs(self.levels) + moved)


@dataclass(frozen=True)
class HybridGraph:
    """The hybrid graph of a dynamic int8 TFLite file: int8 dictionary, float thresholds, int8 weights."""

    dictionary: QuantizedConstant  # [atoms, features], D^T
    negative_threshold: np.ndarray
    weights: QuantizedConstant  # [outputs, atoms], W^T
    output_bias: np.ndarray
    asymmetric_inputs: tuple[bool, ...]  # each FULLY_CONNECTED op's option
    TOLERANCE = "the rounding its kernels may do either way"

    @classmethod
    def read(cls, path: str | os.PathLike) -> HybridGraph:
        """The constants of the file at ``path``, or a ``ValueError`` if it is not the graph that
        ``to_tflite(..., precision="int8-dynamic")`` writes."""
        from lastedge.runtime.tflite_check import check_tflite_structure

        from .schema import check_schema

        data = Path(path).read_bytes()
        check_tflite_structure(data)
        tfl = check_schema()
        model = tfl.Model.GetRootAs(data, 0)
        graph = model.Subgraphs(0)
        tensors = {(graph.Tensors(i).Name() or b"").decode(): graph.Tensors(i)
                   for i in range(graph.TensorsLength())}

        def values(name: str, dtype: str) -> tuple[np.ndarray, Any]:
            if name not in tensors:
                raise ValueError(f"{path} is no dynamic int8 file of lastedge's: it has no {name!r} tensor")
            tensor = tensors[name]
            raw = model.Buffers(tensor.Buffer()).DataAsNumpy()
            shape = tuple(int(d) for d in tensor.ShapeAsNumpy())
            if isinstance(raw, int) or getattr(tfl.TensorType, dtype.upper()) != tensor.Type():
                raise ValueError(f"{path} is no dynamic int8 file of lastedge's: its {name!r} "
                                 f"tensor is no {dtype} constant")
            little_endian = np.dtype(dtype).newbyteorder("<")
            return np.frombuffer(raw.tobytes(), dtype=little_endian).reshape(shape), tensor

        def quantized(name: str) -> QuantizedConstant:
            q, tensor = values(name, "int8")
            params = tensor.Quantization()
            if params is None or params.ScaleLength() != 1:
                raise ValueError(f"{path}: its {name!r} tensor has no single (per-tensor) scale")
            zero_point = int(params.ZeroPointAsNumpy()[0]) if params.ZeroPointLength() else 0
            return QuantizedConstant(q.astype(np.int32), _F32(params.ScaleAsNumpy()[0]), zero_point,
                                     symmetric=True)

        asymmetric = []
        for i in range(graph.OperatorsLength()):
            options = tfl.FullyConnectedOptions()
            table = graph.Operators(i).BuiltinOptions()
            if table is not None:
                options.Init(table.Bytes, table.Pos)
            asymmetric.append(table is not None and bool(options.AsymmetricQuantizeInputs()))
        return cls(quantized("dictionary"), values("negative_threshold", "float32")[0],
                   quantized("weights"), values("output_bias", "float32")[0], tuple(asymmetric))

    def problems(self, model: Model) -> list[str]:
        """How the file fails to be the model's dynamic-range quantization (empty when it is)."""
        D, threshold, W = (p.astype(np.float32) for p in graph_parameters(model))
        found = self.dictionary.problems("dictionary", D.T) + self.weights.problems("weights", W.T)
        if self.negative_threshold.shape != threshold.shape or not np.array_equal(
                self.negative_threshold, -threshold):
            found.append("its thresholds are not the model's")
        if np.any(self.output_bias):
            found.append("its output bias is not 0")
        if self.asymmetric_inputs != (True, True):
            found.append("its FULLY_CONNECTED ops do not both quantize their inputs asymmetrically")
        return found

    @staticmethod
    def _layer(X: np.ndarray, slack: np.ndarray, weights: QuantizedConstant,
               bias: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """One hybrid FULLY_CONNECTED of float32 rows ``X`` (without its activation): the outputs
        as TFLite's reference kernel computes them, and how far another kernel's may lie from them
        when its inputs lie up to ``slack`` from ``X``."""
        rows = _Rows.quantize(X)
        q_w = weights.levels.T.astype(np.float64)  # integer sums stay exact in float64
        scale = rows.step * weights.scale  # float32, one per row
        out = bias + (rows.levels @ q_w).astype(_F32) * scale[:, None]
        abs_w = np.abs(q_w) * float(weights.scale)
        magnitude = np.abs(bias).astype(np.float64) + np.abs(rows.levels) @ abs_w * rows.step[:, None]
        return out.astype(_F32), rows.deviation(slack) @ abs_w + FLOAT_RTOL * magnitude

    def scores(self, Z: np.ndarray) -> np.ndarray:
        """Scores and their tolerances, ``[n, 2 * outputs]``, of preprocessed float32 rows ``Z``
        as the file computes them, each row quantized on its own in each layer."""
        Z = np.ascontiguousarray(Z, dtype=_F32)
        pre, pre_slack = self._layer(Z, np.zeros(Z.shape), self.dictionary, self.negative_threshold)
        features = np.maximum(pre, _F32(0))
        # an atom clearly below its threshold is 0 in every kernel; one near it, up to its slack
        slack = np.where(pre >= 0, pre_slack, np.maximum(pre + pre_slack, 0.0))
        scores, tolerance = self._layer(features, slack, self.weights, self.output_bias)
        return np.hstack([scores, tolerance])
