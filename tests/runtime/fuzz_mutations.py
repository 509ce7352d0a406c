"""Structure-aware damage for the fuzz harness: files that still parse, with one thing changed.

Random bytes mostly break a file's framing, which the readers refuse at once; these mutations
keep ONNX and TFLite files well formed and change what the graph checks must judge: an operator
swapped for another (Loop, Tile, Expand, ...), a dimension, an element type, an input wired
elsewhere, an attribute, a metadata field.
"""

from __future__ import annotations

import copy
import json

import numpy as np

# Operators to swap in: lastedge's own, and ones that loop, allocate or reshape.
ONNX_OPS = ("MatMul", "Sub", "Relu", "Gemm", "Div", "Abs", "ReduceMax", "Max", "ReduceSumSquare", "Sqrt",
            "ReduceMean", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger",
            "Cast", "Mul", "Add", "Loop", "If", "Scan", "Expand", "Tile", "ConstantOfShape", "Reshape",
            "Resize", "Pad", "Concat", "Identity", "Shape", "Range", "Gather", "Slice", "Transpose")
TFLITE_CODES = (9, 9, 9, 0, 22, 2, 36, 69, 94, 118, 119, 32)  # FC (often), ADD, RESHAPE, CONCAT, ...
SIZES = (0, 1, 2, 3, 10, 12, 1 << 16, (1 << 31) - 1, -1)
ONNX_TYPES = (1, 2, 3, 6, 7, 9, 10, 11, 16)


def mutated_metadata(metadata: dict, rng: np.random.Generator) -> dict:
    """``metadata`` with one field set to an odd value."""
    metadata = copy.deepcopy(metadata)
    key = sorted(metadata)[rng.integers(len(metadata))]
    values = (None, True, 0, -5, 1, 2, 3, 1e308, "int8", "fp32", [], {}, [0, 1],
              {"kind": "l2"}, {"kind": "standardize", "mean": [0.0], "scale": [1.0]}, 2**40)
    metadata[key] = values[rng.integers(len(values))]
    return metadata


def mutated_onnx(data: bytes, rng: np.random.Generator) -> bytes:
    """An ONNX file (bytes) with one to three structural changes."""
    import onnx

    proto = onnx.load_from_string(data)
    graph = proto.graph
    for _ in range(rng.integers(1, 4)):
        kind = rng.integers(8)
        if kind == 0 and graph.initializer:
            tensor = graph.initializer[rng.integers(len(graph.initializer))]
            if tensor.dims:
                tensor.dims[rng.integers(len(tensor.dims))] = int(rng.choice(SIZES))
        elif kind == 1 and graph.initializer:
            graph.initializer[rng.integers(len(graph.initializer))].data_type = int(rng.choice(ONNX_TYPES))
        elif kind == 2:
            graph.node[rng.integers(len(graph.node))].op_type = str(rng.choice(ONNX_OPS))
        elif kind == 3:
            _rewire(graph, rng)
        elif kind == 4:
            node = graph.node[rng.integers(len(graph.node))]
            name, value = [("axes", [0]), ("axes", [-1, 0]), ("transA", 1), ("transB", 1), ("to", 7),
                           ("keepdims", 0), ("axis", 5)][rng.integers(7)]
            node.attribute.append(onnx.helper.make_attribute(name, value))
        elif kind == 5:
            info = [*graph.input, *graph.output, *graph.value_info][rng.integers(len(graph.input) + len(graph.output)
                                                                                 + len(graph.value_info))]
            dims = info.type.tensor_type.shape.dim
            if dims:
                dims[rng.integers(len(dims))].dim_value = int(rng.choice(SIZES[:-1]))
        elif kind == 6:
            at = rng.integers(len(graph.node))
            graph.node.insert(int(rng.integers(len(graph.node) + 1)), copy.deepcopy(graph.node[at]))
        else:
            entry = next(p for p in proto.metadata_props if p.key == "lastedge")
            entry.value = json.dumps(mutated_metadata(json.loads(entry.value), rng))
    return proto.SerializeToString()


def _rewire(graph, rng: np.random.Generator) -> None:
    """One node input set to another value's name (a later node's output: a cycle) or to ""."""
    names = ["", "input", *(t.name for t in graph.initializer), *(o for n in graph.node for o in n.output)]
    node = graph.node[rng.integers(len(graph.node))]
    if node.input:
        node.input[rng.integers(len(node.input))] = str(names[rng.integers(len(names))])


def mutated_tflite(rng: np.random.Generator, metadata: dict) -> bytes:
    """lastedge's TFLite graph (``fuzz_tflite.lastedge_graph``) with one to three changes."""
    import fuzz_tflite as t

    n, k, m = 12, 10, 3
    graph = t.lastedge_graph(n, k, m, seed=int(rng.integers(1 << 30)))
    subgraphs = [graph]
    for _ in range(rng.integers(1, 4)):
        kind = rng.integers(7)
        tensor = graph.tensors[rng.integers(len(graph.tensors))]
        op = graph.ops[rng.integers(len(graph.ops))]
        if kind == 0 and tensor.shape:
            shape = list(tensor.shape)
            shape[rng.integers(len(shape))] = int(rng.choice(SIZES[:-1]))
            tensor.shape = tuple(shape)
        elif kind == 1:
            tensor.type = int(rng.choice([0, 2, 3, 6, 9, 4]))
        elif kind == 2:
            op.code = int(rng.choice(TFLITE_CODES))
        elif kind == 3 and op.inputs:
            op.inputs[rng.integers(len(op.inputs))] = int(rng.integers(-1, len(graph.tensors) + 1))
        elif kind == 4:
            op.options = ("fc", int(rng.integers(0, 7))) if rng.random() < 0.7 else ("while", 0, 0)
        elif kind == 5:
            subgraphs.append(t.lastedge_graph(n, k, m))
        else:
            metadata = mutated_metadata(metadata, rng)
    return t.tflite_file(subgraphs, metadata)
