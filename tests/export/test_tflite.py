"""TFLite export: two FULLY_CONNECTED ops, full-int8 tensors, metadata, parity in ai-edge-litert."""

import numpy as np
import pytest

tfl = pytest.importorskip("tflite")
pytest.importorskip("ai_edge_litert.interpreter")


from lastedge.export import assert_parity, describe, to_tflite  # noqa: E402
from lastedge.export.backends import run  # noqa: E402
from lastedge.export.quantize import relu_bias_floor  # noqa: E402
from lastedge.runtime import Model  # noqa: E402


def _tensors(path):
    model = tfl.Model.GetRootAs(path.read_bytes(), 0)
    graph = model.Subgraphs(0)
    return model, [graph.Tensors(i) for i in range(graph.TensorsLength())]


def test_fp32_file_is_two_fully_connected_ops_with_signature_and_metadata(random_model, tmp_path):
    model, X = random_model(kind="standardize")
    path = to_tflite(model, tmp_path / "m.tflite")
    info = describe(path)
    assert info["ops"] == ["FULLY_CONNECTED", "FULLY_CONNECTED"]
    assert info["signatures"] == ["serving_default"]
    assert info["inputs"][0]["shape"] == [-1, 20] and info["outputs"][0]["shape"] == [-1, 3]
    meta = info["metadata"]
    assert meta["classes"] == [0, 1, 2] and meta["preprocess"]["kind"] == "standardize"
    assert meta["preprocess_in_graph"] is False and len(meta["preprocess"]["mean"]) == 20
    flat, tensors = _tensors(path)
    assert flat.Buffers(0).DataLength() == 0  # buffer 0 stays empty
    offset = path.read_bytes().find(model.dictionary.T.tobytes())
    assert offset > 0 and offset % 16 == 0  # constant buffers are 16-byte aligned
    for batch in (1, 300):
        assert run("ai-edge-litert", path, model.preprocess.apply(X[:batch])).shape == (batch, 3)


@pytest.mark.parametrize("kind", ["none", "l2", "center-l2", "standardize"])
def test_fp32_parity(random_model, tmp_path, kind):
    model, X = random_model(kind=kind, seed=2)
    figures = assert_parity(model, to_tflite(model, tmp_path / "m.tflite"), X)
    assert figures["max_score_error"] < 1e-3 and figures["probe_rows"] > 10


def test_binary_fp32_and_int8(binary_digits_case, tmp_path):
    model, X_train, X_test, y_test = binary_digits_case()
    assert_parity(model, to_tflite(model, tmp_path / "b.tflite"), X_test, y_test)
    q = to_tflite(model, tmp_path / "b8.tflite", precision="int8", calibration=X_train)
    assert describe(q)["outputs"][0]["shape"] == [-1, 1]
    assert assert_parity(model, q, X_test, y_test)["agreement"] >= 0.99


@pytest.mark.parametrize("per_channel", [False, True])
def test_int8_is_full_integer_and_meets_the_bounds_on_digits(digits_case, tmp_path, per_channel):
    model, X_train, y_train, X_test, y_test = digits_case()
    path = to_tflite(model, tmp_path / "q.tflite", precision="int8", calibration=X_train, per_channel=per_channel)
    _, tensors = _tensors(path)
    T = tfl.TensorType
    assert [t.Type() for t in tensors] == [T.INT8, T.INT8, T.INT32, T.INT8, T.INT8, T.INT32, T.INT8]
    weights = tensors[1].Quantization()
    assert weights.ScaleLength() == (model.n_atoms if per_channel else 1)
    assert set(weights.ZeroPointAsNumpy().tolist()) == {0}  # symmetric
    assert tensors[3].Quantization().ZeroPointAsNumpy().tolist() == [-128]  # after the fused ReLU
    s_x = tensors[0].Quantization().ScaleAsNumpy()[0]
    bias = tensors[2].Quantization()
    np.testing.assert_allclose(bias.ScaleAsNumpy(), s_x * weights.ScaleAsNumpy(), rtol=1e-6)
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005
    assert 0 < figures["mean_score_error"] <= figures["max_score_error"]


