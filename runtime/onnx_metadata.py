"""What a ``.onnx`` file says without onnx or onnxruntime: its ``lastedge`` metadata, the widths of
the graph's input and output, and the element types of its weights, read from the protobuf wire
format directly (:mod:`.protobuf`, bounds-checked: a truncated or hostile file raises
``ValueError`` at once, with no allocation beyond the file and no endless loop).

For ``lastedge inspect`` on a device that has a TFLite interpreter only. The file is
memory-mapped, not read into memory.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import NamedTuple

from . import protobuf as pb
from .bounded import open_regular
from .files import METADATA_KEY, FileSummary, parse_header
from .protobuf import Span

# Field numbers of onnx.proto3 that this reader follows.
MODEL_GRAPH, MODEL_METADATA = 7, 14  # ModelProto.graph, .metadata_props
ENTRY_KEY, ENTRY_VALUE = 1, 2  # StringStringEntryProto
GRAPH_INITIALIZER, GRAPH_INPUT, GRAPH_OUTPUT = 5, 11, 12  # GraphProto
TENSOR_DATA_TYPE, TENSOR_NAME = 2, 8  # TensorProto
VALUE_NAME, VALUE_TYPE = 1, 2  # ValueInfoProto
TYPE_TENSOR = 1  # TypeProto.tensor_type
TENSOR_ELEM_TYPE, TENSOR_SHAPE = 1, 2  # TypeProto.Tensor
SHAPE_DIM = 1  # TensorShapeProto.dim
DIM_VALUE, DIM_PARAM = 1, 2  # TensorShapeProto.Dimension

# TensorProto.DataType: FLOAT, and the 8-bit integers of quantized weights (UINT8, INT8).
FLOAT, EIGHT_BIT = 1, (2, 3)

Dim = int | str | None  # a dimension: its size, its symbolic name, or unknown


class Tensor(NamedTuple):
    """A graph input or output."""

    name: str
    elem_type: int  # TensorProto.DataType (1: float); 0 when it is no tensor
    shape: list[Dim]


def read_onnx_summary(path: str | os.PathLike) -> FileSummary:
    """The metadata, input and output widths and precision of an exported ``.onnx`` file, checked
    as ``lastedge.runtime.load`` checks them (one float input [batch, n_features]; widths that
    agree with the metadata). Raises ``ValueError`` naming the problem for a truncated, malformed
    or foreign file."""
    path = Path(path)
    with open_regular(path) as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise ValueError(f"{path} is empty")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            try:
                metadata, graph = _model(data)
                inputs, outputs, weight_types = _graph(data, graph)
            except ValueError as err:
                raise ValueError(f"{path} is not a readable ONNX file: {err}") from None
    header = parse_header(metadata, str(path))
    n_features = inputs[0].shape[-1] if len(inputs) == 1 and len(inputs[0].shape) == 2 else None
    if not (isinstance(n_features, int) and n_features > 0) or inputs[0].elem_type != FLOAT:
        raise ValueError(f"{path}: expected one float input [batch, n_features], got "
                         f"{[(i.name, f'element type {i.elem_type}', i.shape) for i in inputs]}")
    header.check_graph(n_features, outputs[0].shape[-1] if outputs and outputs[0].shape else None, str(path))
    return FileSummary(header, n_features, header.n_outputs,
                       header.precision or _weights_precision(weight_types))


def _weights_precision(types: list[int]) -> str:
    """"int8" when a weight is 8-bit (quantized), "fp32" when every one is float, else "unknown"."""
    if any(t in EIGHT_BIT for t in types):
        return "int8"
    return "fp32" if types and all(t == FLOAT for t in types) else "unknown"


def _model(data: mmap.mmap) -> tuple[bytes | None, Span | None]:
    """The ``lastedge`` metadata value (None if absent) and the graph's span of a ModelProto."""
    metadata, graph = None, None
    for number, wire, value in pb.fields(data, 0, len(data)):
        if number == MODEL_GRAPH:
            graph = pb.span(number, wire, value)
        elif number == MODEL_METADATA:
            key, text = entry(data, pb.span(number, wire, value))
            if key == METADATA_KEY.encode():
                metadata = text
    return metadata, graph


def _graph(data: mmap.mmap, graph: Span | None) -> tuple[list[Tensor], list[Tensor], list[int]]:
    """The graph's inputs that are no initializer, its outputs, and its initializers' element types."""
    if graph is None:
        raise ValueError("it has no graph")
    inputs, outputs, initializers = [], [], {}
    for number, wire, value in pb.fields(data, *graph):
        if number == GRAPH_INITIALIZER:
            name, data_type = _initializer(data, pb.span(number, wire, value))
            initializers[name] = data_type
        elif number in (GRAPH_INPUT, GRAPH_OUTPUT):
            (inputs if number == GRAPH_INPUT else outputs).append(value_info(data, pb.span(number, wire, value)))
    return [i for i in inputs if i.name not in initializers], outputs, list(initializers.values())


def entry(data: mmap.mmap, span: Span) -> tuple[bytes, bytes]:
    """(key, value) of a StringStringEntryProto (metadata_props)."""
    key, text = b"", b""
    for number, wire, value in pb.fields(data, *span):
        if number == ENTRY_KEY:
            key = pb.text(data, pb.span(number, wire, value))
        elif number == ENTRY_VALUE:
            text = pb.text(data, pb.span(number, wire, value))
    return key, text


def _initializer(data: mmap.mmap, span: Span) -> tuple[str, int]:
    """(name, element type) of a TensorProto."""
    name, data_type = b"", 0
    for number, wire, value in pb.fields(data, *span):
        if number == TENSOR_NAME:
            name = pb.text(data, pb.span(number, wire, value))
        elif number == TENSOR_DATA_TYPE:
            data_type = pb.integer(number, wire, value)
    return name.decode(errors="replace"), data_type


def value_info(data: mmap.mmap, span: Span) -> Tensor:
    """A ValueInfoProto."""
    name, elem_type, shape = b"", 0, []
    for number, wire, value in pb.fields(data, *span):
        if number == VALUE_NAME:
            name = pb.text(data, pb.span(number, wire, value))
        elif number == VALUE_TYPE:
            for t_number, t_wire, t_value in pb.fields(data, *pb.span(number, wire, value)):
                if t_number == TYPE_TENSOR:
                    elem_type, shape = _tensor_type(data, pb.span(t_number, t_wire, t_value))
    return Tensor(name.decode(errors="replace"), elem_type, shape)


def _tensor_type(data: mmap.mmap, span: Span) -> tuple[int, list[Dim]]:
    """(element type, shape) of a TypeProto.Tensor."""
    elem_type, shape = 0, []
    for number, wire, value in pb.fields(data, *span):
        if number == TENSOR_ELEM_TYPE:
            elem_type = pb.integer(number, wire, value)
        elif number == TENSOR_SHAPE:
            shape = [_dim(data, pb.span(d_number, d_wire, d_value))
                     for d_number, d_wire, d_value in pb.fields(data, *pb.span(number, wire, value))
                     if d_number == SHAPE_DIM]
    return elem_type, shape


def _dim(data: mmap.mmap, span: Span) -> Dim:
    """A dimension's size (int64, so a negative one reads as such), name, or None when unset."""
    dim: Dim = None
    for number, wire, value in pb.fields(data, *span):
        if number == DIM_VALUE:
            size = pb.integer(number, wire, value)
            dim = pb.signed(size)
        elif number == DIM_PARAM:
            dim = pb.text(data, pb.span(number, wire, value)).decode(errors="replace")
    return dim
