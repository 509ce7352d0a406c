"""The ``lastedge`` command: train, predict, inspect, demo, and one-line errors."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from lastedge.cli import main
from lastedge.runtime import Model
from lastedge.runtime.data import load_dataset

TINY = ["--atoms", "2", "--max-dca-iter", "1", "--inner-iter", "10", "--quiet"]


def write_digits_csv(path: Path, digits_data, with_labels: bool = True) -> Path:
    """150 digits rows of classes 0-2 as CSV with a header; text labels ('zero', ...) first."""
    keep = digits_data.y_train < 3
    X = digits_data.X_train[keep][:150]
    y = np.array(["zero", "one", "two"])[digits_data.y_train[keep][:150]]
    first = (lambda label: [label]) if with_labels else (lambda label: [])
    lines = [",".join(first("label") + [f"px{i}" for i in range(X.shape[1])])]
    lines += [",".join(first(label) + [f"{v:g}" for v in row]) for row, label in zip(X, y)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_train_predict_inspect_on_digits(run, capsys, tmp_path):
    out_file = tmp_path / "m.npz"
    code, out, err = run("train", "--data", "digits", *TINY, "--preprocess", "center-l2",
                         "--out", out_file)
    assert code == 0, err
    for field in ("train accuracy", "test accuracy", "training time", "feature sparsity",
                  "MACs/sample"):
        assert field in out
    assert "warning: DCA stopped at max_dca_iter=1" in err and len(err.splitlines()) == 1
    model = Model.load(out_file)
    assert model.n_atoms == 20 and model.preprocess.kind == "center-l2"
    assert model.meta["data"]["test_rows"] == 450 and model.meta["params"]["random_state"] == 0
    test_accuracy = model.meta["metrics"]["test_accuracy"]

    code, out, _ = run("predict", out_file, "--data", "digits", "--plot", tmp_path / "confusion.png")
    assert code == 0
    assert out.splitlines()[0] == f"accuracy {test_accuracy:.2%} on 450 rows (digits, held-out part)"
    assert out.splitlines()[1].startswith("most confused (true as predicted): ")
    assert out.splitlines()[2].startswith("predictions (first 10 of 450): ")
    assert (tmp_path / "confusion.png").read_bytes().startswith(b"\x89PNG")

    code, out, _ = run("predict", out_file, "--data", "digits", "--json")
    result = json.loads(out)
    assert result["accuracy"] == pytest.approx(test_accuracy, abs=1e-5)
    assert len(result["predictions"]) == 450 and set(result["predictions"]) <= set(range(10))
    matrix = np.array(result["confusion"]["matrix"])
    assert result["confusion"]["labels"] == list(range(10)) and matrix.sum() == 450
    assert np.trace(matrix) / 450 == pytest.approx(result["accuracy"])

    code, out, _ = run("inspect", out_file)
    assert code == 0
    assert "classes      10: 0, 1, 2" in out and f"MACs/sample  {model.macs_per_sample:,}" in out
    assert "trainer      LASTClassifier" in out
    info = json.loads(run("inspect", out_file, "--json")[1])
    assert (info["n_atoms"], info["n_outputs"], info["n_features"]) == (20, 10, 64)
    assert info["size_bytes"] == out_file.stat().st_size
    assert info["meta"]["metrics"]["test_accuracy"] == test_accuracy


def test_train_and_predict_on_csv_with_string_labels(run, capsys, tmp_path, digits_data, monkeypatch):
    csv = write_digits_csv(tmp_path / "three.csv", digits_data)
    model_file = tmp_path / "three.npz"
    code, out, err = run("train", "--data", csv, "--label-column", "label", *TINY,
                         "--out", model_file)
    assert code == 0, err
    assert "three: 112 train / 38 test rows, 64 features, 3 classes" in out
    assert sorted(Model.load(model_file).classes.tolist()) == ["one", "two", "zero"]

    code, out, _ = run("predict", model_file, "--data", csv, "--label-column", "0", "--json")
    result = json.loads(out)
    assert result["rows"] == 150 and set(result["predictions"]) <= {"zero", "one", "two"}
    assert result["accuracy"] > 0.5  # three easy classes, even with 2 atoms each

    rows = write_digits_csv(tmp_path / "rows.csv", digits_data, with_labels=False)
    code, out, _ = run("predict", model_file, "--data", rows, "--no-labels",
                       "--out", tmp_path / "predictions.csv")
    assert code == 0 and "accuracy" not in out
    assert out.startswith("predictions (first 10 of 150): ")

    monkeypatch.setattr(sys, "stdin", io.StringIO(rows.read_text()))  # the same rows, piped in
    code, out, _ = run("predict", model_file, "--data", "-", "--no-labels", "--json")
    assert code == 0 and json.loads(out)["predictions"] == result["predictions"]

    written = np.genfromtxt(tmp_path / "predictions.csv", delimiter=",", dtype=str)
    classes = Model.load(model_file).classes.tolist()
    assert written[0].tolist() == ["prediction", *(f"score_{c}" for c in classes)]
    assert written[1:, 0].tolist() == result["predictions"]
    scores = written[1:, 1:].astype(float)
    np.testing.assert_array_equal(np.array(classes)[scores.argmax(axis=1)], written[1:, 0])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["sgd", "adam"])
def test_train_baselines(run, capsys, tmp_path, method):
    code, out, err = run("train", "--data", "digits", "--atoms", "2", "--method", method,
                         "--max-iter", "20", "--quiet", "--json", "--out", tmp_path / "b.npz")
    assert code == 0, err
    summary = json.loads(out)
    assert 0 <= summary["metrics"]["test_accuracy"] <= 1
    meta = Model.load(tmp_path / "b.npz").meta
    assert meta["trainer"] == "SGDSoftThresholdClassifier" and meta["params"]["optimizer"] == method


def test_train_one_shared_dictionary_with_weight_decay(run, capsys, tmp_path):
    code, _, err = run("train", "--data", "digits", *TINY, "--atoms", "20", "--multiclass",
                       "shared", "--mu", "0.5", "--json", "--out", tmp_path / "s.npz")
    assert code == 0, err
    model = Model.load(tmp_path / "s.npz")
    assert model.n_atoms == 20  # --atoms counts all atoms of the one dictionary
    assert np.all(np.count_nonzero(model.weights, axis=1) == 1)  # each atom votes for one class
    params = model.meta["params"]
    assert (params["multiclass"], params["mu"]) == ("shared", 0.5)


@pytest.mark.parametrize("flag", ["--hinge", "--atoms-against", "--ovr-hinge-weight", "--sub-dictionaries"])
def test_removed_research_flags_are_usage_errors(capsys, tmp_path, flag):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--data", "digits", *TINY, "--multiclass", "shared", flag, "1", "--out", str(tmp_path / "m.npz")])
    assert stop.value.code == 2 and f"unrecognized arguments: {flag} 1" in capsys.readouterr().err


def test_train_on_shifted_copies_of_npz_images(run, capsys, tmp_path, digits_data):
    np.savez(tmp_path / "d.npz", X_train=digits_data.X_train, y_train=digits_data.y_train)
    code, _, err = run("train", "--data", tmp_path / "d.npz", *TINY, "--atoms", "12",
                       "--multiclass", "shared", "--image-shape", "8x8", "--shift-augment", "1",
                       "--out", tmp_path / "s.npz")
    assert code == 0, err
    model = Model.load(tmp_path / "s.npz")
    assert model.n_atoms == 12 and model.image_shape == (8, 8)  # declared shape recorded for predict/inspect
    assert model.meta["params"]["shift_augment"] == 1
    assert model.meta["data"]["train_rows"] == len(load_dataset(str(tmp_path / "d.npz")).X_train)  # no copies


def test_train_with_early_stopping_draws_and_reports_the_curve(run, capsys, tmp_path):
    code, out, err = run("train", "--data", "digits", "--atoms", "3", "--max-dca-iter", "3",
                         "--inner-iter", "20", "--batch-size", "200", "--early-stopping", "--nu", "2",
                         "--threads", "2", "--quiet", "--json", "--plot", tmp_path / "curve.png",
                         "--out", tmp_path / "m.npz")
    assert code == 0, err
    summary = json.loads(out)
    curve = summary["curve"]
    assert [row["iteration"] for row in curve] == list(range(1, len(curve) + 1)) and 1 <= len(curve) <= 3
    assert all(0 <= row["validation_accuracy"] <= 1 and row["objective"] > 0 for row in curve)
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert summary["figure"] == str(tmp_path / "curve.png")
    params = Model.load(tmp_path / "m.npz").meta["params"]
    assert (params["early_stopping"], params["nu"], params["batch_size"], params["n_jobs"]) == (True, 2.0, 200, 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.png", "m.npz"]  # no temp files left

    code, out, err = run("train", "--data", "digits", "--atoms", "3", "--max-dca-iter", "2",
                         "--inner-iter", "20", "--early-stopping", "--quiet", "--out", tmp_path / "m.npz")
    assert code == 0, err
    assert re.search(r"^hold-out accuracy  \d+\.\d\d%, kept DCA iteration [12] of [12]$", out, re.MULTILINE)


def test_train_baseline_curve_as_svg(run, capsys, tmp_path):
    code, out, err = run("train", "--data", "digits", "--atoms", "2", "--method", "adam",
                         "--max-iter", "200", "--quiet", "--plot", tmp_path / "curve.svg",
                         "--out", tmp_path / "b.npz")
    assert code == 0, err
    assert f"training curve    {tmp_path / 'curve.svg'}" in out
    assert "<svg" in (tmp_path / "curve.svg").read_text()


def test_train_chooses_mu_on_a_hold_out(run, capsys, tmp_path):
    code, out, err = run("train", "--data", "digits", *TINY, "--mu", "0,1,10", "--json",
                         "--out", tmp_path / "m.npz")
    assert code == 0, err
    selection = json.loads(out)["selection"]
    accuracy = {row["mu"]: row["holdout_accuracy"] for row in selection["candidates"]}
    assert list(accuracy) == [0, 1, 10] and selection["holdout_fraction"] == 0.1
    assert accuracy[selection["chosen"]["mu"]] == max(accuracy.values())
    meta = Model.load(tmp_path / "m.npz").meta
    assert meta["params"]["mu"] == selection["chosen"]["mu"] and meta["selection"] == selection

    loud = [a for a in TINY if a != "--quiet"]  # progress on: it must go to stderr, not into the JSON
    code, out, err = run("train", "--data", "digits", *loud, "--mu", "0,1", "--json", "--out", tmp_path / "m.npz")
    assert code == 0 and json.loads(out)["selection"]["holdout_fraction"] == 0.1
    assert "choosing mu: 2 candidates, 1 split(s) each" in err and "candidate 2/2 mu=1.0: held-out accuracy" in err


@pytest.mark.slow
def test_train_jobs_fits_the_mu_grid_in_processes_with_the_serial_choice(run, capsys, tmp_path):
    selections = []
    for jobs in ("1", "2"):
        code, out, err = run("train", "--data", "digits", *TINY, "--mu", "0,1,10", "--jobs", jobs, "--json",
                             "--out", tmp_path / f"m{jobs}.npz")
        assert code == 0, err
        selections.append(json.loads(out)["selection"])
    assert selections[0] == selections[1]


@pytest.mark.slow
def test_train_cluster_fits_the_mu_grid_on_dask_or_says_it_cannot_reach_it(run, capsys, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        code, out, err = run("train", "--data", "digits", *TINY, "--mu", "0,1,10", "--cluster",
                             cluster.scheduler_address, "--json", "--out", tmp_path / "m.npz")
    assert code == 0, err
    assert [row["mu"] for row in json.loads(out)["selection"]["candidates"]] == [0, 1, 10]
    code, out, err = run("train", "--data", "digits", *TINY, "--mu", "0,1", "--cluster", "tcp://127.0.0.1:9",
                         "--out", tmp_path / "n.npz")
    assert code != 0 and "--cluster: cannot reach the Dask scheduler at tcp://127.0.0.1:9" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "n.npz").exists()


def test_train_chooses_a_shared_models_mu_on_a_hold_out_and_inspect_shows_it(run, capsys, tmp_path):
    code, out, err = run("train", "--data", "digits", *TINY, "--atoms", "20", "--multiclass", "shared",
                         "--mu", "0,0.5", "--out", tmp_path / "s.npz")
    assert code == 0, err
    meta = Model.load(tmp_path / "s.npz").meta
    candidates = meta["selection"]["candidates"]
    assert [row["mu"] for row in candidates] == [0, 0.5]
    chosen = meta["selection"]["chosen"]
    assert chosen == {"mu": max(candidates, key=lambda row: row["holdout_accuracy"])["mu"]}
    assert meta["params"]["mu"] == chosen["mu"] and meta["params"]["multiclass"] == "shared"
    assert "hold-out choice" in out and "on 10% of the training rows; mu=0: " in out
    code, out, _ = run("inspect", tmp_path / "s.npz")
    assert code == 0 and f"hold-out choice  mu={chosen['mu']:g} " in out


@pytest.mark.parametrize("value", ["0,1,1", "1,x", "-1", "nan"])
def test_bad_mu_grid_is_a_usage_error(capsys, tmp_path, value):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--data", "digits", *TINY, "--mu", value, "--out", str(tmp_path / "m.npz")])
    assert stop.value.code == 2
    assert "argument --mu: expected" in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_inspect_exported_files(export, run, capsys, tmp_path, tiny_model_file, fmt):
    export = pytest.importorskip("lastedge.export")
    for module in (("onnx", "onnxruntime") if fmt == "onnx" else ("flatbuffers", "ai_edge_litert")):
        pytest.importorskip(module)
    path = tmp_path / f"m.{fmt}"
    getattr(export, f"to_{fmt}")(Model.load(tiny_model_file), path)
    code, out, _ = run("inspect", path)
    assert code == 0 and out.startswith(f"{path}: {fmt}") and "ops: " in out
    info = json.loads(run("inspect", path, "--json")[1])
    assert info["format"] == fmt and info["metadata"]["classes"] == list(range(10))
    exported = json.loads(run("predict", path, "--data", "digits", "--json")[1])
    original = json.loads(run("predict", tiny_model_file, "--data", "digits", "--json")[1])
    assert exported["predictions"] == original["predictions"]
    code, _, err = run("inspect", path, "--atoms", tmp_path / "atoms.png")
    assert code == 1 and "--atoms draws a trained .npz model's dictionary" in err


def test_inspect_draws_the_atoms(run, capsys, tmp_path, tiny_model_file):
    code, out, err = run("inspect", tiny_model_file, "--atoms", tmp_path / "atoms.png", "--per-class", "3")
    assert code == 0, err
    assert re.search(r"^atoms figure +" + re.escape(str(tmp_path / "atoms.png")) + "$", out, re.MULTILINE)
    assert (tmp_path / "atoms.png").read_bytes()[:4] == b"\x89PNG"
    info = json.loads(run("inspect", tiny_model_file, "--json", "--atoms", tmp_path / "a.svg",
                          "--image-shape", "4x16")[1])
    assert info["atoms_figure"] == str(tmp_path / "a.svg") and "<svg" in (tmp_path / "a.svg").read_text()


def test_demo_quick(run, capsys, tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("ai_edge_litert")
    code, out, err = run("demo", "--quick", "--out", tmp_path)
    assert code == 0, err
    comparison, exports = out.split("export to")
    assert "test error %" in comparison and "sparsity" in comparison
    for method in ("LAST (4 atoms/class, K=2)", "SGD (4 atoms/class, 50 steps)", "LinearSVC"):
        assert method in comparison
    for name in ("digits.npz", "digits-fp32.onnx", "digits-int8.onnx", "digits-int8-dynamic.onnx",
                 "digits-fp32.tflite", "digits-int8.tflite", "digits-int8-dynamic.tflite"):
        assert (tmp_path / name).is_file()
        assert len(re.findall(rf"^{re.escape(name)}\s", exports, re.M)) == 2  # export and bench rows
    assert "p50 us" in exports and "demo took" in exports
    figures = ("digits_training_curve.png", "digits_atoms.png", "digits_latency.png")
    assert f"figures: {', '.join(figures)}" in exports
    assert all((tmp_path / name).read_bytes()[:4] == b"\x89PNG" for name in figures)


@pytest.mark.parametrize("out, message", [
    ("/proc/lastedge-demo", r"cannot write /proc/lastedge-demo: folder /proc is not writable \(it does not accept new files\)"),
    ("{d}/notes.txt", r"--out .*notes.txt is a file, not a folder"),
    ("{d}/notes.txt/sub", r"--out .*notes.txt/sub: .*notes.txt is a file, not a folder"),
], ids=["proc", "a-file", "under-a-file"])
def test_demo_checks_its_out_folder_before_training(run, capsys, tmp_path, out, message):
    """The folder was made after the 30-60 s of training, and /proc's refusal read "no such file"."""
    (tmp_path / "notes.txt").write_text("hello")
    code, out, err = run("demo", "--quick", "--out", out.format(d=tmp_path))
    assert code == 1 and out == ""  # nothing trained
    assert len(err.splitlines()) == 1 and re.search(message, err), err


