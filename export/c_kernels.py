"""The fixed C99 code of the exported C model: its kernels, written once here and filled in by ``c``.

Every function is ``static`` (the generated source has one external name per entry point, all
under the model's prefix) and defined C99: no shift of a negative number, no signed overflow,
no conversion of an out-of-range value, no libm. The integer kernels (int8 or int16x8) read
their int8 weights in the layout of :func:`pack_dictionary`, which serves both the portable loop and the DSP extension's
SMLAD (two 16-bit MACs per instruction, compiled in with ``-DLASTEDGE_DSP`` on a core that has
it): four atoms at a time, so each input is loaded once per four MACs.
"""

from __future__ import annotations

import numpy as np

from .int8_reference import INT32_MAX, INT32_MIN, requantize

BLOCK_ATOMS = 4  # atoms one pass of the hidden-layer loop computes
BLOCK_INPUTS = 8  # inputs one iteration of that loop reads (two groups of four)

# A float's square root, correctly rounded (as IEEE sqrt and numpy's), from 32-bit integers
# alone: the digit-by-digit root of the significand shifted to 50 bits, two bits at a time (the
# remainder stays below 2^27), rounded to nearest by the 25th bit (a square root is never
# exactly halfway between two floats).
SQRT = r"""
static float root(float a) /* a >= 0 and finite */
{
    union { float f; uint32_t u; } v;
    uint32_t m, q = 0, r = 0;
    int32_t e;
    int i, j;
    v.f = a;
    if ((v.u & 0x7FFFFFFFu) == 0) return 0.0f;
    m = v.u & 0x7FFFFFu;
    e = (int32_t)(v.u >> 23) - 150; /* a = m * 2^e */
    if (e == -150) {
        e = -149;
        while (m < 0x800000u) { m <<= 1; --e; }
    } else {
        m |= 0x800000u;
    }
    /* n = m * 2^(2j) (m doubled when e is odd) in [2^48, 2^50): sqrt(a) = sqrt(n) * 2^((e - 2j) / 2) */
    if ((e + 1025) % 2 == 0) { m <<= 1; --e; j = 12; } else { j = 13; }
    e -= 2 * j;
    for (i = 24; i >= 0; --i) { /* q = floor(sqrt(n)) in [2^24, 2^25), r = n - q^2 so far */
        const uint32_t trial = (q << 2) | 1u;
        r = (r << 2) | (i >= j ? (m >> (2 * (i - j))) & 3u : 0u);
        if (r >= trial) { r -= trial; q = (q << 1) | 1u; } else { q <<= 1; }
    }
    q = (q >> 1) + (q & 1u); /* 24 significant bits, rounded */
    e = e / 2 + 1;
    if (q == 0x1000000u) { q >>= 1; ++e; }
    v.u = ((uint32_t)(e + 150) << 23) | (q & 0x7FFFFFu);
    return v.f;
}
"""

# A float already divided by the input scale, to the input's integers (int8, or int16 for
# 16x8): rounded half to even (numpy.round) and saturated, from its bits alone (a handful of integer operations, no float arithmetic: on cores
# without an FPU a float comparison is a library call).
QUANTIZE = r"""
static SAMPLE quantize(float value)
{
    union { float f; uint32_t u; } v;
    uint32_t magnitude;
    int32_t t;
    v.f = value;
    magnitude = v.u & 0x7FFFFFFFu;
    if (magnitude >= SATURATE_BITS) { /* |value| >= SATURATED, infinite or NaN: saturates */
        t = SATURATED;
    } else if (magnitude < 0x3F000000u) { /* |value| < 0.5 */
        t = 0;
    } else { /* |value| = m * 2^-s with m in [2^23, 2^24) and s in 8..24 */
        const uint32_t m = (magnitude & 0x7FFFFFu) | 0x800000u;
        const int s = 150 - (int)(magnitude >> 23);
        const uint32_t rest = m & ((1u << s) - 1u), half = 1u << (s - 1);
        t = (int32_t)(m >> s);
        if (rest > half || (rest == half && (t & 1))) ++t;
    }
    t = (v.u >> 31 ? -t : t) + INPUT_ZERO_POINT;
    return (SAMPLE)(t < SAMPLE_MIN ? SAMPLE_MIN : t > SAMPLE_MAX ? SAMPLE_MAX : t);
}
"""