def test_int16x8_is_16_bit_activations_and_meets_the_bounds_on_digits(digits_case, tmp_path):
    """TFLite's 16x8 mode: int16 rows, features and scores (symmetric), int8 weights, int64
    biases; LiteRT runs it through lastedge.runtime and it agrees with the model."""
    model, X_train, _, X_test, y_test = digits_case()
    path = to_tflite(model, tmp_path / "q.tflite", precision="int16x8", calibration=X_train)
    _, tensors = _tensors(path)
    T = tfl.TensorType
    assert [t.Type() for t in tensors] == [T.INT16, T.INT8, T.INT64, T.INT16, T.INT8, T.INT64, T.INT16]
    assert {t.Quantization().ZeroPointAsNumpy().tolist()[0] for t in tensors} == {0}
    assert describe(path)["metadata"]["precision"] == "int16x8"
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005


@pytest.mark.parametrize("arguments, message", [
    ({"format": "onnx", "signed_weights": True}, "signed_weights=True applies to the int8 precisions"),
    ({"per_channel": True}, "per_channel=True applies to precision='int8'"),
    ({"calibration": None}, "precision='int16x8' needs calibration rows"),
])
def test_int16x8_options_are_checked(arguments, message):
    from lastedge.export.options import check_export_options

    options = {"format": "tflite", "calibration": np.zeros((30, 4)), **arguments}
    with pytest.raises(ValueError, match=message):
        check_export_options(options.pop("format"), "int16x8", **options)


def test_int8_is_about_four_times_smaller_for_dictionary_heavy_models(random_model, tmp_path):
    model, X = random_model(n_features=784, n_atoms=400, n_classes=10)
    fp32 = to_tflite(model, tmp_path / "m.tflite").stat().st_size
    int8 = to_tflite(model, tmp_path / "q.tflite", precision="int8", calibration=X).stat().st_size
    assert 3.5 < fp32 / int8 < 4.1


def test_schema_enums_match_the_interpreters_own_schema():
    """Version-drift guard: the numbers this writer uses equal those of ai-edge-litert's schema."""
    litert_schema = pytest.importorskip("ai_edge_litert.schema_py_generated")
    from lastedge.export.schema import _EXPECTED

    for (enum, name), value in _EXPECTED.items():
        assert getattr(getattr(litert_schema, enum), name) == value == getattr(getattr(tfl, enum), name)


def test_export_all_writes_and_checks_eight_files(digits_case, tmp_path):
    pytest.importorskip("onnxruntime")
    from lastedge.export import export_all

    model, X_train, y_train, X_test, y_test = digits_case()
    rows = export_all(model, tmp_path, X_train, X_test, y_test)
    variants = [(fmt, precision) for fmt in ("onnx", "tflite")
                for precision in ("fp32", "int8", "int8-dynamic", "int16x8")]
    assert [(r["format"], r["precision"]) for r in rows] == variants
    assert all(r["agreement"] >= 0.99 and r["size_bytes"] > 0 for r in rows)
    fp32_size = {r["format"]: r["size_bytes"] for r in rows if r["precision"] == "fp32"}
    assert all(r["size_bytes"] < fp32_size[r["format"]] / 2 for r in rows if r["precision"] != "fp32")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"model-{p}.{f}" for f, p in variants)
    for fmt, weights in (("onnx", "uint8"), ("tflite", "int8")):
        assert (describe(tmp_path / f"model-int8-dynamic.{fmt}")["metadata"]["quantization"]
                == {"mode": "dynamic", "weights": weights})


def test_a_fitted_last_classifier_exports_directly(tmp_path, tiny_last, digits_data):
    """The trainer's estimator (the lead's shared ``tiny_last`` fixture) goes through to_model()."""
    pytest.importorskip("onnxruntime")
    from lastedge.export import to_onnx

    X, y = digits_data.X_test, digits_data.y_test
    for path in (to_onnx(tiny_last, tmp_path / "t.onnx"), to_tflite(tiny_last, tmp_path / "t.tflite")):
        figures = assert_parity(tiny_last.to_model(), path, X, y)
        assert figures["accuracy"] == pytest.approx(tiny_last.score(X, y), abs=1e-9)


