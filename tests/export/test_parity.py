"""The parity check: on more rows than one block (calibration ranges, clipped fractions, the
interpreters' runs and the exact reference are all computed in blocks of rows, and must equal the
whole-batch figures), its fp32 tolerance, its probe rows and its synthetic rows."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("lastedge.export")


from lastedge.export import ParityError, assert_parity, to_onnx, to_tflite  # noqa: E402
from lastedge.export.atom_rows import synthetic_rows, threshold_rows  # noqa: E402
from lastedge.export.backends import available, run  # noqa: E402
from lastedge.export.calibration import TENSORS, Ranges, activations, clipped_fraction  # noqa: E402
from lastedge.export.parity import probe_rows  # noqa: E402
from lastedge.runtime import Model  # noqa: E402
from lastedge.runtime.model import BLOCK_ROWS  # noqa: E402

ROWS = 2 * BLOCK_ROWS + 7


@pytest.mark.parametrize("writer, fmt", [(to_onnx, "onnx"), (to_tflite, "tflite")])
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_parity_over_several_blocks(random_model, tmp_path, writer, fmt, precision):
    if not available(fmt):
        pytest.skip(f"no {fmt} interpreter installed")
    model, X_cal = random_model(kind="standardize", seed=2)
    X = np.random.default_rng(3).normal(2.0, 3.0, (ROWS, model.n_features)).astype(np.float32)
    path = writer(model, tmp_path / f"m.{fmt}", precision=precision,
                  calibration=X_cal if precision == "int8" else None)
    figures = assert_parity(model, path, X, min_agreement=0.9, max_accuracy_drop=1.0)
    assert figures["rows"] == ROWS
    for backend in available(fmt):
        scores = run(backend, path, model.preprocess.apply(X))
        assert scores.shape == (ROWS, model.n_outputs)
        if precision == "fp32":  # every block's rows, in order
            np.testing.assert_allclose(scores, model.decision_function(X), rtol=1e-4, atol=1e-4)


def test_clipped_fraction_counted_in_blocks_is_the_share_outside_each_range(random_model):
    model, X_cal = random_model(kind="standardize", seed=2)
    X = np.random.default_rng(3).normal(2.0, 6.0, (ROWS, model.n_features)).astype(np.float32)
    ranges = Ranges.measure(model, X_cal, margin=0.0).describe()
    fractions = clipped_fraction(model, X, ranges)
    for name, values in zip(TENSORS, activations(model, X).values()):
        lo, hi = ranges[name]
        assert fractions[name] == pytest.approx(np.mean((values < lo) | (values > hi)), abs=1e-12)
    assert fractions["input"] > 0  # wider rows than the calibration's: the check is not vacuous


def test_calibrated_ranges_measured_in_blocks_are_the_whole_batch_ranges(random_model):
    model, _ = random_model(kind="standardize")
    X = np.random.default_rng(1).normal(0, 3, (ROWS, model.n_features)).astype(np.float32)  # > 1 block
    ranges = Ranges.measure(model, X, margin=0.0)
    for name, values in zip(TENSORS, activations(model, X).values()):
        expected = (min(values.min(), 0.0), max(values.max(), 0.0))
        if name == "scores":  # a sign no score had gets a tenth of the width (binary decisions)
            expected = (expected[0] or -0.1 * expected[1], expected[1] or -0.1 * expected[0])
        np.testing.assert_allclose(getattr(ranges, name), expected, rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("writer, fmt", [(to_onnx, "onnx"), (to_tflite, "tflite")])
def test_the_fp32_tolerance_scales_with_the_weights(digits_case, tmp_path, writer, fmt):
    """Weights x1000: a correct file was refused on the threshold probes, where the features are
    ~0 but their float32 rounding (relative to |z| @ |d_j| + alpha, not to f_j) is multiplied by
    |w_j|. A file 0.1 % off is still refused."""
    if not available(fmt):
        pytest.skip(f"no {fmt} interpreter installed")
    model, _, _, X_test, _ = digits_case()
    heavy = Model(model.dictionary, model.weights * 1000, model.classes, model.alpha, model.preprocess)
    assert assert_parity(heavy, writer(heavy, tmp_path / f"h.{fmt}"), X_test)["agreement"] == 1.0
    off = Model(heavy.dictionary, heavy.weights * 1.001, model.classes, model.alpha, model.preprocess)
    with pytest.raises(ParityError, match="max score error"):
        assert_parity(heavy, writer(off, tmp_path / f"o.{fmt}"), X_test)


@pytest.mark.parametrize("alpha", [0.0, -1.0, -10.0])
@pytest.mark.parametrize("kind", ["none", "l2", "center-l2", "standardize"])
def test_threshold_probes_and_parity_for_a_zero_or_negative_alpha(random_model, tmp_path, alpha, kind):
    """sqrt(1 - a^2) of a = alpha / |d| < -1 made NaN probe rows, which the check then refused
    as if the user's rows held NaN."""
    model, X = random_model(kind=kind)
    model = Model(model.dictionary, model.weights, model.classes, alpha, model.preprocess)
    rows = threshold_rows(model)
    assert np.all(np.isfinite(rows))
    gaps = np.abs(model.preprocess.apply(rows) @ model.dictionary - alpha)
    assert np.all(gaps.min(axis=1) < 1e-5)
    assert_parity(model, to_onnx(model, tmp_path / "m.onnx"), X)


