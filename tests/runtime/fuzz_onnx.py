"""Hostile ONNX files for the fuzz harness: valid protobuf, lastedge metadata, a graph that is not
one lastedge writes (a Loop of 2**31 trips, a ConstantOfShape of gigabytes, metadata that claims
preprocessing the graph lacks, ...). Built with ``onnx.helper``; only ``onnx.checker`` is skipped.
"""

from __future__ import annotations

import numpy as np


def _onnx():
    import onnx

    return onnx


def save(proto, metadata: dict, path) -> None:
    """Write ``proto`` with ``metadata`` as its ``lastedge`` entry (no check)."""
    import json

    onnx = _onnx()
    del proto.metadata_props[:]
    onnx.helper.set_model_props(proto, {"lastedge": json.dumps(metadata)})
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def _model(nodes, n: int, m: int, initializers: dict, opset: int = 17, **graph_fields):
    onnx = _onnx()
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    graph = helper.make_graph(
        nodes, "hostile",
        [helper.make_tensor_value_info("input", onnx.TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("scores", onnx.TensorProto.FLOAT, ["batch", m])],
        initializer=[numpy_helper.from_array(np.asarray(v), name) for name, v in initializers.items()],
        **graph_fields)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def weights(n: int, m: int) -> dict:
    return {"weights": np.ones((n, m), np.float32)}


def loop(n: int, m: int, trips: int):
    """A Loop of ``trips`` iterations (2**31, 1e15: onnxruntime never returned) before the scores."""
    onnx = _onnx()
    helper = onnx.helper
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Identity", ["carried_in"], ["carried_out"])], "body",
        [helper.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("carried_in", onnx.TensorProto.FLOAT, ["batch", n])],
        [helper.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []),
         helper.make_tensor_value_info("carried_out", onnx.TensorProto.FLOAT, ["batch", n])])
    nodes = [helper.make_node("Loop", ["trips", "go", "input"], ["looped"], body=body),
             helper.make_node("MatMul", ["looped", "weights"], ["scores"])]
    return _model(nodes, n, m, {"trips": np.array(trips, np.int64), "go": np.array(True), **weights(n, m)})


def constant_of_shape(n: int, m: int, size: tuple[int, int]):
    """ConstantOfShape of ``size`` (30000 x 25000 floats: 2.8 GB from a few hundred bytes),
    reduced and added to the scores."""
    helper = _onnx().helper
    nodes = [helper.make_node("ConstantOfShape", ["size"], ["block"]),
             helper.make_node("ReduceMean", ["block"], ["mean"], keepdims=0),
             helper.make_node("MatMul", ["input", "weights"], ["product"]),
             helper.make_node("Add", ["product", "mean"], ["scores"])]
    return _model(nodes, n, m, {"size": np.array(size, np.int64), **weights(n, m)})


def square(n: int, k: int, m: int):
    """Only allowed operators, but a product of constants [k, 1] x [1, k] -> [k, k]: larger than
    any constant in the file (k = 50000: 10 GB from 400 KB)."""
    helper = _onnx().helper
    nodes = [helper.make_node("MatMul", ["column", "row"], ["square"]),
             helper.make_node("MatMul", ["input", "dictionary"], ["projection"]),
             helper.make_node("Sub", ["projection", "square"], ["pre_activation"]),
             helper.make_node("Relu", ["pre_activation"], ["features"]),
             helper.make_node("MatMul", ["features", "weights"], ["scores"])]
    return _model(nodes, n, m, {"column": np.ones((k, 1), np.float32), "row": np.ones((1, k), np.float32),
                                "dictionary": np.ones((n, k), np.float32), "weights": np.ones((k, m), np.float32)})


def broadcast_rows(n: int, k: int, m: int):
    """Rows [batch, n] minus a constant [k, 1]: runs only when batch is 1, then as [k, n]."""
    helper = _onnx().helper
    nodes = [helper.make_node("Sub", ["input", "column"], ["spread"]),
             helper.make_node("MatMul", ["spread", "dictionary"], ["projection"]),
             helper.make_node("Relu", ["projection"], ["features"]),
             helper.make_node("MatMul", ["features", "weights"], ["scores"])]
    return _model(nodes, n, m, {"column": np.ones((k, 1), np.float32), "dictionary": np.ones((n, k), np.float32),
                                "weights": np.ones((k, m), np.float32)})


def external_data(n: int, m: int, target: str = "/etc/hostname"):
    """Weights whose data is "in" another file (onnxruntime would read it)."""
    onnx = _onnx()
    proto = _model([onnx.helper.make_node("MatMul", ["input", "weights"], ["scores"])], n, m, weights(n, m))
    tensor = proto.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    for key, value in (("location", target), ("offset", "0"), ("length", str(4 * n * m))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return proto


def with_function(n: int, m: int):
    """A model-local function called by a node of a custom domain."""
    onnx = _onnx()
    helper = onnx.helper
    function = helper.make_function("hostile", "Score", ["x", "w"], ["y"],
                                     [helper.make_node("MatMul", ["x", "w"], ["y"])],
                                     [helper.make_opsetid("", 17)])
    proto = _model([helper.make_node("Score", ["input", "weights"], ["scores"], domain="hostile")],
                   n, m, weights(n, m))
    proto.opset_import.append(helper.make_opsetid("hostile", 1))
    proto.functions.append(function)
    return proto
