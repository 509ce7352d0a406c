"""ONNX export: the fp32 graph's exact form and metadata, int8 in integer arithmetic, parity."""

import json

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


from lastedge.export import assert_parity, describe, to_onnx  # noqa: E402
from lastedge.export.backends import onnxruntime_ops, run  # noqa: E402
from lastedge.export.onnx import OPSET  # noqa: E402
from lastedge.runtime import Model, Preprocess  # noqa: E402


def test_fp32_graph_is_exactly_four_nodes_with_a_dynamic_batch(random_model, tmp_path):
    model, X = random_model()
    path = to_onnx(model, tmp_path / "m.onnx")
    proto = onnx.load(path)
    assert [n.op_type for n in proto.graph.node] == ["MatMul", "Sub", "Relu", "MatMul"]
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", OPSET)]
    onnx.checker.check_model(proto, full_check=True)
    onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    (inp,), (out,) = proto.graph.input, proto.graph.output
    assert [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim] == ["batch", 20]
    assert [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] == ["batch", 3]
    for batch in (1, 257):
        assert run("onnxruntime", path, X[:batch]).shape == (batch, 3)


def test_metadata_records_the_contract(random_model, tmp_path):
    model, X = random_model(kind="standardize")
    proto = onnx.load(to_onnx(model, tmp_path / "m.onnx"))
    assert proto.producer_name == "lastedge" and "20 features" in proto.doc_string
    meta = json.loads({p.key: p.value for p in proto.metadata_props}["lastedge"])
    assert meta["classes"] == [0, 1, 2] and meta["alpha"] == 1.0 and meta["n_outputs"] == 3
    assert meta["preprocess"]["kind"] == "standardize"
    np.testing.assert_allclose(meta["preprocess"]["mean"], model.preprocess.mean)
    np.testing.assert_allclose(meta["preprocess"]["scale"], model.preprocess.scale)
    assert meta["preprocess_in_graph"] is False and meta["precision"] == "fp32"
    assert meta["format_version"] == 1 and meta["lastedge_version"]


@pytest.mark.parametrize("kind", ["none", "l2", "center-l2", "standardize"])
@pytest.mark.parametrize("with_preprocessing", [False, True])
def test_fp32_parity_for_every_preprocessing(random_model, tmp_path, kind, with_preprocessing):
    model, X = random_model(kind=kind, seed=1)
    path = to_onnx(model, tmp_path / "m.onnx", with_preprocessing=with_preprocessing)
    figures = assert_parity(model, path, X)
    assert figures["probe_rows"] > 10 and figures["rows"] == 300
    assert describe(path)["metadata"]["preprocess_in_graph"] is (with_preprocessing and kind != "none")
    core = ["MatMul", "Sub", "Relu", "MatMul"]
    if kind == "standardize" and with_preprocessing:  # (x - mean) / scale as ops, before the core
        assert describe(path)["ops"] == ["Sub", "Div", *core]
    elif not with_preprocessing:
        assert describe(path)["ops"] == core


def test_in_graph_normalisation_keeps_zero_and_constant_rows_at_zero(random_model, tmp_path):
    model, X = random_model(kind="center-l2")
    path = to_onnx(model, tmp_path / "m.onnx", with_preprocessing=True)
    rows = np.stack([np.zeros(20), np.full(20, 255.0), np.full(20, -3.0)]).astype(np.float32)
    np.testing.assert_array_equal(run("onnxruntime", path, rows), 0)
    np.testing.assert_array_equal(model.decision_function(rows), 0)


@pytest.mark.parametrize("kind", ["l2", "center-l2"])
def test_in_graph_normalisation_holds_for_rows_of_any_float32_magnitude(random_model, tmp_path, kind):
    """The squared norm of rows near 1e20 overflowed float32 (every score 0) and that of rows near
    1e-22 underflowed (the norm clamped far above the row's): the Python model normalises such
    rows exactly, so files disagreed with it, and rows near 1e15 failed the parity check's probes."""
    model, X = random_model(kind=kind)
    path = to_onnx(model, tmp_path / "m.onnx", with_preprocessing=True)
    extremes = np.float32([[3e38, -3e38, *[1e38] * 18], [1e-45, -2e-45, *[3e-45] * 18]])
    for rows in (X * np.float32(1e-22), X * np.float32(1e-42), X * np.float32(1e20), extremes):
        with np.errstate(over="ignore"):  # the Python model's float32 centring of 3e38 overflows, then
            expected = model.decision_function(rows)  # is redone in float64
        np.testing.assert_allclose(run("onnxruntime", path, rows), expected, rtol=1e-4, atol=1e-4)
    assert assert_parity(model, path, X * np.float32(1e15))["agreement"] == 1.0


