"""Only lastedge-shaped graphs run (issue 54): every file the exporters write passes the graph
check, and the hostile files of the issue (and their kin) are refused naming the file and the
first offending op, before any interpreter sees them."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from lastedge.runtime import Model, Preprocess, load
from lastedge.runtime.files import parse_header, tflite_metadata
from lastedge.runtime.onnx_check import check_onnx_graph
from lastedge.runtime.tflite_graph import check_tflite_graph

KINDS = ("none", "standardize", "l2", "center-l2")


def models():
    """(model, calibration rows) for each preprocessing, binary and with four classes."""
    rng = np.random.default_rng(0)
    for kind, classes in itertools.product(KINDS, (2, 4)):
        X = rng.normal(size=(100, 7)).astype(np.float32)
        preprocess = Preprocess(kind, X.mean(0), X.std(0)) if kind == "standardize" else Preprocess(kind)
        outputs = 1 if classes == 2 else classes
        yield Model(rng.normal(size=(7, 9)), rng.normal(size=(9, outputs)), np.arange(classes), 1.0, preprocess), X


ONNX_OPTIONS = {"fp32": [{}], "int8": [{"per_channel": per_channel, "signed_weights": signed}
                                       for per_channel in (True, False) for signed in (False, True)],
                "int8-dynamic": [{"signed_weights": signed} for signed in (False, True)],
                "int16x8": [{}]}


@pytest.mark.parametrize("precision", ONNX_OPTIONS)
def test_every_onnx_file_the_exporter_writes_passes(tmp_path, precision):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from lastedge.export import to_onnx

    for (model, X), options, in_graph in itertools.product(models(), ONNX_OPTIONS[precision], (False, True)):
        calibration = X if precision in ("int8", "int16x8") else None
        path = to_onnx(model, tmp_path / "m.onnx", precision=precision, calibration=calibration,
                       with_preprocessing=in_graph, **options)
        header = check_onnx_graph(path.read_bytes(), str(path))
        assert header.preprocess_in_graph == (in_graph and model.preprocess.kind != "none")
        predictor = load(path)
        assert predictor.decision_function(X[:3]).shape[0] == 3


def test_a_dynamic_onnx_file_of_a_digits_sized_model_loads(tmp_path):
    """onnxruntime's dynamic quantizer marks larger tensors data_location DEFAULT (field 14): the
    check refused every dynamic ONNX file of a 400-atom model; EXTERNAL data stays refused."""
    pytest.importorskip("onnx")
    import onnx

    from lastedge.export import to_onnx

    rng = np.random.default_rng(0)
    model = Model(rng.normal(size=(64, 400)) / 8, rng.normal(size=(400, 10)), np.arange(10), 1.0,
                  Preprocess("none"))
    path = to_onnx(model, tmp_path / "d.onnx", precision="int8-dynamic")
    proto = onnx.load(path)
    assert any(t.HasField("data_location") for t in proto.graph.initializer)
    assert load(path).decision_function(rng.normal(size=(3, 64))).shape == (3, 10)
    tensor = next(t for t in proto.graph.initializer if t.HasField("data_location"))
    tensor.data_location = onnx.TensorProto.EXTERNAL
    with pytest.raises(ValueError, match="has its data in another file"):
        check_onnx_graph(proto.SerializeToString(), "external.onnx")


@pytest.mark.parametrize("options", [{"precision": "fp32"}, {"precision": "int8"},
                                     {"precision": "int8", "per_channel": True}, {"precision": "int8-dynamic"},
                                     {"precision": "int16x8"}],
                         ids=["fp32", "int8", "int8-channels", "dynamic", "int16x8"])
def test_every_tflite_file_the_exporter_writes_passes(tmp_path, options):
    pytest.importorskip("tflite")
    from lastedge.export import to_tflite

    for model, X in models():
        calibration = X if options["precision"] in ("int8", "int16x8") else None
        path = to_tflite(model, tmp_path / "m.tflite", calibration=calibration, **options)
        data = path.read_bytes()
        check_tflite_graph(data, parse_header(tflite_metadata(data), str(path)), str(path))


def test_the_harness_files_that_lastedge_writes_all_load(base_files):
    for name, path in base_files.items():
        predictor = load(path)
        assert predictor.predict(np.zeros((2, predictor.n_features))).shape == (2,), name


# hostile file -> what the refusal names: the first offending op, or the metadata's claim
HOSTILE = {
    "tflite-while-recursion.tflite": r"operator code 0 \(WHILE\)",
    "tflite-while-forever.tflite": r"operator code 0 \(WHILE\)",
    "tflite-fill.tflite": r"operator code 0 \(FILL\)",
    "tflite-tile.tflite": r"operator code 0 \(TILE\)",
    "tflite-second-subgraph.tflite": "its subgraphs: 2",
    "tflite-three-layers.tflite": "its operators: 3",
    "tflite-atoms-disagree.tflite": "n_atoms 10",
    "tflite-claims-preprocessing.tflite": "it says the preprocessing is in the graph",
    "tflite-claims-int8.tflite": "op 0 .*metadata allows int8",
    "onnx-loop-2e31.onnx": r"node 0 \(Loop\): attribute 'body' holds a graph",
    "onnx-loop-1e15.onnx": r"node 0 \(Loop\)",
    "onnx-constant-of-shape.onnx": r"node 0 \(ConstantOfShape\)",
    "onnx-square.onnx": r"node 0 \(MatMul\): shape \[2000, 2000\] is larger than any constant",
    "onnx-broadcast-rows.onnx": r"node 0 \(Sub\): shapes .* broadcast only for some batch sizes",
    "onnx-external-data.onnx": "external_data",
    "onnx-function.onnx": "functions",
    "onnx-empty-input.onnx": r"node \d+ \(Max\): 2 input\(s\) \['\w+', ''\]",
    "onnx-claims-preprocessing.onnx": "it says the center-l2 preprocessing is in the graph, which has no Abs",
    "onnx-claims-int8.onnx": r"node 0 \(MatMul\)",
    "onnx-claims-signed-weights.onnx": "its metadata says int8 weights",
    "npz-bomb.npz": "expand .* more than 32 times",
    "npz-extra-member-bomb.npz": "expand .* more than 32 times",
    "npz-version-negative.npz": "unsupported format_version",
    "npz-version-future.npz": "unsupported format_version",
    "npz-header-tokenerror.npz": r"dictionary.npy has a corrupt .npy header \(TokenError",
    "npz-header-syntaxerror.npz": r"dictionary.npy has a corrupt .npy header \(SyntaxError",
    "fifo.npz": "is a FIFO",
    "fifo.onnx": "is a FIFO",
    "fifo.tflite": "is a FIFO",
    "dev-zero": "is a character device",
}


@pytest.fixture(scope="module")
def hostile(fuzz_cases, base_files, tmp_path_factory):
    return fuzz_cases.hostile_models(tmp_path_factory.mktemp("hostile"), base_files, chunks=16)


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_model_file_is_refused_naming_the_file_and_what_is_wrong(hostile, name):
    if name not in hostile:
        pytest.skip(f"{name}: its writer (onnx or tflite) is not installed")
    path = hostile[name]
    with pytest.raises(ValueError, match=HOSTILE[name]) as refused:
        load(path)
    assert str(path) in str(refused.value)


def test_trust_runs_a_graph_of_ones_own(hostile, tmp_path):
    """The metadata's claim is the check's, not the interpreter's: trusted, the file runs."""
    if "onnx-claims-preprocessing.onnx" not in hostile:
        pytest.skip("onnx is not installed")
    predictor = load(hostile["onnx-claims-preprocessing.onnx"], trust=True)
    assert predictor.preprocess_in_graph and predictor.predict(np.zeros((1, predictor.n_features))).shape == (1,)


