"""Metadata that breaks the file contract, model files saved where they cannot be, and preprocessing
statistics at the edges of float32: each refused with a clear error or handled exactly."""

from __future__ import annotations

import importlib.util
import json
import re
import warnings

import numpy as np
import pytest

from lastedge.runtime import Model, Preprocess, load
from lastedge.runtime.files import parse_header


def _header_text(**fields) -> str:
    return json.dumps({"classes": [0, 1, 2], "preprocess": {"kind": "none"}, "n_outputs": 3, **fields})


def test_json_nested_too_deep_is_refused_as_corrupt(paths, tmp_path):
    """json.loads raised RecursionError (a traceback from the CLI) on brackets nested 100,000 deep."""
    deep = "[" * 100_000 + "]" * 100_000
    arrays = dict(np.load(paths["m.npz"]))
    np.savez(tmp_path / "deep.npz", **{**arrays, "meta": np.array(deep)})
    with pytest.raises(ValueError, match="deep.npz: a JSON field is corrupt"):
        load(tmp_path / "deep.npz")
    with pytest.raises(ValueError, match="deep.onnx: the 'lastedge' metadata is corrupt"):
        parse_header(deep, "deep.onnx")


def test_class_labels_must_be_finite(paths, tmp_path):
    """A NaN class was predicted as NaN (and the CLI reported a bare "error: nan")."""
    arrays = dict(np.load(paths["m.npz"]))
    np.savez(tmp_path / "nan.npz", **{**arrays, "classes": np.array([np.nan, 1.0, 2.0])})
    with pytest.raises(ValueError, match=r"classes must be finite numbers or strings, got \[nan, 1.0, 2.0\]"):
        load(tmp_path / "nan.npz")
    with pytest.raises(ValueError, match="m.onnx: metadata classes must be finite numbers or strings"):
        parse_header(_header_text(classes=[float("inf"), 1, 2]), "m.onnx")


@pytest.mark.parametrize("mean", [["a"], [1j], {"a": 1}, [10**400], [[1.0], [1.0, 2.0]]],
                         ids=["text", "complex", "dict", "huge-int", "ragged"])
def test_standardize_statistics_that_are_no_real_numbers_are_refused(mean):
    """numpy's own messages leaked ("could not convert string to float"), a complex mean lost its
    imaginary part with a warning, and an integer beyond float's range raised OverflowError."""
    with pytest.raises(ValueError, match="standardize mean must be an array of real numbers"):
        Preprocess("standardize", mean, [1.0])


def test_an_alpha_beyond_float_or_a_precision_that_is_no_text_in_metadata_is_refused():
    """OverflowError escaped; a precision {"a": 1} broke bench's table (AttributeError)."""
    with pytest.raises(ValueError, match="m.onnx: metadata int too large"):
        parse_header(_header_text(alpha=10**400), "m.onnx")
    with pytest.raises(ValueError, match="m.onnx: metadata precision must be text"):
        parse_header(_header_text(precision={"a": 1}), "m.onnx")


@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), 1e39, "1", True, None],
                         ids=["nan", "inf", "beyond-float32", "text", "bool", "null"])
def test_an_alpha_that_is_no_finite_number_in_metadata_is_refused(alpha):
    """A NaN, infinite or textual alpha was read as a float (NaN alpha accepted, "1" as 1.0)."""
    with pytest.raises(ValueError, match="m.onnx: metadata alpha must be"):
        parse_header(_header_text(alpha=alpha), "m.onnx")
    assert parse_header(_header_text(alpha=-2), "m.onnx").alpha == -2.0


@pytest.mark.parametrize("n_atoms", [-3, 0, True, 200.0, "200"])
def test_an_n_atoms_that_is_no_positive_integer_in_metadata_is_refused(n_atoms):
    """A negative n_atoms gave negative MACs per sample (inspect, bench); true read as 1 atom;
    "200" or 200.0 were silently dropped."""
    with pytest.raises(ValueError, match=f"m.onnx: metadata n_atoms must be a positive integer, got {n_atoms!r}"):
        parse_header(_header_text(n_atoms=n_atoms), "m.onnx")
    assert parse_header(_header_text(n_atoms=None), "m.onnx").n_atoms is None  # files may leave it out
    assert parse_header(_header_text(n_atoms=7), "m.onnx").n_atoms == 7


