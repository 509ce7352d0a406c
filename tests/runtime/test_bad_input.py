"""Bad input and bad files raise clear errors; a missing backend names the extra to install."""

from __future__ import annotations

import json
import re
import sys
import warnings

import numpy as np
import pytest

from lastedge.runtime import load


def test_wrong_width_1d_nan_inf_and_strings_are_refused(paths):
    for path in paths.values():
        predictor = load(path)
        with pytest.raises(ValueError, match="has 23 features, the model expects 24"):
            predictor.predict(np.zeros((2, 23)))
        with pytest.raises(ValueError, match=r"must be 2-D .*X\[None, :\]"):
            predictor.predict(np.zeros(24))
        with pytest.raises(ValueError, match=r"must be 2-D .*got 3-D shape \(2, 4, 5\)"):
            predictor.predict(np.zeros((2, 4, 5)))  # images of 20 values for a 24-feature model
        with pytest.raises(ValueError, match="NaN or infinite"):
            predictor.predict(np.full((1, 24), np.nan))
        with pytest.raises(ValueError, match="NaN or infinite"):
            predictor.decision_function(np.full((3, 24), np.inf))
        with pytest.raises(TypeError, match="real numbers"):
            predictor.predict(np.full((1, 24), "1"))
        with pytest.raises(ValueError, match="its rows differ in length"):  # not numpy's message
            predictor.predict([[0.0] * 24, [0.0] * 23])


def test_values_beyond_float32_are_refused_not_scored_as_nan(paths):
    """1e39 is a finite float64 but infinite in float32, which every backend computes in."""
    for path in paths.values():
        with pytest.raises(ValueError, match="beyond float32's range"):
            load(path).predict(np.full((1, 24), 1e39))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                            "ignore:invalid value encountered:RuntimeWarning")
def test_values_that_overflow_float32_on_the_way_are_refused_not_predicted(blobs, export, prototype_model, tmp_path):
    """3e38 is finite in float32, but its scores through a model without normalisation are not:
    NaN scores were predicted as the first class, by every fp32 backend."""
    X, y = blobs()
    with pytest.raises(ValueError, match="the scores overflowed float32"):
        prototype_model(X, y, preprocess="none").predict(np.full((2, 24), 3e38))
    for path in export(prototype_model(X, y, preprocess="standardize"), tmp_path, X).values():
        predictor = load(path)
        if predictor.precision == "fp32":  # int8 scores saturate instead
            with pytest.raises(ValueError, match="the scores overflowed float32"):
                predictor.predict(np.full((2, 24), -3.4e38))


def test_predict_command_refuses_overflowing_rows_in_one_line(blobs, prototype_model, tmp_path, capsys):
    """The command prints the refusal alone, not numpy's overflow warnings before it."""
    from lastedge.cli import main

    X, y = blobs()
    prototype_model(X, y, preprocess="none").save(tmp_path / "m.npz")
    np.savetxt(tmp_path / "rows.csv", np.full((3, 24), 3e38), delimiter=",")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning would be raised here instead of printed
        code = main(["predict", str(tmp_path / "m.npz"), "--data", str(tmp_path / "rows.csv"), "--no-labels"])
    err = capsys.readouterr().err
    assert code == 1 and err.splitlines() == [
        "lastedge predict: error: X's values are too large: the scores overflowed float32 (NaN or infinite)"]


@pytest.mark.parametrize("kind", ["l2", "center-l2"])
def test_l2_preprocessing_is_scale_invariant_at_extreme_scales(blobs, prototype_model, kind):
    """Squares of 1e20 overflow float32 and those of 1e-25 underflow: norms are taken rescaled."""
    X, y = blobs()
    model = prototype_model(X, y, preprocess=kind)
    expected = model.decision_function(X)
    for scale in (1e-25, 1e20, 1e35):
        np.testing.assert_allclose(model.decision_function(X.astype(np.float64) * scale), expected,
                                   rtol=1e-4, atol=1e-5)


