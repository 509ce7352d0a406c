"""What a device user meets following the device guide (docs/devices.md): ``lastedge predict`` on CSV rows
and stdin says which option fixes a CSV of the wrong width, and does not wait silently on a terminal."""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

from lastedge.cli import main


@pytest.fixture(scope="module")
def device(blobs, prototype_model, tmp_path_factory):
    """A 24-feature model, its rows as a CSV without labels and with a label column."""
    X, y = blobs()
    model = prototype_model(X, y)
    folder = tmp_path_factory.mktemp("device")
    np.savetxt(folder / "rows.csv", X[:10], delimiter=",")
    np.savetxt(folder / "labelled.csv", np.c_[X[:10], y[:10]], delimiter=",")
    return model.save(folder / "m.npz"), folder, model.predict(X[:10])


def test_a_csv_of_features_only_names_no_labels(device, capsys):
    """It said "X has 23 features, the model expects 24": the last feature had been read as labels."""
    model, folder, _ = device
    assert main(["predict", str(model), "--data", str(folder / "rows.csv")]) == 1
    err = capsys.readouterr().err
    assert err == (f"lastedge predict: error: {folder / 'rows.csv'} has 24 columns, the model's 24 "
                   "features and no label column: add --no-labels\n")


def test_a_labelled_csv_read_without_labels_names_the_option_to_drop(device, capsys):
    model, folder, _ = device
    assert main(["predict", str(model), "--data", str(folder / "labelled.csv"), "--no-labels"]) == 1
    err = capsys.readouterr().err
    assert "has 25 columns, one more than the model's 24 features: if one is the label column, " \
           "drop --no-labels" in err and len(err.splitlines()) == 1


class Terminal(io.StringIO):
    """Rows typed at a terminal."""

    def isatty(self) -> bool:
        return True


def test_rows_typed_at_a_terminal_are_asked_for(device, capsys, monkeypatch):
    """``--data -`` on a terminal waited for rows without a word, as if it hung."""
    model, folder, expected = device
    monkeypatch.setattr(sys, "stdin", Terminal((folder / "rows.csv").read_text()))
    assert main(["predict", str(model), "--data", "-", "--no-labels", "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == "lastedge predict: reading CSV rows from stdin (end them with Ctrl-D)\n"
    assert json.loads(out)["predictions"] == expected.tolist()  # stdout is the JSON alone


def test_piped_rows_need_no_prompt(device, capsys, monkeypatch):
    model, folder, _ = device
    monkeypatch.setattr(sys, "stdin", io.StringIO((folder / "labelled.csv").read_text()))
    assert main(["predict", str(model), "--data", "-"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("accuracy ")


def test_a_32_bit_pi_without_an_interpreter_is_told_to_install_the_legacy_one(device, monkeypatch):
    """It was told to install "lastedge[tflite]", whose ai-edge-litert has no 32-bit Arm wheels."""
    from lastedge.runtime import load, loading

    model, folder, _ = device
    (folder / "m.tflite").write_bytes(b"\x1c\x00\x00\x00TFL3" + bytes(24))  # sniffed by name and bytes
    monkeypatch.setattr(loading, "_installed", lambda backend: False)
    monkeypatch.setattr(loading.platform, "machine", lambda: "armv7l")
    with pytest.raises(ImportError, match=r"^no TFLite interpreter is installed: ai-edge-litert has no "
                                          r"wheels for 32-bit Arm \(armv7l\); install tflite-runtime .*"
                                          r"python3-numpy.*--system-site-packages"):
        load(folder / "m.tflite")
    monkeypatch.setattr(loading.platform, "machine", lambda: "aarch64")
    with pytest.raises(ImportError, match=r'lastedge\[tflite\]'):
        load(folder / "m.tflite")
