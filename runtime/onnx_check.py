"""Check that an ONNX file holds a graph lastedge's exporter writes, before onnxruntime sees it.

The nodes must be the operators of the precision the metadata declares (``CORE_OPS``), plus the
preprocessing's (``PREPROCESSING_OPS``) exactly when the metadata says it is in the graph; their
shapes are followed from the input [batch, n_features] through every node, and each must stay
within :class:`.graph_rules.Widths`; there must be two matrix products, giving n_atoms and then
n_outputs columns. A loop, a ``ConstantOfShape`` or ``Expand``, a node that broadcasts rows
against a constant into a square, and metadata that claims preprocessing the graph lacks are
refused, naming the file and the first offending node.
"""

from __future__ import annotations

import math

from .files import Header, parse_header
from .graph_rules import BATCH, Widths, atoms, precision_kinds, refusal
from .onnx_graph import FLOAT, INT64, Node, OnnxGraph, read_onnx_graph

CORE_OPS = {
    "fp32": {"MatMul", "Sub", "Relu"},
    "int8": {"QuantizeLinear", "DequantizeLinear", "Gemm", "Relu"},  # static QDQ
    "int8-dynamic": {"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul", "Sub", "Relu"},
    "int16x8": {"QuantizeLinear", "DequantizeLinear", "Gemm", "Relu"},  # static QDQ, opset 21
}
_L2 = {"Abs", "ReduceMax", "Max", "Div", "ReduceSumSquare", "Sqrt"}
PREPROCESSING_OPS = {"standardize": {"Sub", "Div"}, "l2": _L2, "center-l2": _L2 | {"ReduceMean", "Sub"}}
PREPROCESSING_ONLY = set().union(*PREPROCESSING_OPS.values()) - {"Sub"}  # Sub is the threshold's too
PRODUCTS = {"MatMul", "Gemm", "MatMulInteger"}
UNARY = {"Relu", "Abs", "Sqrt", "Cast", "QuantizeLinear", "DequantizeLinear"}
REDUCTIONS = {"ReduceMax", "ReduceMean", "ReduceSumSquare"}
# op -> (inputs required, inputs at most); every op has one output but DynamicQuantizeLinear
ARITY = {"MatMul": (2, 2), "MatMulInteger": (2, 4), "Gemm": (2, 3), "Sub": (2, 2), "Div": (2, 2),
         "Mul": (2, 2), "Max": (1, 2), "QuantizeLinear": (2, 3), "DequantizeLinear": (2, 3),
         **{op: (1, 2) for op in REDUCTIONS}}  # opset 18 on: the axes an (int64 constant) input
# inputs that may be left out (named ""): biases and zero points; onnxruntime 1.32 crashed
# (SIGSEGV) running a Max whose second input was left out
OPTIONAL_INPUTS = {"Gemm": {2}, "MatMulInteger": {2, 3}, "QuantizeLinear": {2}, "DequantizeLinear": {2}}
EIGHT_BIT = {"uint8": 2, "int8": 3}  # TensorProto.DataType of quantized weights
CONSTANT_TYPES = {FLOAT, 2, 3, 6}  # float, uint8, int8, int32
INT16 = 5  # the zero points of int16x8 files' activations
# int16x8 files (opset 21): int16 zero points, and int64 axes of the preprocessing's Reduce* nodes
INT16X8_TYPES = {INT16, INT64}


def check_onnx_graph(data, source: str) -> Header:
    """The metadata of the ONNX file whose bytes are ``data``, once its graph is checked to be
    one lastedge writes; ``ValueError`` naming ``source`` and the first offending node if not."""
    try:
        graph = read_onnx_graph(data)
    except ValueError as err:
        raise ValueError(f"{source} is not a readable ONNX file of lastedge's: {err}") from None
    header = parse_header(graph.metadata, source)
    domains = {domain for domain, _ in graph.opsets}
    if not domains <= {"", "ai.onnx"}:
        raise refusal(source, "its opset imports", f"operator domains {sorted(domains)} beyond ONNX's own")
    allowed, required = _operators(header, source)
    for index, node in enumerate(graph.nodes):
        if node.domain not in ("", "ai.onnx") or node.op_type not in allowed:
            raise refusal(source, _where(index, node), f"no {'/'.join(precision_kinds(header, source))} "
                          f"graph of lastedge's has this operator (preprocessing in the graph: "
                          f"{header.preprocess_in_graph})")
    types = CONSTANT_TYPES | (INT16X8_TYPES if precision_kinds(header, source) == ("int16x8",) else set())
    odd = [t for t in graph.initializers.values() if t.data_type not in types]
    if odd:
        raise refusal(source, f"constant {odd[0].name!r}", f"element type {odd[0].data_type}; "
                      "lastedge's constants are float, uint8, int8 or int32 (and int16, int64 axes "
                      "in int16x8 files)")
    shapes = _Shapes(graph, header, source)
    for index, node in enumerate(graph.nodes):
        shapes.run(node, _where(index, node))
    missing = required - {node.op_type for node in graph.nodes}
    if missing:
        raise refusal(source, "its metadata", f"it says the {header.preprocess.kind} preprocessing is "
                      f"in the graph, which has no {', '.join(sorted(missing))} node")
    shapes.finish()
    _check_weight_types(graph, header, source)
    return header