def test_a_shared_dictionary_exports_to_both_formats_fp32_and_int8(tmp_path, digits_data):
    """One dictionary whose atoms each vote for or against one class (issue 6): the exporters and
    runtimes take it as they are, in fp32 and int8, with the usual parity bounds."""
    pytest.importorskip("onnxruntime")
    from lastedge.export import to_onnx
    from lastedge.train import LASTClassifier

    clf = LASTClassifier(40, multiclass="shared", preprocess="center-l2", max_dca_iter=3,
                         inner_iter=30, random_state=0, verbose=0).fit(digits_data.X_train, digits_data.y_train)
    model = clf.to_model()
    assert model.weights.shape == (40, 10) and np.all(np.count_nonzero(model.weights, axis=1) == 1)
    X, y = digits_data.X_test, digits_data.y_test
    for export, suffix in ((to_onnx, "onnx"), (to_tflite, "tflite")):
        figures = assert_parity(model, export(model, tmp_path / f"s.{suffix}"), X, y)
        assert figures["accuracy"] == pytest.approx(clf.score(X, y), abs=1e-9)
        assert_parity(model, export(model, tmp_path / f"s8.{suffix}", precision="int8",
                                    calibration=digits_data.X_train), X, y)


def test_int8_takes_an_atom_that_can_never_fire(digits_case, tmp_path):
    """A column shrunk to ~0 (weight decay) has threshold alpha / |d| far beyond any input: its
    int32 bias used not to fit ("a bias does not fit in int32"). Any bias below what the inputs
    can reach gives the same zero feature, so it is raised to just below that reach."""
    model, X_train, y_train, X_test, y_test = digits_case()
    D = model.dictionary.copy()
    D[:, 0] *= 1e-5
    dead = Model(D, model.weights, model.classes, model.alpha, model.preprocess)
    assert not np.any(dead.features(X_train)[:, 0])
    path = to_tflite(dead, tmp_path / "q.tflite", precision="int8", calibration=X_train)
    assert assert_parity(dead, path, X_test, y_test)["agreement"] >= 0.99
    flat, tensors = _tensors(path)
    bias, q_d = (flat.Buffers(tensors[i].Buffer()).DataAsNumpy().view(dtype)
                 for i, dtype in ((2, "<i4"), (1, "i1")))
    z_x = int(tensors[0].Quantization().ZeroPointAsNumpy()[0])
    floor = relu_bias_floor(q_d.reshape(dead.n_atoms, dead.n_features), z_x)
    assert bias[0] == floor[0] and np.all(bias[1:] > floor[1:])  # only the dead atom's was raised


def test_per_channel_int8_takes_a_class_whose_weights_have_no_float32_scale(digits_case, tmp_path):
    """A class whose weights are all below float32's smallest scale * 127 (~1e-43) used to get a
    weight scale of 0: a division by zero, int8 weights cast from inf and NaN, a zero scale in
    the file. Its weights round to 0 at scale 1 instead, as an all-zero channel's do."""
    import warnings

    model, X_train, y_train, X_test, y_test = digits_case()
    W = model.weights.copy()
    W[:, 3] *= 1e-44
    tiny = Model(model.dictionary, W, model.classes, model.alpha, model.preprocess)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = to_tflite(tiny, tmp_path / "q.tflite", precision="int8", calibration=X_train, per_channel=True)
    flat, tensors = _tensors(path)
    weights = flat.Buffers(tensors[4].Buffer()).DataAsNumpy().view("i1").reshape(10, -1)
    assert np.all(tensors[4].Quantization().ScaleAsNumpy() > 0) and not np.any(weights[3])
    assert assert_parity(tiny, path, X_test, y_test)["agreement"] >= 0.99