def test_metadata_must_agree_with_the_tflite_precision(tmp_path):
    """An int8 file whose metadata says fp32 is refused by its tensors' types."""
    pytest.importorskip("tflite")
    from lastedge.export import to_tflite

    model, X = next(models())
    path = to_tflite(model, tmp_path / "q.tflite", precision="int8", calibration=X)
    data = path.read_bytes()
    header = parse_header(tflite_metadata(data), str(path))
    fields = {**header.fields, "precision": "fp32", "quantization": None}
    with pytest.raises(ValueError, match=r"op 0 \(FULLY_CONNECTED\): tensor types \[9, 9, 2, 9\]"):
        check_tflite_graph(data, parse_header(json.dumps(fields), str(path)), str(path))


@pytest.mark.parametrize("claims", ["int8", "fp32"])
def test_an_int16x8_file_must_say_so(tmp_path, claims):
    """A 16x8 file (int16 rows, int8 weights, int64 biases) whose metadata claims another
    precision is refused by its tensors' types; one that says int16x8 passes."""
    pytest.importorskip("tflite")
    from lastedge.export import to_tflite

    model, X = next(models())
    path = to_tflite(model, tmp_path / "q.tflite", precision="int16x8", calibration=X)
    data = path.read_bytes()
    header = parse_header(tflite_metadata(data), str(path))
    assert header.precision == "int16x8"
    fields = {**header.fields, "precision": claims}
    with pytest.raises(ValueError, match=r"op 0 \(FULLY_CONNECTED\): tensor types \[7, 9, 4, 7\]"):
        check_tflite_graph(data, parse_header(json.dumps(fields), str(path)), str(path))


