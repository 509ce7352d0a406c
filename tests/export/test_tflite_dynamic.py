"""Dynamic-range int8 TFLite: int8 weights, float32 input and output, hybrid FULLY_CONNECTED
kernels; parity holds a file to its own hybrid graph (``hybrid_graph``) and the model's constants."""

from __future__ import annotations

import json

import numpy as np
import pytest

tfl = pytest.importorskip("tflite")
litert = pytest.importorskip("ai_edge_litert.interpreter")


import lastedge.export.backends as export_backends  # noqa: E402
import lastedge.export.tflite as tflite_writer  # noqa: E402
from lastedge.cli import main  # noqa: E402
from lastedge.export import ParityError, assert_parity, describe, measure_parity, to_tflite  # noqa: E402
from lastedge.export.atom_rows import synthetic_rows  # noqa: E402
from lastedge.export.atom_scaling import graph_parameters  # noqa: E402
from lastedge.export.describe import summary_lines  # noqa: E402
from lastedge.export.hybrid_graph import HybridGraph  # noqa: E402
from lastedge.runtime import load  # noqa: E402
from lastedge.runtime.backends import _tflite_precision  # noqa: E402


def _graph(path):
    model = tfl.Model.GetRootAs(path.read_bytes(), 0)
    graph = model.Subgraphs(0)
    return model, graph, [graph.Tensors(i) for i in range(graph.TensorsLength())]


def _scores(path, rows, resolver):
    interpreter = litert.Interpreter(model_path=str(path), experimental_op_resolver_type=resolver)
    index = interpreter.get_input_details()[0]["index"]
    interpreter.resize_tensor_input(index, list(rows.shape))
    interpreter.allocate_tensors()
    interpreter.set_tensor(index, rows)
    interpreter.invoke()
    return interpreter.get_tensor(interpreter.get_output_details()[0]["index"])


def test_a_dynamic_file_is_the_fp32_graph_with_int8_weights_and_hybrid_kernels(digits_case, tmp_path):
    model, _, _, _, _ = digits_case()
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    info = describe(path)
    assert info["ops"] == ["FULLY_CONNECTED", "FULLY_CONNECTED"]
    assert [t["dtype"] for t in info["inputs"] + info["outputs"]] == ["float32", "float32"]
    assert info["metadata"]["precision"] == "int8" and info["metadata"]["quantization"] == {"mode": "dynamic", "weights": "int8"}
    assert "int8 dynamic" in summary_lines(info)[0]
    flat, graph, tensors = _graph(path)
    T = tfl.TensorType
    assert [t.Type() for t in tensors] == [T.FLOAT32, T.INT8, T.FLOAT32, T.FLOAT32, T.INT8, T.FLOAT32,
                                           T.FLOAT32]
    for weights in (tensors[1], tensors[4]):  # symmetric, one scale per tensor
        q = weights.Quantization()
        assert q.ScaleLength() == 1 and q.ZeroPointAsNumpy().tolist() == [0]
    assert flat.OperatorCodes(0).Version() == 9  # hybrid with asymmetric_quantize_inputs
    for i in range(graph.OperatorsLength()):
        options = tfl.FullyConnectedOptions()
        table = graph.Operators(i).BuiltinOptions()
        options.Init(table.Bytes, table.Pos)
        assert options.AsymmetricQuantizeInputs()
    _, threshold, _ = graph_parameters(model)
    np.testing.assert_array_equal(HybridGraph.read(path).negative_threshold, -threshold.astype(np.float32))


def test_a_dynamic_file_is_about_four_times_smaller_for_dictionary_heavy_models(random_model, tmp_path):
    model, _ = random_model(n_features=784, n_atoms=400, n_classes=10)
    fp32 = to_tflite(model, tmp_path / "m.tflite").stat().st_size
    dynamic = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic").stat().st_size
    assert 3.5 < fp32 / dynamic < 4.1


