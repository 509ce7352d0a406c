"""``benchmarks/reproduce.py all --quick`` on generated data files in the paper data sets' format."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _blobs(rng: np.random.RandomState, sizes: tuple[int, int], n_features: int, labels: list[int],
           low: float, high: float, dtype) -> list[np.ndarray]:
    """Train and test rows around one random centre per label, clipped and cast like the real file."""
    centres = rng.uniform(low, high, (len(labels), n_features))
    arrays = []
    for n in sizes:
        index = rng.randint(len(labels), size=n)
        X = centres[index] + rng.normal(0, (high - low) / 6, (n, n_features))
        arrays += [np.clip(X, low, high).astype(dtype), np.array(labels)[index].astype(np.int64)]
    return arrays


def _write_fake_data(folder: Path) -> None:
    rng = np.random.RandomState(0)
    for name, n_features, labels, low, high, dtype in (
            ("mnist", 784, list(range(10)), 0, 255, np.uint8),
            ("usps", 256, list(range(10)), -1, 1, np.float32),
            ("cifar10_deer_horse", 3072, [4, 7], 0, 255, np.uint8)):
        X_train, y_train, X_test, y_test = _blobs(rng, (700, 300), n_features, labels, low, high, dtype)
        np.savez(folder / f"{name}.npz", X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)
    # Brodatz: 512 x 512 grey images; each texture a noisy grating of its own frequency and angle.
    grid = np.mgrid[0:512, 0:512].astype(np.float64)
    images = {}
    for k, name in enumerate(("bark", "woodgrain", "pigskin", "pressedcl")):
        angle, freq = 0.7 * k, 0.2 + 0.15 * k
        wave = np.sin(freq * (np.cos(angle) * grid[0] + np.sin(angle) * grid[1]))
        images[name] = np.clip(128 + 60 * wave + rng.normal(0, 30, (512, 512)), 0, 255).astype(np.uint8)
    np.savez(folder / "brodatz_usc_sipi.npz", **images)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    pytest.importorskip("matplotlib")
    data, out = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("out")
    _write_fake_data(data)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import reproduce

        assert reproduce.main(["all", "--quick", "--data", str(data), "--out", str(out)]) == 0
    finally:
        sys.path.remove(str(BENCHMARKS))
    return out


@pytest.mark.slow
def test_quick_run_writes_every_table_json_and_figure(quick_run):
    for name in ("textures", "deer-horse", "digits", "test-time"):
        assert (quick_run / f"{name}.md").read_text().startswith(f"### {name} (QUICK")
    for name in ("textures", "deer-horse", "digits"):
        record = json.loads((quick_run / f"{name}.json").read_text())
        methods = {row["method"] for row in record["results"]}
        assert {"last", "sgd", "linear-svm", "rbf-svm"} <= methods
        assert all(0 <= row["error_pct"] <= 100 for row in record["results"])
    for figure in ("textures_accuracy.png", "deer-horse_accuracy.png", "deer_horse_atoms.png",
                   "deer_horse_features_n2.png", "objective_vs_time_bark-woodgrain.png",
                   "digits_last_learning_curve.png"):
        assert (quick_run / figure).read_bytes().startswith(b"\x89PNG"), figure
    assert (quick_run / "mnist_last.npz").is_file()


@pytest.mark.slow
def test_quick_run_chooses_the_weight_decay_on_training_rows(quick_run):
    how = {"textures": "3-fold CV", "digits": "validation", "deer-horse": "10% hold-out"}
    for name, task in (("textures", "bark-woodgrain"), ("digits", "mnist"), ("deer-horse", "deer-horse")):
        rows = json.loads((quick_run / f"{name}.json").read_text())["results"]
        validated = [r for r in rows if r["task"] == task and r["method"] == "last-mu"]
        assert validated and all(r["notes"].startswith("mu=") for r in validated)
        assert f"({how[name]} accuracy %" in validated[0]["notes"]


def test_equalized_texture_is_halved_and_uses_grey_levels_evenly(import_benchmark):
    equalized = import_benchmark("paper_data").equalized
    image = np.random.RandomState(0).randint(100, 140, (64, 32)).astype(np.uint8)
    out = equalized(image)
    halved = image.astype(float).reshape(32, 2, 16, 2).mean(axis=(1, 3))
    assert out.shape == (32, 16)
    assert np.all(np.bincount(out.astype(int).ravel(), minlength=256) == 2)  # 512 pixels, 256 levels
    order = np.argsort(halved, axis=None, kind="stable")
    assert np.all(np.diff(out.ravel()[order]) >= 0)  # brighter stays at least as bright
    assert len(np.unique(out)) == 256


@pytest.mark.slow
def test_quick_run_puts_the_papers_numbers_beside_ours(quick_run):
    rows = json.loads((quick_run / "digits.json").read_text())["results"]
    paper = {(r["task"], r["method"]): r["paper_error_pct"] for r in rows}
    assert paper["mnist", "rbf-svm"] == 1.4 and paper["usps", "linear-svm"] == 9.07
    last = next(r for r in rows if r["task"] == "mnist" and r["method"] == "last")
    assert last["learning_curve"] and set(last["seconds_to_error_pct"]) == {"2", "1.5", "1.32"}
    summary = (quick_run / "digits.md").read_text()  # the milestones are MNIST's targets, not USPS's
    assert "mnist LAST time to test error" in summary and "usps LAST time to test error" not in summary
    test_time = (quick_run / "test-time.md").read_text()
    assert "| LAST | numpy fp32 |" in test_time
    assert "seconds (300 images)" in test_time and "10k" not in test_time  # --quick times 300 images
    assert "| linear SVM (fit on 300 rows); " in test_time  # --quick fits no baseline on all 60000 rows


@pytest.mark.slow
def test_merge_joins_partial_runs_later_rows_winning(quick_run, tmp_path):
    record = json.loads((quick_run / "textures.json").read_text())
    rows = record["results"]
    first, rest = rows[:3], rows[3:]
    rerun = {**first[0], "error_pct": 1.5}  # the same task, method and N measured again
    for name, part in (("a", first), ("b", [rerun, *rest])):
        (tmp_path / f"{name}.json").write_text(json.dumps({**record, "results": part, "machine": f"machine {name}"}))
    out = tmp_path / "merged"
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import reproduce

        paths = [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
        assert reproduce.main(["textures", "--merge", *paths, "--out", str(out)]) == 0
        assert reproduce.main(["digits", "--merge", *paths, "--out", str(out)]) == 2  # not digits results
        scan = {**record, "args": {**record["args"], "texture_source": "scan"}}
        (tmp_path / "scan.json").write_text(json.dumps(scan))
        assert reproduce.main(["textures", "--merge", paths[0], str(tmp_path / "scan.json"),
                               "--out", str(tmp_path / "mixed")]) == 2  # other data
        digits = json.loads((quick_run / "digits.json").read_text())
        del digits["args"]["texture_source"]  # files written before the option existed
        (tmp_path / "old.json").write_text(json.dumps(digits))
        assert reproduce.main(["digits", "--merge", str(tmp_path / "old.json"), str(quick_run / "digits.json"),
                               "--out", str(out)]) == 0
    finally:
        sys.path.remove(str(BENCHMARKS))
    merged_record = json.loads((out / "textures.json").read_text())
    assert merged_record["machine"] == ["machine a", "machine b"]  # the runs' machines, not the merge's
    assert merged_record["versions"] == [record["versions"]]
    merged = merged_record["results"]
    key = lambda row: (row["task"], row["method"], row["n_atoms"])
    assert sorted(map(key, merged)) == sorted(map(key, rows))
    assert next(r for r in merged if key(r) == key(first[0]))["error_pct"] == 1.5
    assert (out / "textures_accuracy.png").read_bytes().startswith(b"\x89PNG")
    assert "| 1.50 |" in (out / "textures.md").read_text()
    assert "mnist: test error % (paper)" in (out / "digits.md").read_text()


def test_methods_outside_the_plan_run_at_the_plans_last_sizes(import_benchmark):
    experiments = import_benchmark("experiments")
    args = argparse.Namespace(methods=["rbf-svm", "last-adam", "last", "knn"], n_atoms=None, quick=False)
    plan = experiments.plan_for(experiments.EXPERIMENTS["textures"], "bark-woodgrain", args)
    every = [2, 5, 10, 25, 50, 100, 200, 400]
    assert list(plan) == ["last", "rbf-svm", "last-adam", "knn"]  # the plan's order, then the rest
    assert plan["last-adam"] == plan["last"] == every
    assert plan["knn"] is experiments.ATOM_FREE


def test_svm_rows_are_scaled_to_unit_mean_norm_and_unit_rows_kept(import_benchmark):
    UnitMeanNorm = import_benchmark("harness").UnitMeanNorm
    rng = np.random.RandomState(0)
    pixels = rng.randint(0, 256, (50, 30)).astype(np.float32)
    scaled = UnitMeanNorm().fit(pixels).transform(pixels)
    assert np.isclose(np.mean(np.sum(scaled.astype(np.float64) ** 2, axis=1)), 1.0, rtol=1e-5)
    unit = pixels / np.linalg.norm(pixels, axis=1, keepdims=True)
    np.testing.assert_allclose(UnitMeanNorm().fit(unit).transform(unit), unit, rtol=1e-6)
    assert UnitMeanNorm().fit(np.zeros((3, 4))).scale_ == 1.0


def _results(args: dict, machine: str, rows: list[dict]) -> dict:
    """A results file of ``reproduce.py textures`` as a run writes it."""
    defaults = {"experiment": "textures", "quick": False, "texture_source": "equalized", "merge": None}
    return {"benchmark": "reproduce textures", "args": {**defaults, **args}, "sgd_iter": 20000,
            "versions": {"python": "3"}, "machine": machine, "results": rows}


def _row(method: str, n: int | None, error: float) -> dict:
    row = {"task": "bark-woodgrain", "method": method, "label": method.upper(), "n_atoms": n,
           "error_pct": error, "paper_error_pct": None, "train_s": 1.0, "predict_ms": 0.1, "zeros_pct": None,
           "notes": "", "warnings": []}
    if method == "last":
        row["history"] = [{"time": 0.5, "objective": 2.0}, {"time": 1.0, "objective": 1.0}]
    return row


def _merge(import_benchmark, tmp_path: Path, records: dict[str, dict], *options: str) -> int:
    reproduce = import_benchmark("reproduce")
    for name, record in records.items():
        (tmp_path / name).write_text(json.dumps(record))
    return reproduce.main(["textures", "--merge", *(str(tmp_path / name) for name in records),
                           "--out", str(tmp_path / "out"), *options])


def test_merge_records_each_files_arguments_and_remerges_flat(import_benchmark, tmp_path):
    pytest.importorskip("matplotlib")
    a = _results({"methods": ["last"], "n_atoms": [10]}, "machine a", [_row("last", 10, 9.0)])
    b = _results({"methods": ["sgd"], "n_atoms": [10]}, "machine b", [_row("sgd", 10, 12.0)])
    assert _merge(import_benchmark, tmp_path, {"a.json": a, "b.json": b}) == 0
    merged = json.loads((tmp_path / "out" / "textures.json").read_text())
    assert merged["args"] == [a["args"], b["args"]]  # the runs' arguments, not the merge's own
    assert merged["merged_from"] == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    (tmp_path / "merged.json").write_text(json.dumps(merged))
    c = _results({"methods": ["rbf-svm"]}, "machine c", [_row("rbf-svm", None, 7.0)])
    assert _merge(import_benchmark, tmp_path, {"merged.json": merged, "c.json": c}) == 0
    again = json.loads((tmp_path / "out" / "textures.json").read_text())
    # a merged file counts as the runs it joined: one flat list, not a list inside a list
    assert again["machine"] == ["machine a", "machine b", "machine c"]
    assert again["args"] == [a["args"], b["args"], c["args"]] and again["versions"] == [{"python": "3"}]
    assert [r["method"] for r in again["results"]] == ["last", "rbf-svm", "sgd"]


def test_merge_takes_the_texture_source_and_quick_from_its_files(import_benchmark, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    scan = {"texture_source": "scan", "quick": True}
    parts = {"a.json": _results(scan, "m", [_row("last", 10, 9.0)]),
             "b.json": {**_results(scan, "m", [_row("sgd", 10, 12.0)]), "sgd_iter": 500}}
    assert _merge(import_benchmark, tmp_path, parts) == 0
    out = tmp_path / "out"
    # named as a scan run's outputs: a merge of scan runs never overwrites the equalised textures.*
    assert sorted(path.name for path in out.iterdir()) == [
        "objective_vs_time_scan_bark-woodgrain.png", "textures-scan.json", "textures-scan.md",
        "textures-scan_accuracy.png"]
    table = (out / "textures-scan.md").read_text()
    assert table.startswith("### textures (QUICK") and "SGD runs 500 iterations" in table
    full = _results({}, "m", [_row("rbf-svm", None, 7.0)])
    assert _merge(import_benchmark, tmp_path, {"a.json": parts["a.json"], "full.json": full}) == 2
    assert "ran with other --texture-source, --quick than the files before it" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--tasks", "pigskin-pressedcl"], ["--methods", "last"], ["--n-atoms", "10"],
                                    ["--texture-source", "scan"]])
def test_merge_refuses_the_options_that_narrow_a_run(import_benchmark, tmp_path, capsys, option):
    """They would name the merged file after rows it does not hold (or data it did not read)."""
    with pytest.raises(SystemExit) as stopped:
        _merge(import_benchmark, tmp_path, {"a.json": _results({}, "m", [_row("sgd", 10, 12.0)])}, *option)
    assert stopped.value.code == 2
    assert f"--merge joins whole files and takes its data from them: drop {option[0]}" in capsys.readouterr().err


def test_an_unknown_task_is_one_line_before_any_data_is_read(import_benchmark, tmp_path, capsys):
    reproduce = import_benchmark("reproduce")
    with pytest.raises(SystemExit):
        reproduce.parse_args(["textures", "--tasks", "bark-woodgrain,mnist", "--data", str(tmp_path)])
    assert "--tasks: no task mnist in textures; choose from bark-woodgrain,pigskin-pressedcl" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # all --tasks usps runs digits (and test-time) only, so it needs only their files
        reproduce.parse_args(["all", "--tasks", "usps", "--data", str(tmp_path)])
    assert "error: digits needs mnist.npz, usps.npz" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--seed", "-1"], ["--seed", "4294967296"]])
def test_seeds_outside_what_the_estimators_take_are_usage_errors(import_benchmark, capsys, option):
    reproduce = import_benchmark("reproduce")
    with pytest.raises(SystemExit):
        reproduce.parse_args(["digits", *option])
    assert "seeds must be in 0..2**32 - 1" in capsys.readouterr().err


def test_an_out_that_cannot_hold_files_is_one_line(import_benchmark, tmp_path, capsys):
    part = tmp_path / "a.json"
    part.write_text(json.dumps(_results({}, "m", [_row("sgd", 10, 12.0)])))
    reproduce = import_benchmark("reproduce")
    assert reproduce.main(["textures", "--merge", str(part), "--out", str(part)]) == 2
    assert capsys.readouterr().err == f"reproduce.py: error: --out {part} is a file; give a folder\n"


def test_narrowed_runs_name_their_figures_after_what_narrowed_them(import_benchmark, tmp_path):
    pytest.importorskip("matplotlib")
    reproduce = import_benchmark("reproduce")
    args = argparse.Namespace(out=tmp_path, tasks=None, methods=["last", "kmeans-svm"], n_atoms=[2],
                              texture_source="equalized")
    rng = np.random.RandomState(0)
    last = argparse.Namespace(dictionary_=rng.rand(3072, 2), coef_=np.array([[1.0], [-1.0]]),
                              transform=lambda X: np.abs(X[:, :2]))
    kept = {("deer-horse", "last", 2): last,
            ("deer-horse", "kmeans-svm", 2): argparse.Namespace(atoms_=rng.rand(3072, 2))}
    rows = [{**_row("last", 2, 30.0), "task": "deer-horse"}]
    test_data = {"deer-horse": (rng.rand(20, 3072), np.arange(20) % 2)}
    reproduce.make_figures(reproduce.EXPERIMENTS["deer-horse"], rows, kept, test_data, args)
    # a full run's deer_horse_atoms.png is not overwritten
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "deer-horse-last-kmeans-svm-n2_accuracy.png", "deer_horse_last-kmeans-svm-n2_atoms.png",
        "deer_horse_last-kmeans-svm-n2_features_n2.png"]


def test_the_markdown_table_is_written_by_a_rename(import_benchmark, tmp_path, monkeypatch):
    """Atomically, like the JSON: a run stopped while writing leaves the previous table whole."""
    pytest.importorskip("matplotlib")
    renamed = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda source, target: (renamed.append(Path(target).name),
                                                               real_replace(source, target)))
    assert _merge(import_benchmark, tmp_path, {"a.json": _results({}, "m", [_row("sgd", 10, 12.0)])}) == 0
    assert "textures.md" in renamed and "textures.json" in renamed


def test_merging_files_without_rows_is_one_line(import_benchmark, tmp_path, capsys):
    assert _merge(import_benchmark, tmp_path, {"a.json": _results({}, "m", [])}) == 2
    assert capsys.readouterr().err == f"reproduce.py: error: {tmp_path / 'a.json'} hold(s) no result rows\n"
    assert _merge(import_benchmark, tmp_path, {"a.json": _results({}, "m", [{"task": "bark-woodgrain"}])}) == 2
    assert "holds no list of result rows (each with task, method and n_atoms)" in capsys.readouterr().err


def test_table_notes_count_the_step_trials_of_each_optimiser(import_benchmark):
    """SGD with Adam tries fewer steps than plain SGD; the notes under every table said 4 for both."""
    from lastedge.train.sgd import DEFAULT_STEPS

    harness = import_benchmark("harness")
    text = harness.notes(harness.Budget(quick=True))
    assert f"SGD: {len(DEFAULT_STEPS['sgd'])} step-size trials, {len(DEFAULT_STEPS['adam'])} with Adam" in text
    assert "SVMs, k-NN, the soft-threshold encoders and sparse coding: 3-fold CV" in text
    assert text.startswith("Notes: SGD runs 500 iterations")