def _where(index: int, node: Node) -> str:
    return f"node {index} ({node.op_type}{f' {node.name!r}' if node.name else ''})"


def _operators(header: Header, source: str) -> tuple[set[str], set[str]]:
    """(operators allowed, operators required) by the metadata's precision and preprocessing."""
    allowed = set().union(*(CORE_OPS[kind] for kind in precision_kinds(header, source)))
    kind = header.preprocess.kind
    if not header.preprocess_in_graph or kind not in PREPROCESSING_OPS:
        return allowed, set()
    return allowed | PREPROCESSING_OPS[kind], PREPROCESSING_OPS[kind] - {"Sub", "Max"}


def _check_weight_types(graph: OnnxGraph, header: Header, source: str) -> None:
    """fp32 files hold float constants only; int8 and int16x8 files their matrices in 8 bits, of
    the type (uint8 or int8) the metadata records; int16x8 files int16 activations."""
    matrices = [t for t in graph.initializers.values() if len(t.dims) == 2]
    kinds = precision_kinds(header, source)
    if kinds == ("fp32",) and any(t.data_type != FLOAT for t in graph.initializers.values()):
        raise refusal(source, "its constants", "its metadata says fp32, but a constant is not float")
    if "fp32" not in kinds and not any(t.data_type in EIGHT_BIT.values() for t in matrices):
        raise refusal(source, "its constants", "its metadata says int8, but no matrix is 8-bit")
    if kinds == ("int16x8",) and not any(t.data_type == INT16 for t in graph.initializers.values()):
        raise refusal(source, "its constants", "its metadata says int16x8, but no activation is 16-bit")
    expected = EIGHT_BIT.get(header.weights or "")
    wrong = [t.name for t in matrices if expected and t.data_type in EIGHT_BIT.values() and t.data_type != expected]
    if wrong:
        raise refusal(source, f"constant {wrong[0]!r}", f"its metadata says {header.weights} weights")


