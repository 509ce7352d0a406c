"""The benchmark figures: each function writes a PNG and rejects malformed input with a ValueError."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib", reason="the figures need the plot extra")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import figures

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 1000
    assert list(path.parent.glob(".*.tmp")) == []  # the temporary file was renamed, not left behind


def result_rows() -> list[dict]:
    rows = []
    for task in ("bark-woodgrain", "pigskin-pressedcl"):
        for n, error, paper in ((10, 20.0, 18.0), (50, 12.0, 10.5), (100, 9.0, 8.0)):
            rows.append({"task": task, "method": "last-lbfgs", "label": "LAST", "n_atoms": n,
                         "error_pct": error, "paper_error_pct": paper})
            rows.append({"task": task, "method": "sgd", "label": "SGD", "n_atoms": n,
                         "error_pct": None if n == 100 else error + 3, "paper_error_pct": None})
        rows.append({"task": task, "method": "rbf-svm", "label": "RBF SVM", "n_atoms": None,
                     "error_pct": 7.5})
        rows.append({"task": task, "method": "linear-svm", "label": "linear SVM", "n_atoms": None,
                     "error_pct": None})
    return rows


def test_accuracy_vs_atoms(tmp_path):
    figures.accuracy_vs_atoms(result_rows(), tmp_path / "accuracy.png", "Textures")
    assert_png(tmp_path / "accuracy.png")


def test_method_styles_stay_distinct_past_ten_methods():
    # the textures table has 11 methods: colour and marker must not both wrap back to the first's
    styles = figures.method_styles([f"method-{i}" for i in range(15)])
    assert len(set(styles.values())) == 15


@pytest.mark.parametrize(("rows", "match"), [
    ([], "rows is empty"),
    ([{"task": "t", "method": "sgd", "label": "SGD", "n_atoms": 10}], r"rows\[0\] lacks \['error_pct'\]"),
])
def test_accuracy_vs_atoms_rejects_bad_rows(tmp_path, rows, match):
    with pytest.raises(ValueError, match=match):
        figures.accuracy_vs_atoms(rows, tmp_path / "accuracy.png", "bad")
    assert not (tmp_path / "accuracy.png").exists()


def test_objective_vs_time(tmp_path):
    t = np.linspace(0, 3, 50)
    curves = {"LAST": list(zip(t[:8], np.exp(-t[:8]) + 0.1)), "SGD": list(zip(t, 1 / (1 + t)))}
    figures.objective_vs_time(curves, tmp_path / "objective.png", "Objective of (P)")
    assert_png(tmp_path / "objective.png")


@pytest.mark.parametrize(("curves", "match"), [
    ({}, "curves is empty"),
    ({"LAST": []}, "non-empty list"),
    ({"LAST": [(0.0, 1.0, 2.0)]}, r"shape \(1, 3\)"),
    ({"LAST": [(0.0, 1.0), (1.0, 0.0)]}, "must be positive"),
])
def test_objective_vs_time_rejects_bad_curves(tmp_path, curves, match):
    with pytest.raises(ValueError, match=match):
        figures.objective_vs_time(curves, tmp_path / "objective.png", "bad")


@pytest.mark.parametrize("weights", [(1.0, -2.0), (0.0, 1.0), (-1.0, 0.0), (1.0, 1.0), (-1.0, -1.0),
                                     (0.0, 0.0)])
def test_features_2d(tmp_path, weights):
    rng = np.random.default_rng(0)
    features = np.maximum(rng.normal(size=(2500, 2)), 0.0)  # more than are drawn; many zeros
    labels = (features[:, 0] > features[:, 1]).astype(int)
    figures.features_2d(features, labels, np.array(weights), tmp_path / "features.png", "Two atoms",
                        class_names=("bark", "woodgrain"))
    assert_png(tmp_path / "features.png")


@pytest.mark.parametrize(("features", "labels", "weights", "match"), [
    (np.ones((5, 3)), np.zeros(5), np.ones(2), r"features must be \[m, 2\] .* \(5, 3\)"),
    (-np.ones((5, 2)), np.zeros(5), np.ones(2), "non-negative"),
    (np.ones((5, 2)), np.zeros(4), np.ones(2), r"labels must be \[m\] = \[5\]"),
    (np.ones((5, 2)), np.full(5, 2), np.ones(2), "labels must be 0 or 1"),
    (np.ones((5, 2)), np.zeros(5), np.ones(3), "weights must be 2 finite numbers"),
])
def test_features_2d_rejects_bad_input(tmp_path, features, labels, weights, match):
    with pytest.raises(ValueError, match=match):
        figures.features_2d(features, labels, weights, tmp_path / "features.png", "bad")