@pytest.mark.parametrize("kind", ["none", "l2", "center-l2", "standardize"])
def test_synthetic_check_rows_fire_the_atoms(digits_case, kind):
    """Without data the check ran on standard normal rows, which fired an atom in 1 % of the rows
    of a center-l2 digits model and in none for preprocess none: it checked only zeros."""
    model = digits_case(kind)[0]
    rows = synthetic_rows(model, 512)
    assert len(rows) >= 256 and np.all(np.isfinite(rows))
    firing = (model.features(rows) > 0).any(axis=1).mean()
    assert firing > 0.5
    np.testing.assert_array_equal(rows, synthetic_rows(model, 512))  # deterministic


@pytest.mark.parametrize("writer, fmt", [(to_onnx, "onnx"), (to_tflite, "tflite")])
def test_parity_fails_for_a_file_whose_classes_or_preprocessing_differ(random_model, tmp_path, writer, fmt):
    """The runtime labels and preprocesses rows as the file's metadata says: a file of the same
    dictionary and weights but other classes or standardisation passed, and predicted otherwise."""
    if not available(fmt):
        pytest.skip(f"no {fmt} interpreter installed")
    from lastedge.runtime import Preprocess

    model, X = random_model(kind="standardize")
    path = writer(model, tmp_path / f"m.{fmt}")
    relabelled = Model(model.dictionary, model.weights, model.classes[::-1], 1.0, model.preprocess)
    shifted = Model(model.dictionary, model.weights, model.classes, 1.0,
                    Preprocess("standardize", model.preprocess.mean + 1, model.preprocess.scale))
    for other, field in ((relabelled, "classes"), (shifted, "preprocess")):
        with pytest.raises(ParityError, match=f"does not match the model: its {field} differ"):
            assert_parity(other, path, X)


@pytest.mark.parametrize("writer, fmt", [(to_onnx, "onnx"), (to_tflite, "tflite")])
def test_fp32_parity_on_rows_near_the_top_of_float32(random_model, tmp_path, writer, fmt):
    """The large-value probes (a thousand times some real rows) of rows near 1e37 left float32:
    valid rows were refused as "X contains NaN or infinite values". Such probes are left out."""
    if not available(fmt):
        pytest.skip(f"no {fmt} interpreter installed")
    model, X = random_model()
    path = writer(model, tmp_path / f"m.{fmt}")
    figures = assert_parity(model, path, X * 1e36)
    assert figures["rows"] == len(X) and figures["probe_rows"] < len(probe_rows(model, X))


def test_a_model_with_nearly_zero_columns_gets_finite_probes_and_exports_cleanly(digits_case, tmp_path, capsys):
    """An atom whose column is subnormal (weight decay) has its threshold beyond float32's reach:
    its threshold probes and synthetic rows overflowed to inf, so the parity check, and ``lastedge
    export`` given no data, said "X contains NaN or infinite values" of a valid model; its int8
    graphs held an infinite threshold, with overflow warnings."""
    import warnings

    from lastedge.cli import main

    model, X_train, y_train, X_test, y_test = digits_case()
    D = model.dictionary.copy()
    D[:, ::40] *= 1e-42  # five atoms
    tiny = Model(D, model.weights, model.classes, model.alpha, model.preprocess)
    assert np.all(np.isfinite(threshold_rows(tiny))) and np.all(np.isfinite(synthetic_rows(tiny, 512)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for writer, fmt in ((to_onnx, "onnx"), (to_tflite, "tflite")):
            if available(fmt):
                assert_parity(tiny, writer(tiny, tmp_path / f"m.{fmt}"), X_test, y_test)
                assert_parity(tiny, writer(tiny, tmp_path / f"q.{fmt}", precision="int8", calibration=X_train),
                              X_test, y_test)
    tiny.save(tmp_path / "tiny.npz")
    assert main(["export", str(tmp_path / "tiny.npz"), "--format", "onnx", "--out",
                 str(tmp_path / "cli.onnx")]) == 0, capsys.readouterr().err


def test_parity_compares_with_the_model_on_the_rows_as_given(random_model, tmp_path, capsys):
    """The runtime preprocesses float64 rows in float64, where a file with standardisation in its
    graph reads them as float32: for features near 1e8 that file disagreed with the model on 26 %
    of the rows, and parity (which cast the rows to float32 first) passed it, as did ``lastedge
    export`` on a float64 .npy file."""
    if not available("onnx"):
        pytest.skip("no onnx interpreter installed")
    from lastedge.cli import main
    from lastedge.runtime import Preprocess, load

    model, X = random_model(kind="standardize")
    X = X.astype(np.float64) * 0.01 + 1e8
    model = Model(model.dictionary, model.weights, model.classes, 1.0, Preprocess.fit("standardize", X))
    in_graph = to_onnx(model, tmp_path / "g.onnx", with_preprocessing=True)
    assert np.mean(load(in_graph).predict(X) == model.predict(X)) < 0.9
    with pytest.raises(ParityError, match="predictions differ from the Python model"):
        assert_parity(model, in_graph, X)
    assert_parity(model, in_graph, X.astype(np.float32))  # what the file reads
    assert_parity(model, to_onnx(model, tmp_path / "m.onnx"), X)  # preprocessed by the runtime
    model.save(tmp_path / "m.npz")
    np.save(tmp_path / "X.npy", X)
    export = ["export", str(tmp_path / "m.npz"), "--format", "onnx", "--calibration", str(tmp_path / "X.npy")]
    assert main([*export, "--out", str(tmp_path / "cli.onnx")]) == 0
    assert main([*export, "--with-preprocessing", "--out", str(tmp_path / "cli-g.onnx")]) == 1
    assert "parity check failed" in capsys.readouterr().err
