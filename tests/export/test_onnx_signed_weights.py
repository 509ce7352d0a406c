"""Opt-in signed (int8) ONNX weights: exact where onnxruntime's int8 kernels are (x86 with VNNI,
Arm), refused where they do not apply, and warned about when loaded on an x86 CPU without VNNI.

Which CPU runs the suite decides what onnxruntime's fused kernels give for int8 weights, so the
tests that run them check this CPU against ``runtime.cpu.signed_weights_saturate``; the rest
(constants, metadata, options, the warning under a stated CPU) hold on any machine.
"""

from __future__ import annotations

import json
import platform
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import numpy_helper  # noqa: E402

from lastedge.cli import main  # noqa: E402
from lastedge.export import assert_parity, describe, measure_parity, to_onnx  # noqa: E402
from lastedge.export.atom_rows import synthetic_rows  # noqa: E402
from lastedge.export.backends import onnxruntime_ops  # noqa: E402
from lastedge.export.dynamic_graph import DynamicGraph  # noqa: E402
from lastedge.runtime import load  # noqa: E402
from lastedge.runtime import backends as backends_module  # noqa: E402
from lastedge.runtime import SignedWeightsWarning  # noqa: E402
from lastedge.runtime.cpu import read_cpuinfo, signed_weights_saturate  # noqa: E402

EXACT_HERE = signed_weights_saturate(read_cpuinfo(), platform.machine()) is False
X86_AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
X86_VNNI = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_vnni\n"


def _constants(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(path).graph.initializer}


def _scores(path, rows, level):
    options = ort.SessionOptions()
    options.graph_optimization_level = level
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"input": rows})[0]


@pytest.fixture(scope="module")
def static_file(digits_case, tmp_path_factory):
    model, X_train, _, X_test, y_test = digits_case()
    path = to_onnx(model, tmp_path_factory.mktemp("signed") / "s.onnx", precision="int8",
                   calibration=X_train, signed_weights=True)
    return model, path, X_test, y_test


def test_static_signed_weights_are_symmetric_int8_in_the_same_fused_graph(static_file):
    model, path, _, _ = static_file
    tensors = _constants(path)
    for name in ("dictionary", "weights"):
        assert tensors[f"{name}_quantized"].dtype == np.int8
        assert not np.any(tensors[f"{name}_zero_point"])  # symmetric: zero point 0
    assert onnxruntime_ops(path) == ["QuantizeLinear", "QGemm", "QGemm", "DequantizeLinear"]
    quantization = describe(path)["metadata"]["quantization"]
    assert quantization["mode"] == "static" and quantization["weights"] == "int8"


