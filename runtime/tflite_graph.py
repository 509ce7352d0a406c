"""Check that a TFLite file holds the graph lastedge's exporter writes, before an interpreter sees it.

``export.tflite`` writes one subgraph of two FULLY_CONNECTED ops: rows [batch, n_features] times
the dictionary [n_atoms, n_features] (bias: minus the thresholds, fused RELU), then times the
weights [n_outputs, n_atoms]; float32, int8 (static) or float32 rows with int8 weights (dynamic).
Any other operator (WHILE, whose subgraphs can recurse into the main graph and crashed both
interpreters; FILL or TILE of sizes read from the file), a second subgraph, a custom or sparse
tensor, or a shape beyond :class:`.graph_rules.Widths` is refused, naming the file and the first
offending op. Runs after ``tflite_check`` has checked every table, vector and index; field
numbers are those of TensorFlow Lite's ``schema.fbs``.
"""

from __future__ import annotations

import math
import struct

from . import flatbuffer as fb
from .files import Header, parse_header, tflite_metadata
from .tflite_check import check_tflite_structure
from .graph_rules import BATCH, Widths, atoms, precision_kinds, refusal

FULLY_CONNECTED, FULLY_CONNECTED_OPTIONS = 9, 8  # BuiltinOperator, BuiltinOptions
NONE, RELU = 0, 1  # ActivationFunctionType
FLOAT32, INT32, INT8 = 0, 2, 9  # TensorType
# the types of (rows and features, weights, bias) in each kind of file
TYPES = {"fp32": (FLOAT32, FLOAT32, FLOAT32), "int8": (INT8, INT8, INT32),
         "int8-dynamic": (FLOAT32, INT8, FLOAT32)}
# Operator fields lastedge never writes: custom options (5, 6), mutating variable inputs (7),
# intermediates (8), large custom options (9, 10), second builtin options (11, 12)
UNUSED_OPERATOR_FIELDS = (5, 6, 7, 8, 9, 10, 11, 12)
MAX_TENSORS = 64  # the exporter writes 7
# BuiltinOperator names of ops seen in hostile files, for the message
OPERATOR_NAMES = {22: "RESHAPE", 32: "CUSTOM", 69: "TILE", 94: "FILL", 118: "IF", 119: "WHILE",
                  121: "CALL_ONCE"}


def check_tflite_graph(data: bytes, header: Header, source: str) -> None:
    """Raise ``ValueError`` naming ``source`` and the first offending op unless ``data`` (a file
    ``tflite_check.check_tflite_structure`` accepted) is a graph lastedge writes."""
    try:
        _check(data, header, source)
    except (struct.error, IndexError) as err:
        raise ValueError(f"{source}: truncated or malformed TFLite flatbuffer ({err})") from None


def _check(data: bytes, header: Header, source: str) -> None:
    model = fb.root(data)
    for index, code in enumerate(fb.tables(data, model, 1)):
        builtin = max(fb.scalar(data, code, 0, "<b"), fb.scalar(data, code, 3, "<i"))
        if builtin != FULLY_CONNECTED or fb.field(data, code, 1) is not None:
            name = "a custom op" if fb.field(data, code, 1) is not None else OPERATOR_NAMES.get(
                builtin, f"builtin operator {builtin}")
            raise refusal(source, f"operator code {index} ({name})", "lastedge's files use "
                          "FULLY_CONNECTED only")
    subgraphs = fb.tables(data, model, 2)
    if len(subgraphs) != 1:
        raise refusal(source, "its subgraphs", f"{len(subgraphs)}; lastedge's files have one")
    if header.preprocess_in_graph and header.preprocess.kind != "none":
        raise refusal(source, "its metadata", "it says the preprocessing is in the graph; lastedge's "
                      "TFLite graphs never hold it")
    subgraph = subgraphs[0]
    tables = fb.tables(data, subgraph, 0)
    if len(tables) > MAX_TENSORS:
        raise refusal(source, "its tensors", f"{len(tables)}, more than {MAX_TENSORS}")
    constants = [bool(fb.buffer(data, b)) for b in fb.tables(data, model, 4)]
    tensors = [_tensor(data, t, i, constants, source) for i, t in enumerate(tables)]
    inputs, outputs = fb.ints(data, subgraph, 1), fb.ints(data, subgraph, 2)
    if len(inputs) != 1 or len(outputs) != 1:
        raise refusal(source, "its inputs and outputs", f"{len(inputs)} input(s), {len(outputs)} "
                      "output(s); lastedge's graphs have one of each")
    operators = fb.tables(data, subgraph, 3)
    scores = tensors[outputs[0]][0]
    header.check_graph(tensors[inputs[0]][0][-1] if tensors[inputs[0]][0] else None,
                       scores[-1] if scores else None, source)
    widths = _widths(data, operators, tensors, inputs[0], header, source)
    for index, (shape, _, _) in enumerate(tensors):
        problem = widths.problem(shape)
        if problem:
            raise refusal(source, f"tensor {index}", problem)
    last = _follow(data, operators, tensors, inputs[0], widths, source)
    if last != outputs[0]:
        raise refusal(source, "its output", f"tensor {outputs[0]}, not the last op's result {last}")
    _check_types(operators, data, tensors, header, source)


