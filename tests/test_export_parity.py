"""Export on more rows than one block: calibration ranges, clipped fractions, the interpreters' runs
and the exact reference are all computed in blocks of rows, and must equal the whole-batch figures."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("lastedge.export")

from conftest_export import random_model  # noqa: E402

from lastedge.export import assert_parity, to_onnx, to_tflite  # noqa: E402
from lastedge.export.backends import available, run  # noqa: E402
from lastedge.export.calibration import TENSORS, Ranges, activations, clipped_fraction  # noqa: E402
from lastedge.runtime.model import BLOCK_ROWS  # noqa: E402

ROWS = 2 * BLOCK_ROWS + 7


@pytest.mark.parametrize("writer, fmt", [(to_onnx, "onnx"), (to_tflite, "tflite")])
@pytest.mark.parametrize("int8", [False, True])
def test_parity_over_several_blocks(tmp_path, writer, fmt, int8):
    if not available(fmt):
        pytest.skip(f"no {fmt} interpreter installed")
    model, X_cal = random_model(kind="standardize", seed=2)
    X = np.random.default_rng(3).normal(2.0, 3.0, (ROWS, model.n_features)).astype(np.float32)
    path = writer(model, tmp_path / f"m.{fmt}", **({"int8": True, "calibration": X_cal} if int8 else {}))
    figures = assert_parity(model, path, X, min_agreement=0.9, max_accuracy_drop=1.0)
    assert figures["rows"] == ROWS
    for backend in available(fmt):
        scores = run(backend, path, model.preprocess.apply(X))
        assert scores.shape == (ROWS, model.n_outputs)
        if not int8:  # every block's rows, in order
            np.testing.assert_allclose(scores, model.decision_function(X), rtol=1e-4, atol=1e-4)


def test_clipped_fraction_counted_in_blocks_is_the_share_outside_each_range():
    model, X_cal = random_model(kind="standardize", seed=2)
    X = np.random.default_rng(3).normal(2.0, 6.0, (ROWS, model.n_features)).astype(np.float32)
    ranges = Ranges.measure(model, X_cal, margin=0.0).describe()
    fractions = clipped_fraction(model, X, ranges)
    for name, values in zip(TENSORS, activations(model, X).values()):
        lo, hi = ranges[name]
        assert fractions[name] == pytest.approx(np.mean((values < lo) | (values > hi)), abs=1e-12)
    assert fractions["input"] > 0  # wider rows than the calibration's: the check is not vacuous


@pytest.mark.parametrize("input_is_raw", [False, True])
def test_calibrated_ranges_measured_in_blocks_are_the_whole_batch_ranges(input_is_raw):
    model, _ = random_model(kind="standardize")
    X = np.random.default_rng(1).normal(0, 3, (ROWS, model.n_features)).astype(np.float32)  # > 1 block
    ranges = Ranges.measure(model, X, margin=0.0, input_is_raw=input_is_raw)
    for name, values in zip(TENSORS, activations(model, X, input_is_raw).values()):
        expected = (min(values.min(), 0.0), max(values.max(), 0.0))
        np.testing.assert_allclose(getattr(ranges, name), expected, rtol=1e-12, err_msg=name)
