"""Check a TFLite flatbuffer's structure before an interpreter reads it.

The legacy ``tflite_runtime`` (2.14, the 32-bit Pi's interpreter) builds a model without
verifying the flatbuffer: a file with a few damaged bytes crashed the process (SIGBUS) instead of
raising. This walks what an interpreter reads (subgraphs, tensors, operators, operator codes,
buffers, signatures) and checks every table, vector, string and index, that a constant
tensor's buffer holds exactly its shape's bytes, and that no other tensor (what an interpreter
allocates) holds more values than the file has bytes. Field numbers are those of TensorFlow Lite's
``schema.fbs``.
"""

from __future__ import annotations

import math
import struct

from . import flatbuffer as fb

# TensorType -> bytes per element, for the types an interpreter can hold in a buffer
ELEMENT_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 9: 1, 10: 8, 15: 4, 16: 2}
MAX_RANK = 8


def check_tflite_structure(data: bytes) -> None:
    """Raise ``ValueError`` unless ``data`` is a structurally sound TFLite model."""
    try:
        _check_model(data)
    except (struct.error, IndexError) as err:
        raise ValueError(f"truncated or malformed TFLite flatbuffer ({err})") from None


def _check_model(data: bytes) -> None:
    model = fb.root(data)
    codes = fb.tables(data, model, 1)
    buffers = fb.tables(data, model, 4)
    sizes = [len(fb.buffer(data, buffer)) for buffer in buffers]
    subgraphs = fb.tables(data, model, 2)
    if not subgraphs:
        raise ValueError("the model has no subgraph")
    _string(data, model, 3)  # description
    for code in codes:
        fb.scalar(data, code, 3, "<i")
        _string(data, code, 1)  # custom code
    for entry in fb.tables(data, model, 6):  # metadata: {name, buffer}
        _string(data, entry, 0)
        if fb.scalar(data, entry, 1, "<I") >= len(buffers):
            raise ValueError("a metadata entry names a buffer the model does not have")
    for subgraph in subgraphs:
        _check_subgraph(data, subgraph, len(codes), sizes)
    for signature in fb.tables(data, model, 7):
        _check_signature(data, signature, subgraphs)


def _check_subgraph(data: bytes, subgraph: int, n_codes: int, buffer_sizes: list[int]) -> None:
    _string(data, subgraph, 4)  # name
    tensors = fb.tables(data, subgraph, 0)
    for index, tensor in enumerate(tensors):
        _check_tensor(data, tensor, index, buffer_sizes)
    for field in (1, 2):  # the subgraph's inputs and outputs
        _indices(data, subgraph, field, len(tensors), "a subgraph input/output")
    for operator in fb.tables(data, subgraph, 3):
        if fb.scalar(data, operator, 0, "<I") >= n_codes:
            raise ValueError("an operator names an operator code the model does not have")
        # inputs (FULLY_CONNECTED's rows and weights must be there: LiteRT crashed (SIGSEGV) on
        # weights left out; its bias may be), outputs, intermediates
        for field, required in ((1, 2), (2, 0), (8, 0)):
            _indices(data, operator, field, len(tensors), "an operator input/output", required)
        options = fb.field(data, operator, 4)
        if options is not None:
            fb.table(data, options + fb.u32(data, options))
        fb.vector(data, operator, 5, 1)  # custom options


def _check_signature(data: bytes, signature: int, subgraphs: list[int]) -> None:
    subgraph = fb.scalar(data, signature, 4, "<I")
    if subgraph >= len(subgraphs):
        raise ValueError("a signature names a subgraph the model does not have")
    n_tensors = fb.vector(data, subgraphs[subgraph], 0, 4)[1]
    for field in (0, 1):  # the signature's inputs and outputs: {name, tensor_index}
        for tensor_map in fb.tables(data, signature, field):
            _string(data, tensor_map, 0)
            if fb.scalar(data, tensor_map, 1, "<I") >= n_tensors:
                raise ValueError("a signature names a tensor the subgraph does not have")
    _string(data, signature, 2)  # signature key


def _check_tensor(data: bytes, tensor: int, index: int, buffer_sizes: list[int]) -> None:
    shape = fb.ints(data, tensor, 0)
    if len(shape) > MAX_RANK or any(d < 0 for d in shape):
        raise ValueError(f"tensor {index} has an impossible shape {shape}")
    _string(data, tensor, 3)  # name
    kind = fb.scalar(data, tensor, 1, "<b")
    buffer = fb.scalar(data, tensor, 2, "<I")
    if buffer >= len(buffer_sizes):
        raise ValueError(f"tensor {index} names buffer {buffer}; the model has {len(buffer_sizes)}")
    if not buffer_sizes[buffer] and math.prod(shape) > len(data):
        # a row of a graph whose constants are in the file: a damaged batch of 9240577 rows
        # made the interpreter allocate 2.4 GB (std::bad_alloc on a small device)
        raise ValueError(f"tensor {index} has shape {shape}, more values than the whole file has bytes")
    if buffer_sizes[buffer]:
        if kind not in ELEMENT_BYTES:
            raise ValueError(f"tensor {index} is a constant of unsupported type {kind}")
        if buffer_sizes[buffer] != math.prod(shape) * ELEMENT_BYTES[kind]:
            raise ValueError(f"tensor {index}'s buffer holds {buffer_sizes[buffer]} bytes, "
                             f"its shape {shape} needs {math.prod(shape) * ELEMENT_BYTES[kind]}")
    quantization = fb.field(data, tensor, 4)
    if quantization is not None:
        quantization += fb.u32(data, quantization)
        fb.table(data, quantization)
        scales = fb.vector(data, quantization, 2, 4)[1]
        zero_points = fb.vector(data, quantization, 3, 8)[1]
        axis = fb.scalar(data, quantization, 6, "<i")
        if zero_points not in (0, scales) or (scales > 1 and not 0 <= axis < len(shape)):
            raise ValueError(f"tensor {index} has inconsistent quantization parameters")
        if scales > 1 and shape[axis] != scales:
            raise ValueError(f"tensor {index} has {scales} scales for {shape[axis]} channels")
    fb.ints(data, tensor, 7)  # shape signature






def _string(data: bytes, table: int, index: int) -> None:
    """A string field: inside the file, terminated, UTF-8 (interpreters decode names)."""
    start, length = fb.vector(data, table, index, 1)
    if (start or length) and fb.read("<B", data, start + length) != 0:
        raise IndexError(f"string at {start} is not terminated")
    try:
        data[start:start + length].decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"string at {start} is not UTF-8 text") from None




def _indices(data: bytes, table: int, index: int, n_tensors: int, what: str,
             required: int | None = None) -> None:
    """Tensor indices: the first ``required`` (None: all) name tensors, later ones may be -1 (an
    optional input left out)."""
    for position, i in enumerate(fb.ints(data, table, index)):
        if not (0 if required is None or position < required else -1) <= i < n_tensors:
            raise ValueError(f"{what} names a tensor the subgraph does not have")