def _tensor(data: bytes, tensor: int, index: int, constants: list[bool],
            source: str) -> tuple[tuple, int, bool]:
    """(shape with ``BATCH`` first for a block of rows, type, whether it is a constant)."""
    if fb.scalar(data, tensor, 5, "<B") or any(fb.field(data, tensor, f) is not None for f in (6, 9)):
        raise refusal(source, f"tensor {index}", "a variable, sparse or variant tensor")
    shape = fb.ints(data, tensor, 0)
    signature = fb.ints(data, tensor, 7)
    constant = constants[fb.scalar(data, tensor, 2, "<I")]
    if signature and (len(signature) != len(shape) or any(
            s != d for s, d in zip(signature[1:], shape[1:])) or signature[0] not in (-1, shape[0])):
        raise refusal(source, f"tensor {index}", f"shape signature {signature} for shape {shape}")
    if not constant and len(shape) == 2 and shape[0] == 1:
        shape = [BATCH, shape[1]]
    return tuple(shape), fb.scalar(data, tensor, 1, "<b"), constant


def _widths(data: bytes, operators: list[int], tensors: list, rows: int, header: Header,
            source: str) -> Widths:
    shape = tensors[rows][0]
    if len(shape) != 2 or shape[0] != BATCH:
        raise refusal(source, f"input tensor {rows}", f"shape {list(shape)}; lastedge's graphs take "
                      "rows [batch, n_features]")
    n_features = shape[1]
    first = fb.ints(data, operators[0], 1) if operators else []
    candidates = {tensors[first[1]][0][0]} if len(first) > 1 and len(tensors[first[1]][0]) == 2 else set()
    largest = max([1, *(math.prod(s) for s, _, constant in tensors if constant)])
    return Widths(n_features, atoms(header, candidates, source), header.n_outputs, largest)


def _follow(data: bytes, operators: list[int], tensors: list, rows: int, widths: Widths,
            source: str) -> int:
    """Check the ops are the two FULLY_CONNECTED layers, in order; the index of the last's result."""
    if len(operators) != 2:
        raise refusal(source, "its operators", f"{len(operators)}; lastedge's graphs have two")
    current = rows
    for index, (operator, units) in enumerate(zip(operators, (widths.n_atoms, widths.n_outputs))):
        where = f"op {index} (FULLY_CONNECTED)"
        if any(fb.field(data, operator, f) is not None for f in UNUSED_OPERATOR_FIELDS):
            raise refusal(source, where, "custom options, variables or intermediates")
        _check_options(data, operator, index, where, source)
        ins, outs = fb.ints(data, operator, 1), fb.ints(data, operator, 2)
        if len(ins) not in (2, 3) or len(outs) != 1 or ins[0] != current:
            raise refusal(source, where, f"inputs {ins} and outputs {outs}; expected the previous "
                          f"result {current}, weights and bias")
        width = tensors[current][0][1]
        expected = [(units, width)] + ([(units,)] if len(ins) == 3 and ins[2] >= 0 else [])
        found = [tensors[i][0] for i in ins[1:] if i >= 0]
        if found != expected or not all(tensors[i][2] for i in ins[1:] if i >= 0):
            raise refusal(source, where, f"weights and bias {found}; expected constants {expected}")
        if tensors[outs[0]][2] or tensors[outs[0]][0] != (BATCH, units) or outs[0] in (rows, *ins):
            raise refusal(source, where, f"its result (tensor {outs[0]}) is no new block [batch, {units}]")
        current = outs[0]
    return current


def _check_options(data: bytes, operator: int, index: int, where: str, source: str) -> None:
    """FullyConnectedOptions: RELU after the first layer, none after the second, default weights."""
    options = fb.field(data, operator, 4)
    if fb.scalar(data, operator, 3, "<B") != FULLY_CONNECTED_OPTIONS or options is None:
        raise refusal(source, where, "it has no FullyConnectedOptions")
    options += fb.u32(data, options)
    activation = fb.scalar(data, options, 0, "<b")
    if activation != (RELU if index == 0 else NONE) or fb.scalar(data, options, 1, "<b") or \
            fb.scalar(data, options, 2, "<B"):
        raise refusal(source, where, f"activation {activation}, shuffled weights or kept dimensions")


def _check_types(operators: list[int], data: bytes, tensors: list, header: Header, source: str) -> None:
    """The rows', weights' and biases' types are those of a precision the metadata allows."""
    kinds = precision_kinds(header, source)
    for index, operator in enumerate(operators):
        ins, outs = fb.ints(data, operator, 1), fb.ints(data, operator, 2)
        found = [tensors[i][1] for i in (*ins, *outs) if i >= 0]
        expected = {kind: [rows, weights] + [bias] * (len(found) - 3) + [rows]
                    for kind, (rows, weights, bias) in TYPES.items() if kind in kinds}
        if found not in expected.values():
            raise refusal(source, f"op {index} (FULLY_CONNECTED)", f"tensor types {found}; its "
                          f"metadata allows {' or '.join(f'{k} {v}' for k, v in expected.items())}")



def checked_tflite_header(content: bytes, path: str, trust: bool = False) -> Header:
    """The ``lastedge`` header of ``.tflite`` bytes read from ``path``, after the structure check
    and, unless ``trust``, the graph check: what ``load`` and ``inspect`` both run before reading
    anything else. Raises ``ValueError`` naming ``path`` and the problem."""
    try:
        metadata = tflite_metadata(content)
        check_tflite_structure(content)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    header = parse_header(metadata, path)
    if not trust:
        check_tflite_graph(content, header, path)
    return header
