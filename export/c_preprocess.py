"""The exported C model's preprocessing of a float input row, and its twin in numpy.

Both compute, in float32 and in the same order (sums left to right; a product rounded before it
is added, as C99 compilers do under ``-ffp-contract=off``, their default under ``-std=c99``),
``v_i = preprocess(x)_i * gain``: the model's preprocessing times 1 (fp32) or times the inverse
input scale (int8, so that ``v`` rounds to the int8 level), with the inverse scales folded into
one multiplication per feature. So the int8 C model's input levels are those of
:func:`preprocessed` rounded, bit for bit. l2 rows are computed at scale 1 first (the mean and
the sum of squares, three passes over the row with the output's), and that is kept when the sum
of squares lies in ``[FAST_MIN, FLT_MAX]``: finite, so nothing overflowed (an overflow leaves inf
or NaN), and at least 2**-64, so the squares that underflowed (each below 2**-126, off by at most
2**-150) moved it by less than half its last place for any row under 2**62 features. Other rows
(huge, tiny, subnormal, constant, non-finite: :func:`slow_rows`) are computed again scaled by a
power of two (one product, exact but for subnormal results) that brings their largest magnitude
into ``[1, 4)`` (subnormal rows: times 2**126), so their sum of squares neither overflows nor
underflows for any finite input; the square root is :data:`c_kernels.SQRT`.
"""

from __future__ import annotations

import numpy as np

from lastedge.runtime import Model

FAST_MIN = np.float32(2.0 ** -64)  # the least sum of squares computed at scale 1 (l2 kinds)

L2 = r"""
/* sum = the centered sum of squares of x[i] * s (mean: their mean, or 0) */
#define SQUARES(s) \
    sum = 0.0f; \
CENTER    for (i = 0; i < N_FEATURES; ++i) { \
        const float c = x[i] * (s) - mean; \
        sum += c * c; \
    }
/* out = (x[i] * s - mean) * INPUT_GAIN / sqrt(sum), stored */
#define NORMALIZE(s) \
    r = sum > 0.0f ? INPUT_GAIN / root(sum) : 0.0f; \
    for (i = 0; i < N_FEATURES; ++i) out[i] = STORE((x[i] * (s) - mean) * r);

static void preprocess(const float *x, SAMPLE *out)
{
    union { float f; uint32_t u; } v;
    float mean = 0.0f, sum, r, scale;
    uint32_t peak = 0;
    int i;
    SQUARES(1.0f)
    v.f = sum;
    if (v.u - FAST_BITS < 0x7F800000u - FAST_BITS) { /* in [FAST_MIN, FLT_MAX]: at scale 1 */
        NORMALIZE(1.0f)
        return;
    }
    for (i = 0; i < N_FEATURES; ++i) { /* else the largest magnitude's bits, compared as integers */
        v.f = x[i];
        if ((v.u & 0x7FFFFFFFu) > peak) peak = v.u & 0x7FFFFFFFu;
    }
    peak >>= 23; /* its exponent field, kept in 1..253 */
    v.u = (254u - (peak < 1u ? 1u : peak > 253u ? 253u : peak)) << 23;
    scale = v.f; /* 2^-exponent: the largest magnitude to [1, 4) */
    SQUARES(scale)
    NORMALIZE(scale)
}
"""

CENTER = """    for (i = 0; i < N_FEATURES; ++i) sum += x[i] * (s); \\
    mean = sum / (float)N_FEATURES; \\
    sum = 0.0f; \\
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
        return L2.replace("CENTER", CENTER if kind == "center-l2" else "").replace(
            "FAST_BITS", f"0x{int(FAST_MIN.view(np.uint32)):08X}u").replace("FAST_MIN", f"2^{int(np.log2(FAST_MIN))}")
    value = {"none": "x[i]" if fp32 else "x[i] * INPUT_GAIN",
             "standardize": "(x[i] - offset[i]) * gain[i]"}[kind]
    return PER_FEATURE.replace("VALUE", value)


def _sequential_sum(X: np.ndarray) -> np.ndarray:
    """The float32 sum of each row, left to right."""
    total = np.zeros(len(X), np.float32)
    for column in X.T:
        total += column
    return total


def _squares(S: np.ndarray, center: bool) -> tuple[np.ndarray, np.ndarray]:
    """The C's ``SQUARES``: each row's mean (0 unless ``center``) and centered sum of squares."""
    mean = _sequential_sum(S) / np.float32(S.shape[1]) if center else np.zeros(len(S), np.float32)
    C = S - mean[:, None]
    return mean, _sequential_sum(C * C)


def _scales(X: np.ndarray) -> np.ndarray:
    """The C's power-of-two scale of rows that take the slow path: 2 to the minus the exponent
    field of their largest magnitude (its bits, so NaN and inf count as the largest), kept in
    1..253, which brings that magnitude to [1, 4) (subnormal and zero rows: times 2^126)."""
    exponent = np.clip((X.view(np.uint32) & np.uint32(0x7FFFFFFF)).max(axis=1) >> 23, 1, 253)
    return ((254 - exponent).astype(np.uint32) << 23).view(np.float32)


def _outside(sums: np.ndarray) -> np.ndarray:
    """Sums of squares not in ``[FAST_MIN, FLT_MAX]`` (NaN included): the slow path's."""
    return ~((sums >= FAST_MIN) & (sums <= np.finfo(np.float32).max))


def slow_rows(model: Model, X: np.ndarray) -> np.ndarray:
    """Which rows of ``X`` the C computes again at a power-of-two scale (l2 kinds): those whose
    sum of squares at scale 1 overflowed or may have lost precision to underflow."""
    if model.preprocess.kind not in ("l2", "center-l2"):
        return np.zeros(len(X), bool)
    with np.errstate(over="ignore", invalid="ignore"):
        return _outside(_squares(np.asarray(X, np.float32), model.preprocess.kind == "center-l2")[1])


def preprocessed(model: Model, X: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """What the C's ``preprocess`` stores for float32 rows ``X`` (before any rounding to int8),
    with ``gain`` from :func:`gains`."""
    with np.errstate(over="ignore", invalid="ignore"):  # beyond float32: inf and NaN, in C too
        return _preprocessed(model, np.asarray(X, np.float32), gain)


def _preprocessed(model: Model, X: np.ndarray, gain: np.ndarray) -> np.ndarray:
    kind = model.preprocess.kind
    if kind == "none":
        return X * gain[0] if gain[0] != 1 else X.copy()
    if kind == "standardize":
        return (X - model.preprocess.mean) * gain
    center = kind == "center-l2"
    scale = np.ones(len(X), np.float32)
    mean, sum_of_squares = _squares(X, center)
    slow = _outside(sum_of_squares)
    if np.any(slow):
        scale[slow] = _scales(X[slow])
        mean[slow], sum_of_squares[slow] = _squares(X[slow] * scale[slow, None], center)
    C = X * scale[:, None] - mean[:, None]
    with np.errstate(divide="ignore"):
        r = np.where(sum_of_squares > 0, gain[0] / np.sqrt(sum_of_squares), np.float32(0))
    return C * r.astype(np.float32)[:, None]
