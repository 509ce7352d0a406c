"""The fixed C99 code of the exported C model: its kernels, written once here and filled in by ``c``.

Every function is ``static`` (the generated source has one external name per entry point, all
under the model's prefix) and defined C99: no shift of a negative number, no signed overflow,
no conversion of an out-of-range value, no libm; compiler extensions (inline assembly) only
under ``#if``s that test for the compiler and core. The integer kernels (int8 or int16x8) read
their int8 weights in the layout of :func:`pack_dictionary`, which serves both the portable loop and the DSP extension's
SMLAD (two 16-bit MACs per instruction, compiled in with ``-DLASTEDGE_DSP`` on a core that has
it): four atoms at a time, so each input is loaded once per four MACs.
"""

from __future__ import annotations

import numpy as np

from .int8_reference import INT32_MAX, INT32_MIN, requantize

BLOCK_ATOMS = 4  # atoms one pass of the hidden-layer loop computes
BLOCK_INPUTS = 8  # inputs the layout pads to: the SMLAD loop's pass (two groups of four; portable: one)

# Whether float32 arithmetic is the hardware's (an FPU, or the host's SSE): else (a Cortex-M
# without an FPU, or floats evaluated wider) the kernels below take the integer paths.
FLOAT_MODE = r"""
#include <float.h>
#if !defined(LASTEDGE_SOFT_FLOAT) && ((defined(__ARM_ARCH) && !defined(__ARM_FP)) || FLT_EVAL_METHOD != 0)
#define LASTEDGE_SOFT_FLOAT 1
#endif
"""

# A float's square root, correctly rounded (as IEEE sqrt and numpy's): a Cortex-M FPU's VSQRT
# (GCC-style inline assembly), else from 32-bit integers alone: the digit-by-digit root of the
# significand shifted to 50 bits, two bits at a time (the remainder stays below 2^27), rounded
# to nearest by the 25th bit (a square root is never exactly halfway between two floats).
SQRT = r"""
#if defined(__GNUC__) && defined(__ARM_FP) && (__ARM_FP & 4) && !defined(LASTEDGE_SOFT_FLOAT)
static float root(float a) /* the FPU's VSQRT: IEEE, correctly rounded */
{
    float r;
    __asm__("vsqrt.f32 %0, %1" : "=t"(r) : "t"(a));
    return r;
}
#else
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
#endif
"""

# A float already divided by the input scale, to the input's integers (int8, or int16 for
# 16x8): rounded half to even (numpy.round) and saturated. Where float32 arithmetic is the
# hardware's (an FPU, or the host), adding 1.5 * 2^23 rounds a value below 2^22 to an integer
# in the sum's low bits, half to even as IEEE addition rounds, and one subtraction of the
# sum's bits gives the level with its zero point: three instructions. Cores without an FPU
# (where a float addition is a library call), or a compiler evaluating floats wider
# (FLT_EVAL_METHOD != 0), take the same value from the float's bits alone; -DLASTEDGE_SOFT_FLOAT
# forces that path (the tests compile both on the host). BOUNDED (l2 kinds, whose values are at
# most the input gain in magnitude, well below 2^21) drops the test for huge values. The
# saturation to the full int8 (int16) range is one SSAT where the core has it (ACLE's __ssat:
# Cortex-M3/M4/M7/M33), else one unsigned range test when the value is in range.
QUANTIZE = r"""
#if defined(__ARM_FEATURE_SAT) && __ARM_FEATURE_SAT
#include <arm_acle.h>
#define SATURATE(t) __ssat((t), SAMPLE_BITS) /* SSAT: one instruction */
#else
#define SATURATE(t) ((uint32_t)((t) - SAMPLE_MIN) > (uint32_t)(SAMPLE_MAX - SAMPLE_MIN) \
                     ? ((t) < SAMPLE_MIN ? SAMPLE_MIN : SAMPLE_MAX) : (t)) /* one test when in range */
#endif

static SAMPLE quantize(float value)
{
    union { float f; uint32_t u; int32_t i; } v;
    int32_t t;
    v.f = value;
#if defined(LASTEDGE_SOFT_FLOAT)
    {
        const uint32_t magnitude = v.u & 0x7FFFFFFFu;
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
    }
#else
    if (!BOUNDED && (v.u & 0x7FFFFFFFu) >= SATURATE_BITS) { /* infinite, NaN or saturating */
        t = v.u >> 31 ? SAMPLE_MIN : SAMPLE_MAX;
    } else { /* |value| < 2^21: value + 1.5 * 2^23 in [2^23, 2^24), its bits 0x4B400000 + the integer */
        v.f = value + 12582912.0f;
        t = v.i - (0x4B400000 - INPUT_ZERO_POINT);
    }
#endif
    return (SAMPLE)SATURATE(t);
}
"""