# The hidden layer, fused with the output layer: the input widened to int16 minus its zero point
# once, then for each block of four atoms the int32 accumulators (TFLite's bias plus the sum of
# (q_x - z_x) * q_d; with -DLASTEDGE_DSP two MACs per SMLAD), requantised to int8 (int16) features (one
# rounding, half up: floor((acc * M + 2^(t-1)) / 2^t) with t = 31 - shift, the floor taken on
# the value offset by 2^63 so no negative number is shifted), and each feature above the ReLU's
# zero added into the scores with its row of output weights. Zero features (accumulators up to
# ZERO_UP_TO, see zero_up_to) cost a comparison.
INT8_CORE = r"""
typedef union { /* the input minus its zero point; per group of four: x0, x2, x1, x3 */
    int16_t h[N_INPUT];
    int32_t w[N_INPUT / 2];
} Input;

static void widen_from(const SAMPLE *q, Input *input, int i)
{
    for (; i < N_INPUT; ++i)
        input->h[(i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1)] = (int16_t)(i < N_FEATURES ? q[i] - INPUT_ZERO_POINT : 0);
}

#if defined(LASTEDGE_DSP) && SAMPLE_MAX == 127
#define SXTAB16_WIDEN 1 /* int8 input: SXTAB16 widens four values in two instructions */
#else
#define SXTAB16_WIDEN 0
static void widen(const SAMPLE *q, Input *input)
{
    int g;
    for (g = 0; g < N_FEATURES / 4; ++g) {
        const SAMPLE *v = q + 4 * g;
        int16_t *h = input->h + 4 * g;
        h[0] = (int16_t)(v[0] - INPUT_ZERO_POINT);
        h[1] = (int16_t)(v[2] - INPUT_ZERO_POINT);
        h[2] = (int16_t)(v[1] - INPUT_ZERO_POINT);
        h[3] = (int16_t)(v[3] - INPUT_ZERO_POINT);
    }
    widen_from(q, input, 4 * (N_FEATURES / 4));
}
#endif

#if defined(LASTEDGE_DSP)
#if !defined(__ARM_FEATURE_DSP)
#error "LASTEDGE_DSP needs a core with the DSP extension (e.g. Cortex-M4, M7, M33)"
#endif
#include <arm_acle.h>
#include <string.h>
#define WEIGHTS(atom) (dictionary.w + (atom) * (N_INPUT / 4))

#if SXTAB16_WIDEN
static void widen(const SAMPLE *q, Input *input)
{
    const int32_t offsets = (int32_t)((uint32_t)(uint16_t)(-INPUT_ZERO_POINT) * 0x10001u);
    int g;
    for (g = 0; g < N_FEATURES / 4; ++g) {
        uint32_t v;
        int32_t high;
        memcpy(&v, q + 4 * g, 4);
        __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(high) : "r"(offsets), "r"(v));
        input->w[2 * g] = __sxtab16(offsets, (int8x4_t)v);
        input->w[2 * g + 1] = high;
    }
    widen_from(q, input, 4 * (N_FEATURES / 4));
}
#endif

static int32_t four_macs(uint32_t w, int32_t x02, int32_t x13, int32_t acc) /* SMLAD: two each */
{
    int32_t high;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(high) : "r"(w));
    return __smlad(high, x13, __smlad(__sxtb16((int8x4_t)w), x02, acc));
}

static void block(const Input *input, const uint32_t *w, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int32_t *x = input->w;
    int n;
    for (n = N_INPUT / 4; n > 0; --n, x += 2, w += 4) { /* more per pass would spill */
        a0 = four_macs(w[0], x[0], x[1], a0);
        a1 = four_macs(w[1], x[0], x[1], a1);
        a2 = four_macs(w[2], x[0], x[1], a2);
        a3 = four_macs(w[3], x[0], x[1], a3);
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}
#else
#define WEIGHTS(atom) (dictionary.b + (atom) * N_INPUT)

#define INPUT(xo, wo) do { \
        const int32_t v = x[(xo)]; \
        a0 += v * d[(wo)]; a1 += v * d[(wo) + 4]; a2 += v * d[(wo) + 8]; a3 += v * d[(wo) + 12]; \
    } while (0)
#define GROUP(xo, wo) do { \
        INPUT((xo), (wo)); INPUT((xo) + 2, (wo) + 1); INPUT((xo) + 1, (wo) + 2); INPUT((xo) + 3, (wo) + 3); \
    } while (0)

static void block(const Input *input, const int8_t *d, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int16_t *x = input->h, *const end = input->h + N_INPUT;
    for (; x != end; x += 8, d += 32) {
        GROUP(0, 0);
        GROUP(4, 16);
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}
#endif

static int64_t floor_shift(int64_t v, int t) /* floor(v / 2^t), 1 <= t <= 62, |v| < 2^62 */
{
    return (int64_t)(((uint64_t)v + ((uint64_t)1 << 63)) >> t) - ((int64_t)1 << (63 - t));
}

static void add_feature(int atom, int32_t acc, int32_t *scores)
{
    const int t = 31 - HIDDEN_SHIFT;
    const int64_t r = floor_shift((int64_t)acc * HIDDEN_MULTIPLIER + ((int64_t)1 << (t - 1)), t);
    /* the feature minus its zero point, 0 (the ReLU) .. SAMPLE_MAX - z_f; padding atoms give 0 */
    const int32_t f = r <= 0 ? 0 : r >= SAMPLE_MAX - FEATURE_ZERO_POINT ? SAMPLE_MAX - FEATURE_ZERO_POINT : (int32_t)r;
    if (f != 0) {
        const int8_t *w = output_weights + atom * N_OUTPUTS;
        int c;
        for (c = 0; c + 1 < N_OUTPUTS; c += 2) {
            scores[c] += f * w[c];
            scores[c + 1] += f * w[c + 1];
        }
        if (N_OUTPUTS % 2 != 0) scores[N_OUTPUTS - 1] += f * w[N_OUTPUTS - 1];
    }
}

static void core(const SAMPLE *q, int32_t *scores)
{
    Input input;
    int atom, c;
    widen(q, &input);
    for (c = 0; c < N_OUTPUTS; ++c) scores[c] = 0;
    for (atom = 0; atom < N_ATOMS; atom += 4) {
        int32_t acc[4];
        for (c = 0; c < 4; ++c) acc[c] = hidden_bias[atom + c];
        block(&input, WEIGHTS(atom), acc);
        for (c = 0; c < 4; ++c)
            if (acc[c] > ZERO_UP_TO) add_feature(atom + c, acc[c], scores);
    }
}
"""


