"""Write a ``Model`` as an ONNX graph: ``MatMul -> Sub -> Relu -> MatMul`` (fp32) or int8 QDQ.

The graph takes ``input`` [batch, n_features] float32 and returns ``scores`` [batch, n_outputs].
All one-vs-all heads share one dictionary MatMul and one block-structured weight MatMul. Opset and
IR version are pinned (``OPSET``, ``IR_VERSION``) so that older device runtimes can load the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from lastedge.runtime import Model, check_output_path, write_atomically

from .atom_scaling import graph_parameters
from .calibration import DEFAULT_MARGIN, Ranges, check_calibration
from .metadata import METADATA_KEY, build_metadata, check_model, dumps
from .options import ExportOptions, check_export_options

OPSET = 17
IR_VERSION = 8
OPSET_INT16 = 21  # the first opset whose QuantizeLinear and DequantizeLinear take int16
INPUT, OUTPUT = "input", "scores"
PRODUCER = "lastedge"

# Smallest normal float32: clamps a zero row's peak and squared norm, so that the row stays zero.
_TINY = float(np.finfo(np.float32).tiny)


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("ONNX export needs the onnx package: pip install 'lastedge[export]'") from None
    return onnx


def _standardize_nodes(helper: Any) -> tuple[list, str]:
    """``(x - mean) / scale`` as two ops, as ``Preprocess.apply`` computes it in float32. Folded
    into the dictionary and threshold instead, a large mean cancels catastrophically in float32
    (features near 1000 lost fp32 parity), and int8 would quantize columns ``D / scale`` whose
    rows are as uneven as the features' scales."""
    return [helper.make_node("Sub", [INPUT, "mean"], ["centered"]),
            helper.make_node("Div", ["centered", "scale"], ["standardized"])], "standardized"


def _reduce(helper: Any, op: str, source: str, output: str, opset: int) -> Any:
    """A Reduce* node over each row (axis 1): from opset 18 the axes are an input (``row_axis``)."""
    if opset >= 18:
        return helper.make_node(op, [source, "row_axis"], [output], keepdims=1)
    return helper.make_node(op, [source], [output], axes=[1], keepdims=1)


def _normalise_nodes(helper: Any, kind: str, opset: int) -> tuple[list, str]:
    """Per-sample (centering and) l2 normalisation as ops; a zero-norm row stays zero.

    Each row is first divided by its largest magnitude (which changes neither form), so that its
    mean and squared norm stay within float32 for any float32 row: as ``Preprocess.apply`` does
    in float64 for such rows, where squares of values beyond ~1e19 overflowed to an infinite norm
    (scores 0) and those of values below ~1e-19 underflowed to a norm clamped far above the row's.
    """
    nodes = [helper.make_node("Abs", [INPUT], ["magnitude"]),
             _reduce(helper, "ReduceMax", "magnitude", "row_peak", opset),
             helper.make_node("Max", ["row_peak", "tiny"], ["clamped_row_peak"]),
             helper.make_node("Div", [INPUT, "clamped_row_peak"], ["rescaled"])]
    source = "rescaled"
    if kind == "center-l2":
        nodes += [_reduce(helper, "ReduceMean", source, "row_mean", opset),
                  helper.make_node("Sub", [source, "row_mean"], ["centered"])]
        source = "centered"
    nodes += [
        _reduce(helper, "ReduceSumSquare", source, "squared_norm", opset),
        helper.make_node("Max", ["squared_norm", "tiny"], ["clamped_squared_norm"]),
        helper.make_node("Sqrt", ["clamped_squared_norm"], ["norm"]),
        helper.make_node("Div", [source, "norm"], ["normalized"]),
    ]
    return nodes, "normalized"


def _preprocessing(model: Model, helper: Any, opset: int) -> tuple[list, str, dict[str, np.ndarray]]:
    """The preprocessing's nodes, the name of their output and their constants."""
    kind = model.preprocess.kind
    if kind == "standardize":
        nodes, source = _standardize_nodes(helper)
        return nodes, source, {"mean": model.preprocess.mean, "scale": model.preprocess.scale}
    if kind in ("l2", "center-l2"):
        nodes, source = _normalise_nodes(helper, kind, opset)
        constants = {"tiny": np.array([_TINY], dtype=np.float32)}
        if opset >= 18:
            constants["row_axis"] = np.array([1], dtype=np.int64)
        return nodes, source, constants
    return [], INPUT, {}