def test_binary_model_has_one_output_column(binary_digits_case, tmp_path):
    model, X_train, X_test, y_test = binary_digits_case()
    path = to_onnx(model, tmp_path / "b.onnx")
    assert describe(path)["outputs"][0]["shape"] == ["batch", 1]
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["accuracy"] > 0.9


@pytest.mark.parametrize("per_channel", [True, False])
def test_static_int8_runs_fully_in_integer_arithmetic(digits_case, tmp_path, per_channel):
    model, X_train, y_train, X_test, y_test = digits_case()
    path = to_onnx(model, tmp_path / "q.onnx", precision="int8", calibration=X_train, per_channel=per_channel)
    ops = onnxruntime_ops(path)
    assert ops == ["QuantizeLinear", "QGemm", "QGemm", "DequantizeLinear"]
    assert not {"Sub", "Relu", "Gemm", "MatMul"} & set(ops)  # no float island left
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005
    assert figures["clipped"]["features"] < 0.001


@pytest.mark.parametrize("per_channel", [True, False])
def test_static_int8_gives_the_same_scores_fused_or_not(digits_case, tmp_path, per_channel):
    """onnxruntime's fused kernels for int8 weights sum pairs of 8-bit products in 16 bits and
    saturate on x86 CPUs without VNNI (there the fused file differed from the unfused one by up to
    6 points of score and in 5 % of the predictions). With uint8 weights the fused QGemm graph gives
    what the unfused DequantizeLinear -> Gemm reference gives, on every CPU, up to one step of the
    output's 8-bit grid (the two round intermediate sums differently)."""
    import onnxruntime as ort
    from onnx import numpy_helper

    model, X_train, _, X_test, _ = digits_case()
    path = to_onnx(model, tmp_path / "q.onnx", precision="int8", calibration=X_train, per_channel=per_channel)
    tensors = {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}
    assert tensors["dictionary_quantized"].dtype == tensors["weights_quantized"].dtype == np.uint8
    rows = model.preprocess.apply(X_test).astype(np.float32)
    scores = {}
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        scores[level] = session.run(None, {"input": rows})[0]
    np.testing.assert_allclose(*scores.values(), rtol=0, atol=1.01 * float(tensors["scores_scale"]))


def test_static_int8_with_preprocessing_keeps_the_core_integer(digits_case, tmp_path):
    model, X_train, y_train, X_test, y_test = digits_case()
    path = to_onnx(model, tmp_path / "q.onnx", precision="int8", calibration=X_train, with_preprocessing=True)
    ops = onnxruntime_ops(path)
    assert ops[-4:] == ["QuantizeLinear", "QGemm", "QGemm", "DequantizeLinear"]
    assert "Relu" not in ops
    assert assert_parity(model, path, X_test, y_test)["agreement"] >= 0.99


def test_dynamic_int8_needs_no_calibration(digits_case, tmp_path):
    model, X_train, y_train, X_test, y_test = digits_case()
    path = to_onnx(model, tmp_path / "d.onnx", precision="int8-dynamic")
    assert "MatMulInteger" in describe(path)["ops"]
    assert describe(path)["metadata"]["quantization"] == {"mode": "dynamic", "weights": "uint8"}
    figures = assert_parity(model, path, X_test, y_test)
    # uint8 weights: int8 ones saturated 16-bit sums on CPUs without VNNI (worst error 3.4 there)
    assert figures["agreement"] >= 0.99 and figures["max_score_error"] < 1.0


def test_int16x8_is_qdq_with_int16_activations_at_opset_21(digits_case, tmp_path):
    """int8 weights, int16 activations (symmetric: zero points 0) in QuantizeLinear and
    DequantizeLinear of opset 21; onnxruntime runs it through lastedge.runtime and it agrees."""
    model, X_train, _, X_test, y_test = digits_case()
    path = to_onnx(model, tmp_path / "q.onnx", precision="int16x8", calibration=X_train)
    proto = onnx.load(path)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 21)]
    zero_points = [onnx.numpy_helper.to_array(t) for t in proto.graph.initializer
                   if t.name.endswith("zero_point") and t.data_type == onnx.TensorProto.INT16]
    assert len(zero_points) == 4 and not any(np.any(z) for z in zero_points)  # input, 2 features, scores
    matrices = [t for t in proto.graph.initializer if len(t.dims) == 2]
    assert {t.data_type for t in matrices} == {onnx.TensorProto.INT8}
    assert describe(path)["metadata"]["precision"] == "int16x8"
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005


