"""TFLite files in the legacy ``tflite_runtime`` interpreter (Pi 3 / Pi Zero, 32-bit Arm).

tflite-runtime 2.14 needs numpy < 2, so it cannot share the main environment: ``.ci/legacy_tflite.sh``
builds a separate one and runs this file there. Models are built with numpy only.
"""

import platform

import numpy as np
import pytest

pytest.importorskip(
    "tflite_runtime.interpreter",
    reason="tflite_runtime is not installed here (it needs numpy<2); run .ci/legacy_tflite.sh",
)


from lastedge.export import assert_parity, to_tflite  # noqa: E402
from lastedge.export.backends import run  # noqa: E402
from lastedge.export.hybrid_graph import HybridGraph  # noqa: E402


@pytest.mark.parametrize("kind", ["none", "center-l2", "standardize"])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_fp32_parity_in_tflite_runtime(random_model, tmp_path, kind, n_classes):
    model, X = random_model(kind=kind, n_classes=n_classes)
    figures = assert_parity(model, to_tflite(model, tmp_path / "m.tflite"), X,
                            backends=["tflite-runtime"])
    assert figures["backends"] == ["tflite-runtime"] and figures["probe_rows"] > 10


@pytest.mark.parametrize("per_channel", [False, True])
def test_int8_parity_in_tflite_runtime(random_model, tmp_path, per_channel):
    model, X = random_model(n_features=32, n_atoms=60, n_classes=4, kind="center-l2", seed=3)
    rng = np.random.default_rng(1)
    X_cal = rng.normal(2.0, 3.0, size=(500, 32)).astype(np.float32)  # same distribution as X
    path = to_tflite(model, tmp_path / "q.tflite", precision="int8", calibration=X_cal, per_channel=per_channel)
    figures = assert_parity(model, path, X, backends=["tflite-runtime"], min_agreement=0.95)
    assert figures["agreement"] >= 0.95 and figures["max_score_error"] > 0


@pytest.mark.parametrize("kind", ["none", "center-l2"])
def test_dynamic_int8_parity_in_tflite_runtime(random_model, tmp_path, kind):
    """Hybrid FULLY_CONNECTED (version 9, per-tensor int8 weights) runs in tflite-runtime 2.14;
    it has no per-channel hybrid kernel (version 12), which is why dynamic files are per-tensor."""
    model, X = random_model(n_features=32, n_atoms=60, n_classes=4, kind=kind, seed=3)
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    figures = assert_parity(model, path, X, backends=["tflite-runtime"], min_agreement=0.95)
    assert figures["within_integer_graph_tolerance"] and figures["max_score_error"] > 0


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="bit for bit on x86's portable kernels; Arm's NEON ones may round otherwise")
def test_dynamic_int8_scores_are_the_reference_kernels_bit_for_bit(random_model, tmp_path):
    """``hybrid_graph`` evaluates TFLite's reference hybrid kernel, which tflite-runtime runs."""
    model, X = random_model(n_features=64, n_atoms=200, n_classes=10, kind="center-l2", seed=1)
    path = to_tflite(model, tmp_path / "d.tflite", precision="int8-dynamic")
    Z = model.preprocess.apply(X)
    expected = np.hsplit(HybridGraph.read(path).scores(Z), 2)[0]
    np.testing.assert_array_equal(run("tflite-runtime", path, Z), expected)
