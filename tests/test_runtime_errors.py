"""Bad input and bad files raise clear errors; a missing backend names the extra to install."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from test_runtime_backends import blobs, export, prototype_model

from lastedge.runtime import load


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    X, y = blobs()
    return export(prototype_model(X, y), tmp_path_factory.mktemp("errors"), X)


def test_wrong_width_1d_nan_inf_and_strings_are_refused(paths):
    for path in paths.values():
        predictor = load(path)
        with pytest.raises(ValueError, match="has 23 features, the model expects 24"):
            predictor.predict(np.zeros((2, 23)))
        with pytest.raises(ValueError, match=r"must be 2-D .*X\[None, :\]"):
            predictor.predict(np.zeros(24))
        with pytest.raises(ValueError, match="NaN or infinite"):
            predictor.predict(np.full((1, 24), np.nan))
        with pytest.raises(ValueError, match="NaN or infinite"):
            predictor.decision_function(np.full((3, 24), np.inf))
        with pytest.raises(TypeError, match="real numbers"):
            predictor.predict(np.full((1, 24), "1"))


@pytest.mark.parametrize("cut", [0.5, 0.95])
def test_truncated_files_are_refused(paths, tmp_path, cut):
    for name, path in paths.items():
        data = path.read_bytes()
        broken = tmp_path / name
        broken.write_bytes(data[: int(len(data) * cut)])
        with pytest.raises(ValueError, match=str(broken)):
            load(broken)


def test_corrupted_files_are_refused(paths, tmp_path):
    for name, path in paths.items():
        data = bytearray(path.read_bytes())
        data[8:] = bytes(len(data) - 8)  # keep the magic, zero the rest
        broken = tmp_path / name
        broken.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=str(broken)):
            load(broken)


def test_empty_and_foreign_files_are_refused(tmp_path):
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(ValueError, match="is empty"):
        load(tmp_path / "empty.onnx")
    (tmp_path / "notes.tflite").write_text("hello, I am text")
    with pytest.raises(ValueError, match="is not a tflite file"):
        load(tmp_path / "notes.tflite")
    np.save(tmp_path / "array.npy", np.zeros(3))
    (tmp_path / "array.npy").rename(tmp_path / "array.npz")
    with pytest.raises(ValueError, match="is not a npz file"):
        load(tmp_path / "array.npz")


def test_a_renamed_file_is_refused_with_its_real_kind(paths, tmp_path):
    for name, path in paths.items():
        real = path.suffix.lstrip(".")
        for other in {"npz", "onnx", "tflite"} - {real}:
            renamed = tmp_path / f"model.{other}"
            renamed.write_bytes(path.read_bytes())
            with pytest.raises(ValueError, match=f"named .{other} but holds a {real} model"):
                load(renamed)


def test_a_file_without_lastedge_metadata_is_refused(paths, tmp_path):
    onnx = pytest.importorskip("onnx")
    if "m.onnx" not in paths:
        pytest.skip("no ONNX exporter yet")
    proto = onnx.load(paths["m.onnx"])
    del proto.metadata_props[:]
    onnx.save(proto, tmp_path / "bare.onnx")
    with pytest.raises(ValueError, match="no 'lastedge' metadata"):
        load(tmp_path / "bare.onnx")


def test_missing_backend_names_the_extra(paths, monkeypatch):
    for module in ("onnxruntime", "ai_edge_litert", "ai_edge_litert.interpreter",
                   "tflite_runtime", "tflite_runtime.interpreter"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    for name, extra in (("m.onnx", "lastedge[onnx]"), ("m.tflite", "lastedge[tflite]")):
        if name in paths:
            with pytest.raises(ImportError, match=extra.replace("[", r"\[").replace("]", r"\]")):
                load(paths[name])
    if "m.tflite" in paths:
        with pytest.raises(ImportError, match="tflite-runtime is not installed"):
            load(paths["m.tflite"], backend="tflite_runtime")


def test_bad_backend_and_threads(paths):
    with pytest.raises(ValueError, match=r"backend 'onnxruntime' cannot run a .npz file"):
        load(paths["m.npz"], backend="onnxruntime")
    for threads in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            load(paths["m.npz"], threads=threads)
    with pytest.raises(FileNotFoundError):
        load(paths["m.npz"].with_name("missing.npz"))