@pytest.mark.parametrize("case", ["digits", "mnist-sized"])
def test_a_dynamic_file_computes_its_hybrid_graph(digits_case, random_model, tmp_path, case):
    """LiteRT (its XNNPACK delegate runs these kernels) gives the numpy evaluation of the file's
    hybrid graph to within the rounding either kernel may do, on real and synthetic rows."""
    if case == "mnist-sized":
        model, X = random_model(n_features=784, n_atoms=400, n_classes=10, kind="center-l2")
    else:
        model, _, _, X, _ = digits_case()
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    assert HybridGraph.read(path).problems(model) == []
    for rows in (X, synthetic_rows(model, 2100)):  # 2100 rows: more than one block
        figures = measure_parity(model, path, rows, min_agreement=None)
        assert figures["problems"] == [] and figures["within_integer_graph_tolerance"]
        assert figures["max_error_vs_integer_graph"] < 0.1 * figures["max_score_error"]


def test_the_tolerance_covers_litert_with_and_without_xnnpack_and_stays_small(digits_case, tmp_path):
    """XNNPACK and TFLite's own kernels quantize rows with different float operations (their
    scores differ by ~0.01 on a digits model); both lie within the graph's tolerance, which is
    a small fraction of the scores on almost every row."""
    model, _, _, X, _ = digits_case()
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    Z = model.preprocess.apply(X).astype(np.float32)
    expected, tolerance = np.hsplit(HybridGraph.read(path).scores(Z), 2)
    resolvers = litert.OpResolverType
    for resolver in (resolvers.AUTO, resolvers.BUILTIN_WITHOUT_DEFAULT_DELEGATES):
        assert np.all(np.abs(_scores(path, Z, resolver) - expected) <= tolerance)
    assert np.median(tolerance) < 1e-3 * np.abs(expected).max()


