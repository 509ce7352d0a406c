"""``benchmarks/shared_vs_ovr.py``: a quick run on a generated USPS-shaped file, then ``--merge``; and
the other timing scripts (train_device, head_products, ...): their tables' figures and arguments."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


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


@pytest.mark.slow
def test_quick_runs_merge_into_one_table_and_plot(shared_vs_ovr, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    _write_usps_like(tmp_path)
    common = ["--quick", "--datasets", "usps", "--data", str(tmp_path), "--total-atoms", "100"]
    assert shared_vs_ovr.main([*common, "--json", str(tmp_path / "both.json")]) == 0
    assert shared_vs_ovr.main([*common, "--methods", "shared", "--shift-augment", "1",
                               "--json", str(tmp_path / "shifted.json")]) == 0
    rows = json.loads((tmp_path / "shifted.json").read_text())["results"]
    label = "shared dictionary, shifts <= 1 px"
    assert [(r["method"], r["shift_augment"], r["label"]) for r in rows] == [("shared", 1, label)]
    # the base step of every DCA iteration, one list per head: one head here, ten for one-vs-all
    both = {r["method"]: r["dca_steps"] for r in json.loads((tmp_path / "both.json").read_text())["results"]}
    assert len(rows[0]["dca_steps"]) == 1 and len(both["shared"]) == 1 and len(both["ovr"]) == 10
    assert all(len(head) >= 1 and min(head) > 0 for head in rows[0]["dca_steps"] + both["ovr"])
    assert rows[0]["macs_per_sample"] == 256 * 100 + 100 * 10 and 0 <= rows[0]["error_pct"] <= 100
    capsys.readouterr()

    parts = [str(tmp_path / "both.json"), str(tmp_path / "shifted.json")]
    assert shared_vs_ovr.main(["--merge", *parts, "--plot", str(tmp_path / "merged.png")]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| usps")]
    assert [line.split(" | ")[1] for line in table] == [
        "shared dictionary", label, "one-vs-all"]
    assert (tmp_path / "merged.png").read_bytes().startswith(b"\x89PNG")

    record = json.loads((tmp_path / "shifted.json").read_text())
    record["args"]["max_dca_iter"] = 7  # the same data set trained with another budget
    (tmp_path / "other.json").write_text(json.dumps(record))
    assert shared_vs_ovr.main(["--merge", parts[0], str(tmp_path / "other.json")]) == 2
    assert "trained usps with other budgets" in capsys.readouterr().err
    assert shared_vs_ovr.main(["--merge", str(tmp_path / "usps.npz")]) == 2
    (tmp_path / "empty.json").write_text(json.dumps({**record, "results": []}))
    capsys.readouterr()
    assert shared_vs_ovr.main(["--merge", str(tmp_path / "empty.json"), "--plot", str(tmp_path / "empty.png")]) == 2
    assert "hold(s) no result rows" in capsys.readouterr().err and not (tmp_path / "empty.png").exists()
    with pytest.raises(SystemExit):  # it would write nothing there
        shared_vs_ovr.main(["--merge", *parts, "--json", str(tmp_path / "merged.json")])
    assert "--merge prints its table and writes no results file: drop --json" in capsys.readouterr().err


@pytest.mark.slow
def test_several_seeds_run_in_joblib_workers_and_are_summarised(shared_vs_ovr, tmp_path, capsys):
    _write_usps_like(tmp_path)
    out = tmp_path / "seeds.json"
    assert shared_vs_ovr.main(["--quick", "--datasets", "usps", "--data", str(tmp_path), "--total-atoms", "100",
                               "--seed", "1-2", "--parallel-fits", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())["results"]
    # table order whatever order the workers finished in: per seed, shared then one-vs-all
    assert [(r["seed"], r["method"]) for r in rows] == [(1, "shared"), (1, "ovr"), (2, "shared"), (2, "ovr")]
    assert all(0 <= r["error_pct"] <= 100 for r in rows)
    assert "Over seeds" in printed and "| usps | shared dictionary | 100 | 2 |" in printed

    # a file from before --seed took lists (one int seed in args, none in its rows) merges as that seed
    old = json.loads(out.read_text())
    old["args"]["seed"], old["results"] = 7, [{k: v for k, v in r.items() if k != "seed"} for r in rows[:2]]
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert shared_vs_ovr.main(["--merge", str(out), str(tmp_path / "old.json")]) == 0
    assert "| usps | shared dictionary | 100 | 3 |" in capsys.readouterr().out


def _row(method: str, seed: int, error: float | None, shift_augment: int = 1) -> dict:
    return {"task": "mnist", "method": method, "label": f"{method}, shifts {shift_augment}", "total_atoms": 400,
            "seed": seed, "shift_augment": shift_augment, "error_pct": error}


def test_seed_summary_pairs_each_seed_with_its_one_vs_all_fit(shared_vs_ovr):
    rows = [_row("shared", 0, 1.0), _row("shared", 1, 1.2), _row("shared", 2, 0.9), _row("shared", 3, None),
            _row("ovr", 0, 1.1), _row("ovr", 1, 1.2), _row("ovr", 2, 1.0), _row("ovr", 3, 1.3),
            _row("ovr", 0, 0.5, shift_augment=0)]  # other training copies: never paired with the shared rows
    shared, ovr, ovr_plain = shared_vs_ovr.seed_summary(rows)
    assert (shared["n_seeds"], shared["median_pct"], shared["range_pct"]) == (3, 1.0, "0.90-1.20")
    assert shared["mean_pct"] == pytest.approx(31 / 30)
    # differences -0.1, 0, -0.1: mean -0.067, standard error 0.0577 / sqrt(3)
    assert shared["minus_ovr"] == "-0.067 +- 0.033" and shared["seeds_ahead"] == "2 of 3 (1 level)"
    assert (ovr["n_seeds"], ovr["median_pct"]) == (4, 1.15) and "minus_ovr" not in ovr
    assert ovr_plain["n_seeds"] == 1


@pytest.mark.parametrize(("text", "seeds"), [("3", [3]), ("0,2,5", [0, 2, 5]), ("16-18", [16, 17, 18]),
                                              ("1-2,5", [1, 2, 5])])
def test_seed_lists(import_benchmark, shared_vs_ovr, text, seeds):
    assert import_benchmark("shared_vs_ovr_args")._seed_list(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "1,1", "0-2,2"])
def test_seed_lists_refuse_what_names_no_distinct_seeds(import_benchmark, shared_vs_ovr, text):
    with pytest.raises(argparse.ArgumentTypeError, match="seed"):
        import_benchmark("shared_vs_ovr_args")._seed_list(text)


def test_train_device_quick_run_times_every_device(import_benchmark, tmp_path, capsys):
    """``benchmarks/train_device.py`` on two CPU "devices" (the machine CI has): one row each."""
    _write_usps_like(tmp_path)
    train_device = import_benchmark("train_device")
    train_device.main(["--quick", "--dataset", "usps", "--data", str(tmp_path), "--devices", "cpu,cpu",
                       "--threads", "1", "--methods", "shared,ovr", "--json", str(tmp_path / "t.json")])
    rows = json.loads((tmp_path / "t.json").read_text())["results"]
    assert [(r["method"], r["total_atoms"], r["device"], r["n_iter"]) for r in rows] == [
        ("shared", 20, "cpu (1 thread)", 2)] * 2 + [("ovr", 20, "cpu (1 thread)", 2)] * 2
    assert rows[0]["speed_up"] == 1.0 and all(r["s_per_iteration"] > 0 for r in rows)
    assert "| shared | 20 | cpu (1 thread) |" in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        train_device.main(["--quick", "--data", str(tmp_path), "--dataset", "usps", "--devices", "gpu"])
    assert stopped.value.code == 2
    assert "device must name a torch device" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        train_device.main(["--quick", "--data", str(tmp_path), "--dataset", "usps", "--methods", "shared,mixed"])
    assert "choose methods from shared,ovr" in capsys.readouterr().err


def test_plot_draws_every_method_and_leaves_failed_fits_out(import_benchmark, shared_vs_ovr, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    figures = import_benchmark("figures")
    drawn = {}
    real_save = figures.save_figure
    monkeypatch.setattr(figures, "save_figure",
                        lambda fig, path: (drawn.update(fig=fig), real_save(fig, path))[1])
    rows = [{**_row("shared", seed, 1.0 + seed / 10, k), "label": f"method {k}", "total_atoms": total,
             "macs_per_sample": 1000 * total} for k in range(7) for seed in (0, 1) for total in (100, 200)]
    rows.append({**_row("shared", 2, None), "label": "method 0"})  # a failed fit: no error, no MACs
    figures.error_against_macs(rows, shared_vs_ovr.seed_summary(rows), tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes().startswith(b"\x89PNG") and not list(tmp_path.glob(".*.tmp"))
    (ax,) = drawn["fig"].axes
    handles, labels = ax.get_legend_handles_labels()
    assert labels == [f"method {k}" for k in range(7)]  # the 6th and 7th are drawn too
    assert len({(h.lines[0].get_color(), h.lines[0].get_marker()) for h in handles}) == 7  # told apart


@pytest.mark.parametrize(("option", "message"), [
    (["--json", "missing/results.json"],
     "argument --json: cannot write missing/results.json: folder missing does not exist"),
    (["--plot", "missing/plot.png"], "argument --plot: cannot write missing/plot.png: folder missing does not exist"),
    (["--plot", "plot.txt"], "argument --plot: the figure must be a .png, .pdf, .svg file, got 'plot.txt'"),
])
def test_output_paths_are_checked_before_any_fit(shared_vs_ovr, tmp_path, monkeypatch, capsys, option, message):
    """The fits of a run take hours; a typo in --json or --plot used to cost them at the end."""
    _write_usps_like(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        shared_vs_ovr.parse_args(["--datasets", "usps", "--data", str(tmp_path), *option])
    assert stopped.value.code == 2 and message in capsys.readouterr().err


def test_train_device_records_its_own_budget_and_times_gaps_between_iterations(import_benchmark, tmp_path, monkeypatch):
    train_device = import_benchmark("train_device")
    # start-up (2 s before the first iteration's stamp) is no gap between iterations
    monkeypatch.setattr(train_device, "training_curve", lambda clf: [{"time_s": t} for t in (2.0, 3.0, 4.5)])
    assert train_device.seconds_per_iteration(None) == 1.25
    monkeypatch.setattr(train_device, "training_curve", lambda clf: [{"time_s": 2.0}])
    assert train_device.seconds_per_iteration(None) == 2.0
    monkeypatch.undo()
    _write_usps_like(tmp_path)
    train_device.main(["--quick", "--dataset", "usps", "--data", str(tmp_path), "--devices", "cpu",
                       "--threads", "1", "--methods", "ovr", "--json", str(tmp_path / "t.json")])
    record = json.loads((tmp_path / "t.json").read_text())
    # the fits' budget, not the accuracy benchmarks' (--quick: 2 DCA x 100 inner, SGD 500)
    assert record["last_budget"] == {"max_dca_iter": 2, "inner_iter": 10, "batch_size": 100}
    assert record["sgd_iter"] is None


def test_head_products_times_the_two_ways_in_turn(import_benchmark):
    """Alternating, as its table claims: a burst of load on the shared machine hits both columns."""
    head_products = import_benchmark("head_products")
    calls = []
    medians = head_products.milliseconds((lambda: calls.append("batched"), lambda: calls.append("one")), repeats=3)
    assert calls == ["batched", "one"] * 4 and len(medians) == 2  # one warm-up call each, then 3 rounds


@pytest.mark.parametrize(("script", "option"), [
    ("head_products", "--repeats"), ("tight_majoriser", "--repeats"), ("lbfgs_blas_threads", "--repeats"),
    ("data_loading", "--runs"), ("latency", "--runs-1"), ("row_blocks", "--calls"), ("export", "--calibration-rows"),
    ("profile_dca", "--n-atoms"), ("train_device", "--repeats")])
def test_timing_scripts_refuse_counts_below_one(import_benchmark, monkeypatch, capsys, script, option):
    """A usage error, not a traceback from a median of no timings (or an empty fit) after the set-up."""
    main = import_benchmark(script).main
    monkeypatch.setattr(sys, "argv", [f"{script}.py", option, "0"])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2 and f"argument {option}: must be >= 1, got 0" in capsys.readouterr().err


@pytest.mark.parametrize(("script", "options", "file"), [
    ("data_loading", [], "mnist.npz"), ("export", [], "mnist.npz"), ("profile_dca", [], "brodatz_usc_sipi.npz"),
    ("lbfgs_blas_threads", ["--textures"], "brodatz_usc_sipi.npz"), ("train_device", ["--dataset", "usps"], "usps.npz")])
def test_timing_scripts_name_a_data_file_that_is_not_there(import_benchmark, tmp_path, monkeypatch, capsys, script, options, file):
    main = import_benchmark(script).main
    monkeypatch.setattr(sys, "argv", [f"{script}.py", "--data", str(tmp_path), *options])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2 and f"error: no {file} in {tmp_path}; pass --data" in capsys.readouterr().err


def test_profile_dca_offers_the_texture_tasks(import_benchmark, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["profile_dca.py", "--task", "bark"])
    with pytest.raises(SystemExit):
        import_benchmark("profile_dca").main()
    error = capsys.readouterr().err  # argparse quotes the choices or not, by Python version
    assert "argument --task: invalid choice: 'bark'" in error and "pigskin-pressedcl" in error


def test_models_follow_the_arguments(shared_vs_ovr, tmp_path):
    _write_usps_like(tmp_path)
    args = shared_vs_ovr.parse_args(["--datasets", "usps", "--data", str(tmp_path), "--total-atoms", "100",
                                     "--shift-augment", "1", "--batch-size", "100", "--max-dca-iter", "3"])
    shared = shared_vs_ovr.build("shared", 100, 10, args, mu=0.5, image_side=16, seed=3)
    ovr = shared_vs_ovr.build("ovr", 100, 10, args, mu=0.5, image_side=16, seed=3)
    assert (shared.n_atoms, ovr.n_atoms) == (100, 10)  # one dictionary of 100; 10 heads of 10
    assert shared.get_params() == {**ovr.get_params(), "n_atoms": 100, "multiclass": "shared"}
    assert (shared.mu, shared.random_state, shared.shift_augment, shared.image_shape, shared.batch_size,
            shared.max_dca_iter) == (0.5, 3, 1, (16, 16), 100, 3)
