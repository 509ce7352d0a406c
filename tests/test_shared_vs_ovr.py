"""``benchmarks/shared_vs_ovr.py``: a quick run on a generated USPS-shaped file, then ``--merge``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest_benchmarks import BENCHMARKS, import_benchmark


@pytest.fixture
def shared_vs_ovr():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import shared_vs_ovr

        yield shared_vs_ovr
    finally:
        sys.path.remove(str(BENCHMARKS))


def _write_usps_like(folder: Path) -> None:
    """Ten classes of 256-pixel rows in [-1, 1] around one random centre each, as usps.npz stores them."""
    rng = np.random.RandomState(0)
    centres = rng.uniform(-1, 1, (10, 256))
    arrays = {}
    for part, n in (("train", 600), ("test", 200)):
        y = np.arange(n) % 10
        arrays[f"X_{part}"] = np.clip(centres[y] + rng.normal(0, 0.5, (n, 256)), -1, 1).astype(np.float32)
        arrays[f"y_{part}"] = y
    np.savez(folder / "usps.npz", **arrays)


def test_quick_runs_merge_into_one_table_and_plot(shared_vs_ovr, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _write_usps_like(tmp_path)
    common = ["--quick", "--datasets", "usps", "--data", str(tmp_path), "--total-atoms", "100"]
    assert shared_vs_ovr.main([*common, "--json", str(tmp_path / "both.json")]) == 0
    assert shared_vs_ovr.main([*common, "--methods", "shared", "--hinge", "sum", "--shift-augment", "1",
                               "--atoms-against", "0.5", "--ovr-hinge-weight", "1", "--atoms-per-class", "equal",
                               "--json", str(tmp_path / "sum.json")]) == 0
    rows = json.loads((tmp_path / "sum.json").read_text())["results"]
    label = "shared dictionary (sum hinge, 0.5 against, ovr hinges x1, equal atoms per class), shifts <= 1 px"
    assert [(r["method"], r["hinge"], r["atoms_against"], r["atoms_per_class"], r["shift_augment"], r["label"])
            for r in rows] == [("shared", "sum", 0.5, "equal", 1, label)]
    # the base step of every DCA iteration, one list per head: one head here, ten for one-vs-all
    both = {r["method"]: r["dca_steps"] for r in json.loads((tmp_path / "both.json").read_text())["results"]}
    assert len(rows[0]["dca_steps"]) == 1 and len(both["shared"]) == 1 and len(both["ovr"]) == 10
    assert all(len(head) >= 1 and min(head) > 0 for head in rows[0]["dca_steps"] + both["ovr"])
    assert rows[0]["macs_per_sample"] == 256 * 100 + 100 * 10 and 0 <= rows[0]["error_pct"] <= 100
    capsys.readouterr()

    parts = [str(tmp_path / "both.json"), str(tmp_path / "sum.json")]
    assert shared_vs_ovr.main(["--merge", *parts, "--plot", str(tmp_path / "merged.png")]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| usps")]
    assert [line.split(" | ")[1] for line in table] == [
        "shared dictionary", label, "one-vs-all"]
    assert (tmp_path / "merged.png").read_bytes().startswith(b"\x89PNG")

    record = json.loads((tmp_path / "sum.json").read_text())
    record["args"]["max_dca_iter"] = 7  # the same data set trained with another budget
    (tmp_path / "other.json").write_text(json.dumps(record))
    assert shared_vs_ovr.main(["--merge", parts[0], str(tmp_path / "other.json")]) == 2
    assert "trained usps with other budgets" in capsys.readouterr().err
    assert shared_vs_ovr.main(["--merge", str(tmp_path / "usps.npz")]) == 2


@pytest.mark.parametrize("option", [["--atoms-against", "0.5"], ["--ovr-hinge-weight", "1"], ["--hinge", "sum"],
                                    ["--atoms-per-class", "equal"]])
def test_one_vs_all_alone_refuses_the_shared_models_options(shared_vs_ovr, tmp_path, capsys, option):
    """A one-vs-all run would ignore them and still record them in its JSON, so it refuses them."""
    _write_usps_like(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        shared_vs_ovr.main(["--quick", "--datasets", "usps", "--data", str(tmp_path), "--methods", "ovr", *option])
    assert stopped.value.code == 2
    assert f"{option[0]} shape(s) the shared model only" in capsys.readouterr().err


def test_unfitted_models_follow_the_arguments(shared_vs_ovr, tmp_path):
    _write_usps_like(tmp_path)
    args = shared_vs_ovr.parse_args(["--datasets", "usps", "--data", str(tmp_path), "--total-atoms", "100,200",
                                     "--train-rows", "300", "--mu", "0.5", "--seed", "3"])
    models = list(shared_vs_ovr.unfitted_models(args))
    assert [(task, total, method) for task, _, total, method, _ in models] == [
        ("usps", 100, "shared"), ("usps", 100, "ovr"), ("usps", 200, "shared"), ("usps", 200, "ovr")]
    (X, y, X_test, y_test), estimator = models[-1][1], models[-1][4]
    assert (len(X), len(y), len(X_test)) == (300, 300, 200)
    assert estimator.n_atoms == 20 and estimator.mu == 0.5 and estimator.random_state == 3
    assert not hasattr(estimator, "model_")


def test_train_device_quick_run_times_every_device(tmp_path, capsys):
    """``benchmarks/train_device.py`` on two CPU "devices" (the machine CI has): one row each."""
    _write_usps_like(tmp_path)
    train_device = import_benchmark("train_device")
    train_device.main(["--quick", "--dataset", "usps", "--data", str(tmp_path), "--devices", "cpu,cpu",
                       "--threads", "1", "--methods", "shared,signed", "--json", str(tmp_path / "t.json")])
    rows = json.loads((tmp_path / "t.json").read_text())["results"]
    assert [(r["method"], r["total_atoms"], r["device"], r["n_iter"]) for r in rows] == [
        ("shared", 20, "cpu (1 thread)", 2)] * 2 + [("signed", 20, "cpu (1 thread)", 2)] * 2
    assert rows[0]["speed_up"] == 1.0 and all(r["s_per_iteration"] > 0 for r in rows)
    assert "| shared | 20 | cpu (1 thread) |" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        train_device.main(["--quick", "--data", str(tmp_path), "--dataset", "usps", "--devices", "gpu"])
    assert stopped.value.code == 2
    assert "device must name a torch device" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train_device.main(["--quick", "--data", str(tmp_path), "--dataset", "usps", "--methods", "shared,mixed"])
    assert "choose methods from shared,signed,ovr" in capsys.readouterr().err
