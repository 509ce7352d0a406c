"""The exported C model's preprocessing of a float input row, and its twin in numpy.

Both compute, in float32 and in the same order (sums left to right; a product rounded before it
is added, as C99 compilers do under ``-ffp-contract=off``, their default under ``-std=c99``),
``v_i = preprocess(x)_i * gain``: the model's preprocessing times 1 (fp32) or times the inverse
input scale (int8, so that ``v`` rounds to the int8 level), with the inverse scales folded into
one multiplication per feature. So the int8 C model's input levels are those of
:func:`preprocessed` rounded, bit for bit. l2 rows are first scaled by a power of two (one product,
exact but for subnormal results) that brings their largest magnitude into ``[2**-32, 2**32)``
(at least ``2**-53`` for the smallest subnormal rows), so their sum of squares neither overflows
nor underflows for any finite input; the square root is :data:`c_kernels.SQRT`.
"""

from __future__ import annotations

import numpy as np

from lastedge.runtime import Model

STEP = np.float32(2.0 ** 32)  # the scaling of l2 rows, a power of two at a time

L2 = r"""
static void preprocess(const float *x, SAMPLE *out)
{
    union { float f; uint32_t u; } peak, v;
    float scale = 1.0f, mean = 0.0f, sum = 0.0f, r;
    int i;
    peak.u = 0;
    for (i = 0; i < N_FEATURES; ++i) { /* the largest magnitude, compared as integers */
        v.f = x[i];
        v.u &= 0x7FFFFFFFu;
        if (v.u > peak.u) peak.u = v.u;
    }
    for (; peak.f >= 0x1p32f; peak.f *= 0x1p-32f) scale *= 0x1p-32f;
    for (; peak.f > 0.0f && peak.f < 0x1p-32f && scale < 0x1p96f; peak.f *= 0x1p32f) scale *= 0x1p32f;
CENTER    for (i = 0; i < N_FEATURES; ++i) {
        const float c = x[i] * scale - mean;
        sum += c * c;
    }
    r = sum > 0.0f ? INPUT_GAIN / root(sum) : 0.0f;
    for (i = 0; i < N_FEATURES; ++i) out[i] = STORE((x[i] * scale - mean) * r);
}
"""

CENTER = """    for (i = 0; i < N_FEATURES; ++i) sum += x[i] * scale;
    mean = sum / (float)N_FEATURES;
    sum = 0.0f;
"""

PER_FEATURE = r"""
static void preprocess(const float *x, SAMPLE *out)
{
    int i;
    for (i = 0; i < N_FEATURES; ++i) out[i] = STORE(VALUE);
}
"""


def gains(model: Model, input_scale: float | None) -> np.ndarray:
    """The float32 gain of each feature: ``1 / (standardize scale * input_scale)``, either factor
    1 when absent (``input_scale`` None for fp32), one value for per-sample kinds."""
    inverse = 1.0 if input_scale is None else 1.0 / input_scale
    if model.preprocess.kind == "standardize":
        return (inverse / model.preprocess.scale.astype(np.float64)).astype(np.float32)
    return np.array([inverse], np.float32)


def c_code(model: Model, fp32: bool) -> str:
    """The C ``preprocess(x, out)``, with ``SAMPLE``, ``STORE``, ``INPUT_GAIN`` and the
    ``offset``/``gain`` arrays (standardize) defined by the caller."""
    kind = model.preprocess.kind
    if kind in ("l2", "center-l2"):
        return L2.replace("CENTER", CENTER if kind == "center-l2" else "")
    value = {"none": "x[i]" if fp32 else "x[i] * INPUT_GAIN",
             "standardize": "(x[i] - offset[i]) * gain[i]"}[kind]
    return PER_FEATURE.replace("VALUE", value)


def _sequential_sum(X: np.ndarray) -> np.ndarray:
    """The float32 sum of each row, left to right."""
    total = np.zeros(len(X), np.float32)
    for column in X.T:
        total += column
    return total


def preprocessed(model: Model, X: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """What the C's ``preprocess`` stores for float32 rows ``X`` (before any rounding to int8),
    with ``gain`` from :func:`gains`."""
    with np.errstate(over="ignore"):  # values beyond float32 become inf and saturate, in C too
        return _preprocessed(model, np.asarray(X, np.float32), gain)


def _preprocessed(model: Model, X: np.ndarray, gain: np.ndarray) -> np.ndarray:
    kind = model.preprocess.kind
    if kind == "none":
        return X * gain[0] if gain[0] != 1 else X.copy()
    if kind == "standardize":
        return (X - model.preprocess.mean) * gain
    peak = np.abs(X).max(axis=1)
    scale = np.ones(len(X), np.float32)
    while np.any(big := peak >= STEP):
        peak[big] /= STEP
        scale[big] /= STEP
    while np.any(small := (peak > 0) & (peak < 1 / STEP) & (scale < STEP ** 3)):
        peak[small] *= STEP
        scale[small] *= STEP
    S = X * scale[:, None]
    mean = np.zeros(len(X), np.float32)
    if kind == "center-l2":
        mean = _sequential_sum(S) / np.float32(X.shape[1])
    C = S - mean[:, None]
    sum_of_squares = _sequential_sum(C * C)
    with np.errstate(divide="ignore"):
        r = np.where(sum_of_squares > 0, gain[0] / np.sqrt(sum_of_squares), np.float32(0))
    return C * r.astype(np.float32)[:, None]
