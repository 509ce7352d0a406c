"""The example scripts run as a user runs them (in a fresh folder) and print what they promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow  # each runs a script in full

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, cwd: Path, *args: str) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_quickstart(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ai_edge_litert")
    out = run_example("quickstart.py", tmp_path)
    accuracy = float(re.search(r"test accuracy ([\d.]+)%", out).group(1))
    assert accuracy > 90
    predicted, true = re.search(r"predicted \[(.*)\] true \[(.*)\]", out).groups()
    assert len(predicted.split()) == len(true.split()) == 10
    tflite_accuracy = float(re.search(r"^accuracy ([\d.]+)$", out, re.M).group(1))
    assert tflite_accuracy == pytest.approx(accuracy / 100, abs=5e-5)  # fp32 export: same predictions
    for name in ("digits.npz", "digits.onnx", "digits.tflite"):
        assert (tmp_path / name).is_file()
        assert len(re.findall(rf"^{re.escape(name)}\s", out, re.M)) == 2  # batch 1 and 64


def test_own_data_writes_a_demo_csv_when_given_none(tmp_path):
    out = run_example("own_data.py", tmp_path)
    assert "no CSV given: wrote a demo file" in out
    assert "1347 training rows, 450 test rows, 64 features" in out
    assert float(re.search(r"test accuracy ([\d.]+)%", out).group(1)) > 80
    assert re.search(r"predicted \['\w+', '\w+', '\w+', '\w+', '\w+'\]", out)
    assert (tmp_path / "digits_table.npz").is_file()


def test_own_data_reports_a_missing_file_in_one_line(tmp_path):
    """It showed a traceback."""
    result = subprocess.run([sys.executable, str(EXAMPLES / "own_data.py"), "missing.csv"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.splitlines() == ["data source 'missing.csv' is neither 'digits' nor an existing file or folder"]


def test_own_data_trains_on_a_given_csv(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.array(["low", "high"])[np.arange(80) % 2]
    X = rng.normal(size=(80, 3)) + 4.0 * (labels == "high")[:, None]
    lines = ["kind,a,b,c"] + [f"{k},{a:.4f},{b:.4f},{c:.4f}" for k, (a, b, c) in zip(labels, X)]
    (tmp_path / "sensors.csv").write_text("\n".join(lines) + "\n")
    out = run_example("own_data.py", tmp_path, "sensors.csv", "kind")
    assert "sensors.csv: 60 training rows, 20 test rows, 3 features, classes ['high', 'low']" in out
    assert "test accuracy 100.00%" in out  # two blobs 4 standard deviations apart
    assert (tmp_path / "sensors.npz").is_file()


def test_own_data_trains_on_an_image_folder(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    for i, (row, label) in enumerate(zip(X[:400], y[:400])):
        (tmp_path / "photos" / f"digit{label}").mkdir(parents=True, exist_ok=True)
        Image.fromarray((row * 255 / 16).astype(np.uint8).reshape(8, 8)).save(tmp_path / "photos" / f"digit{label}" / f"{i}.png")
    out = run_example("own_data.py", tmp_path, "photos")
    assert "photos: 300 training rows, 100 test rows, 64 features (8x8 images), classes ['digit0'," in out
    assert float(re.search(r"test accuracy ([\d.]+)%", out).group(1)) > 80
    assert (tmp_path / "photos.npz").is_file()


def write_idx_folder(folder: Path) -> Path:
    """400 of the digits as MNIST ships its training part: IDX images and labels, no test files."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    images = (X[:400] * 255 / 16).astype(np.uint8)
    folder.mkdir()
    (folder / "train-images-idx3-ubyte").write_bytes(np.array([0x803, 400, 8, 8], ">u4").tobytes() + images.tobytes())
    (folder / "train-labels-idx1-ubyte").write_bytes(
        np.array([0x801, 400], ">u4").tobytes() + y[:400].astype(np.uint8).tobytes())
    return folder


def test_own_data_splits_an_idx_folder_without_its_test_files(tmp_path):
    write_idx_folder(tmp_path / "idx")
    out = run_example("own_data.py", tmp_path, "idx")
    assert "idx: 300 training rows, 100 test rows, 64 features (8x8 images)" in out
    assert (tmp_path / "idx.npz").is_file()


def test_own_data_names_the_model_after_a_folder_given_as_dot(tmp_path):
    """Run inside the data folder, it printed no name, trained, then failed to save '.npz'."""
    folder = write_idx_folder(tmp_path / "idx")
    out = run_example("own_data.py", folder, ".")
    assert out.startswith("idx: 300 training rows, 100 test rows")
    assert "saved idx.npz" in out and (folder / "idx.npz").is_file()


def test_own_data_keeps_an_npz_archive_of_rows_it_trains_on(tmp_path):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    np.savez(tmp_path / "rows.npz", X_train=X[:300], y_train=y[:300], X_test=X[300:400], y_test=y[300:400])
    out = run_example("own_data.py", tmp_path, "rows.npz")
    assert "saved rows-model.npz" in out
    assert np.load(tmp_path / "rows.npz").files == ["X_train", "y_train", "X_test", "y_test"]
