"""``describe(path)``: what an exported ``.onnx`` or ``.tflite`` file holds (ops, tensors, metadata, size)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from .backends import file_format
from .metadata import METADATA_KEY, loads


def _onnx_tensor(value_info: Any, onnx: Any) -> dict[str, Any]:
    """Name, shape and dtype of a graph input or output; one that is no tensor of a known element
    type (a sequence, a map, a type newer than this onnx) is named by its kind or type number."""
    kind = value_info.type.WhichOneof("value")
    tensor = value_info.type.tensor_type
    shape = [d.dim_param or d.dim_value for d in tensor.shape.dim]
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name
    except KeyError:
        dtype = f"ONNX element type {tensor.elem_type}" if kind == "tensor_type" else str(kind)
    return {"name": value_info.name, "shape": shape, "dtype": dtype}


def _describe_onnx(path: Path) -> dict[str, Any]:
    import onnx
    from google.protobuf.message import DecodeError

    try:  # the graph only: lastedge writes no external data, and a file may point anywhere
        proto = onnx.load(path, load_external_data=False)
    except (DecodeError, ValueError) as err:
        raise ValueError(f"{path} is not a readable ONNX file ({type(err).__name__})") from None
    props = {p.key: p.value for p in proto.metadata_props}
    return {
        "ops": [node.op_type for node in proto.graph.node],
        "inputs": [_onnx_tensor(v, onnx) for v in proto.graph.input],
        "outputs": [_onnx_tensor(v, onnx) for v in proto.graph.output],
        "opset": {o.domain or "ai.onnx": o.version for o in proto.opset_import},
        "producer": f"{proto.producer_name} {proto.producer_version}".strip(),
        "parameters": int(sum(np.prod(t.dims) for t in proto.graph.initializer)),
        "metadata": loads(props[METADATA_KEY], str(path)) if METADATA_KEY in props else None,
    }


def _tflite_tensor(tensor: Any, tfl: Any) -> dict[str, Any]:
    names = {v: k for k, v in vars(tfl.TensorType).items() if not k.startswith("_")}
    shape = tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength() else tensor.ShapeAsNumpy()
    info: dict[str, Any] = {"name": _text(tensor.Name()), "shape": [int(d) for d in shape],
                            "dtype": names.get(tensor.Type(), str(tensor.Type())).lower()}
    q = tensor.Quantization()
    if q is not None and q.ScaleLength():
        info["quantization"] = {"scale": q.ScaleAsNumpy().tolist(),
                                "zero_point": q.ZeroPointAsNumpy().tolist()}
    return info


def _text(value: bytes | None) -> str:
    """A flatbuffer string field, which a file may leave out (a name, a signature key)."""
    return (value or b"").decode()


def _describe_tflite(path: Path) -> dict[str, Any]:
    from lastedge.runtime.tflite_check import check_tflite_structure

    data = path.read_bytes()
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ValueError(f"{path} is not a TFLite file (no TFL3 identifier)")
    try:  # the runtime's walk of every table, vector, string and index the reader below follows
        check_tflite_structure(data)
    except ValueError as err:
        raise ValueError(f"{path} is not a readable TFLite file: {err}") from None
    return _read_tflite(data, path)


def _read_tflite(data: bytes, path: Path) -> dict[str, Any]:
    """Ops, tensors, signatures, description and metadata of a structurally checked flatbuffer."""
    from lastedge.runtime.files import tflite_metadata

    from .schema import check_schema

    tfl = check_schema()
    model = tfl.Model.GetRootAs(data, 0)
    op_names = {v: k for k, v in vars(tfl.BuiltinOperator).items() if not k.startswith("_")}
    codes = [model.OperatorCodes(i) for i in range(model.OperatorCodesLength())]
    graph = model.Subgraphs(0)
    ops = []
    for i in range(graph.OperatorsLength()):
        code = codes[graph.Operators(i).OpcodeIndex()]
        number = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        ops.append(op_names.get(number, f"BUILTIN_{number}"))
    raw = tflite_metadata(data, METADATA_KEY)  # the runtime's reader: an entry may hold no bytes
    return {
        "ops": ops,
        "inputs": [_tflite_tensor(graph.Tensors(graph.Inputs(i)), tfl)
                   for i in range(graph.InputsLength())],
        "outputs": [_tflite_tensor(graph.Tensors(graph.Outputs(i)), tfl)
                    for i in range(graph.OutputsLength())],
        "signatures": [_text(model.SignatureDefs(i).SignatureKey())
                       for i in range(model.SignatureDefsLength())],
        "description": _text(model.Description()),
        "metadata": None if raw is None else loads(raw, str(path)),
    }


def describe(path: str | os.PathLike) -> dict[str, Any]:
    """Ops in order, input/output names, shapes (-1 or a name for the batch) and dtypes, the
    ``lastedge`` metadata (``None`` for files lastedge did not write) and the file size."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path} is a folder, not an exported .onnx or .tflite file")
    fmt = file_format(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    info = _describe_onnx(path) if fmt == "onnx" else _describe_tflite(path)
    return {"path": str(path), "format": fmt, "size_bytes": path.stat().st_size, **info}


def summary_lines(info: dict[str, Any]) -> list[str]:
    """Human-readable lines for a ``describe`` result: file, size, ops, tensors, metadata."""
    metadata = info["metadata"] or {}
    quantization = metadata.get("quantization")
    quantization = quantization if isinstance(quantization, dict) else {}
    weights = quantization.get("weights")  # absent in files written before it was recorded
    if quantization.get("mode") == "dynamic":
        kind = f" dynamic ({weights or '8-bit'} weights, activations quantized as it runs)"
    else:
        kind = f" ({weights} weights)" if weights else ""
    lines = [f"{info['path']}: {info['format']}, {info['size_bytes'] / 1024:.1f} KiB, "
             f"{metadata.get('precision', 'unknown precision')}{kind}",
             "ops: " + " -> ".join(info["ops"])]
    for role in ("inputs", "outputs"):
        for t in info[role]:
            quant = t.get("quantization")
            extra = f" scale {quant['scale'][0]:.4g} zero point {quant['zero_point'][0]}" if quant else ""
            lines.append(f"{role[:-1]} {t['name']}: {t['dtype']} {t['shape']}{extra}")
    if metadata:
        # optional fields as the runtime reads them (``files.parse_header`` checked the file's)
        where = "in the graph" if metadata.get("preprocess_in_graph") else "to apply before the file"
        images = metadata.get("image_shape")
        shown = f", trained on {'x'.join(map(str, images))} images" if isinstance(images, list) else ""
        lines.append(f"classes {metadata['classes']}, alpha {metadata.get('alpha', 1.0):g}, "
                     f"preprocess {metadata['preprocess']['kind']} ({where}){shown}, "
                     f"lastedge {metadata.get('lastedge_version', 'version unknown')}")
    else:
        lines.append("no lastedge metadata")
    return lines
