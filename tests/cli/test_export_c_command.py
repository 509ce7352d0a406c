"""``lastedge export --format c`` and ``lastedge inspect --target``: C files proven before they
are written, flash and RAM predicted from the model's shapes."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("precision", ["fp32", "int8", "int16x8"])
def test_export_c_writes_proven_files(run, tiny_model_file, tmp_path, precision):
    code, out, err = run("export", tiny_model_file, "--format", "c", "--out", tmp_path / "c",
                         "--precision", precision, "--calibration", "digits", "--prefix", "tiny",
                         "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["files"] == [str(tmp_path / "c" / "tiny.h"), str(tmp_path / "c" / "tiny.c")]
    assert result["parity"]["problems"] == [] and result["check_rows"].startswith("held out")
    if precision != "fp32":
        assert result["parity"]["scores_identical"] and result["parity"]["input_identical"]
    assert "int tiny_predict(const float *x);" in (tmp_path / "c" / "tiny.h").read_text()


@pytest.mark.parametrize("options, message", [
    (["--format", "c", "--precision", "int8-dynamic"], "--format c takes --precision fp32, int8, int16x8"),
    (["--format", "c", "--with-preprocessing"], "--with-preprocessing does not apply to --format c"),
    (["--format", "c", "--precision", "int8"], "--precision int8 needs --calibration"),
    (["--format", "onnx", "--prefix", "a"], "--prefix applies to --format c only"),
    (["--format", "c", "--prefix", "9lives"], "prefix must be a C identifier"),
])
def test_export_c_refuses_what_does_not_apply(run, tiny_model_file, tmp_path, options, message):
    code, _, err = run("export", tiny_model_file, "--out", tmp_path / "out.onnx", *options)
    assert code != 0 and message in err
    assert not (tmp_path / "out.onnx").exists()


def test_inspect_predicts_the_c_build(run, tiny_model_file):
    code, out, err = run("inspect", tiny_model_file, "--target", "cortex-m4")
    assert code == 0, err
    assert "C int8 cortex-m4" in out and "C int8 DSP cortex-m4" in out and "C fp32 cortex-m4" in out
    code, out, _ = run("inspect", tiny_model_file, "--target", "cortex-m0", "--json")
    sizes = json.loads(out)["microcontroller"]
    assert [(s["precision"], s["dsp"]) for s in sizes] == [("int8", False), ("fp32", False)]
    assert all(s["flash"] == s["flash_code"] + s["flash_constants"] for s in sizes)