@pytest.mark.parametrize("quantization, message", [
    ("dynamic", "quantization must be an object or null, got 'dynamic'"),
    ({"mode": "dynamic", "weights": "int4"}, 'quantization.weights must be "uint8" or "int8", got \'int4\''),
    ({"mode": "static", "weights": 8}, 'quantization.weights must be "uint8" or "int8", got 8'),
])
def test_a_quantization_or_weight_type_that_is_not_the_contracts_is_refused(quantization, message):
    """The weight type decides whether the runtime warns of saturating int8 kernels."""
    with pytest.raises(ValueError, match=f"m.onnx: metadata {re.escape(message)}"):
        parse_header(_header_text(quantization=quantization), "m.onnx")
    assert parse_header(_header_text(quantization={"mode": "dynamic"}), "m.onnx").weights is None  # older files
    assert parse_header(_header_text(quantization={"mode": "dynamic", "weights": "int8"}), "m.onnx").weights == "int8"


def test_json_with_an_integer_of_too_many_digits_is_refused_as_corrupt(paths, tmp_path):
    """Python refuses integers of over 4300 digits with a bare ValueError advising
    sys.set_int_max_str_digits(), which named no file."""
    huge = "1" * 5000
    with pytest.raises(ValueError, match="m.onnx: the 'lastedge' metadata is corrupt"):
        parse_header('{"n_atoms": ' + huge + '}', "m.onnx")
    arrays = dict(np.load(paths["m.npz"]))
    np.savez(tmp_path / "huge.npz", **{**arrays, "meta": np.array('{"seed": ' + huge + '}')})
    with pytest.raises(ValueError, match="huge.npz: a JSON field is corrupt"):
        load(tmp_path / "huge.npz")


def test_an_alpha_beyond_float32_is_refused_by_the_model(blobs, prototype_model, paths, tmp_path):
    """alpha is subtracted in float32: 1e39 overflowed to -inf, every feature was 0 and every row
    went to the first class, with only a RuntimeWarning."""
    X, y = blobs()
    model = prototype_model(X, y)
    with pytest.raises(ValueError, match="alpha must be finite .*float32"):
        Model(model.dictionary, model.weights, model.classes, 1e39, model.preprocess)
    arrays = dict(np.load(paths["m.npz"]))
    np.savez(tmp_path / "alpha.npz", **{**arrays, "alpha": np.array(-1e300)})
    with pytest.raises(ValueError, match="alpha.npz: dictionary, weights and alpha must be finite"):
        load(tmp_path / "alpha.npz")


def test_an_inconsistent_npz_model_is_refused_naming_its_file(paths, tmp_path):
    """The model's own checks said what was wrong but not in which file (bench loads several)."""
    arrays = dict(np.load(paths["m.npz"]))
    np.savez(tmp_path / "short.npz", **{**arrays, "weights": arrays["weights"][:-1]})
    with pytest.raises(ValueError, match=r"short.npz .*disagree with dictionary \(24, 24\) .*weights \(23, 3\)"):
        load(tmp_path / "short.npz")
    np.savez(tmp_path / "scale.npz", **{**arrays, "preprocess": np.array('{"kind": "standardize"}')})
    with pytest.raises(ValueError, match=r"scale.npz: preprocess 'standardize' needs both mean and scale"):
        load(tmp_path / "scale.npz")


class _LegacyView:
    """A TFLite interpreter that loads a damaged file as the legacy ``tflite_runtime`` did, where
    LiteRT refuses it: ``INPUT`` says how it shows the input."""

    INPUT: dict = {}

    def __init__(self, model_content: bytes, num_threads: int) -> None:
        pass

    def allocate_tensors(self) -> None:
        pass

    def get_input_details(self) -> list[dict]:
        return [{"name": "input", "index": 0, "shape": np.array([1, 24]), "dtype": np.float32,
                 "quantization": (0.0, 0), **self.INPUT}]

    def get_output_details(self) -> list[dict]:
        return [{"name": "scores", "index": 6, "shape": np.array([1, 3]), "dtype": np.float32,
                 "quantization": (0.0, 0)}]


