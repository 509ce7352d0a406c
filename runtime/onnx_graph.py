"""Read an ONNX file's graph from its bytes (nodes, attributes, initializers' shapes, and the values
of int64 ones of a few values: a Reduce's axes), refusing at the wire level what lastedge's
exporter never writes.

No onnx or onnxruntime: :mod:`.protobuf` reads the bytes, so the check runs on any device before
an interpreter sees the file. Refused here: model-level functions and training information,
sparse initializers, tensors whose data lives in another file (external data would make the
interpreter read files beside the model), attributes that hold graphs, tensors or text (the
bodies of Loop, If and Scan, Constant's value), a data length that disagrees with the declared
dims, and more than ``MAX_NODES`` nodes or initializers. Field numbers are those of onnx.proto3.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Union

import numpy as np

from . import protobuf as pb
from .onnx_metadata import METADATA_KEY, Tensor, entry, value_info
from .protobuf import Span

MAX_NODES = 256  # the exporter writes at most 22 nodes and 19 initializers

# ModelProto: ir_version, producer_name, producer_version, domain, model_version, doc_string,
# graph, opset_import, metadata_props
MODEL_FIELDS = {1, 2, 3, 4, 5, 6, 7, 8, 14}
# GraphProto: node, name, initializer, doc_string, input, output, value_info,
# quantization_annotation, metadata_props
GRAPH_FIELDS = {1, 2, 5, 10, 11, 12, 13, 14, 16}
NODE_FIELDS = {1, 2, 3, 4, 5, 6, 7, 9}  # input, output, name, op_type, attribute, doc_string, domain, metadata
# AttributeProto: name, f, i, floats, ints, doc_string, type (not s, t, g, tensors, graphs, ...)
ATTRIBUTE_FIELDS = {1, 2, 3, 7, 8, 13, 20}
# TensorProto: dims, data_type, float_data, int32_data, int64_data, name, raw_data, double_data,
# uint64_data, doc_string, data_location (DEFAULT only: onnxruntime's dynamic quantizer writes it
# for larger weights), metadata_props
TENSOR_FIELDS = {1, 2, 4, 5, 7, 8, 9, 10, 11, 12, 14, 16}
DATA_FIELDS = {4: 4, 5: 0, 7: 0, 9: 1, 10: 8, 11: 0}  # -> bytes per value when fixed, 0: varints
FIELD_NAMES = {20: "training_info", 25: "functions", 15: "sparse_initializer", 13: "external_data",
               14: "data_location", 6: "a graph (g)", 11: "graphs", 5: "a tensor (t)", 4: "text (s)",
               10: "tensors", 3: "segment"}
# TensorProto.DataType -> bytes per element of the numeric types (``onnx_check`` allows fewer)
ELEMENT_BYTES = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}
FLOAT = 1
INT64 = 7
MAX_READ = 8  # int64 initializers up to this many values are read (the exporter's: one axis)

Attribute = Union[int, float, tuple]


@dataclass(frozen=True)
class Node:
    """One node: its operator, domain, input and output names and its attributes."""

    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    name: str = ""
    attributes: dict[str, Attribute] = field(default_factory=dict)


@dataclass(frozen=True)
class Initializer:
    """A constant tensor: its element type and shape (its data was checked to fill that shape);
    an int64 one of at most ``MAX_READ`` values (a Reduce's axes) with its values too."""

    name: str
    data_type: int
    dims: tuple[int, ...]
    values: tuple[int, ...] = ()


@dataclass
class OnnxGraph:
    """What an ONNX file's bytes hold, as far as the runtime's checks need it."""

    metadata: bytes | None = None
    opsets: list[tuple[str, int]] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    initializers: dict[str, Initializer] = field(default_factory=dict)
    inputs: list[Tensor] = field(default_factory=list)  # the graph's inputs that are no initializer
    outputs: list[Tensor] = field(default_factory=list)
    value_info: list[Tensor] = field(default_factory=list)


def read_onnx_graph(data) -> OnnxGraph:
    """The graph of the ONNX file whose bytes are ``data``; ``ValueError`` for anything lastedge
    never writes (see the module docstring) or a malformed file."""
    graph = OnnxGraph()
    graph_span = None
    for number, wire, value in _known(data, (0, len(data)), MODEL_FIELDS, "the model"):
        if number == 7:
            graph_span = pb.span(number, wire, value)
        elif number == 8:
            graph.opsets.append(_opset(data, pb.span(number, wire, value)))
        elif number == 14:
            key, text = entry(data, pb.span(number, wire, value))
            if key == METADATA_KEY.encode():
                graph.metadata = text
    if graph_span is None:
        raise ValueError("it has no graph")
    _read_graph(data, graph_span, graph)
    return graph


def _read_graph(data, where: Span, graph: OnnxGraph) -> None:
    inputs = []
    for number, wire, value in _known(data, where, GRAPH_FIELDS, "the graph"):
        if number == 1:
            try:
                graph.nodes.append(_node(data, pb.span(number, wire, value)))
            except ValueError as err:
                raise ValueError(f"node {len(graph.nodes)} {err}") from None
        elif number == 5:
            tensor = _initializer(data, pb.span(number, wire, value))
            graph.initializers[tensor.name] = tensor
        elif number in (11, 12, 13):
            info = value_info(data, pb.span(number, wire, value))
            {11: inputs, 12: graph.outputs, 13: graph.value_info}[number].append(info)
        if len(graph.nodes) > MAX_NODES or len(graph.initializers) > MAX_NODES:
            raise ValueError(f"it has more than {MAX_NODES} nodes or initializers")
    graph.inputs = [i for i in inputs if i.name not in graph.initializers]


def _known(data, where: Span, known: set[int], what: str):
    """The fields of a message, refusing any whose number is not in ``known``."""
    for number, wire, value in pb.fields(data, *where):
        if number not in known:
            raise ValueError(f"{what} has field {number} ({FIELD_NAMES.get(number, 'unknown')}), "
                             "which lastedge never writes")
        yield number, wire, value


def _opset(data, where: Span) -> tuple[str, int]:
    domain, version = "", 0
    for number, wire, value in pb.fields(data, *where):
        if number == 1:
            domain = _name(data, number, wire, value)
        elif number == 2:
            version = pb.integer(number, wire, value)
    return domain, version


def _node(data, where: Span) -> Node:
    """A NodeProto; an attribute lastedge never writes is refused naming the node."""
    strings: dict[int, list[str]] = {1: [], 2: [], 3: [""], 4: [""], 7: [""]}
    attribute_spans = []
    for number, wire, value in _known(data, where, NODE_FIELDS, "a node"):
        if number in (1, 2):
            strings[number].append(_name(data, number, wire, value))
        elif number in (3, 4, 7):
            strings[number] = [_name(data, number, wire, value)]
        elif number == 5:
            attribute_spans.append(pb.span(number, wire, value))
    op_type, name = strings[4][0], strings[3][0]
    try:
        attributes = dict(_attribute(data, span) for span in attribute_spans)
    except ValueError as err:
        raise ValueError(f"({op_type}{f' {name!r}' if name else ''}): {err}") from None
    return Node(op_type, strings[7][0], tuple(strings[1]), tuple(strings[2]), name, attributes)


def _attribute(data, where: Span) -> tuple[str, Attribute]:
    """(name, value) of an attribute that holds a number or numbers."""
    name, found = "", None
    for number, wire, value in pb.fields(data, *where):
        if number == 1:
            name = _name(data, number, wire, value)
        elif number not in ATTRIBUTE_FIELDS:
            raise ValueError(f"attribute {name!r} holds {FIELD_NAMES.get(number, f'field {number}')}, "
                             "which lastedge never writes")
        elif number == 2:
            found = _float(data, wire, value)
        elif number == 3:
            found = pb.signed(pb.integer(number, wire, value))
        elif number == 7:
            found = (*(found or ()), *_floats(data, wire, value))
        elif number == 8:
            found = (*(found or ()), *(pb.signed(i) for i in pb.integers(data, number, wire, value)))
    return name, found


def _initializer(data, where: Span) -> Initializer:
    """A numeric TensorProto whose data (raw or typed, one kind) fills its dims exactly."""
    name, data_type, dims, counts, fields = "", 0, [], [], []
    for number, wire, value in _known(data, where, TENSOR_FIELDS, "an initializer"):
        if number == 1:
            dims += [pb.signed(d) for d in pb.integers(data, number, wire, value)]
        elif number == 2:
            data_type = pb.integer(number, wire, value)
        elif number == 8:
            name = _name(data, number, wire, value)
        elif number == 14 and pb.integer(number, wire, value) != 0:  # 1: EXTERNAL, another file's
            raise ValueError(f"initializer {name!r} has its data in another file (data_location "
                             "EXTERNAL), which lastedge never writes")
        elif number in DATA_FIELDS:
            counts.append((number, _count(data, number, wire, value, ELEMENT_BYTES.get(data_type, 1))))
            fields.append((number, wire, value))
    values = math.prod(dims)
    if data_type not in ELEMENT_BYTES or any(d < 0 for d in dims) or len(dims) > 8:
        raise ValueError(f"initializer {name!r} has element type {data_type} and dims {dims}")
    if len({number for number, _ in counts}) > 1 or sum(held for _, held in counts) != values:
        raise ValueError(f"initializer {name!r} declares dims {dims} ({values} values) but holds "
                         f"{sum(held for _, held in counts):g}")
    read = data_type == INT64 and values <= MAX_READ
    return Initializer(name, data_type, tuple(dims), _int64s(data, fields) if read else ())


def _int64s(data, fields: list) -> tuple[int, ...]:
    """The values of an int64 tensor's data fields: ``int64_data`` varints or little-endian
    ``raw_data`` (the count already checked against its dims)."""
    values: list[int] = []
    for number, wire, value in fields:
        if number == 9:
            values += np.frombuffer(pb.text(data, pb.span(number, wire, value)), dtype="<i8").tolist()
        elif number == 7:
            values += [pb.signed(v) for v in pb.integers(data, number, wire, value)]
    return tuple(values)


def _count(data, number: int, wire: int, value: pb.Value, element_bytes: int) -> float:
    """Values held by a data field: raw bytes over the element's size, fixed-size values, or
    varints (packed in one run, or one per field)."""
    if wire != pb.LENGTH:
        return 1
    start, end = value  # type: ignore[misc]  # a span for LENGTH
    size = element_bytes if number == 9 else DATA_FIELDS[number]
    if size:
        return (end - start) / size
    # packed varints: one ends at each byte below 0x80
    return int(np.count_nonzero(np.frombuffer(pb.text(data, (start, end)), dtype=np.uint8) < 0x80))


def _name(data, number: int, wire: int, value: pb.Value) -> str:
    return pb.text(data, pb.span(number, wire, value)).decode(errors="replace")


def _float(data, wire: int, value: pb.Value) -> float:
    if wire != pb.FIXED32:
        raise ValueError(f"a float attribute has wire type {wire}")
    return struct.unpack("<f", pb.text(data, value))[0]  # type: ignore[arg-type]


def _floats(data, wire: int, value: pb.Value) -> tuple[float, ...]:
    if wire == pb.FIXED32:
        return (_float(data, wire, value),)
    raw = pb.text(data, pb.span(7, wire, value))
    return tuple(np.frombuffer(raw[:len(raw) // 4 * 4], dtype="<f4").tolist())
