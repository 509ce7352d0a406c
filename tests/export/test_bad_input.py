"""Export refuses bad input clearly, writes atomically, and its parity helper fails loudly."""

import json

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


from lastedge.cli import main  # noqa: E402
from lastedge.export import ParityError, assert_parity, describe, to_onnx, to_tflite  # noqa: E402
from lastedge.export.parity import threshold_rows  # noqa: E402
from lastedge.export.variants import exporter  # noqa: E402
from lastedge.runtime import Model  # noqa: E402

EXPORTERS = [to_onnx, to_tflite]
SUFFIX = {to_onnx: ".onnx", to_tflite: ".tflite"}


class Unfitted:
    def to_model(self):
        raise AttributeError("LASTClassifier has no attribute 'dictionary_'")


@pytest.mark.parametrize("export", EXPORTERS)
def test_unfitted_or_foreign_or_inconsistent_models_are_refused(random_model, tmp_path, export):
    path = tmp_path / f"m{SUFFIX[export]}"
    with pytest.raises(ValueError, match="not fitted"):
        export(Unfitted(), path)
    with pytest.raises(TypeError, match="expected a lastedge.runtime.Model"):
        export({"dictionary": np.eye(3)}, path)
    model, _ = random_model()
    model.weights = model.weights[:-1]  # changed after construction
    with pytest.raises(ValueError, match="weights have 29 rows"):
        export(model, path)
    model, _ = random_model(kind="standardize")
    model.preprocess.scale[0] = 0  # changed after construction
    with pytest.raises(ValueError, match="scale finite and > 0"):
        export(model, path)
    assert not path.exists()


@pytest.mark.parametrize("export", EXPORTERS)
@pytest.mark.parametrize("calibration, error, match", [
    (None, ValueError, "needs calibration rows"),
    (np.zeros((50, 19)), ValueError, "calibration rows: X has 19 features, the model expects 20"),
    (np.arange(1000).reshape(50, 4, 5), None, None),  # a batch of 4x5 images: flattened, accepted
    (np.full((50, 20), 3.0), ValueError, "calibration rows are all the same"),
    (np.full((50, 20), np.nan), ValueError, "NaN"),
    (np.zeros((5, 20)), ValueError, "at least 20 calibration rows, got 5"),
    (np.full((50, 20), "a"), TypeError, "real numbers"),
])
def test_bad_calibration_rows(random_model, tmp_path, export, calibration, error, match):
    model, _ = random_model()
    if error is None:
        export(model, tmp_path / f"m{SUFFIX[export]}", precision="int8", calibration=calibration)
        return
    with pytest.raises(error, match=match):
        export(model, tmp_path / f"m{SUFFIX[export]}", precision="int8", calibration=calibration)


@pytest.mark.parametrize("export", EXPORTERS)
@pytest.mark.parametrize("weight_scale, row_scale",
                         [(1e-44, 1.0), (1.0, 1e-45), (1e37, 1e4), (1e38, 1.0), (1e-37, 1.0),
                          (1.0, 1e-37)])
def test_ranges_without_a_float32_int8_scale_are_refused(random_model, tmp_path, export, weight_scale, row_scale):
    """Scores or inputs narrower than float32 can scale to 255 levels (a scale of 0: a
    ZeroDivisionError in TFLite, a scale of 1 in ONNX) or wider (an infinite scale), or scores
    whose range ends beyond float32 (ONNX's quantizer took them as an infinite scale). A
    subnormal scale is none either: weights near 1e-37 wrote an ONNX file that predicted one class
    for every row (onnxruntime flushed the scale to zero)."""
    model, X = random_model()
    model = Model(model.dictionary, model.weights * weight_scale, model.classes)
    with pytest.raises(ValueError, match="has no int8 scale in float32"):
        export(model, tmp_path / f"m{SUFFIX[export]}", precision="int8", calibration=X * row_scale)
    assert not any(tmp_path.iterdir())


def test_cli_int8_ranges_without_a_scale_are_one_line(random_model, tmp_path, capsys):
    """This was a ZeroDivisionError traceback from ``lastedge export``."""
    model, X = random_model()
    Model(model.dictionary, model.weights * 1e-44, model.classes).save(tmp_path / "m.npz")
    np.save(tmp_path / "X.npy", X)
    assert main(["export", str(tmp_path / "m.npz"), "--format", "tflite", "--precision", "int8", "--calibration",
                 str(tmp_path / "X.npy"), "--out", str(tmp_path / "m.tflite")]) == 1
    err = capsys.readouterr().err.strip()
    assert "the calibrated scores range" in err and "has no int8 scale" in err and "\n" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X.npy", "m.npz"]


