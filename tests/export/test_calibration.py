"""Calibrated int8 ranges: the scores' range holds both signs, the binary decision boundary."""

import pytest


from lastedge.export.calibration import Ranges
from lastedge.export.quantize import affine_params

WRITERS = ["onnx", "tflite"]


def _writer(fmt):
    if fmt == "onnx":
        pytest.importorskip("onnxruntime")
        from lastedge.export import to_onnx as write
    else:
        pytest.importorskip("ai_edge_litert")
        from lastedge.export import to_tflite as write
    return write


def test_the_scores_range_holds_both_signs_when_calibration_scores_have_one(binary_digits_case):
    model, X_train, _, _ = binary_digits_case()
    negative = X_train[model.decision_function(X_train) < 0]
    lo, hi = Ranges.measure(model, negative).scores
    assert lo < 0 < hi
    scale, zero_point = affine_params(lo, hi)
    assert zero_point <= 127 - 20  # at least 20 int8 levels for positive scores


@pytest.mark.parametrize("fmt", WRITERS)
def test_a_binary_file_calibrated_on_one_class_still_predicts_both(binary_digits_case, tmp_path, fmt):
    """No calibration row scored above 0: the range used to end at 0, the binary decision
    boundary, and the file never predicted classes[1] (49 % agreement)."""
    from lastedge.export import assert_parity

    write = _writer(fmt)
    model, X_train, X_test, y_test = binary_digits_case()
    negative = X_train[model.decision_function(X_train) < 0]
    path = write(model, tmp_path / f"b.{fmt}", precision="int8", calibration=negative)
    assert assert_parity(model, path, X_test, y_test)["agreement"] >= 0.99
