"""TFLite files in the legacy ``tflite_runtime`` interpreter (Pi 3 / Pi Zero, 32-bit Arm).

tflite-runtime 2.14 needs numpy < 2, so it cannot share the main environment: ``.ci/legacy_tflite.sh``
builds a separate one and runs this file there. Models are built with numpy only.
"""

import numpy as np
import pytest

pytest.importorskip(
    "tflite_runtime.interpreter",
    reason="tflite_runtime is not installed here (it needs numpy<2); run .ci/legacy_tflite.sh",
)

from conftest_export import random_model  # noqa: E402

from lastedge.export import assert_parity, to_tflite  # noqa: E402


@pytest.mark.parametrize("kind", ["none", "center-l2", "standardize"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_fp32_parity_in_tflite_runtime(tmp_path, kind, n_classes):
    model, X = random_model(kind=kind, n_classes=n_classes)
    figures = assert_parity(model, to_tflite(model, tmp_path / "m.tflite"), X,
                            backends=["tflite-runtime"])
    assert figures["backends"] == ["tflite-runtime"] and figures["probe_rows"] > 10


@pytest.mark.parametrize("per_channel", [False, True])
def test_int8_parity_in_tflite_runtime(tmp_path, per_channel):
    model, X = random_model(n_features=32, n_atoms=60, n_classes=4, kind="center-l2", seed=3)
    rng = np.random.default_rng(1)
    X_cal = rng.normal(2.0, 3.0, size=(500, 32)).astype(np.float32)  # same distribution as X
    path = to_tflite(model, tmp_path / "q.tflite", int8=True, calibration=X_cal, per_channel=per_channel)
    figures = assert_parity(model, path, X, backends=["tflite-runtime"], min_agreement=0.95)
    assert figures["agreement"] >= 0.95 and figures["max_score_error"] > 0