@pytest.mark.parametrize("shown, message", [
    (dict(shape=np.array([], np.int32)), r"expected one input \[batch, n_features\], got \[\('input', \[\]\)\]"),
    (dict(dtype=np.int8, quantization=(0.0, 0)), "the input tensor is int8 with scale 0.0; expected float32"),
    (dict(dtype=np.float16), "the input tensor is float16 with scale 0.0; expected float32"),
], ids=["scalar-input", "zero-scale", "float16"])
def test_a_tflite_input_that_cannot_be_fed_is_refused_at_load(paths, monkeypatch, shown, message):
    """The legacy interpreter loaded such damaged files: a scalar input raised IndexError (a
    traceback from the CLI), an int8 scale of 0 quantized every row alike (garbage predictions
    with a divide-by-zero warning), a float16 input failed at predict in np.iinfo."""
    from lastedge.runtime.backends import TFLitePredictor

    if "m.tflite" not in paths:
        pytest.skip("no TFLite exporter")
    monkeypatch.setattr(_LegacyView, "INPUT", shown)
    with pytest.raises(ValueError, match=f"m.tflite: {message}"):
        TFLitePredictor(paths["m.tflite"], _LegacyView, "tflite_runtime")


def _onnx_graph(tmp_path, input_shape, nodes, initializers=()):
    """A one-input ONNX file ``x`` -> ``y`` (declared [N, 3]) with a 3-class, 24-feature header."""
    onnx = pytest.importorskip("onnx")
    if importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("onnxruntime missing")
    from onnx import TensorProto, helper

    graph = helper.make_graph(nodes, "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                              initializer=list(initializers))
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    proto.metadata_props.add(key="lastedge", value=_header_text())
    onnx.save(proto, tmp_path / "g.onnx")
    return tmp_path / "g.onnx"


def test_an_onnx_input_without_a_shape_is_refused(tmp_path):
    """An IndexError escaped (a traceback from the CLI)."""
    helper = pytest.importorskip("onnx").helper
    path = _onnx_graph(tmp_path, None, [helper.make_node("Identity", ["x"], ["y"])])
    with pytest.raises(ValueError, match=r"g.onnx is not a graph lastedge writes: node 0 \(Identity\)"):
        load(path)
    with pytest.raises(ValueError, match=r"g.onnx: expected one float input \[batch, n_features\]"):
        load(path, trust=True)


def test_a_graph_computing_another_width_than_it_declares_is_refused(tmp_path):
    """y = x[:, :rows], declared [N, 3]: its two columns were taken for the scores of 3 classes."""
    onnx = pytest.importorskip("onnx")
    helper = onnx.helper
    constants = [onnx.numpy_helper.from_array(np.array([value], np.int64), name)
                 for name, value in (("zero", 0), ("one", 1))]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["rows"], axis=0),
             helper.make_node("Slice", ["x", "zero", "rows", "one"], ["y"])]
    path = _onnx_graph(tmp_path, ["N", 24], nodes, constants)
    with pytest.raises(ValueError, match=r"g.onnx is not a graph lastedge writes: node 0 \(Shape\)"):
        load(path)
    predictor = load(path, trust=True)  # the predictor's own check of the scores' shape
    expected = re.escape("g.onnx gave scores of shape (2, 2) for 2 row(s), not (2, 3)")
    with pytest.raises(ValueError, match=expected):
        predictor.predict(np.zeros((2, 24)))


def test_model_load_refuses_a_file_that_is_no_npz_archive(tmp_path):
    """A bare .npy raised TypeError ('ndarray' is no context manager); other files got numpy's
    advice to unpickle them."""
    np.save(tmp_path / "array.npy", np.zeros(3))
    (tmp_path / "rows.csv").write_text("1,2,0\n")
    for path in (tmp_path / "array.npy", tmp_path / "rows.csv"):
        with pytest.raises(ValueError, match="is not a .npz archive"):
            Model.load(path)