# The hidden layer, fused with the output layer: for each block of four atoms the int32
# accumulators (TFLite's bias plus the sum of (q_x - z_x) * q_d, the input's zero point folded
# into the bias at export, so the loops read the integer input as it is; with -DLASTEDGE_DSP the
# input is widened once to int16 pairs and two MACs run per SMLAD), requantised to int8 (int16)
# features (one rounding, half up: floor((acc * M + 2^(t-1)) / 2^t) with t = 31 - shift, taken
# only above ZERO_UP_TO, where that value is positive), and each feature above the ReLU's zero
# added into the scores with its row of output weights, or (ONE_OUTPUT_PER_ATOM, see
# one_output_per_atom) with its one weight into its class's score. Zero features
# (accumulators up to ZERO_UP_TO, see zero_up_to) cost a comparison.
INT8_CORE = r"""
#if defined(LASTEDGE_DSP)
#if !defined(__ARM_FEATURE_DSP)
#error "LASTEDGE_DSP needs a core with the DSP extension (e.g. Cortex-M4, M7, M33)"
#endif
#include <arm_acle.h>
#include <string.h>
#define WEIGHTS(atom) (dictionary.w + (atom) * (N_INPUT / 4))

typedef union { /* the input as int16; per group of four: x0, x2, x1, x3 */
    int16_t h[N_INPUT];
    int32_t w[N_INPUT / 2];
} Input;

static void widen(const SAMPLE *q, Input *input)
{
    int32_t *out = input->w;
    int i = 0;
    for (; i < N_FEATURES / 4 * 4; i += 4, out += 2) {
#if SAMPLE_MAX == 127 /* int8: SXTB16 widens four values in two instructions */
        uint32_t v;
        int32_t high;
        memcpy(&v, q + i, 4);
        __asm__("sxtb16 %0, %1, ror #8" : "=r"(high) : "r"(v));
        out[0] = __sxtb16((int8x4_t)v);
        out[1] = high;
#else /* int16: the pairs (x0, x1), (x2, x3) regrouped by PKHBT and PKHTB */
        uint32_t x01, x23;
        int32_t x02, x13;
        memcpy(&x01, q + i, 4);
        memcpy(&x23, q + i + 2, 4);
        __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(x02) : "r"(x01), "r"(x23));
        __asm__("pkhtb %0, %1, %2, asr #16" : "=r"(x13) : "r"(x23), "r"(x01));
        out[0] = x02;
        out[1] = x13;
#endif
    }
    for (; i < N_INPUT; ++i)
        input->h[(i & ~3) | ((i & 1) << 1) | ((i >> 1) & 1)] = (int16_t)(i < N_FEATURES ? q[i] : 0);
}

/* Eight inputs (two groups of four), four atoms per pass: LDM loads the four atoms' weight words
 * of a group, LDRD its two input pairs; SXTB16 splits each word into (w0, w2) and (w1, w3) for
 * two SMLADs. 19 instructions per 16 MACs and 2 per pass: the loop is assembly, as a compiler
 * spills these thirteen registers. It takes r7 too, which builds that keep a frame pointer in it
 * (-O0, -fno-omit-frame-pointer) reserve: those (and -DLASTEDGE_DSP_C) compile the same
 * arithmetic in C with the ACLE intrinsics. */
#if defined(__OPTIMIZE__) && !defined(LASTEDGE_DSP_C)
#define FOUR_ATOMS(x02, x13) \
    "sxtb16 r8, r4\n\t" "smlad %[a0], r8, " x02 ", %[a0]\n\t" "sxtb16 r4, r4, ror #8\n\t" "smlad %[a0], r4, " x13 ", %[a0]\n\t" \
    "sxtb16 r8, r5\n\t" "smlad %[a1], r8, " x02 ", %[a1]\n\t" "sxtb16 r5, r5, ror #8\n\t" "smlad %[a1], r5, " x13 ", %[a1]\n\t" \
    "sxtb16 r8, r6\n\t" "smlad %[a2], r8, " x02 ", %[a2]\n\t" "sxtb16 r6, r6, ror #8\n\t" "smlad %[a2], r6, " x13 ", %[a2]\n\t" \
    "sxtb16 r8, r7\n\t" "smlad %[a3], r8, " x02 ", %[a3]\n\t" "sxtb16 r7, r7, ror #8\n\t" "smlad %[a3], r7, " x13 ", %[a3]\n\t"

__attribute__((noinline)) static void block(const Input *input, const uint32_t *w, int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    const int32_t *x = input->w;
    const int32_t *const end = input->w + N_INPUT / 2;
    __asm__("1:\n\t"
            "ldm %[w]!, {r4, r5, r6, r7}\n\t"
            "ldrd r9, r10, [%[x]], #8\n\t"
            FOUR_ATOMS("r9", "r10")
            "ldm %[w]!, {r4, r5, r6, r7}\n\t"
            "ldrd r9, r10, [%[x]], #8\n\t"
            FOUR_ATOMS("r9", "r10")
            "cmp %[x], %[end]\n\t"
            "bne 1b"
            : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w)
            : [end] "r"(end)
            : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "cc", "memory");
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}
#else
static int32_t four_macs(uint32_t w, int32_t x02, int32_t x13, int32_t acc)
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
    for (n = N_INPUT / 4; n > 0; --n, x += 2, w += 4) {
        a0 = four_macs(w[0], x[0], x[1], a0);
        a1 = four_macs(w[1], x[0], x[1], a1);
        a2 = four_macs(w[2], x[0], x[1], a2);
        a3 = four_macs(w[3], x[0], x[1], a3);
    }
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}
#endif
#define INPUT_OF(q) Input input; widen((q), &input)
#define BLOCK(atom, acc) (memcpy((acc), hidden_bias + (atom), 16), block(&input, WEIGHTS(atom), (acc)))
#else
#define INPUT(xo, wo) do { \
        const int32_t v = x[(xo)]; \
        a0 += v * d[(wo)]; a1 += v * d[(wo) + 4]; a2 += v * d[(wo) + 8]; a3 += v * d[(wo) + 12]; \
    } while (0)
#define GROUP(xo, wo) do { \
        INPUT((xo), (wo)); INPUT((xo) + 1, (wo) + 1); INPUT((xo) + 2, (wo) + 2); INPUT((xo) + 3, (wo) + 3); \
    } while (0)

static void block(const SAMPLE *x, const int8_t *d, const int32_t *bias, int32_t *acc)
{
    int32_t a0 = bias[0], a1 = bias[1], a2 = bias[2], a3 = bias[3];
    const SAMPLE *const end = x + N_FEATURES / 8 * 8;
    int i;
    for (; x != end; x += 4, d += 16) /* four inputs a pass: eight cost 144 bytes for 4 % fewer */
        GROUP(0, 0);
    for (i = 0; i < N_FEATURES % 8; ++i) /* the last inputs, if N_FEATURES is no multiple of 8 */
        INPUT(i, i / 4 * 16 + i % 4);
    acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3;
}
#define INPUT_OF(q) const SAMPLE *const input = (q)
#define BLOCK(atom, acc) block(input, dictionary.b + (atom) * N_INPUT, hidden_bias + (atom), (acc))
#endif

/* Where a feature costs one MAC (ONE_OUTPUT_PER_ATOM), add_feature is one copy that core calls
 * (inlined, its registers took a larger frame), and where block leaves the accumulators in
 * registers (not the DSP's, which stores them) core tests the four in turn; else a loop over
 * them, with add_feature's rows of weights inlined in it. */
#if ONE_OUTPUT_PER_ATOM && !defined(LASTEDGE_DSP)
#define FOUR_TESTS 1
#else
#define FOUR_TESTS 0
#endif

#if ONE_OUTPUT_PER_ATOM && defined(__GNUC__)
__attribute__((noinline))
#endif
static void add_feature(int32_t acc, int atom, int32_t *scores) /* acc > ZERO_UP_TO */
{
    /* acc > ZERO_UP_TO, so v >= 2^t > 0 (the feature is at least 1) and |v| < 2^62 */
    const int t = 31 - HIDDEN_SHIFT;
    const int64_t v = (int64_t)acc * HIDDEN_MULTIPLIER + ((int64_t)1 << (t - 1));
#if HIDDEN_SHIFT <= 0 /* t >= 31: v / 2^t < 2^31 */
    const int32_t r = (int32_t)(v >> t);
#else
    const int64_t r = v >> t;
#endif
    /* the feature minus its zero point, 1 .. SAMPLE_MAX - z_f (the ReLU: up to ZERO_UP_TO, 0) */
    const int32_t f = r >= SAMPLE_MAX - FEATURE_ZERO_POINT ? SAMPLE_MAX - FEATURE_ZERO_POINT : (int32_t)r;
#if ONE_OUTPUT_PER_ATOM /* the other weights of the atom's row are 0: one MAC */
    scores[output_class[atom]] += f * output_weights[atom];
#else
    const int8_t *const w = output_weights + atom * N_OUTPUTS;
    int c;
    for (c = 0; c + 3 < N_OUTPUTS; c += 4) {
#if defined(LASTEDGE_DSP) /* four weights in one load, split by SXTB16, each MAC one SMLABB/SMLABT */
        uint32_t v;
        int32_t w02, w13;
        memcpy(&v, w + c, 4);
        w02 = __sxtb16((int8x4_t)v);
        __asm__("sxtb16 %0, %1, ror #8" : "=r"(w13) : "r"(v));
        scores[c] = __smlabb(f, w02, scores[c]);
        scores[c + 1] = __smlabb(f, w13, scores[c + 1]);
        scores[c + 2] = __smlabt(f, w02, scores[c + 2]);
        scores[c + 3] = __smlabt(f, w13, scores[c + 3]);
#else
        scores[c] += f * w[c];
        scores[c + 1] += f * w[c + 1];
        scores[c + 2] += f * w[c + 2];
        scores[c + 3] += f * w[c + 3];
#endif
    }
#if N_OUTPUTS % 4 != 0 /* else no loop: GCC 12 for Arm warns of UB in the dead one (N_OUTPUTS >= 12) */
    for (; c < N_OUTPUTS; ++c) scores[c] += f * w[c];
#endif
#endif
}

static void core(const SAMPLE *q, int32_t *scores)
{
    int atom, c;
    INPUT_OF(q);
    for (c = 0; c + 1 < N_OUTPUTS; c += 2) { /* two a pass: a compiler keeps this loop (no memset call) */
        scores[c] = 0;
        scores[c + 1] = 0;
    }
    if (N_OUTPUTS % 2 != 0) scores[N_OUTPUTS - 1] = 0;
    for (atom = 0; atom < N_ATOMS; atom += 4) { /* padding atoms: accumulators 0, no feature */
        int32_t acc[4];
        BLOCK(atom, acc);
#if FOUR_TESTS
        if (acc[0] > ZERO_UP_TO) add_feature(acc[0], atom, scores);
        if (acc[1] > ZERO_UP_TO) add_feature(acc[1], atom + 1, scores);
        if (acc[2] > ZERO_UP_TO) add_feature(acc[2], atom + 2, scores);
        if (acc[3] > ZERO_UP_TO) add_feature(acc[3], atom + 3, scores);
#else
        for (c = 0; c < 4; ++c)
            if (acc[c] > ZERO_UP_TO) add_feature(acc[c], atom + c, scores);
#endif
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


def one_output_per_atom(weights: np.ndarray) -> bool:
    """Whether the integer kernels store one output weight and one class index per atom rather
    than the rows of ``weights`` [atoms, outputs]: with more than one output, when no row has more
    than one nonzero weight (LAST's one-vs-all heads and shared dictionaries: each atom votes for
    one class). The scores are the same integers; a feature costs one MAC, not ``n_outputs``."""
    weights = np.asarray(weights)
    return weights.shape[1] > 1 and bool(np.all(np.count_nonzero(weights, axis=1) <= 1))


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