def pack_dictionary(q: np.ndarray) -> np.ndarray:
    """The int8 dictionary [atoms, features] in the kernels' order, flat: atoms in blocks of
    ``BLOCK_ATOMS`` (the last block filled with zero atoms), features padded with zeros to a
    multiple of ``BLOCK_INPUTS``; per block, per group of four inputs, per atom, its four
    weights (one 32-bit word, which SXTB16 splits into the pairs (w0, w2) and (w1, w3) that SMLAD
    multiplies with the input's pairs (x0, x2) and (x1, x3))."""
    atoms, features = q.shape
    padded = np.zeros((-(-atoms // BLOCK_ATOMS) * BLOCK_ATOMS,
                       -(-features // BLOCK_INPUTS) * BLOCK_INPUTS), np.int8)
    padded[:atoms, :features] = q
    blocks = padded.reshape(-1, BLOCK_ATOMS, padded.shape[1] // 4, 4)
    return blocks.transpose(0, 2, 1, 3).reshape(-1)


def zero_up_to(multiplier: int, shift: int) -> int:
    """The largest int32 accumulator that the requantisation maps to 0 or below (a zero feature
    after the ReLU): it is monotonic in the accumulator, so a bisection finds the boundary."""
    low, high = INT32_MIN, INT32_MAX  # requantize(low) <= 0 always holds for low = INT32_MIN
    if requantize(high, multiplier, shift) <= 0:
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if requantize(middle, multiplier, shift) <= 0 else (low, middle)
    return low
