"""``examples/on_device.py`` runs as a user would run it: rows from a CSV file or from stdin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from test_runtime_backends import blobs, export, prototype_model

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "on_device.py"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    X, y = blobs()
    model = prototype_model(X, y)
    folder = tmp_path_factory.mktemp("device")
    np.savetxt(folder / "rows.csv", X[:20], delimiter=",")
    return model, X[:20], export(model, folder, X), folder / "rows.csv"


@pytest.mark.parametrize("name", ["m.npz", "m.onnx", "m.tflite"])
def test_on_device_example_classifies_csv_and_stdin(files, name):
    model, X, paths, csv = files
    if name not in paths:
        pytest.skip(f"no exporter for {name}")
    expected = [str(label) for label in model.predict(X)]
    by_file = subprocess.run([sys.executable, str(EXAMPLE), str(paths[name]), str(csv)],
                             capture_output=True, text=True, check=True)
    by_stdin = subprocess.run([sys.executable, str(EXAMPLE), str(paths[name])], input=csv.read_text(),
                              capture_output=True, text=True, check=True)
    assert by_file.stdout.split() == expected == by_stdin.stdout.split()
    assert "20 rows on" in by_file.stderr and "p50" in by_file.stderr
