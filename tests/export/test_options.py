"""One set of export options: ``to_onnx`` and ``to_tflite`` take the same arguments with the same
defaults, one precision writes the same kind of file in both formats, and every bad combination is
refused by one check that names the argument, what it allows and what it got."""

import inspect
import json

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


from lastedge.cli import main  # noqa: E402
from lastedge.export import describe, export_all, to_onnx, to_tflite  # noqa: E402
from lastedge.export.options import PRECISIONS, STATIC, check_export_options  # noqa: E402

WRITERS = {"onnx": to_onnx, "tflite": to_tflite}
# what the metadata says of each precision, in both formats: (precision, quantization mode)
FILE_KIND = {"fp32": ("fp32", None), "int8": ("int8", "static"), "int8-dynamic": ("int8", "dynamic"),
             "int16x8": ("int16x8", "static")}


def test_both_writers_take_the_same_options_with_the_same_defaults():
    onnx, tflite = (inspect.signature(writer).parameters for writer in WRITERS.values())
    assert [(p.name, p.kind, p.default) for p in onnx.values() if p.name != "path"] == \
        [(p.name, p.kind, p.default) for p in tflite.values() if p.name != "path"]
    assert onnx["precision"].default == "fp32" and onnx["per_channel"].default is False
    assert all(p.kind == p.KEYWORD_ONLY for name, p in onnx.items() if name not in ("model", "path"))


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("fmt", WRITERS)
def test_one_precision_writes_the_same_kind_of_file_in_both_formats(random_model, tmp_path, fmt, precision):
    model, X = random_model()
    path = WRITERS[fmt](model, tmp_path / f"m.{fmt}", precision=precision,
                        calibration=X if precision in STATIC else None)
    metadata = describe(path)["metadata"]
    quantization = metadata["quantization"] or {}
    assert (metadata["precision"], quantization.get("mode")) == FILE_KIND[precision]
    if precision == "int8":  # the same default in both: one weight scale per tensor
        assert quantization["per_channel"] is False and quantization["margin"] == 0.1


@pytest.mark.parametrize("fmt", WRITERS)
def test_per_channel_is_recorded_in_both_formats(random_model, tmp_path, fmt):
    model, X = random_model()
    path = WRITERS[fmt](model, tmp_path / f"m.{fmt}", precision="int8", calibration=X, per_channel=True)
    assert describe(path)["metadata"]["quantization"]["per_channel"] is True


@pytest.mark.parametrize("fmt", WRITERS)
@pytest.mark.parametrize("options, error, message", [
    (dict(precision="int4"), ValueError,
     "precision must be one of 'fp32', 'int8', 'int8-dynamic', 'int16x8', got 'int4'"),
    (dict(precision=True), ValueError, "precision must be one of .*, got True"),
    (dict(precision="int8"), ValueError, "precision='int8' needs calibration rows"),
    (dict(calibration="rows"), ValueError,
     r"calibration applies to precision='int8' \(static\) or precision='int16x8' only, got precision='fp32'"),
    (dict(precision="int8-dynamic", calibration="rows"), ValueError,
     r"calibration applies to precision='int8' \(static\) or precision='int16x8' only, got precision='int8-dynamic'"),
    (dict(per_channel=True), ValueError,
     r"per_channel=True applies to precision='int8' \(static\) only, got precision='fp32'"),
    (dict(precision="int8-dynamic", per_channel=True), ValueError,
     r"per_channel=True applies to precision='int8' \(static\) only, got precision='int8-dynamic'"),
    (dict(precision="int8-dynamic", margin=0.3), ValueError,
     r"margin=0.3 applies to precision='int8' \(static\) or precision='int16x8' only, got precision='int8-dynamic'"),
    (dict(margin=-1), ValueError, r"margin must be a number in \[0, 10\], got -1"),
    (dict(per_channel="yes"), TypeError, "per_channel must be True or False, got 'yes'"),
    (dict(with_preprocessing=1), TypeError, "with_preprocessing must be True or False, got 1"),
])
def test_options_that_do_not_apply_are_refused_by_both_formats(random_model, tmp_path, fmt, options,
                                                               error, message):
    model, _ = random_model()
    with pytest.raises(error, match=message):
        WRITERS[fmt](model, tmp_path / f"m.{fmt}", **options)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("option", ["signed_weights", "with_preprocessing"])
