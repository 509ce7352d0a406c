"""``runtime.tflite_check``: damage that crashed the legacy interpreter (SIGBUS / SIGSEGV in
fuzzing) is refused before any interpreter reads the file; every exported file passes."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from lastedge.runtime import flatbuffer as fb
from lastedge.runtime import load
from lastedge.runtime.tflite_check import check_tflite_structure

pytest.importorskip("tflite")  # the exporter's schema package writes the files checked here
from lastedge.export import to_tflite


@pytest.fixture(scope="module", params=["fp32", "int8"])
def exported(blobs, prototype_model, request, tmp_path_factory) -> bytes:
    X, y = blobs()
    path = tmp_path_factory.mktemp("check") / "m.tflite"
    to_tflite(prototype_model(X, y), path, precision=request.param,
              calibration=X if request.param == "int8" else None)
    return path.read_bytes()


def first_subgraph(data: bytes) -> int:
    return fb.tables(data, fb.root(data), 2)[0]


def with_u32(data: bytes, pos: int, value: int) -> bytes:
    damaged = bytearray(data)
    struct.pack_into("<I", damaged, pos, value)
    return bytes(damaged)


def test_every_exported_file_passes(exported):
    check_tflite_structure(exported)


def test_a_field_outside_its_table(exported):
    tensor = fb.tables(exported, first_subgraph(exported), 0)[0]
    vtable = tensor - fb.read("<i", exported, tensor)
    damaged = bytearray(exported)
    struct.pack_into("<H", damaged, vtable + 4, 0x9300)  # field 0 far past the table's end
    with pytest.raises(ValueError, match="lies outside it"):
        check_tflite_structure(bytes(damaged))


def test_a_name_past_the_end_of_the_file(exported):
    tensor = fb.tables(exported, first_subgraph(exported), 0)[-1]
    name = fb.field(exported, tensor, 3)
    with pytest.raises(ValueError, match="truncated or malformed"):
        check_tflite_structure(with_u32(exported, name, 0x26000000))


def test_an_operator_input_that_is_not_a_tensor(exported):
    operator = fb.tables(exported, first_subgraph(exported), 3)[0]
    inputs = fb.field(exported, operator, 1)
    first_input = inputs + fb.u32(exported, inputs) + 4
    with pytest.raises(ValueError, match="an operator input/output names a tensor"):
        check_tflite_structure(with_u32(exported, first_input, 999))


def test_an_operator_without_its_weights_is_refused(exported):
    """Weights marked left out (-1, as an optional input is): LiteRT crashed (SIGSEGV) loading the
    file. A bias may be left out."""
    operator = fb.tables(exported, first_subgraph(exported), 3)[0]
    inputs = fb.field(exported, operator, 1)
    weights = inputs + fb.u32(exported, inputs) + 8  # past the length and the rows' tensor
    with pytest.raises(ValueError, match="an operator input/output names a tensor"):
        check_tflite_structure(with_u32(exported, weights, 0xFFFFFFFF))
    check_tflite_structure(with_u32(exported, weights + 4, 0xFFFFFFFF))


def test_a_signature_tensor_that_is_not_there(exported):
    signatures = fb.tables(exported, fb.root(exported), 7)
    if not signatures:
        pytest.skip("no signature in this file")
    tensor_map = fb.tables(exported, signatures[0], 1)[0]  # the output: a tensor index > 0 is stored
    with pytest.raises(ValueError, match="a signature names a tensor"):
        check_tflite_structure(with_u32(exported, fb.field(exported, tensor_map, 1), 999))


def first_dim_of_a_tensor(data: bytes, constant: bool) -> int:
    """The position of the first dimension of the first constant (or other) tensor's shape."""
    sizes = [len(fb.buffer(data, b)) for b in fb.tables(data, fb.root(data), 4)]
    tensor = next(t for t in fb.tables(data, first_subgraph(data), 0)
                  if bool(sizes[fb.scalar(data, t, 2, "<I")]) == constant)
    shape = fb.field(data, tensor, 0)
    return shape + fb.u32(data, shape) + 4


def test_a_constant_whose_buffer_is_not_its_shape(exported):
    first_dim = first_dim_of_a_tensor(exported, constant=True)
    dim = fb.u32(exported, first_dim)
    with pytest.raises(ValueError, match="buffer holds .* bytes, its shape .* needs"):
        check_tflite_structure(with_u32(exported, first_dim, dim + 1))


def test_a_tensor_larger_than_the_file_is_refused_before_it_is_allocated(exported):
    """A damaged input shape [9240577, 24] (one changed byte): the legacy interpreter allocated
    it in allocate_tensors and raised std::bad_alloc (MemoryError), after gigabytes."""
    first_dim = first_dim_of_a_tensor(exported, constant=False)
    with pytest.raises(ValueError, match=r"tensor 0 has shape \[9240577, 24\], more values than the whole file"):
        check_tflite_structure(with_u32(exported, first_dim, 9240577))
    check_tflite_structure(with_u32(exported, first_dim, 2))  # a batch of 2 is no damage


def test_load_refuses_a_damaged_file_by_name(exported, tmp_path):
    tensor = fb.tables(exported, first_subgraph(exported), 0)[-1]
    path = tmp_path / "damaged.tflite"
    path.write_bytes(with_u32(exported, fb.field(exported, tensor, 3), 0x26000000))
    with pytest.raises(ValueError, match=f"{path}: truncated or malformed TFLite flatbuffer"):
        load(path).predict(np.zeros((1, 24)))


def test_the_legacy_interpreter_refuses_int16x8_files(blobs, prototype_model, tmp_path):
    """tflite-runtime 2.14 computes 16x8 files differently from LiteRT (80 % of predictions agreed
    on digits): loading one there is refused before any wrong answer (LiteRT's class stands in for
    the legacy one, which needs numpy < 2)."""
    pytest.importorskip("ai_edge_litert")
    from ai_edge_litert.interpreter import Interpreter

    from lastedge.runtime.backends import TFLitePredictor

    X, y = blobs()
    path = to_tflite(prototype_model(X, y), tmp_path / "m.tflite", precision="int16x8", calibration=X)
    with pytest.raises(ValueError, match="int16x8 file, which tflite-runtime 2.14 computes differently"):
        TFLitePredictor(path, Interpreter, "tflite_runtime")
    assert TFLitePredictor(path, Interpreter, "litert").precision == "int16x8"