def test_standardize_takes_the_mean_off_before_rounding_to_float32(blobs, prototype_model):
    """Rows near 1e8 keep their digits (float32 spacing there is 8): the mean goes first."""
    X, y = blobs()
    model = prototype_model(X.astype(np.float64) + 1e8, y, preprocess="standardize")
    shifted = prototype_model(X, y, preprocess="standardize")
    assert np.mean(model.predict(X.astype(np.float64) + 1e8) == shifted.predict(X)) > 0.95


def test_a_batch_of_images_is_read_row_by_row(blobs, paths):
    """[n, H, W(, C)] with H*W(*C) = n_features: what a camera loop holds, flattened as in training."""
    X, _ = blobs()
    for path in paths.values():
        predictor = load(path)
        for shape in ((4, 6), (2, 4, 3)):
            np.testing.assert_array_equal(predictor.decision_function(X[:9].reshape(9, *shape)),
                                          predictor.decision_function(X[:9]))


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
    for path in paths.values():
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


@pytest.mark.parametrize("edit, message", [
    (lambda meta: meta.update(classes=[0, 1], n_outputs=1), "the graph gives 3 score"),
    (lambda meta: meta.update(classes=[0, 0, 1]), "classes repeat a label"),
    (lambda meta: meta.update(preprocess_in_graph="false"), "preprocess_in_graph must be true or false"),
    (lambda meta: meta.update(format_version="1"), "format_version must be an integer"),
    (lambda meta: meta.update(format_version=99), "format_version 99 is newer .*upgrade lastedge"),
    (lambda meta: meta.update(preprocess={"kind": "standardize", "mean": [0.0], "scale": [1.0]}),
     "preprocess statistics have 1 features, model has 24"),
    (lambda meta: meta.update(preprocess={"kind": "standardize", "mean": {"a": 1}, "scale": [1.0]}),
     "metadata standardize mean must be an array of real numbers"),
    (lambda meta: meta.update(n_features=5), "the graph takes 24 features per row, its metadata 5"),
], ids=["outputs", "repeated-classes", "in-graph-text", "version-text", "version-new", "mean-width",
        "mean-not-numbers", "features"])
def test_metadata_that_disagrees_with_itself_or_the_graph_is_refused(paths, tmp_path, edit, message):
    onnx = pytest.importorskip("onnx")
    if "m.onnx" not in paths:
        pytest.skip("no ONNX exporter yet")
    proto = onnx.load(paths["m.onnx"])
    entry = next(p for p in proto.metadata_props if p.key == "lastedge")
    meta = json.loads(entry.value)
    edit(meta)
    entry.value = json.dumps(meta)
    onnx.save(proto, tmp_path / "edited.onnx")
    with pytest.raises(ValueError, match=f"edited.onnx: .*{message}"):
        load(tmp_path / "edited.onnx")


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
    for threads in (0, -1, 1.5, True, 2**31):  # 2**31: a pybind TypeError, a negative OpenBLAS count
        with pytest.raises(ValueError, match="threads must be a positive integer"):
            load(paths["m.npz"], threads=threads)
    with pytest.raises(FileNotFoundError):
        load(paths["m.npz"].with_name("missing.npz"))


@pytest.mark.parametrize("seed", range(2))
def test_randomly_damaged_files_work_or_are_refused_cleanly(blobs, paths, tmp_path, capsys, seed):
    """Hostile files: random bytes overwritten past the magic. Loading and predicting either works
    (the damage hit numbers) or raises ValueError / TypeError; nothing else escapes, nothing is
    printed on stdout."""
    rng = np.random.default_rng(seed)
    rows, _ = blobs(rows=8)
    outcomes = {"works": 0, "refused": 0}
    for name, path in paths.items():
        data = path.read_bytes()
        for _ in range(25):
            damaged = bytearray(data)
            for position in rng.integers(8, len(data), size=rng.choice([1, 4, 16])):
                damaged[int(position)] = int(rng.integers(256))
            broken = tmp_path / name
            broken.write_bytes(bytes(damaged))
            try:
                load(broken).predict(rows)
                outcomes["works"] += 1
            except (ValueError, TypeError):
                outcomes["refused"] += 1
    assert outcomes["refused"] > 0  # the damage was real
    assert capsys.readouterr().out == ""


