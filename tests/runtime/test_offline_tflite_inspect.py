"""``lastedge inspect`` of a ``.tflite`` file where no TFLite interpreter is installed (issue 53):
it stopped "ai-edge-litert is not installed"; it now reads the flatbuffer itself
(``runtime.tflite_summary``) after the checks loading makes, as it reads ``.onnx`` bytes."""

from __future__ import annotations

import json
import sys

import pytest

from lastedge.cli import main
from lastedge.runtime.tflite_summary import read_tflite_summary


@pytest.fixture
def no_interpreter(monkeypatch):
    """No graph parser and no TFLite interpreter importable, as on a device with numpy only."""
    for module in ("tflite", "flatbuffers", "ai_edge_litert", "tflite_runtime"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ModuleNotFoundError


@pytest.fixture(scope="module")
def files(blobs, prototype_model, tmp_path_factory):
    """A 24-feature, 3-class model as fp32, int8 and dynamic-range TFLite files, and the model."""
    pytest.importorskip("tflite")
    from lastedge.export import to_tflite

    X, y = blobs()
    model = prototype_model(X, y)
    folder = tmp_path_factory.mktemp("tflite")
    paths = {name: to_tflite(model, folder / name, precision=precision,
                             calibration=X if precision == "int8" else None)
             for name, precision in (("m.tflite", "fp32"), ("q.tflite", "int8"), ("d.tflite", "int8-dynamic"))}
    return paths, model


@pytest.mark.parametrize("name, precision", [("m.tflite", "fp32"), ("q.tflite", "int8"),
                                             ("d.tflite", "int8")])
def test_inspect_tflite_reads_the_flatbuffer(files, no_interpreter, name, precision, capsys):
    paths, model = files
    path = paths[name]
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"file         {path} (tflite, {path.stat().st_size / 1024:.1f} KiB, {precision})\n" in out
    assert "classes      3: 0, 1, 2\n" in out and "outputs      3\n" in out
    assert "features     24, preprocess center-l2 (applied before the file)\n" in out
    assert f"MACs/sample  {model.macs_per_sample:,}\n" in out
    assert out.endswith("graph        not shown: tflite is not installed (pip install 'lastedge[export]'); "
                        "running it needs a TFLite interpreter (pip install \"lastedge[tflite]\")\n")
    assert main(["inspect", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["n_features"], info["n_outputs"], info["precision"], info["backend"]) == (24, 3, precision, None)


def test_the_summary_agrees_with_an_interpreter(files):
    """Where LiteRT is installed, what the bytes say is what it says."""
    pytest.importorskip("ai_edge_litert")
    from lastedge.runtime import load

    for name in ("m.tflite", "q.tflite", "d.tflite"):
        predictor, summary = load(files[0][name]), read_tflite_summary(files[0][name])
        assert (summary.n_features, summary.n_outputs, summary.precision) == \
            (predictor.n_features, predictor.n_outputs, predictor.precision)
        assert summary.header.classes.tolist() == predictor.classes.tolist()


def test_every_truncation_is_a_value_error(files, tmp_path):
    data = files[0]["q.tflite"].read_bytes()  # about 300 cuts
    path = tmp_path / "cut.tflite"
    for length in range(1, len(data), max(1, len(data) // 300)):
        path.write_bytes(data[:length])
        with pytest.raises(ValueError, match="cut.tflite"):
            read_tflite_summary(path)


@pytest.mark.parametrize("name, refusal", [
    ("tflite-fill.tflite", r"operator code 0 \(FILL\)"),
    ("tflite-claims-int8.tflite", "op 0 .*metadata allows int8"),
    ("tflite-atoms-disagree.tflite", "n_atoms 10"),
])
def test_a_graph_lastedge_does_not_write_is_refused_as_loading_refuses_it(
        fuzz_cases, base_files, tmp_path, name, refusal):
    """The same checks as ``load`` without ``trust`` (tests/runtime/test_graph_check.py's files)."""
    hostile = fuzz_cases.hostile_models(tmp_path, base_files, chunks=16)
    if name not in hostile:
        pytest.skip(f"{name}: tflite is not installed")
    with pytest.raises(ValueError, match=refusal):
        read_tflite_summary(hostile[name])


def test_inspect_of_a_broken_tflite_file_is_one_line(files, no_interpreter, tmp_path, capsys):
    path = tmp_path / "broken.tflite"
    path.write_bytes(files[0]["m.tflite"].read_bytes()[:200])
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"lastedge inspect: error: {path}") and len(err.splitlines()) == 1