def test_an_int16x8_onnx_file_must_say_so(tmp_path):
    """int16 zero points are refused in a file whose metadata says int8; an int16x8 file without
    any int16 activation is refused too."""
    pytest.importorskip("onnxruntime")
    import onnx
    from lastedge.export import to_onnx

    model, X = next(models())
    path = to_onnx(model, tmp_path / "q.onnx", precision="int16x8", calibration=X)
    proto = onnx.load(path)
    fields = json.loads(proto.metadata_props[0].value)
    proto.metadata_props[0].value = json.dumps({**fields, "precision": "int8"})
    with pytest.raises(ValueError, match="element type 5"):
        check_onnx_graph(proto.SerializeToString(), "claims-int8.onnx")
    int8 = onnx.load(to_onnx(model, tmp_path / "8.onnx", precision="int8", calibration=X,
                             signed_weights=True))
    int8.metadata_props[0].value = json.dumps({**json.loads(int8.metadata_props[0].value),
                                               "precision": "int16x8"})
    with pytest.raises(ValueError, match="no activation is 16-bit"):
        check_onnx_graph(int8.SerializeToString(), "claims-int16x8.onnx")


@pytest.mark.parametrize("change", ["float axes", "axes and attribute", "nine axes", "axes used elsewhere"])
def test_an_int16x8_reduction_takes_one_int64_constant_as_its_axes(tmp_path, change):
    """opset 21's Reduce* nodes take their axes as an input: an int64 constant of a few values
    read from the file, and used as nothing else; an axis of 1 passes, a graph from elsewhere that
    bends the rule is refused."""
    pytest.importorskip("onnxruntime")
    import onnx
    from onnx import helper, numpy_helper

    from lastedge.export import to_onnx

    model, X = next(m for m in models() if m[0].preprocess.kind == "center-l2")
    proto = onnx.load(to_onnx(model, tmp_path / "q.onnx", precision="int16x8", calibration=X,
                              with_preprocessing=True))
    check_onnx_graph(proto.SerializeToString(), "int16x8-graph.onnx")
    axes = next(t for t in proto.graph.initializer if t.name == "row_axis")
    reduce = next(n for n in proto.graph.node if n.op_type == "ReduceMax")
    if change == "float axes":
        axes.CopyFrom(numpy_helper.from_array(np.array([1.0], np.float32), "row_axis"))
    elif change == "axes and attribute":
        reduce.attribute.append(helper.make_attribute("axes", [1]))
    elif change == "nine axes":  # n_atoms values: a shape the rules allow, more than the reader reads
        axes.CopyFrom(numpy_helper.from_array(np.ones(9, np.int64), "row_axis"))
    else:
        sub = next(n for n in proto.graph.node if n.op_type == "Sub")
        sub.input[1] = "row_axis"
    with pytest.raises(ValueError, match="axes|int64 constant"):
        check_onnx_graph(proto.SerializeToString(), "bent.onnx")