@pytest.mark.parametrize("kind", ["none", "l2", "center-l2", "standardize"])
def test_int16x8_with_preprocessing_takes_raw_rows(digits_case, tmp_path, kind):
    """The preprocessing in float ops before the int16 QDQ core, as in int8 files; at opset 21
    each Reduce* takes its axes as an int64 input. The file passes the export's parity bounds on
    raw held-out rows and runs through lastedge.runtime (the graph check included)."""
    from lastedge.runtime import load

    model, X_train, _, X_test, y_test = digits_case(kind)
    path = to_onnx(model, tmp_path / "q.onnx", precision="int16x8", calibration=X_train,
                   with_preprocessing=True)
    proto = onnx.load(path)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 21)]
    meta = describe(path)["metadata"]
    assert meta["preprocess_in_graph"] is (kind != "none") and meta["precision"] == "int16x8"
    assert meta["quantization"]["input_is_raw"] is False  # the core quantizes preprocessed rows
    reductions = [n for n in proto.graph.node if n.op_type.startswith("Reduce")]
    assert len(reductions) == {"l2": 2, "center-l2": 3}.get(kind, 0)
    assert all(list(n.input[1:]) == ["row_axis"] and all(a.name != "axes" for a in n.attribute)
               for n in reductions)
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005
    np.testing.assert_array_equal(load(path).predict(X_test), run("onnxruntime", path, X_test).argmax(1))


def test_int8_is_about_four_times_smaller_for_dictionary_heavy_models(random_model, tmp_path):
    model, X = random_model(n_features=784, n_atoms=400, n_classes=10)
    fp32 = to_onnx(model, tmp_path / "m.onnx").stat().st_size
    int8 = to_onnx(model, tmp_path / "q.onnx", precision="int8", calibration=X).stat().st_size
    assert 3.5 < fp32 / int8 < 4.1


def test_static_int8_with_standardisation_in_the_graph_quantizes_the_standardized_rows(random_model, tmp_path):
    """The file standardizes in float ops and quantizes what the core reads, as TFLite files do:
    folded into the dictionary, features of scales 100x apart gave columns D / scale that lost
    most of their 8 bits (an int8 digits model agreed on 63 % of the rows)."""
    model, X = random_model(n_features=32, n_atoms=60, n_classes=4, kind="standardize", seed=3)
    uneven = np.where(np.arange(32) % 2 == 0, 100.0, 1.0).astype(np.float32)
    model = Model(model.dictionary, model.weights, model.classes, model.alpha,
                  Preprocess("standardize", model.preprocess.mean * uneven, model.preprocess.scale * uneven))
    X = X * uneven
    path = to_onnx(model, tmp_path / "q.onnx", precision="int8", calibration=X, with_preprocessing=True)
    meta = describe(path)["metadata"]
    assert meta["preprocess_in_graph"] is True and meta["quantization"]["input_is_raw"] is False
    assert meta["quantization"]["input"][1] < 10  # the standardized range, not the raw one
    assert onnxruntime_ops(path) == ["Sub", "Div", "QuantizeLinear", "QGemm", "QGemm", "DequantizeLinear"]
    plain = to_onnx(model, tmp_path / "p.onnx", precision="int8", calibration=X)
    agreement = assert_parity(model, path, X, min_agreement=0.95)["agreement"]  # 97 %; folded: 53 %
    assert agreement == assert_parity(model, plain, X, min_agreement=0.95)["agreement"]


def test_standardisation_in_the_graph_keeps_fp32_parity_with_a_large_mean(random_model, tmp_path):
    """Folding (x - mean) / scale into the threshold cancelled catastrophically in float32 when
    features sit near 1000 (a sensor's offset): the file must subtract the mean first."""
    model, X = random_model(kind="standardize", seed=4)
    offset = np.float32(1000.0)
    shifted = Model(model.dictionary, model.weights, model.classes, model.alpha,
                    Preprocess("standardize", model.preprocess.mean + offset, model.preprocess.scale / 100))
    X = (X - model.preprocess.mean) / 100 + model.preprocess.mean + offset
    path = to_onnx(shifted, tmp_path / "m.onnx", with_preprocessing=True)
    figures = assert_parity(shifted, path, X)
    assert figures["agreement"] == 1.0