@pytest.mark.parametrize("export", EXPORTERS)
def test_bad_paths_and_formats(random_model, tmp_path, export):
    model, _ = random_model()
    with pytest.raises(ValueError, match="does not exist"):
        export(model, tmp_path / "missing" / f"m{SUFFIX[export]}")
    with pytest.raises(ValueError, match=r"the output must be a \.(onnx|tflite) file, got .m\.bin."):
        export(model, tmp_path / "m.bin")
    with pytest.raises(ValueError, match="format must be one of 'onnx', 'tflite', got 'pb'"):
        exporter("pb")


@pytest.mark.parametrize("export", EXPORTERS)
def test_a_failed_export_leaves_the_old_file_and_no_temp_file(random_model, tmp_path, export):
    model, X = random_model()
    path = export(model, tmp_path / f"m{SUFFIX[export]}")
    before = path.read_bytes()
    with pytest.raises(ValueError):
        export(model, path, precision="int8", calibration=np.full((50, 20), np.inf))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.parametrize("export", EXPORTERS)
@pytest.mark.parametrize("margin", ["0.1", None, True])
def test_a_margin_that_is_no_number_is_named(random_model, tmp_path, export, margin):
    """A string or None was a bare TypeError ("'<=' not supported between ..."); True passed as 1."""
    model, X = random_model()
    with pytest.raises(ValueError, match=rf"margin must be a number in \[0, 10\], got {margin!r}"):
        export(model, tmp_path / f"m{SUFFIX[export]}", precision="int8", calibration=X, margin=margin)


def test_describe_of_a_folder_says_it_is_one(tmp_path):
    """It said "no such file" of a folder named like an exported file."""
    (tmp_path / "m.onnx").mkdir()
    for folder in (tmp_path / "m.onnx", tmp_path):
        with pytest.raises(ValueError, match=f"{folder} is a folder, not an exported .onnx or .tflite file"):
            describe(folder)


def test_parity_on_a_backend_of_the_other_format_names_the_formats(random_model, tmp_path):
    """ai-edge-litert said "The model is not a valid Flatbuffer buffer" of an .onnx file."""
    model, X = random_model()
    for export, backend, reads, given in ((to_onnx, "ai-edge-litert", "tflite", "onnx"),
                                          (to_tflite, "onnxruntime", "onnx", "tflite")):
        path = export(model, tmp_path / f"m{SUFFIX[export]}")
        with pytest.raises(ValueError, match=f"backend '{backend}' reads .{reads} files, not .{given}"):
            assert_parity(model, path, X, backends=[backend])


@pytest.mark.filterwarnings("error::RuntimeWarning")  # an overflow is said in words, not warned of
def test_fp32_parity_of_a_model_whose_scores_overflow_on_large_probes(random_model, tmp_path):
    """A thousand times a real row overflows float32 scores of large weights: the Python model
    refuses such rows, and parity named the check's own probes "X's values are too large"."""
    model, X = random_model()
    model = Model(model.dictionary, model.weights * 1e35, model.classes)
    path = to_onnx(model, tmp_path / "m.onnx")
    figures = assert_parity(model, path, X)
    assert figures["probe_rows"] < len(threshold_rows(model)) + 9  # some large probes left out
    with pytest.raises(ValueError, match="the parity check's rows: X's values are too large"):
        assert_parity(model, path, X * 1e4)


def test_parity_fails_loudly_for_a_file_of_another_model(random_model, tmp_path):
    model, X = random_model(seed=0)
    other, _ = random_model(seed=1)
    path = to_onnx(other, tmp_path / "m.onnx")
    with pytest.raises(ParityError, match="max score error"):
        assert_parity(model, path, X)
    with pytest.raises(ValueError, match="at least 100 real rows"):
        assert_parity(other, path, X[:3])
    with pytest.raises(ValueError, match="at least 1 real rows, got 0"):  # a warning, then a NaN mean
        assert_parity(other, path, X[:0], min_rows=0)
    for y in (3, np.zeros((len(X), 2))):
        with pytest.raises(ValueError, match=r"y must hold one label per row \(300\)"):
            assert_parity(other, path, X, y)


@pytest.mark.parametrize("kind", ["none", "l2", "center-l2", "standardize"])
def test_threshold_probes_land_on_an_atom_threshold(random_model, kind):
    model, _ = random_model(kind=kind)
    rows = threshold_rows(model)
    assert len(rows) >= 8
    gaps = np.abs(model.preprocess.apply(rows) @ model.dictionary - model.alpha).min(axis=1)
    assert gaps.max() < 1e-5