def test_a_damaged_onnx_initializer_is_reported_once(paths, tmp_path, capfd):
    """onnxruntime logged such a file's error on stderr as well (fuzzing found it): the one
    ValueError is the only report, so the CLI's error stays one line."""
    onnx = pytest.importorskip("onnx")
    if "m-int8.onnx" not in paths:
        pytest.skip("no int8 ONNX file")
    proto = onnx.load(paths["m-int8.onnx"])
    zero_point = next(t for t in proto.graph.initializer if t.name == "scores_zero_point")
    zero_point.int32_data.append(0)  # two values for a scalar
    broken = tmp_path / "broken.onnx"
    onnx.save(proto, broken)
    with pytest.raises(ValueError, match="is not a readable ONNX file of lastedge's: .*scores_zero_point"):
        load(broken)
    with pytest.raises(ValueError, match="is not a readable ONNX model .*scores_zero_point"):
        load(broken, trust=True)  # onnxruntime's own report
    out, err = capfd.readouterr()
    assert out == "" and "onnxruntime" not in err


def test_a_file_that_loads_but_cannot_run_is_refused_by_name(paths, monkeypatch):
    """A damaged graph can pass loading and fail in the interpreter (the fuzzing above found a
    .tflite whose op read a tensor without data): the error names the file."""
    for name in ("m.tflite", "m.onnx"):
        if name not in paths:
            continue
        predictor = load(paths[name])
        failing = RuntimeError("Input tensor 1 lacks data")
        if name.endswith(".tflite"):
            monkeypatch.setattr(predictor, "_interp", _Failing(predictor._interp, "invoke", failing))
        else:
            monkeypatch.setattr(predictor, "session", _Failing(predictor.session, "run", failing))
        expected = re.escape(f"{paths[name]} cannot be run (Input tensor 1 lacks data)")
        with pytest.raises(ValueError, match=expected):
            predictor.predict(np.zeros((2, predictor.n_features)))


class _Failing:
    """Wraps an interpreter or session; one method raises ``error``."""

    def __init__(self, inner, method: str, error: Exception) -> None:
        self._inner, self._method, self._error = inner, method, error

    def __getattr__(self, name):
        if name == self._method:
            def fail(*args, **kwargs):
                raise self._error
            return fail
        return getattr(self._inner, name)


def test_an_npz_entry_declaring_more_than_it_holds_is_refused_before_allocating(paths, tmp_path,
                                                                                   monkeypatch):
    """Fuzzing: a few damaged header bytes made numpy allocate the declared 149 GiB (MemoryError)."""
    import io
    import zipfile

    huge = tmp_path / "huge.npz"
    with zipfile.ZipFile(paths["m.npz"]) as source, zipfile.ZipFile(huge, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "dictionary.npy":
                header = data[: data.index(b"\n") + 1]
                shape = re.search(rb"'shape': \([^)]*\)", header).group()
                bigger = b"'shape': (200000, 200000)"
                padding = b" " * (len(bigger) - len(shape)) + b"\n"  # keep the header's length
                data = header.replace(shape, bigger, 1).replace(padding, b"\n", 1) + data[len(header):]
            target.writestr(info, data)
    with pytest.raises(ValueError, match=r"dictionary.npy declares shape \(200000, 200000\) of float32 "
                                         r"\(160000000000 bytes\) but holds"):
        load(huge)
    classes = io.BytesIO()  # 10**12 empty strings of no size: 0 bytes declared, 3.6 TiB asked for
    np.lib.format.write_array_header_1_0(classes, {"descr": "<U0", "fortran_order": False,
                                                   "shape": (10**12,)})
    with zipfile.ZipFile(paths["m.npz"]) as source, zipfile.ZipFile(tmp_path / "empty.npz", "w") as target:
        for info in source.infolist():
            target.writestr(info, classes.getvalue() if info.filename == "classes.npy" else source.read(info))
    with pytest.raises(ValueError, match=r"classes.npy declares elements of no size \(<U0\)"):
        load(tmp_path / "empty.npz")
    monkeypatch.setattr("lastedge.runtime.model.MAX_MODEL_BYTES", 100)
    with pytest.raises(ValueError, match="more than the 100 a model may"):
        load(paths["m.npz"])
