"""Integer quantization arithmetic for full-int8 files: affine activations, symmetric weights, int32 biases.

Conventions follow TFLite's int8 spec: activations ``real = scale * (q - zero_point)`` with q in
[-128, 127]; weights symmetric (zero point 0, q in [-127, 127]) per tensor or per output channel;
biases int32 with scale ``input_scale * weight_scale`` and zero point 0.
"""

from __future__ import annotations

import numpy as np

QMIN, QMAX = -128, 127
# The smallest scale a file may hold: float32's smallest normal number. Kernels flush subnormal
# floats to zero (onnxruntime's x86 ones did: weights near 1e-37 gave every row one class; 32-bit
# Arm's NEON always does), so a subnormal scale is no scale.
MIN_SCALE = float(np.finfo(np.float32).tiny)


def affine_params(lo: float, hi: float, what: str = "a quantization range") -> tuple[float, int]:
    """Scale and zero point mapping the real range ``[lo, hi]`` (which must contain 0) onto int8;
    ``what`` names the range in errors."""
    if not lo <= 0 <= hi or hi - lo <= 0:
        raise ValueError(f"{what} must contain 0 and be non-empty, got [{lo}, {hi}]")
    with np.errstate(over="ignore"):  # a range too wide for float32 is refused below
        scale = float(np.float32((hi - lo) / (QMAX - QMIN)))  # as stored in the file
        ends = np.float32([lo, hi])  # as ONNX's quantizer reads them
    if not (MIN_SCALE <= scale < np.inf and np.all(np.isfinite(ends))):
        raise ValueError(f"{what} [{lo:.3g}, {hi:.3g}] has no int8 scale in float32 (it is too "
                         "narrow or too wide): rescale the model's weights or the calibration rows")
    zero_point = int(np.clip(round(QMIN - lo / scale), QMIN, QMAX))
    return scale, zero_point


def symmetric_weights(W: np.ndarray, *, per_channel: bool) -> tuple[np.ndarray, np.ndarray]:
    """Quantize ``W`` [out, in] to int8 symmetrically; scales are [out] per channel, else [1]."""
    W = np.asarray(W, dtype=np.float64)
    peak = np.abs(W).max(axis=1) if per_channel else np.array([np.abs(W).max()])
    scales = (peak / 127.0).astype(np.float32)  # as stored in the file
    scales[scales == 0] = 1.0  # all-zero channels, and weights too small for a float32 scale: q = 0
    q = np.round(W / (scales[:, None] if per_channel else scales[0]))
    return np.clip(q, -127, 127).astype(np.int8), scales


def int32_bias(bias: np.ndarray, input_scale: float, weight_scales: np.ndarray, *,
               lowest: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Quantize a float bias to int32 with scale ``input_scale * weight_scale`` (per channel or one);
    values below ``lowest`` (integer units, per channel) are raised to it."""
    scales = (np.float64(input_scale) * weight_scales.astype(np.float64))
    q = np.round(np.asarray(bias, dtype=np.float64) / scales)
    if lowest is not None:
        q = np.maximum(q, lowest)
    limit = np.iinfo(np.int32).max
    if np.any(np.abs(q) > limit):
        raise ValueError("a bias does not fit in int32 at this quantization scale")
    return q.astype(np.int32), scales.astype(np.float32)


def relu_bias_floor(q_weights: np.ndarray, input_zero_point: int) -> np.ndarray:
    """Per output channel, the lowest int32 bias that still matters before a ReLU: one below the
    most negative sum ``(q_x - z_x) @ q_w`` any int8 input can give. A lower bias (an atom whose
    threshold no input reaches, e.g. a column shrunk to ~0 by weight decay) gives the same zero
    output, and may not fit in int32."""
    deviation = max(QMAX - input_zero_point, input_zero_point - QMIN)  # largest |q_x - z_x|
    reach = deviation * np.abs(q_weights.astype(np.int64)).sum(axis=1)
    return -(reach + 1)