def test_cli_export_prints_size_ops_and_parity(digits_case, tmp_path, capsys):
    model = digits_case()[0]
    model.save(tmp_path / "m.npz")
    out = tmp_path / "m.tflite"
    assert main(["export", str(tmp_path / "m.npz"), "--format", "tflite", "--precision", "int8",
                 "--calibration", "digits", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "KiB" in text and "FULLY_CONNECTED -> FULLY_CONNECTED" in text and "agreement" in text
    # static int8 ONNX is held to its bounds in test_export_onnx; here the CLI's JSON on dynamic int8
    assert main(["export", str(tmp_path / "m.npz"), "--format", "onnx", "--precision", "int8-dynamic",
                 "--out", str(tmp_path / "m.onnx"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["parity"]["agreement"] >= 0.99 and result["file"]["metadata"]["precision"] == "int8"


@pytest.mark.parametrize("extra, message", [
    (["--format", "tflite", "--precision", "int8"], "--precision int8 needs --calibration"),
    (["--format", "onnx", "--precision", "int8", "--calibration", "nope.npz"], "no such data file"),
    (["--format", "tflite", "--with-preprocessing"], "--with-preprocessing applies to --format onnx only"),
    (["--format", "onnx", "--per-channel"],
     "--per-channel applies to --precision int8 (static) only, got --precision fp32"),
    (["--format", "tflite", "--per-channel"],
     "--per-channel applies to --precision int8 (static) only, got --precision fp32"),
    (["--format", "onnx", "--precision", "int8-dynamic", "--per-channel"],
     "--per-channel applies to --precision int8 (static) only, got --precision int8-dynamic"),
    (["--format", "onnx", "--label-column", "kind"], "--label-column applies to CSV"),
])
def test_cli_errors_are_one_line(random_model, tmp_path, capsys, extra, message):
    model, _ = random_model()
    model.save(tmp_path / "m.npz")
    suffix = ".tflite" if "tflite" in extra else ".onnx"
    assert main(["export", str(tmp_path / "m.npz"), *extra, "--out", str(tmp_path / f"o{suffix}")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_cli_rejects_an_unknown_format(tmp_path):
    with pytest.raises(SystemExit) as exc:
        main(["export", "m.npz", "--format", "pb", "--out", str(tmp_path / "m.pb")])
    assert exc.value.code == 2


def test_cli_a_file_that_fails_parity_leaves_the_existing_output_untouched(digits_case, tmp_path, capsys, monkeypatch):
    """The good file at --out survives; the rejected one is kept beside it, named in the error."""
    import lastedge.export

    digits_case()[0].save(tmp_path / "m.npz")
    out = tmp_path / "m.tflite"
    argv = ["export", str(tmp_path / "m.npz"), "--format", "tflite", "--out", str(out)]
    assert main(argv) == 0
    good = out.read_bytes()

    def failing(model, path, *args, **kwargs):
        raise ParityError(f"{path} on ai-edge-litert: max score error 1 exceeds its tolerance")

    monkeypatch.setattr(lastedge.export, "assert_parity", failing)
    capsys.readouterr()
    assert main([*argv, "--precision", "int8", "--calibration", "digits"]) == 1
    rejected = tmp_path / "m.rejected.tflite"
    err = capsys.readouterr().err.strip()
    assert out.read_bytes() == good
    assert f"{out} was not written" in err and f"kept for inspection as {rejected}" in err
    assert rejected.is_file() and describe(rejected)["metadata"]["precision"] == "int8"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz", "m.rejected.tflite", "m.tflite"]


def test_cli_a_file_that_passes_replaces_the_output_and_leaves_nothing_beside_it(random_model, tmp_path, capsys):
    model, _ = random_model()
    model.save(tmp_path / "m.npz")
    out = tmp_path / "m.onnx"
    out.write_bytes(b"an older file")
    assert main(["export", str(tmp_path / "m.npz"), "--format", "onnx", "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["parity"]["path"] == result["file"]["path"] == str(out)
    assert describe(out)["metadata"]["precision"] == "fp32"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz", "m.onnx"]


@pytest.mark.parametrize("damage", ["truncate", "overwrite"])
def test_describe_refuses_a_damaged_tflite_file_by_name(random_model, tmp_path, capsys, damage):
    pytest.importorskip("tflite")
    model, _ = random_model(n_features=64, n_atoms=100)
    data = bytearray(to_tflite(model, tmp_path / "m.tflite").read_bytes())
    if damage == "truncate":
        data = data[:len(data) // 2]
    else:
        data[40:48] = b"\xff" * 8  # offsets in the root table now point outside the file
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="bad.tflite is not a readable TFLite file"):
        describe(bad)
    assert main(["inspect", str(bad)]) == 1
    err = capsys.readouterr().err.strip()
    assert "bad.tflite is not a readable TFLite file" in err and "\n" not in err


def test_describe_of_foreign_or_hostile_onnx_files(random_model, tmp_path):
    """Each was a traceback from ``lastedge inspect``: an external-data reference outside the
    file's folder (describe loaded it: onnx's ValidationError), metadata nested too deep
    (RecursionError), a legal sequence input ("error: 0", a KeyError)."""
    import onnx
    from onnx.external_data_helper import set_external_data

    model, _ = random_model()
    proto = onnx.load(to_onnx(model, tmp_path / "m.onnx"))
    set_external_data(proto.graph.initializer[0], location="../../etc/passwd")
    proto.graph.initializer[0].ClearField("raw_data")
    onnx.save(proto, tmp_path / "external.onnx")
    assert describe(tmp_path / "external.onnx")["ops"] == ["MatMul", "Sub", "Relu", "MatMul"]
    proto = onnx.load(tmp_path / "m.onnx")
    proto.metadata_props[0].value = "[" * 100000 + "]" * 100000
    onnx.save(proto, tmp_path / "deep.onnx")
    with pytest.raises(ValueError, match="deep.onnx: the 'lastedge' metadata is not valid JSON"):
        describe(tmp_path / "deep.onnx")
    graph = onnx.helper.make_graph(
        [], "g", [onnx.helper.make_tensor_sequence_value_info("rows", onnx.TensorProto.FLOAT, None),
                  onnx.helper.make_tensor_value_info("later", 1000, [2])], [])
    onnx.save(onnx.helper.make_model(graph), tmp_path / "foreign.onnx")
    assert [t["dtype"] for t in describe(tmp_path / "foreign.onnx")["inputs"]] == [
        "sequence_type", "ONNX element type 1000"]


def test_describe_of_tflite_files_that_leave_optional_fields_out(random_model, tmp_path, monkeypatch):
    """Flatbuffer strings are optional: an unnamed tensor or signature was an AttributeError
    traceback, and so was a metadata entry whose buffer holds no bytes."""
    tflite = pytest.importorskip("tflite")
    import lastedge.export.tflite as writer

    model, _ = random_model()
    monkeypatch.setattr(tflite, "TensorAddName", lambda builder, name: None)
    monkeypatch.setattr(tflite, "SignatureDefAddSignatureKey", lambda builder, key: None)
    info = describe(to_tflite(model, tmp_path / "unnamed.tflite"))
    assert info["inputs"][0]["name"] == "" and info["signatures"] == [""]
    monkeypatch.setattr(writer, "dumps", lambda metadata: "")
    with pytest.raises(ValueError, match="empty.tflite: the 'lastedge' metadata is not valid JSON"):
        describe(to_tflite(model, tmp_path / "empty.tflite"))


@pytest.mark.parametrize("change, message", [
    ({"alpha": "1"}, "metadata alpha must be a number, got '1'"),
    ({"preprocess": "none"}, "metadata preprocess must be an object with a 'kind'"),
    ({"classes": None, "n_outputs": None}, "metadata lacks classes, n_outputs"),
])
def test_describe_checks_the_metadata_fields_as_the_runtime_does(random_model, tmp_path, capsys, change, message):
    """Metadata the runtime refuses was described until a field was used: ``lastedge inspect``
    said "error: 'preprocess_in_graph'" or "Unknown format code 'g'"; optional fields left out
    read as the runtime reads them."""
    import onnx

    model, _ = random_model()
    proto = onnx.load(to_onnx(model, tmp_path / "m.onnx"))
    fields = json.loads(proto.metadata_props[0].value)
    for key in ("alpha", "lastedge_version", "preprocess_in_graph", "precision"):  # optional ones
        del fields[key]
    proto.metadata_props[0].value = json.dumps(fields)
    onnx.save(proto, tmp_path / "minimal.onnx")
    assert main(["inspect", str(tmp_path / "minimal.onnx")]) == 0
    assert "alpha 1, preprocess none (to apply before the file)" in capsys.readouterr().out
    fields.update(change)
    proto.metadata_props[0].value = json.dumps({k: v for k, v in fields.items() if v is not None})
    onnx.save(proto, tmp_path / "bad.onnx")
    with pytest.raises(ValueError, match=f"bad.onnx: {message}"):
        describe(tmp_path / "bad.onnx")


@pytest.mark.parametrize("export", EXPORTERS)
def test_an_int8_bias_beyond_int32_is_refused_by_both_formats(random_model, tmp_path, export):
    """A negative threshold on columns near 0: int8 keeps none of the features' variation. TFLite
    refused the bias; onnxruntime clipped it to int32's largest, and the file agreed with the
    model on 68 % of the rows."""
    model, X = random_model()
    model = Model(model.dictionary * 1e-6, model.weights, model.classes, -1.0)
    with pytest.raises(ValueError, match="a bias does not fit in int32"):
        export(model, tmp_path / f"m{SUFFIX[export]}", precision="int8", calibration=X)
    assert not any(tmp_path.iterdir())
