"""Every backend agrees with the numpy backend on the same model (fp32 to 1e-4, int8 by agreement)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from lastedge.runtime import Model, Preprocess, load
from lastedge.runtime.loading import _installed
from lastedge.runtime.model import BLOCK_ROWS, in_row_blocks
from lastedge.runtime.native_log import without_native_lines

lastedge_export = pytest.importorskip("lastedge.export")

HAS_ORT = _installed("onnxruntime")
HAS_LITERT = _installed("litert")
# The files the ``export`` fixture writes, and the backend that must run each.
BACKEND_OF_FILE = {"m.onnx": "onnxruntime", "m-pre.onnx": "onnxruntime", "m-int8.onnx": "onnxruntime",
                   "m.tflite": "litert", "m-int8.tflite": "litert"}


def _exported(prototype_model, export, tmp_path_factory, name: str, X, y, preprocess: str
              ) -> tuple[Model, dict[str, Path]]:
    model = prototype_model(X, y, preprocess=preprocess)
    return model, export(model, tmp_path_factory.mktemp(name), X)


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    return X.astype(np.float32), y


@pytest.fixture(scope="module", params=["center-l2", "standardize", "none"])
def multiclass(export, prototype_model, request, tmp_path_factory, digits):
    X, y = digits
    return (X, *_exported(prototype_model, export, tmp_path_factory, "multi", X[:1000], y[:1000], request.param))


@pytest.fixture(scope="module")
def binary(blobs, export, prototype_model, tmp_path_factory):
    X, y = blobs(n_classes=2)
    labels = np.array(["cat", "dog"])[y]
    return (X, *_exported(prototype_model, export, tmp_path_factory, "binary", X, labels, "l2"))


def _backend_cases():
    return [pytest.param(name, backend, marks=pytest.mark.skipif(
        not {"onnxruntime": HAS_ORT, "litert": HAS_LITERT}[backend], reason=f"{backend} missing"),
        id=name) for name, backend in BACKEND_OF_FILE.items()]


@pytest.mark.parametrize("name, backend", _backend_cases())
def test_multiclass_backends_agree_with_numpy(assert_parity, hard_rows, multiclass, name, backend):
    X, model, paths = multiclass
    if name not in paths:
        pytest.skip(f"the exporter does not write {name} yet")
    held_out = X[1000:]
    assert_parity(model, paths[name], hard_rows(model, held_out), backend)
    assert_parity(model, paths[name], held_out, backend)


@pytest.mark.parametrize("name, backend", _backend_cases())
def test_binary_backends_agree_with_numpy(assert_parity, hard_rows, binary, name, backend):
    X, model, paths = binary
    if name not in paths:
        pytest.skip(f"the exporter does not write {name} yet")
    assert_parity(model, paths[name], hard_rows(model, X), backend)
    predictor = load(paths[name])
    assert predictor.decision_function(X[:7]).shape == (7,)
    assert set(predictor.predict(X)) <= {"cat", "dog"}


def test_numpy_backend_is_the_model(binary):
    X, model, paths = binary
    predictor = load(paths["m.npz"])
    assert predictor.backend == "numpy" and predictor.precision == "fp32"
    np.testing.assert_array_equal(predictor.decision_function(X), model.decision_function(X))
    assert predictor.macs_per_sample == model.macs_per_sample
    assert predictor.classes.tolist() == ["cat", "dog"]


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int64, np.float16, np.float64, bool])
def test_any_real_dtype_any_batch(multiclass, dtype):
    X, model, paths = multiclass
    rows = np.clip(X[1000:1040], 0, 16).astype(dtype)
    for path in paths.values():
        predictor = load(path)
        expected = predictor.predict(rows.astype(np.float32))
        np.testing.assert_array_equal(predictor.predict(rows), expected)
        for n in (0, 1, 40, 1):  # resize down and up again on TFLite
            scores = predictor.decision_function(rows[:n])
            assert scores.shape == (n, 10) and predictor.predict(rows[:n]).shape == (n,)


def test_every_predictor_has_the_same_face(multiclass):
    X, model, paths = multiclass
    for path in paths.values():
        predictor = load(path, threads=2)
        assert predictor.n_features == 64 and predictor.n_outputs == 10
        assert predictor.classes.tolist() == list(range(10))
        assert predictor.threads == 2
        assert predictor.precision == ("int8" if "int8" in path.name else "fp32")
        assert predictor.macs_per_sample == model.macs_per_sample
        assert predictor.file_size == path.stat().st_size


@pytest.mark.parametrize("n_rows, width, step", [
    (0, 64, 0), (1, 64, 1), (BLOCK_ROWS, 64, BLOCK_ROWS), (2 * BLOCK_ROWS + 5, 64, BLOCK_ROWS),
    (5000, 40_000, 104), (3, 10**9, 1),  # wide models: fewer rows per block, never none
])
def test_in_row_blocks_scores_every_row_once_in_order(n_rows, width, step):
    X = np.arange(2 * n_rows, dtype=np.float32).reshape(n_rows, 2)
    sizes: list[int] = []
    out = in_row_blocks(lambda rows: sizes.append(len(rows)) or rows[:, :1] * 2, X, width)
    np.testing.assert_array_equal(out, X[:, :1] * 2)
    assert sizes[:-1] == [step] * (len(sizes) - 1) and 0 <= sizes[-1] <= step
    assert len(sizes) == max(1, -(-n_rows // step) if step else 1)


@pytest.mark.parametrize("n_features, n_atoms", [(36, 2), (2, 36)])
def test_row_width_is_the_wider_of_inputs_and_atoms(n_features, n_atoms):
    model = Model(np.ones((n_features, n_atoms)), np.ones((n_atoms, 1)), [0, 1])
    assert model.row_width == 36


def test_large_batches_are_scored_in_blocks_with_the_same_scores(multiclass, monkeypatch):
    X, model, paths = multiclass
    rows = np.resize(X, (2 * BLOCK_ROWS + 5, X.shape[1]))
    sizes: list[int] = []
    features = Model._features
    monkeypatch.setattr(Model, "_features", lambda self, Z: sizes.append(len(Z)) or features(self, Z))
    whole = features(model, rows) @ model.weights
    np.testing.assert_allclose(model.decision_function(rows), whole, rtol=1e-5, atol=1e-5)
    assert sizes == [BLOCK_ROWS, BLOCK_ROWS, 5]
    for path in paths.values():
        predictor = load(path)
        if predictor.backend == "numpy":
            continue
        Z = rows.astype(np.float32) if predictor.preprocess_in_graph else predictor.preprocess.apply(rows)
        in_one_call = predictor._scores(np.ascontiguousarray(Z))
        calls: list[int] = []
        scores = predictor._scores
        monkeypatch.setattr(predictor, "_scores", lambda Z: calls.append(len(Z)) or scores(Z))
        np.testing.assert_allclose(predictor.decision_function(rows), in_one_call, rtol=1e-5, atol=1e-5,
                                   err_msg=path.name)
        assert calls == [BLOCK_ROWS, BLOCK_ROWS, 5], path.name


def test_threads_do_not_change_scores(multiclass):
    X, model, paths = multiclass
    for path in paths.values():
        one = load(path, threads=1).decision_function(X[:300])
        two = load(path, threads=2).decision_function(X[:300])
        np.testing.assert_allclose(one, two, rtol=1e-5, atol=1e-5)


def test_numpys_openblas_is_found_under_a_path_holding_spaces(tmp_path, monkeypatch):
    """/proc/self/maps lines were split at every space: numpy installed under "My Projects" made
    every prediction on the numpy backend raise OSError (cannot open shared object file)."""
    from lastedge.runtime import blas

    real = blas.mapped_openblas(blas.MAPS.read_text()) if blas.MAPS.exists() else set()
    if not real:
        pytest.skip("numpy uses no OpenBLAS here")
    spaced = tmp_path / "My Projects" / "libscipy_openblas.so"
    spaced.parent.mkdir()
    spaced.symlink_to(sorted(real)[0])
    maps = tmp_path / "maps"
    maps.write_text(f"7f00-7f01 r-xp 00000000 08:01 42      {spaced}\n"
                    "7f01-7f02 r--p 00000000 08:01 43      /gone/libopenblas.so (deleted)\n"
                    "7f02-7f03 rw-p 00000000 00:00 0 \n")
    assert blas.mapped_openblas(maps.read_text()) == {str(spaced)}
    monkeypatch.setattr(blas, "MAPS", maps)
    blas.openblas.cache_clear()
    try:
        found = blas.openblas()
        assert found is not None and found.get() >= 1
    finally:
        blas.openblas.cache_clear()


def test_native_info_lines_are_dropped_and_other_lines_kept(capfd):
    with without_native_lines((b"INFO: chatter",)):
        os.write(2, b"INFO: chatter from C++\nWARNING: something real\n")
        print("python's own stderr line", file=sys.stderr)
    err = capfd.readouterr().err
    assert "chatter" not in err
    assert "WARNING: something real" in err and "python's own stderr line" in err


@pytest.mark.skipif(not HAS_LITERT, reason="litert missing")
def test_loading_and_exporting_a_tflite_file_prints_nothing(blobs, prototype_model, tmp_path, capfd):
    """LiteRT logs "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." at each load."""
    X, y = blobs()
    model = prototype_model(X, y)
    path = lastedge_export.to_tflite(model, tmp_path / "m.tflite")
    lastedge_export.measure_parity(model, path, X)
    load(path).predict(X[:5])
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""