def test_demo_without_export_or_plot_extras_still_benchmarks_the_npz(run, capsys, tmp_path, monkeypatch):
    import lastedge.export

    def missing(*args, **kwargs):
        raise ImportError('onnx is not installed: pip install "lastedge[export]"')

    monkeypatch.setattr(lastedge.export, "export_all", missing)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # and no plot extra
    code, out, _ = run("demo", "--quick", "--out", tmp_path)
    assert code == 0
    assert 'export skipped: onnx is not installed: pip install "lastedge[export]"' in out
    assert "figures skipped: matplotlib is not installed (pip install 'lastedge[plot]')" in out
    assert re.search(r"^digits\.npz\s+numpy", out, re.M)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits.npz"]


def test_predict_compares_labels_by_value_whatever_their_text(run, capsys, tmp_path, tiny_model_file, digits_data):
    """np.savetxt writes label 7 as 7.000e+00; a model trained on text labels holds "7"."""
    X, y = digits_data.X_test[:60], digits_data.y_test[:60]
    np.savetxt(tmp_path / "ints.csv", np.c_[X, y], delimiter=",", fmt="%d")
    np.savetxt(tmp_path / "floats.csv", np.c_[X, y], delimiter=",")
    accuracies = [json.loads(run("predict", tiny_model_file, "--data", tmp_path / name, "--json")[1])
                  ["accuracy"] for name in ("ints.csv", "floats.csv")]
    assert accuracies[0] == accuracies[1] > 0.3
    from lastedge.cli.predict import as_class_labels

    assert as_class_labels(np.array([7.0, 1.0]), np.array(["1", "7"])).tolist() == ["7", "1"]
    assert as_class_labels(np.array(["7", "1"]), np.array([1, 7])).tolist() == [7, 1]