def test_saving_where_no_file_can_be_created_says_so(blobs, prototype_model):
    """/proc refuses a new file with ENOENT: the message read "No such file or directory"."""
    X, y = blobs()
    with pytest.raises(ValueError, match=r"^cannot write /proc/m.npz: folder /proc is not writable "
                                         r"\(it does not accept new files\)$"):
        prototype_model(X, y).save("/proc/m.npz")


def test_a_model_saves_under_an_upper_case_suffix(blobs, prototype_model, tmp_path):
    """train checks --out M.NPZ case-blind before fitting, and save then refused it: the fit was lost."""
    X, y = blobs()
    model = prototype_model(X, y)
    model.save(tmp_path / "M.NPZ")
    np.testing.assert_array_equal(load(tmp_path / "M.NPZ").predict(X), model.predict(X))
    with pytest.raises(ValueError, match="model files end in .npz, got 'm.zip'"):
        model.save(tmp_path / "m.zip")


@pytest.mark.parametrize("stem", ["a" * 250, "\u65e5" * 80], ids=["ascii", "cjk"])
def test_a_model_saves_under_the_longest_names_the_folder_takes(blobs, prototype_model, tmp_path, stem):
    """The temp file's name (the name and 14 more characters) passed the 255-byte limit: "folder is not
    writable (File name too long)" after check_output_path, and so train, had accepted the name."""
    from lastedge.runtime import check_output_path

    X, y = blobs()
    path = check_output_path(tmp_path / f"{stem}.npz", ".npz", "--out")
    prototype_model(X, y).save(path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_saving_over_a_folder_is_refused_and_leaves_nothing_behind(blobs, prototype_model, tmp_path):
    """os.replace raised IsADirectoryError naming the temp file."""
    X, y = blobs()
    (tmp_path / "m.npz").mkdir()
    with pytest.raises(ValueError, match="cannot write .*m.npz: it is a folder"):
        prototype_model(X, y).save(tmp_path / "m.npz")
    assert [p.name for p in tmp_path.iterdir()] == ["m.npz"]


@pytest.mark.parametrize("name", [".npz", ".NPZ"])
def test_a_name_that_is_only_the_suffix_is_refused_before_training(blobs, prototype_model, tmp_path, capsys, monkeypatch, name):
    """Path(".npz").suffix is "": save said "model files end in .npz, got '.npz'"; train now refuses
    the name with the same message before it reads any data."""
    from lastedge.cli import main

    X, y = blobs()
    message = f"cannot write {tmp_path / name}: its name {name!r} is a suffix alone; give the file a name"
    with pytest.raises(ValueError, match=re.escape(message)):
        prototype_model(X, y).save(tmp_path / name)

    def never(*args, **kwargs):
        raise AssertionError("the data was read before --out was checked")

    monkeypatch.setattr("lastedge.runtime.data.load_dataset", never)
    assert main(["train", "--data", "digits", "--atoms", "2", "--out", str(tmp_path / name)]) == 1
    assert capsys.readouterr().err.splitlines() == [f"lastedge train: error: {message} before {name!r}"]
    assert list(tmp_path.iterdir()) == []


def test_center_l2_of_rows_near_float32s_maximum_warns_nothing():
    """The float32 row sum overflowed ("overflow encountered in reduce") before the row was redone,
    rightly, in float64: the warning told of a problem there was none of."""
    rows = np.float32([[3e38] * 20, [3e38] * 19 + [-3e38], [3e38, -3e38] * 10])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Z = Preprocess("center-l2").apply(rows)
    expected = rows.astype(np.float64) - rows.astype(np.float64).mean(axis=1, keepdims=True)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(Z, expected / np.where(norms > 0, norms, 1.0), rtol=1e-6, atol=1e-7)


def test_standardize_scales_features_of_tiny_spread(blobs, prototype_model):
    """A spread below 1e-12 was taken for a constant feature and left unscaled (features ~1e-20,
    every row scored as one class): "constant" is now relative to the feature's own size."""
    X, y = blobs()
    expected = prototype_model(X, y, preprocess="standardize").predict(X)
    for scale in (1e-15, 1e-20, 1e-30):
        tiny = X.astype(np.float64) * scale
        np.testing.assert_allclose(Preprocess.fit("standardize", tiny).apply(tiny),
                                   Preprocess.fit("standardize", X).apply(X), rtol=1e-5, atol=1e-5)
        model = prototype_model(tiny, y, preprocess="standardize")
        assert np.mean(model.predict(tiny) == expected) > 0.99


@pytest.mark.parametrize("value, dtype", [(0.1, np.float64), (1e6 + 0.1, np.float64), (123456.789, np.float64),
                                          (3e38, np.float64), (1e-30, np.float64), (0.1, np.float32),
                                          (-7.5e12, np.float32), (0.0, np.float32)])
def test_standardize_leaves_constant_features_unscaled_whatever_their_size(value, dtype):
    """A float64 constant's computed spread is its mean's rounding, not zero: 1000 rows of 1e6 + 0.1
    have 1.6e-8, which passed the old threshold of 1e-12 and turned the feature into -2e7."""
    rng = np.random.default_rng(0)
    for rows in (2, 7, 1000, 20000):
        X = np.column_stack([rng.normal(size=rows), np.full(rows, value, dtype)]).astype(dtype)
        step = Preprocess.fit("standardize", X)
        assert step.scale[1] == 1.0 and step.scale[0] != 1.0
        assert np.all(np.abs(step.apply(X)[:, 1]) <= max(abs(value), 1.0) * 1e-7)


def test_standardize_statistics_of_ordinary_data_are_those_of_the_absolute_threshold():
    """Digits (with all-zero pixel columns) and random data sets get bit-identical mean and scale
    to the formula before the threshold became relative."""
    from sklearn.datasets import load_digits

    def absolute_threshold(X):
        X = np.asarray(X, dtype=np.float64)
        scale = X.std(axis=0)
        scale[scale < 1e-12] = 1.0
        return Preprocess("standardize", X.mean(axis=0), scale)

    rng = np.random.default_rng(0)
    data_sets = [load_digits().data, rng.normal(5, 3, (200, 10)).astype(np.float32),
                 rng.integers(0, 255, (50, 30)).astype(np.uint8), rng.normal(0, 1, (30, 4)) * [1e-3, 1, 1e4, 1e9],
                 np.column_stack([rng.random(40), np.zeros(40), np.ones(40), np.full(40, -3.25)])]
    for X in data_sets:
        step, before = Preprocess.fit("standardize", X), absolute_threshold(X)
        assert step.mean.tobytes() == before.mean.tobytes() and step.scale.tobytes() == before.scale.tobytes()
    assert np.sum(Preprocess.fit("standardize", data_sets[0]).scale == 1.0) == 3  # digits' blank columns


@pytest.mark.parametrize("shape", [(8.7, 8), (8.0, 8), (True, 64), (np.True_, 64), "88", (8, "8"), 64, None])
def test_image_sizes_that_are_no_integers_are_refused(shape):
    """int() read (8.7, 8) as (8, 8), True as 1 and the text "88" as (8, 8)."""
    from lastedge.runtime.model import check_image_shape

    with pytest.raises(ValueError, match=r"image_shape must be \(H, W\) or \(H, W, 3\) of integers, got "):
        check_image_shape(shape, 64)


def test_numpy_integers_are_image_sizes():
    from lastedge.runtime.model import check_image_shape

    for shape in (np.array([8, 8]), (np.int64(8), np.uint8(8)), [8, 8]):
        assert check_image_shape(shape, 64) == (8, 8) and type(check_image_shape(shape, 64)[0]) is int
    assert check_image_shape((np.int32(4), 4, np.int16(3)), 48) == (4, 4, 3)
