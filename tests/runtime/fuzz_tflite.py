"""Hostile TFLite files for the fuzz harness: any graph, written with the ``tflite`` schema package.

``tflite_file`` writes subgraphs of tensors and operators as given (no check of any kind), so a
test can build what an attacker would: a WHILE whose condition is the main graph, a FILL of a size
chosen by the file, a second subgraph, and the exporter's own graph with one thing changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

FLOAT32, INT32, INT8, BOOL = 0, 2, 9, 6
FULLY_CONNECTED, WHILE, FILL, TILE = 9, 119, 94, 69


@dataclass
class Tensor:
    shape: tuple[int, ...]
    type: int = FLOAT32
    data: bytes = b""  # a constant's bytes, empty for a computed tensor
    signature: tuple[int, ...] | None = None


@dataclass
class Op:
    code: int  # BuiltinOperator
    inputs: list[int]
    outputs: list[int]
    options: tuple = ()  # ("fc", activation) or ("while", cond, body) or ()


@dataclass
class Subgraph:
    tensors: list[Tensor]
    inputs: list[int]
    outputs: list[int]
    ops: list[Op] = field(default_factory=list)


def tflite_file(subgraphs: list[Subgraph], metadata: dict | None) -> bytes:
    """The flatbuffer of ``subgraphs`` with ``metadata`` as its ``lastedge`` entry."""
    import flatbuffers
    import tflite as tfl

    b = flatbuffers.Builder(1024)
    buffers: list[bytes] = [b""]
    codes = sorted({op.code for sg in subgraphs for op in sg.ops})
    built = [_subgraph(b, tfl, sg, codes, buffers) for sg in subgraphs]
    buffers.append(json.dumps(metadata).encode() if metadata is not None else b"{}")
    entries = []
    if metadata is not None:
        name = b.CreateString("lastedge")
        tfl.MetadataStart(b)
        tfl.MetadataAddName(b, name)
        tfl.MetadataAddBuffer(b, len(buffers) - 1)
        entries.append(tfl.MetadataEnd(b))
    code_tables = []
    for code in codes:
        tfl.OperatorCodeStart(b)
        tfl.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tfl.OperatorCodeAddBuiltinCode(b, code)
        tfl.OperatorCodeAddVersion(b, 1)
        code_tables.append(tfl.OperatorCodeEnd(b))
    buffer_tables = []
    for data in buffers:
        vector = b.CreateNumpyVector(np.frombuffer(data, np.uint8)) if data else None
        tfl.BufferStart(b)
        if vector is not None:
            tfl.BufferAddData(b, vector)
        buffer_tables.append(tfl.BufferEnd(b))
    vectors = [_offsets(b, tables) for tables in (code_tables, built, buffer_tables, entries)]
    tfl.ModelStart(b)
    tfl.ModelAddVersion(b, 3)
    tfl.ModelAddOperatorCodes(b, vectors[0])
    tfl.ModelAddSubgraphs(b, vectors[1])
    tfl.ModelAddBuffers(b, vectors[2])
    tfl.ModelAddMetadata(b, vectors[3])
    b.Finish(tfl.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def _offsets(b, tables: list[int]) -> int:
    b.StartVector(4, len(tables), 4)
    for table in reversed(tables):
        b.PrependUOffsetTRelative(table)
    return b.EndVector()


def _ints(b, values) -> int:
    return b.CreateNumpyVector(np.asarray(values, dtype="<i4"))


def _subgraph(b, tfl, sg: Subgraph, codes: list[int], buffers: list[bytes]) -> int:
    tensors = []
    for t in sg.tensors:
        index = 0
        if t.data:
            buffers.append(t.data)
            index = len(buffers) - 1
        shape = _ints(b, t.shape)
        signature = _ints(b, t.signature) if t.signature is not None else None
        tfl.TensorStart(b)
        tfl.TensorAddShape(b, shape)
        if signature is not None:
            tfl.TensorAddShapeSignature(b, signature)
        tfl.TensorAddType(b, t.type)
        tfl.TensorAddBuffer(b, index)
        tensors.append(tfl.TensorEnd(b))
    ops = [_op(b, tfl, op, codes) for op in sg.ops]
    tensor_vector, op_vector = _offsets(b, tensors), _offsets(b, ops)
    inputs, outputs = _ints(b, sg.inputs), _ints(b, sg.outputs)
    tfl.SubGraphStart(b)
    tfl.SubGraphAddTensors(b, tensor_vector)
    tfl.SubGraphAddInputs(b, inputs)
    tfl.SubGraphAddOutputs(b, outputs)
    tfl.SubGraphAddOperators(b, op_vector)
    return tfl.SubGraphEnd(b)


def _op(b, tfl, op: Op, codes: list[int]) -> int:
    options, kind = None, 0
    if op.options and op.options[0] == "fc":
        tfl.FullyConnectedOptionsStart(b)
        tfl.FullyConnectedOptionsAddFusedActivationFunction(b, op.options[1])
        options, kind = tfl.FullyConnectedOptionsEnd(b), tfl.BuiltinOptions.FullyConnectedOptions
    elif op.options and op.options[0] == "while":
        tfl.WhileOptionsStart(b)
        tfl.WhileOptionsAddCondSubgraphIndex(b, op.options[1])
        tfl.WhileOptionsAddBodySubgraphIndex(b, op.options[2])
        options, kind = tfl.WhileOptionsEnd(b), tfl.BuiltinOptions.WhileOptions
    inputs, outputs = _ints(b, op.inputs), _ints(b, op.outputs)
    tfl.OperatorStart(b)
    tfl.OperatorAddOpcodeIndex(b, codes.index(op.code))
    tfl.OperatorAddInputs(b, inputs)
    tfl.OperatorAddOutputs(b, outputs)
    if options is not None:
        tfl.OperatorAddBuiltinOptionsType(b, kind)
        tfl.OperatorAddBuiltinOptions(b, options)
    return tfl.OperatorEnd(b)


def lastedge_graph(n: int, k: int, m: int, seed: int = 0) -> Subgraph:
    """The exporter's fp32 graph: two FULLY_CONNECTED layers (for variations on it)."""
    rng = np.random.default_rng(seed)

    def const(*shape: int) -> bytes:
        return rng.normal(size=shape).astype("<f4").tobytes()

    tensors = [Tensor((1, n), signature=(-1, n)), Tensor((k, n), data=const(k, n)), Tensor((k,), data=const(k)),
               Tensor((1, k), signature=(-1, k)), Tensor((m, k), data=const(m, k)), Tensor((m,), data=const(m)),
               Tensor((1, m), signature=(-1, m))]
    ops = [Op(FULLY_CONNECTED, [0, 1, 2], [3], ("fc", 1)), Op(FULLY_CONNECTED, [3, 4, 5], [6], ("fc", 0))]
    return Subgraph(tensors, [0], [6], ops)


