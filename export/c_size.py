"""Flash and RAM of an exported C model on a Cortex-M core, predicted from its shapes before
anything is built.

Constants are counted exactly from the layout ``c_source`` writes (int8: the dictionary padded to
blocks of 4 atoms and 8 inputs, int32 biases, int8 output weights, as rows or one weight and one
class index per atom; fp32: float32 arrays), plus the class labels (with at most 4 atoms GCC may
fold the output weights into the code, leaving fewer constants). Code is per core, precision
(variant) and preprocessing kind, plus the terms of the shape that change what the compiler
unrolls or folds (:func:`code_terms`: fewer than 8 inputs, the inputs past a multiple of 8,
a binary model, dense output rows by their count, at most 4 atoms, more than 255 inputs or
atoms); the bases and terms are
fitted to builds of random models with examples/mcu's compiler and flags (arm-none-eabi-gcc
12.2, ``-O2``; ``c_emulate.build_object``) by ``benchmarks/c_code_size.py --fit``: never below
a build, and at most 200 bytes above one (the rest depends on the quantisation's per-tensor
constants and, with at most 4 atoms, on the output weights, which the shapes do not give).
So a prediction is an upper bound for that build; other compilers and flags give other code
sizes. The stack of one prediction beside its buffers is the largest measured (plus 16 bytes)
per core and variant. RAM is the stack alone: the model keeps no data or bss.
"""

from __future__ import annotations

from typing import Any

from .c_kernels import one_output_per_atom
from .metadata import check_model

# bytes of code per core and variant: the preprocessing kind's base, then the terms of the shape
# (``code_terms``), fitted by ``python benchmarks/c_code_size.py --fit``: the sum is never below
# a build and exceeds the builds by the least largest amount; MARGIN is added to it
CODE_TERMS = ("none", "standardize", "l2", "center-l2",
              "binary", "dense 2-3", "dense 4-7", "dense 8-11", "dense 12+", "dense rest",
              "k=1", "k=2", "k=3", "k=4", "n>255", "k>255",
              "n=2", "n=3", "n=4", "n=5", "n=6", "n=7",
              "n%8=1", "n%8=2", "n%8=3", "n%8=4", "n%8=5", "n%8=6", "n%8=7")
CODE = {key: dict(zip(CODE_TERMS, values)) for key, values in {
    ("cortex-m4", "int8"): (645, 673, 814, 878, -64, -64, 4, 69, 19, 14, -78, -29, -21, 3, 23, -1,
                            -88, -97, -125, -57, -69, -61, 86, 149, 76, 48, 132, 127, 136),
    ("cortex-m4", "int8-dsp"): (636, 656, 820, 884, -48, -56, 20, 64, 48, 12, -20, -24, -12, -12, 4, 0,
                                60, 72, -12, -8, 0, -4, 44, 68, 68, 0, 16, 16, 24),
    ("cortex-m3", "int8"): (683, 705, 1115, 1215, -70, -54, 12, 70, 35, 10, -83, -55, -35, -23, 2, 0,
                            -131, -90, -150, -81, -90, -106, 72, 144, 61, 37, 111, 115, 111),
    ("cortex-m0", "int8"): (856, 888, 1274, 1383, -54, -55, 23, 84, 52, 15, -109, -61, -57, -43, 38, -7,
                            -186, -144, -211, -114, -130, -132, 8, 114, 21, 12, 84, 74, 99),
    ("cortex-m4", "int16x8"): (658, 686, 817, 889, -72, -78, 5, 69, 30, 17, -94, -56, -42, -26, 30, -4,
                               -73, -82, -115, -64, -68, -61, 99, 166, 70, 56, 153, 132, 140),
    ("cortex-m4", "int16x8-dsp"): (663, 688, 828, 904, -45, -60, 13, 57, 52, 14, -31, -21, -12, -21, 9, 5,
                                   58, 68, -20, -24, -8, -19, 41, 59, 67, -7, 14, 12, 31),
    ("cortex-m3", "int16x8"): (658, 674, 1081, 1180, -61, -67, 20, 82, 37, 13, -58, -30, -26, -18, 8, 7,
                               -108, -85, -147, -75, -86, -85, 66, 142, 63, 51, 131, 143, 131),
    ("cortex-m0", "int16x8"): (824, 848, 1236, 1336, -52, -36, 24, 80, 36, 12, -100, -56, -68, -56, 36, 12,
                               -136, -72, -132, -80, -72, -64, 72, 172, 124, 68, 176, 148, 164),
    ("cortex-m4", "fp32"): (274, 321, 482, 537, -39, 13, 16, 0, -4, -5, -24, 14, 8, 2, 5, 8,
                            -26, 24, 0, -16, -7, -8, 4, 8, 0, -4, 5, 8, 4),
    ("cortex-m3", "fp32"): (289, 355, 732, 801, -65, 0, 1, -9, 2, 0, -27, -1, -6, -4, 1, 6,
                            -15, 43, -14, -7, 11, 11, 4, 4, -1, 1, 11, 12, 8),
    ("cortex-m0", "fp32"): (284, 336, 766, 862, -52, -8, 4, 3, 0, 0, -37, 7, 0, -4, 15, 0,
                            -21, 55, -24, -24, -20, -20, 4, -13, 0, -11, 4, -11, -4),
}.items()}
MARGIN = 16  # bytes, for values of the per-tensor constants no build measured
# bytes of stack one prediction takes beside its row buffers (frames, saved registers)
STACK = {("cortex-m4", "int8"): 112,
         ("cortex-m4", "int8-dsp"): 124,
         ("cortex-m3", "int8"): 100,
         ("cortex-m0", "int8"): 132,
         ("cortex-m4", "int16x8"): 112,
         ("cortex-m4", "int16x8-dsp"): 124,
         ("cortex-m3", "int16x8"): 100,
         ("cortex-m0", "int16x8"): 144,
         ("cortex-m4", "fp32"): 44,
         ("cortex-m3", "fp32"): 112,
         ("cortex-m0", "fp32"): 120}