def test_onnx_only_options_are_refused_for_tflite(random_model, tmp_path, precision, option):
    model, X = random_model()
    with pytest.raises(ValueError, match=f"{option}=True applies to format='onnx' only, got format='tflite'"):
        to_tflite(model, tmp_path / "m.tflite", precision=precision, **{option: True},
                  calibration=X if precision in STATIC else None)
    assert not any(tmp_path.iterdir())


def test_the_check_normalises_and_names_the_commands_flags():
    options = check_export_options("onnx", "int8", calibration="rows", per_channel=np.True_, margin=0)
    assert options.per_channel is True and options.margin == 0.0 and options.file_precision == "int8"
    assert check_export_options("tflite", "int8-dynamic").quantization("int8") == {"mode": "dynamic",
                                                                                   "weights": "int8"}
    with pytest.raises(ValueError, match="--precision int8 needs --calibration PATH|digits"):
        check_export_options("onnx", "int8", flags=True)
    with pytest.raises(ValueError, match="--format must be one of 'onnx', 'tflite', got 'c'"):
        check_export_options("c", flags=True)


def test_export_all_writes_the_asked_variants_and_checks_every_name_first(random_model, tmp_path):
    model, X = random_model()
    rows = export_all(model, tmp_path, X, X, formats=["tflite", "onnx"], precisions=["int8-dynamic"],
                      strict=False)
    assert [(r["format"], r["precision"], r["size_bytes"] > 0) for r in rows] == \
        [("tflite", "int8-dynamic", True), ("onnx", "int8-dynamic", True)]
    folder = tmp_path / "refused"
    folder.mkdir()
    for names, message in (
            (dict(formats=["onnx", "pb"]), "format must be one of 'onnx', 'tflite', got 'pb'"),
            (dict(precisions=["fp32", "fp16"]), "precision must be one of .*, got 'fp16'"),
            (dict(formats="onnx"), "formats and precisions take sequences of names")):
        with pytest.raises((ValueError, TypeError), match=message):
            export_all(model, folder, X, X, **names)
    assert not any(folder.iterdir())


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("fmt", WRITERS)
def test_cli_precision_writes_the_same_kind_of_file(digits_case, tmp_path, capsys, fmt, precision):
    digits_case()[0].save(tmp_path / "m.npz")
    out = tmp_path / f"m.{fmt}"
    assert main(["export", str(tmp_path / "m.npz"), "--format", fmt, "--precision", precision,
                 "--calibration", "digits", "--out", str(out), "--json"]) == 0
    metadata = json.loads(capsys.readouterr().out)["file"]["metadata"]
    assert (metadata["precision"], (metadata["quantization"] or {}).get("mode")) == FILE_KIND[precision]


def test_cli_int16x8_onnx_takes_the_preprocessing_in_its_graph(digits_case, tmp_path, capsys):
    digits_case()[0].save(tmp_path / "m.npz")
    assert main(["export", str(tmp_path / "m.npz"), "--format", "onnx", "--precision", "int16x8",
                 "--with-preprocessing", "--calibration", "digits", "--out", str(tmp_path / "m.onnx"),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["file"]["metadata"]["preprocess_in_graph"] is True
    assert result["file"]["metadata"]["precision"] == "int16x8"


def test_cli_refuses_a_precision_it_does_not_know(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", "m.npz", "--format", "onnx", "--precision", "int4", "--out", str(tmp_path / "m.onnx")])
    assert exc.value.code == 2
    assert "invalid choice: 'int4' (choose from 'fp32', 'int8', 'int8-dynamic', 'int16x8')" in capsys.readouterr().err


@pytest.mark.parametrize("old", ["--int8", "--dynamic"])
def test_cli_the_old_int8_switches_are_gone(tmp_path, capsys, old):
    with pytest.raises(SystemExit) as exc:
        main(["export", "m.npz", "--format", "onnx", old, "--out", str(tmp_path / "m.onnx")])
    assert exc.value.code == 2
