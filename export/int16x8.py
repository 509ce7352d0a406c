"""8-bit weights with 16-bit activations (TFLite's 16x8 mode): the tensors of such a file.

Input, features and scores are int16, symmetric (zero point 0, scale = the calibrated range's
largest magnitude / 32767); the dictionary and weights int8 as in full int8 (``quantize``);
biases int64 with scale ``input_scale * weight_scale``. 256 times finer activations than int8,
for models whose decisions have little margin. Laid out as ``tflite._layers`` lays out the int8
file's tensors, so :class:`.int8_reference.IntegerGraph` reads either; LiteRT's 16x8
FULLY_CONNECTED (op version 7) computes the same integer graph.
"""

from __future__ import annotations

import numpy as np

from lastedge.runtime import Model

from .atom_scaling import graph_parameters
from .calibration import Ranges
from .quantize import symmetric_weights
from .tflite import INPUT, OUTPUT, _Tensor

LIMIT = 32767  # int16 activations are symmetric: [-32767, 32767] * scale


def _activation(lo: float, hi: float) -> dict[str, np.ndarray]:
    scale = np.float32(max(-lo, hi) / LIMIT)
    return {"scale": np.array([scale], np.float32), "zero_point": np.array([0])}


def _bias(values: np.ndarray, input_scale: float, weight_scale: float,
          lowest: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """int64 bias with scale ``input_scale * weight_scale``; values below ``lowest`` raised."""
    scale = np.float64(input_scale) * np.float64(weight_scale)
    q = np.round(np.asarray(values, np.float64) / scale)
    if lowest is not None:
        q = np.maximum(q, lowest)
    return q.astype(np.int64), np.array([scale], np.float32)


def tensors(model: Model, ranges: Ranges) -> list[_Tensor]:
    """The seven tensors of a 16x8 file: input, D^T, bias1, features, W^T, bias2, scores."""
    n, k, m = model.n_features, model.n_atoms, model.n_outputs
    D, threshold, W = graph_parameters(model)
    x, f, s = (_activation(*r) for r in (ranges.input, ranges.features, ranges.scores))
    q_d, s_d = symmetric_weights(D.T, per_channel=False)
    q_w, s_w = symmetric_weights(W.T, per_channel=False)
    # below the most negative sum any int16 input gives, a bias changes nothing (as relu_bias_floor)
    lowest = -(LIMIT + 1) * np.abs(q_d.astype(np.int64)).sum(axis=1) - 1
    b1, s_b1 = _bias(-threshold, x["scale"][0], s_d[0], lowest)
    b2, s_b2 = _bias(np.zeros(m), f["scale"][0], s_w[0])
    zero = np.zeros(1, np.int64)
    return [
        _Tensor(INPUT, (1, n), "int16", dynamic_batch=True, **x),
        _Tensor("dictionary", (k, n), "int8", q_d, s_d, zero),
        _Tensor("negative_threshold", (k,), "int64", b1, s_b1, zero),
        _Tensor("features", (1, k), "int16", dynamic_batch=True, **f),
        _Tensor("weights", (m, k), "int8", q_w, s_w, zero),
        _Tensor("output_bias", (m,), "int64", b2, s_b2, zero),
        _Tensor(OUTPUT, (1, m), "int16", dynamic_batch=True, **s),
    ]