TARGETS = sorted({core for core, _ in STACK})


def code_terms(n_features: int, n_atoms: int, n_outputs: int, one_output: bool) -> dict[str, int]:
    """The terms of ``CODE`` a shape takes, name -> count (the preprocessing kind's base apart).
    ``"n=i"`` (fewer than 8 inputs; 1 counts as 2) and ``"n%8=i"`` (the inputs past a multiple
    of 8): the loops over the inputs, which the compiler unrolls (the integer kernels' last
    ``n % 8`` inputs one by one); ``"binary"``; dense output rows (not ``one_output``, see
    ``c_kernels.one_output_per_atom``) by their count, of which passes of four are unrolled up
    to 11, and ``"dense rest"`` per output past a multiple of 4; ``"k=i"``: one block of four
    atoms, whose output weights the compiler folds into the code; ``"n>255"``, ``"k>255"``:
    loop bounds beyond a Thumb instruction's 8-bit immediate."""
    terms = {}
    if n_features < 8:
        terms[f"n={max(n_features, 2)}"] = 1
    elif n_features % 8:
        terms[f"n%8={n_features % 8}"] = 1
    if n_outputs == 1:
        terms["binary"] = 1
    elif not one_output:
        terms["dense " + ("2-3" if n_outputs < 4 else "4-7" if n_outputs < 8 else
                          "8-11" if n_outputs < 12 else "12+")] = 1
        terms["dense rest"] = n_outputs % 4
    if n_atoms <= 4:
        terms[f"k={n_atoms}"] = 1
    if n_features > 255:
        terms["n>255"] = 1
    if n_atoms > 255:
        terms["k>255"] = 1
    return terms


def code_bytes(target: str, variant: str, kind: str, terms: dict[str, int]) -> int:
    """Bytes of code: the kind's base and ``terms`` (from :func:`code_terms`) by ``CODE``."""
    table = CODE[target, variant]
    return table[kind] + sum(table[name] * count for name, count in terms.items()) + MARGIN


def _up(value: int, step: int) -> int:
    return -(-value // step) * step


def label_bytes(classes: list[Any]) -> int:
    """The label table: a pointer per class and the strings, each but the last 4-byte aligned."""
    lengths = [len(str(label).encode("utf-8")) + 1 for label in classes]
    return 4 * len(lengths) + sum(_up(n, 4) for n in lengths[:-1]) + lengths[-1]


def constant_bytes(model: Any, precision: str) -> int:
    """Bytes of the model's constant arrays (flash), exactly as the exporter lays them out."""
    n, k, m = model.n_features, model.n_atoms, model.n_outputs
    standardize = 8 * n if model.preprocess.kind == "standardize" else 0  # offsets and gains
    labels = label_bytes(model.classes.tolist())
    if precision == "fp32":
        return 4 * n * k + 4 * k * m + standardize + labels
    # output weights: rows, or one weight and a class index (uint8, or uint16) per atom
    outputs = k * (2 if m <= 256 else 3) if one_output_per_atom(model.weights) else k * m
    return _up(k, 4) * _up(n, 8) + 4 * _up(k, 4) + outputs + standardize + labels


def buffer_bytes(model: Any, precision: str, dsp: bool = False) -> int:
    """Bytes of the row buffers on the stack of one prediction (8-byte aligned each)."""
    n, m = model.n_features, model.n_outputs
    if precision == "fp32":
        return _up(4 * n, 8) + _up(4 * m, 8)  # the preprocessed row, the scores
    row = n if precision == "int8" else 2 * n  # the quantized row: int8, or int16 for int16x8
    widened = 2 * _up(n, 8) if dsp else 0  # SMLAD's copy of the input as int16 pairs
    return widened + _up(row, 8) + _up(4 * m, 8)  # + the int32 scores


def predict_size(model: Any, target: str = "cortex-m4", precision: str = "int8",
                 dsp: bool = False) -> dict[str, Any]:
    """Flash (code and constants) and RAM (the stack of one ``PREFIX_predict``) of ``model``
    exported with ``to_c(model, ..., precision=precision)`` ("fp32", "int8", "int16x8") and
    built for ``target`` (with
    ``-DLASTEDGE_DSP`` when ``dsp``). Bytes; an upper bound for examples/mcu's build."""
    model = check_model(model)
    variant = f"{precision}-dsp" if dsp else precision
    if target not in TARGETS:
        raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
    if (target, variant) not in STACK:
        raise ValueError(f"no {variant} build for {target}"
                         + (" (only cortex-m4 has the DSP extension)" if dsp else ""))
    one_output = precision != "fp32" and one_output_per_atom(model.weights)
    code = code_bytes(target, variant, model.preprocess.kind,
                      code_terms(model.n_features, model.n_atoms, model.n_outputs, one_output))
    constants = constant_bytes(model, precision)
    stack = STACK[target, variant] + buffer_bytes(model, precision, dsp)
    return {"target": target, "precision": precision, "dsp": dsp, "flash_code": code,
            "flash_constants": constants, "flash": code + constants, "ram": stack}