def test_inspect_shows_a_model_whose_metadata_holds_the_unexpected(run, capsys, tmp_path, tiny_model_file):
    model = Model.load(tiny_model_file)
    model.meta = {"params": [1, 2], "metrics": {"loss": float("nan")},
                  "selection": {"chosen": {"mu": 1}, "candidates": [{"mu": 1, "holdout_accuracy": "high"}, 7]}}
    model.save(tmp_path / "odd.npz")
    code, out, err = run("inspect", tmp_path / "odd.npz")
    assert code == 0 and "mu=1 (on None of the training rows; mu=1: high)" in out and "loss=nan" in out
    code, out, err = run("inspect", tmp_path / "odd.npz", "--json")
    assert code == 0 and json.loads(out, parse_constant=pytest.fail)["meta"]["metrics"]["loss"] is None


def test_confusion_counts_true_labels_the_model_does_not_know():
    from lastedge.cli.predict import _most_confused, confusion

    names, matrix = confusion(np.array(["b", "a", "a", "zebra"]), np.array(["b", "b", "a", "a"]),
                              np.array(["a", "b"]))
    assert names == ["a", "b", "zebra"]
    np.testing.assert_array_equal(matrix, [[1, 1, 0], [0, 1, 0], [1, 0, 0]])
    assert _most_confused(names, matrix) == "most confused (true as predicted): a as b (1), zebra as a (1)"
    assert _most_confused(names, np.eye(3, dtype=int)) == "no row misclassified"
