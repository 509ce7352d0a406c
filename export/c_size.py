"""Flash and RAM of an exported C model on a Cortex-M core, predicted from its shapes before
anything is built.

Constants are counted exactly from the layout ``c_source`` writes (int8: the dictionary padded to
blocks of 4 atoms and 8 inputs, int32 biases, int8 output weights, as rows or one weight and one
class index per atom; fp32: float32 arrays), plus
the class labels. Code and the stack of one prediction beside its buffers are per core, precision
and preprocessing: the largest measured (plus 16 bytes) with examples/mcu's compiler and flags (arm-none-eabi-gcc 12.2,
``-O2``; ``c_emulate``), so a prediction is an upper bound for that build; other compilers and
flags give other code sizes. RAM is the stack alone: the model keeps no data or bss.
"""

from __future__ import annotations

from typing import Any

from .c_kernels import one_output_per_atom
from .metadata import check_model

# bytes of code: [core, variant][preprocess kind], the largest over shapes and constants plus 16
# (measured on 10 random models per kind: 30-784 features, 8-400 atoms, 2-10 classes; the
# smallest is up to ~200 bytes less: binary models, per-tensor constants that fold; models with
# one output weight per atom, ``one_output_per_atom``, 30-110 bytes less than the same shape's)
CODE = {
    ("cortex-m4", "int8"): {"none": 776, "standardize": 792, "l2": 964, "center-l2": 1036},
    ("cortex-m4", "int8-dsp"): {"none": 740, "standardize": 752, "l2": 916, "center-l2": 988},
    ("cortex-m3", "int8"): {"none": 792, "standardize": 808, "l2": 1216, "center-l2": 1300},
    ("cortex-m0", "int8"): {"none": 916, "standardize": 932, "l2": 1348, "center-l2": 1428},
    ("cortex-m4", "int16x8"): {"none": 800, "standardize": 816, "l2": 972, "center-l2": 1048},
    ("cortex-m4", "int16x8-dsp"): {"none": 744, "standardize": 764, "l2": 916, "center-l2": 992},
    ("cortex-m3", "int16x8"): {"none": 784, "standardize": 800, "l2": 1200, "center-l2": 1288},
    ("cortex-m0", "int16x8"): {"none": 940, "standardize": 1060, "l2": 1360, "center-l2": 1448},
    ("cortex-m4", "fp32"): {"none": 244, "standardize": 284, "l2": 464, "center-l2": 540},
    ("cortex-m3", "fp32"): {"none": 284, "standardize": 308, "l2": 684, "center-l2": 780},
    ("cortex-m0", "fp32"): {"none": 284, "standardize": 316, "l2": 748, "center-l2": 840},
}
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
TARGETS = sorted({core for core, _ in CODE})


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
    if (target, variant) not in CODE:
        raise ValueError(f"no {variant} build for {target}"
                         + (" (only cortex-m4 has the DSP extension)" if dsp else ""))
    code = CODE[target, variant][model.preprocess.kind]
    constants = constant_bytes(model, precision)
    stack = STACK[target, variant] + buffer_bytes(model, precision, dsp)
    return {"target": target, "precision": precision, "dsp": dsp, "flash_code": code,
            "flash_constants": constants, "flash": code + constants, "ram": stack}