class _Shapes:
    """The shape of every value, followed node by node from the graph's input and constants."""

    def __init__(self, graph: OnnxGraph, header: Header, source: str) -> None:
        self.graph, self.source = graph, source
        if len(graph.inputs) != 1 or len(graph.outputs) != 1:
            raise refusal(source, "its inputs and outputs", f"{len(graph.inputs)} input(s) and "
                          f"{len(graph.outputs)} output(s); lastedge's graphs have one of each")
        (name, elem_type, dims), = graph.inputs
        if elem_type != FLOAT or len(dims) != 2 or not isinstance(dims[0], str) or not (
                isinstance(dims[1], int) and dims[1] > 0):
            raise refusal(source, f"input {name!r}", f"type {elem_type} {dims}; lastedge's graphs take "
                          "float rows [batch, n_features]")
        declared = graph.outputs[0].shape
        header.check_graph(dims[1], declared[-1] if declared else None, source)
        constants = graph.initializers.values()
        candidates = {t.dims[1] for t in constants if len(t.dims) == 2 and t.dims[0] == dims[1]}
        largest = max([1, *(math.prod(t.dims) for t in constants)])
        self.widths = Widths(dims[1], atoms(header, candidates, source), header.n_outputs, largest)
        self.shapes = {name: (BATCH, dims[1])}
        self.products: list[tuple] = []
        for tensor in constants:
            self._set(tensor.name, tensor.dims, f"constant {tensor.name!r}")

    def _set(self, name: str, shape: tuple, where: str) -> None:
        problem = self.widths.problem(shape)
        if problem:
            raise refusal(self.source, where, problem)
        if name in self.shapes or not name:
            raise refusal(self.source, where, f"value {name!r} is defined twice (or has no name)")
        self.shapes[name] = shape

    def run(self, node: Node, where: str) -> None:
        """Follow ``node``: check its inputs are defined and set its outputs' shapes."""
        low, high = ARITY.get(node.op_type, (1, 1))
        optional = OPTIONAL_INPUTS.get(node.op_type, set())
        if not low <= len(node.inputs) <= high or any(
                not name and i not in optional for i, name in enumerate(node.inputs)):
            raise refusal(self.source, where, f"{len(node.inputs)} input(s) {list(node.inputs)}")
        undefined = [name for name in node.inputs if name and name not in self.shapes]
        if undefined:
            raise refusal(self.source, where, f"input {undefined[0]!r} is not defined before it "
                          "(a cycle, or a value from nowhere)")
        axes = node.inputs[1:] if node.op_type in REDUCTIONS else ()
        if any(self._is_axes(name) for name in node.inputs if name not in axes):
            raise refusal(self.source, where, "an int64 constant where only a Reduce's axes take one")
        inputs = [self.shapes[name] for name in node.inputs if name]
        outputs = self._outputs(node, inputs, where)
        if len(node.outputs) != len(outputs):
            raise refusal(self.source, where, f"{len(node.outputs)} output(s), {len(outputs)} expected")
        if node.op_type in PRODUCTS:
            self.products.append(outputs[0])
        for name, shape in zip(node.outputs, outputs):
            self._set(name, shape, where)

    def _outputs(self, node: Node, inputs: list[tuple], where: str) -> list[tuple]:
        op, attributes = node.op_type, node.attributes
        if op == "Cast" and attributes.get("to") != FLOAT:
            raise refusal(self.source, where, f"a cast to type {attributes.get('to')}, not float")
        if op in UNARY:
            return [inputs[0]]
        if op == "DynamicQuantizeLinear":
            return [inputs[0], (), ()]
        if op in REDUCTIONS:
            return [_reduced(inputs[0], self._axes(node, where), attributes.get("keepdims", 1),
                             lambda why: refusal(self.source, where, why))]
        if op in PRODUCTS:
            a, b = inputs[:2]
            if op == "Gemm":
                a, b = (a[::-1] if attributes.get("transA") else a), (b[::-1] if attributes.get("transB") else b)
            if len(a) != 2 or len(b) != 2 or a[1] != b[0]:
                raise refusal(self.source, where, f"a product of shapes {list(a)} and {list(b)}")
            product = (a[0], b[1])
            if op == "Gemm" and len(inputs) == 3:
                self._broadcast([product, inputs[2]], where)
            return [product]
        return [self._broadcast(inputs, where)]

    def _is_axes(self, name: str) -> bool:
        tensor = self.graph.initializers.get(name)
        return tensor is not None and tensor.data_type == INT64

    def _axes(self, node: Node, where: str) -> object:
        """A Reduce node's axes: its attribute (opset 17), or (opset 18 on) its second input, a
        constant int64 tensor of a few values; neither: every axis."""
        if len(node.inputs) == 1:
            return node.attributes.get("axes")
        tensor = self.graph.initializers.get(node.inputs[1])
        if "axes" in node.attributes or not self._is_axes(node.inputs[1]) or not tensor.values:
            raise refusal(self.source, where, "its axes are not one constant int64 tensor of a few values")
        return tensor.values

    def _broadcast(self, shapes: list[tuple], where: str) -> tuple:
        """numpy's broadcast of ``shapes``, where the batch matches only itself and 1."""
        rank = max(len(s) for s in shapes)
        result = []
        for dims in zip(*((1,) * (rank - len(s)) + tuple(s) for s in shapes)):
            sizes = {d for d in dims if d != 1}
            if len(sizes) > 1:
                raise refusal(self.source, where, f"shapes {[list(s) for s in shapes]} broadcast only "
                              "for some batch sizes")
            result.append(sizes.pop() if sizes else 1)
        return tuple(result)

    def finish(self) -> None:
        """The products give [batch, n_atoms] then [batch, n_outputs]; the output is the scores."""
        w = self.widths
        if self.products != [(BATCH, w.n_atoms), (BATCH, w.n_outputs)]:
            raise refusal(self.source, "its matrix products", f"they give {[list(p) for p in self.products]}; "
                          f"lastedge's give [batch, {w.n_atoms}] then [batch, {w.n_outputs}]")
        name, _, dims = self.graph.outputs[0]
        if self.shapes.get(name) != (BATCH, w.n_outputs) or len(dims) != 2 or dims[1] != w.n_outputs:
            raise refusal(self.source, f"output {name!r}", f"shape {self.shapes.get(name)} declared "
                          f"{dims}; lastedge's scores are [batch, {w.n_outputs}]")
        for name, _, dims in self.graph.value_info:
            problem = w.problem(tuple(BATCH if not isinstance(d, int) else d for d in dims))
            if problem:
                raise refusal(self.source, f"value {name!r}", f"declared {problem}")


def _reduced(shape: tuple, axes: object, keepdims: object, refuse) -> tuple:
    """The shape a Reduce* node gives over ``axes`` (None: every axis)."""
    axes = tuple(range(len(shape))) if axes is None else axes
    axes = (axes,) if isinstance(axes, int) else axes
    if not all(isinstance(a, int) and -len(shape) <= a < len(shape) for a in axes):
        raise refuse(f"axes {axes} of a shape {list(shape)}")
    axes = {a % len(shape) for a in axes}
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)