def test_static_signed_weights_unfused_keep_the_float_models_predictions(static_file):
    """DequantizeLinear -> float Gemm runs no integer kernel: the file's own scores on any CPU."""
    model, path, X_test, _ = static_file
    rows = model.preprocess.apply(X_test).astype(np.float32)
    scores = _scores(path, rows, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    assert np.mean(np.argmax(scores, axis=1) == np.argmax(model.decision_function(X_test), axis=1)) >= 0.99


@pytest.mark.skipif(not EXACT_HERE, reason="x86 without VNNI (or unknown): int8 kernels may saturate here")
def test_static_signed_weights_pass_parity_where_the_kernels_are_exact(static_file):
    model, path, X_test, y_test = static_file
    rows = model.preprocess.apply(X_test).astype(np.float32)
    fused, unfused = (_scores(path, rows, level) for level in (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL, ort.GraphOptimizationLevel.ORT_DISABLE_ALL))
    np.testing.assert_allclose(fused, unfused, rtol=0, atol=1.01 * float(_constants(path)["scores_scale"]))
    figures = assert_parity(model, path, X_test, y_test)
    assert figures["agreement"] >= 0.99 and figures["accuracy_drop"] <= 0.005


def test_dynamic_signed_weights_are_the_models_rounded_to_the_symmetric_grid(digits_case, tmp_path):
    model, *_ = digits_case()
    path = to_onnx(model, tmp_path / "d.onnx", precision="int8-dynamic", signed_weights=True)
    graph = DynamicGraph.read(path)
    assert graph.dictionary.symmetric and graph.weights.symmetric
    assert graph.problems(model) == []
    assert describe(path)["metadata"]["quantization"] == {"mode": "dynamic", "weights": "int8"}
    if EXACT_HERE:  # onnxruntime computes the integer graph exactly on this CPU
        figures = measure_parity(model, path, synthetic_rows(model, 512), min_agreement=None)
        assert figures["problems"] == [] and figures["within_integer_graph_tolerance"]


def test_signed_weights_need_int8(digits_case):
    model, *_ = digits_case()
    with pytest.raises(ValueError, match=r"signed_weights=True applies to the int8 precisions \('int8', "
                                         r"'int8-dynamic'\) only, got precision='fp32'"):
        to_onnx(model, "never.onnx", signed_weights=True)


@pytest.mark.parametrize("options, message", [
    (["--format", "onnx"], "--signed-weights applies to the int8 precisions ('int8', 'int8-dynamic') "
                           "only, got --precision fp32"),
    (["--format", "tflite", "--precision", "int8-dynamic"],
     "--signed-weights applies to --format onnx only, got --format tflite"),
])
def test_cli_refuses_signed_weights_where_they_do_not_apply(digits_case, tmp_path, capsys, options, message):
    model, *_ = digits_case()
    model.save(tmp_path / "m.npz")
    out = tmp_path / f"m.{options[1]}"
    assert main(["export", str(tmp_path / "m.npz"), *options, "--signed-weights", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not out.exists()


def _on_cpu(monkeypatch, cpuinfo, machine="x86_64"):
    monkeypatch.setattr(backends_module, "read_cpuinfo", lambda: cpuinfo)
    monkeypatch.setattr(backends_module.platform, "machine", lambda: machine)


@pytest.fixture(scope="module")
def files(digits_case, tmp_path_factory):
    model, *_ = digits_case()
    folder = tmp_path_factory.mktemp("warn")
    model.save(folder / "m.npz")
    return {signed: to_onnx(model, folder / f"{'signed' if signed else 'unsigned'}.onnx",
                            precision="int8-dynamic", signed_weights=signed) for signed in (False, True)}


@pytest.mark.parametrize("cpuinfo, machine, warned", [
    (X86_AVX2, "x86_64", "has no VNNI"), (None, "x86_64", "cannot tell"),
    (X86_VNNI, "x86_64", None), (None, "aarch64", None),
])
def test_loading_signed_weights_warns_on_x86_without_vnni(monkeypatch, files, cpuinfo, machine, warned):
    _on_cpu(monkeypatch, cpuinfo, machine)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(files[False])  # uint8 weights: exact everywhere, never warned about
        assert caught == []
        predictor = load(files[True])
    signed = [w for w in caught if issubclass(w.category, SignedWeightsWarning)]
    if warned is None:
        assert caught == []
    else:
        assert len(signed) == 1 and warned in str(signed[0].message)
        assert "--signed-weights" in str(signed[0].message)
    assert predictor.precision == "int8"


def test_cli_prints_the_warning_as_one_line(monkeypatch, files, tmp_path, capsys):
    _on_cpu(monkeypatch, X86_AVX2)
    assert main(["predict", str(files[True]), "--data", "digits", "--json"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lastedge predict: warning: ")
    assert "has no VNNI" in lines[0]
    json.loads(captured.out)  # the output is untouched


def test_inspect_names_the_weight_type(files, capsys):
    assert main(["inspect", str(files[True])]) == 0
    assert "dynamic (int8 weights, activations quantized as it runs)" in capsys.readouterr().out
    assert main(["inspect", str(files[False])]) == 0
    assert "dynamic (uint8 weights" in capsys.readouterr().out


@pytest.mark.parametrize("cpuinfo, drop", [(X86_AVX2, True), (X86_VNNI, False)])
def test_a_failed_signed_export_on_a_cpu_without_vnni_says_to_drop_the_option(monkeypatch, cpuinfo, drop):
    from lastedge.cli.export import _int8_hint
    from lastedge.export.options import check_export_options
    from lastedge.runtime import cpu

    monkeypatch.setattr(cpu, "read_cpuinfo", lambda: cpuinfo)
    monkeypatch.setattr(platform, "machine", lambda: "x86_64")
    options = check_export_options("onnx", "int8-dynamic", signed_weights=True)
    assert ("drop --signed-weights" in _int8_hint(options)) is drop