def build_graph(model: Model, *, form: str = "matmul", with_preprocessing: bool = False,
                rescale_atoms: bool = False, opset: int = OPSET) -> Any:
    """The float ONNX model (no metadata yet).

    ``form="matmul"``: ``MatMul -> Sub -> Relu -> MatMul``, the fp32 file. ``form="gemm"``:
    ``Gemm(C=-threshold) -> Relu -> Gemm``, the graph handed to static quantization, whose bias form
    lets onnxruntime fuse the whole chain into integer ops. ``with_preprocessing`` puts the model's
    preprocessing in the graph as float ops before that core, so the file takes raw features.
    ``rescale_atoms``: unit dictionary columns (:mod:`.atom_scaling`), for the graphs that int8
    quantizes. ``opset``: ``OPSET``, or ``OPSET_INT16`` for the graph that int16x8 quantizes (its
    Reduce* nodes then take their axes as an input).
    """
    onnx = _onnx()
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    if form not in ("matmul", "gemm"):
        raise ValueError(f"form must be 'matmul' or 'gemm', got {form!r}")
    nodes, source, constants = _preprocessing(model, helper, opset) if with_preprocessing else ([], INPUT, {})
    D, threshold, W = graph_parameters(model, rescale_atoms)
    constants.update(dictionary=D, weights=W)
    if form == "matmul":
        constants["threshold"] = threshold
        nodes += [helper.make_node("MatMul", [source, "dictionary"], ["projection"]),
                  helper.make_node("Sub", ["projection", "threshold"], ["pre_activation"])]
    else:
        constants["negative_threshold"] = -threshold
        constants["output_bias"] = np.zeros(model.n_outputs, dtype=np.float32)
        nodes.append(helper.make_node("Gemm", [source, "dictionary", "negative_threshold"],
                                      ["pre_activation"]))
    nodes.append(helper.make_node("Relu", ["pre_activation"], ["features"]))
    if form == "matmul":
        nodes.append(helper.make_node("MatMul", ["features", "weights"], [OUTPUT]))
    else:
        nodes.append(helper.make_node("Gemm", ["features", "weights", "output_bias"], [OUTPUT]))
    graph = helper.make_graph(
        nodes, "lastedge",
        [helper.make_tensor_value_info(INPUT, onnx.TensorProto.FLOAT, ["batch", model.n_features])],
        [helper.make_tensor_value_info(OUTPUT, onnx.TensorProto.FLOAT, ["batch", model.n_outputs])],
        initializer=[numpy_helper.from_array(
            np.ascontiguousarray(v, dtype=np.int64 if name == "row_axis" else np.float32), name)
            for name, v in constants.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)


def _finish(proto: Any, metadata: dict[str, Any], model: Model, precision: str) -> Any:
    """Set producer, doc string and the ``lastedge`` metadata, then check the model strictly."""
    onnx = _onnx()
    from lastedge.runtime import __version__

    proto.producer_name, proto.producer_version = PRODUCER, __version__
    proto.doc_string = (
        f"lastedge soft-threshold classifier: {model.n_features} features, {model.n_atoms} atoms, "
        f"{model.n_outputs} output(s), {precision}"
    )
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, {METADATA_KEY: dumps(metadata)})
    onnx.checker.check_model(proto, full_check=True)
    onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    return proto


def _quantized(model: Model, options: ExportOptions) -> tuple[Any, dict[str, Any] | None]:
    """The graph of ``options.precision`` and its metadata's ``quantization`` entry."""
    pre = options.with_preprocessing
    if options.precision == "fp32":
        return build_graph(model, with_preprocessing=pre), None
    from .onnx_int8 import quantize_dynamic, quantize_static

    int16 = options.precision == "int16x8"
    weights = "int8" if options.signed_weights or int16 else "uint8"
    if options.precision == "int8-dynamic":
        proto = build_graph(model, with_preprocessing=pre, rescale_atoms=True)
        return quantize_dynamic(proto, signed_weights=options.signed_weights), options.quantization(weights)
    rows = check_calibration(options.calibration, model)
    ranges = Ranges.measure(model, rows, options.margin)
    proto = quantize_static(
        build_graph(model, form="gemm", with_preprocessing=pre, rescale_atoms=True,
                    opset=OPSET_INT16 if int16 else OPSET),
        rows if pre else model.preprocess.apply(rows),  # what the graph's input receives
        ranges, per_channel=options.per_channel, signed_weights=options.signed_weights, int16=int16,
    )
    return proto, options.quantization(weights, ranges)


def to_onnx(
    model: Model,
    path: str | os.PathLike,
    *,
    precision: str = "fp32",
    calibration: Any = None,
    per_channel: bool = False,
    margin: float = DEFAULT_MARGIN,
    signed_weights: bool = False,
    with_preprocessing: bool = False,
) -> Path:
    """Export ``model`` to an ONNX file at ``path`` (written atomically) and return the path.

    Options that do not apply to ``precision`` raise ``ValueError`` (``options``).

    Parameters
    ----------
    model : Model
        The model (or a fitted estimator with ``to_model()``).
    path : str or os.PathLike
        Destination ending in ``.onnx``.
    precision : {"fp32", "int8", "int8-dynamic", "int16x8"}
        "int8": static QDQ, 8-bit weights and activations (stored as uint8) calibrated on
        ``calibration``, run as integer ``QGemm`` kernels; "int8-dynamic": 8-bit weights, each
        batch's activations quantized as the file runs, no calibration data; "int16x8": static
        QDQ with int8 weights and int16 activations (opset 21), for models whose decisions
        have little margin.
    calibration : array, "int8" and "int16x8" only
        Raw rows [n_rows, n_features] (before preprocessing; a batch of images
        [n_rows, H, W(, 3)] is flattened), >= 20 rows.
    per_channel : bool, "int8" only
        One weight scale per atom and per output, not one per tensor.
    margin : float, "int8" and "int16x8" only
        Widen each calibrated range by this fraction of its width.
    signed_weights : bool, int8 precisions only
        Store the weights as int8 (zero point 0), not uint8: about twice as fast in onnxruntime
        on CPUs with VNNI, wrong on x86 CPUs without it (see ``onnx_int8``).
    with_preprocessing : bool
        Put the preprocessing in the graph so the file takes raw features.
    """
    options = check_export_options("onnx", precision, calibration=calibration, per_channel=per_channel,
                                   margin=margin, signed_weights=signed_weights,
                                   with_preprocessing=with_preprocessing)
    model = check_model(model)
    path = check_output_path(path, ".onnx", "the output")
    proto, quantization = _quantized(model, options)
    metadata = build_metadata(model, precision=options.file_precision, quantization=quantization,
                              preprocess_in_graph=with_preprocessing and model.preprocess.kind != "none")
    proto = _finish(proto, metadata, model, options.precision)
    write_atomically(path, lambda f: f.write(proto.SerializeToString()))
    return path