def while_recursion(n: int, m: int) -> list[Subgraph]:
    """A WHILE whose condition subgraph is the main graph itself (both interpreters crashed)."""
    main = Subgraph([Tensor((1, n)), Tensor((1, m))], [0], [1], [Op(WHILE, [0], [1], ("while", 0, 1))])
    body = Subgraph([Tensor((1, n))], [0], [0])
    return [main, body]


def while_forever(n: int, m: int) -> list[Subgraph]:
    """A WHILE whose condition is a constant true: it never ends."""
    main = Subgraph([Tensor((1, n)), Tensor((1, n))], [0], [1], [Op(WHILE, [0], [1], ("while", 1, 2))])
    cond = Subgraph([Tensor((1, n)), Tensor((), BOOL, b"\x01")], [0], [1])
    body = Subgraph([Tensor((1, n))], [0], [0])
    return [main, cond, body]


def allocation(code: int, size: tuple[int, int], n: int) -> list[Subgraph]:
    """FILL (or TILE) of a size the file chooses, its result declared small: a few hundred bytes
    that ask for gigabytes at predict."""
    dims = Tensor((2,), INT32, np.asarray(size, "<i4").tobytes())
    if code == FILL:
        tensors = [Tensor((1, n)), dims, Tensor((), FLOAT32, np.float32(1).tobytes()), Tensor((1, 1))]
        return [Subgraph(tensors, [0], [3], [Op(FILL, [1, 2], [3])])]
    tensors = [Tensor((1, n)), dims, Tensor((1, n))]
    return [Subgraph(tensors, [0], [2], [Op(TILE, [0, 1], [2])])]