def test_predictions_agree_with_the_float_model_on_held_out_digits(digits_case, tmp_path):
    model, _, _, X, y = digits_case()
    figures = assert_parity(model, to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic"), X, y)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005
    assert 0 < figures["mean_score_error"] <= figures["max_score_error"] < 0.5


def test_binary_and_trained_last_models(binary_digits_case, tmp_path, tiny_last, digits_data):
    binary, _, X_test, y_test = binary_digits_case()
    path = to_tflite(binary, tmp_path / "b.tflite", precision="int8-dynamic")
    assert describe(path)["outputs"][0]["shape"] == [-1, 1]
    assert assert_parity(binary, path, X_test, y_test)["agreement"] >= 0.99
    path = to_tflite(tiny_last, tmp_path / "t.tflite", precision="int8-dynamic")
    figures = assert_parity(tiny_last.to_model(), path, digits_data.X_test, digits_data.y_test)
    assert figures["agreement"] >= 0.99


def _tampered(path, out, old, new):
    data = path.read_bytes()
    assert data.count(old) == 1
    out.write_bytes(data.replace(old, new))
    return out


def _dictionary(path):
    return HybridGraph.read(path).dictionary


def _halve_largest(q):
    """The int8 levels with the largest one halved: one weight changed by a quarter of the grid."""
    changed = q.astype(np.int8).ravel()
    changed[np.argmax(np.abs(changed))] //= 2
    return changed


@pytest.mark.parametrize("change, message", [
    (lambda d: (np.float32(d.scale).tobytes(), np.float32(d.scale * 1.5).tobytes()),
     "its dictionary step .* is not the finest int8 step"),
    (lambda d: (d.quantized.astype(np.int8).tobytes(), _halve_largest(d.quantized).tobytes()),
     "its dictionary differ from the model's by"),
], ids=["coarser step", "one weight changed"])
def test_a_file_with_changed_constants_fails(digits_case, tmp_path, change, message):
    model, _, _, X, _ = digits_case()
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    broken = _tampered(path, tmp_path / "broken.tflite", *change(_dictionary(path)))
    with pytest.raises(ParityError, match=message):
        assert_parity(model, broken, X, min_agreement=None)


def test_a_file_with_changed_thresholds_fails(digits_case, tmp_path):
    model, _, _, X, _ = digits_case()
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    threshold = HybridGraph.read(path).negative_threshold
    broken = _tampered(path, tmp_path / "broken.tflite", threshold.tobytes(),
                       (threshold * np.float32(1.01)).tobytes())
    with pytest.raises(ParityError, match="its thresholds are not the model's"):
        assert_parity(model, broken, X, min_agreement=None)


def test_a_file_whose_kernels_quantize_inputs_symmetrically_fails(digits_case, tmp_path, monkeypatch):
    model, _, _, X, _ = digits_case()
    write = tflite_writer._Writer.write

    def symmetric(self, *args, **kwargs):
        return write(self, *args, **{**kwargs, "asymmetric_inputs": False})

    monkeypatch.setattr(tflite_writer._Writer, "write", symmetric)
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    with pytest.raises(ParityError, match="do not both quantize their inputs asymmetrically"):
        assert_parity(model, path, X, min_agreement=None)


def test_scores_off_the_hybrid_graph_fail_though_the_constants_are_the_models(digits_case, tmp_path, monkeypatch):
    """Scores 5 % off (as a rescaled output would give) fail on the graph's own tolerance, even on
    synthetic rows where agreement is not bounded."""
    model, _, _, _, _ = digits_case()
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    run = export_backends.run
    monkeypatch.setattr(export_backends, "run", lambda *args: run(*args) * np.float32(1.05))
    with pytest.raises(ParityError, match="scores differ from the file's own integer graph by up to .* "
                                          "more than the rounding its kernels may do either way"):
        assert_parity(model, path, synthetic_rows(model, 512), min_agreement=None)


def test_the_runtime_runs_a_dynamic_file_as_int8(digits_case, tmp_path):
    model, _, _, X, _ = digits_case()
    paths = {"fp32": to_tflite(model, tmp_path / "m.tflite"),
             "dynamic": to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")}
    predictor = load(paths["dynamic"])
    assert predictor.precision == "int8" and predictor.backend == "litert"
    scores = predictor.decision_function(X)
    np.testing.assert_array_equal(scores, export_backends.run("ai-edge-litert", paths["dynamic"],
                                                              model.preprocess.apply(X)))
    assert np.mean(predictor.predict(X) == model.predict(X)) >= 0.99
    # what a file without a recorded precision is called: by its tensors, not its input alone
    assert [_tflite_precision(load(p)._interp) for p in paths.values()] == ["fp32", "int8"]


def test_python_api_refuses_options_that_do_not_apply(digits_case, tmp_path):
    model, _, _, X, _ = digits_case()
    with pytest.raises(ValueError, match="precision must be one of 'fp32', 'int8', 'int8-dynamic', 'int16x8', got 'dynamic'"):
        to_tflite(model, tmp_path / "d.tflite", precision="dynamic")
    with pytest.raises(ValueError, match=r"calibration applies to precision='int8' \(static\) or precision='int16x8' only, "
                                         "got precision='int8-dynamic'"):
        to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic", calibration=X)
    with pytest.raises(ValueError, match=r"per_channel=True applies to precision='int8' \(static\) only"):
        to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic", per_channel=True)
    assert not (tmp_path / "d.tflite").exists()


def test_cli_dynamic_export_without_data_checks_the_hybrid_graph(digits_case, tmp_path, capsys):
    digits_case()[0].save(tmp_path / "m.npz")
    argv = ["export", str(tmp_path / "m.npz"), "--format", "tflite", "--precision", "int8-dynamic",
            "--out", str(tmp_path / "m.tflite")]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["check_rows"] == "synthetic" and result["parity"]["within_integer_graph_tolerance"]
    assert result["file"]["metadata"]["quantization"] == {"mode": "dynamic", "weights": "int8"}
    assert main([*argv, "--calibration", "digits"]) == 0  # rows for the check only
    text = capsys.readouterr().out
    assert "int8 dynamic" in text and "held out from digits" in text
    assert "its integer graph's scores to within" in text


@pytest.mark.parametrize("extra, message", [
    (["--precision", "int8-dynamic", "--per-channel"],
     "--per-channel applies to --precision int8 (static) only, got --precision int8-dynamic"),
    (["--per-channel"], "--per-channel applies to --precision int8 (static) only, got --precision fp32"),
    (["--precision", "int8-dynamic", "--with-preprocessing"],
     "--with-preprocessing applies to --format onnx only, got --format tflite"),
    (["--precision", "int8"], "--precision int8 needs --calibration PATH|digits (or --precision int8-dynamic"),
])
def test_cli_errors_are_one_line(random_model, tmp_path, capsys, extra, message):
    random_model()[0].save(tmp_path / "m.npz")
    assert main(["export", str(tmp_path / "m.npz"), "--format", "tflite", *extra,
                 "--out", str(tmp_path / "o.tflite")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "o.tflite").exists()
