"""The legacy ``tflite_runtime`` interpreter (32-bit Arm; numpy < 2) agrees with the numpy backend.

Runs in the separate numpy<2 venv built by ``.ci/legacy_tflite.sh`` (numpy, flatbuffers,
tflite_runtime, lastedge); skipped where ``tflite_runtime`` is not installed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from lastedge.cli import main
from lastedge.export import to_tflite
from lastedge.runtime import load
from lastedge.runtime.loading import _installed

pytest.importorskip("tflite_runtime")


@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_legacy_interpreter_agrees_with_numpy(assert_parity, blobs, hard_rows, prototype_model, tmp_path, precision,
                                              n_classes):
    X, y = blobs(n_classes=n_classes, rows=600)
    model = prototype_model(X[:300], y[:300])
    path = to_tflite(model, tmp_path / "m.tflite", precision=precision,
                     calibration=X[:300] if precision == "int8" else None)
    assert_parity(model, path, hard_rows(model, X[300:]), backend="tflite_runtime")
    assert_parity(model, path, X[300:], backend="tflite_runtime")
    predictor = load(path, backend="tflite_runtime", threads=2)
    assert predictor.backend == "tflite_runtime" and predictor.threads == 2
    assert predictor.predict(X[:0]).shape == (0,)
    for n in (1, 17, 1):
        assert predictor.decision_function(X[:n].astype(np.float64)).shape[0] == n


def test_legacy_interpreter_is_the_default_without_litert(blobs, prototype_model, tmp_path):
    if _installed("litert"):
        pytest.skip("ai_edge_litert is installed, so it is the default")
    X, y = blobs()
    path = to_tflite(prototype_model(X, y), tmp_path / "m.tflite")
    assert load(path).backend == "tflite_runtime"


def test_predict_command_runs_in_the_device_environment(blobs, prototype_model, tmp_path, capfd):
    """This venv is a 32-bit Pi's: numpy < 2 and tflite_runtime, no torch or scikit-learn.
    The interpreter's XNNPACK INFO line (C++, descriptor 2) does not reach the terminal."""
    X, y = blobs(rows=60)
    path = to_tflite(prototype_model(X, y), tmp_path / "m.tflite")
    np.savetxt(tmp_path / "rows.csv", np.c_[X, y], delimiter=",", fmt="%.9g")
    assert main(["predict", str(path), "--data", str(tmp_path / "rows.csv"), "--json"]) == 0
    captured = capfd.readouterr()
    assert captured.err == ""
    result = json.loads(captured.out)
    assert result["rows"] == 60 and result["accuracy"] >= 0.9
    assert result["predictions"] == load(path, backend="tflite_runtime").predict(X).tolist()


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_damaged_files_are_refused_not_crashed_on(blobs, prototype_model, tmp_path, precision):
    """tflite_runtime builds a model without verifying it: before runtime.tflite_check, a few random
    bytes of damage crashed this process (SIGBUS / SIGSEGV) in fuzzing."""
    X, y = blobs(rows=300)
    data = to_tflite(prototype_model(X, y), tmp_path / "m.tflite", precision=precision,
                     calibration=X if precision == "int8" else None).read_bytes()
    rng = np.random.default_rng(0)
    broken = tmp_path / "broken.tflite"
    for _ in range(300):
        damaged = bytearray(data)
        for position in rng.integers(8, len(data), size=rng.choice([1, 4, 16])):
            damaged[int(position)] = int(rng.integers(256))
        broken.write_bytes(bytes(damaged))
        try:
            load(broken, backend="tflite_runtime").predict(X[:4])
        except (ValueError, TypeError):
            pass
