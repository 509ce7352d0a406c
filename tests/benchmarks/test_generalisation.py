"""benchmarks/generalisation.py: the suite's table, target rows and time limit; the ablation's table."""

from __future__ import annotations

import json

import pytest


def fit(task, method, seed, accuracy, macs=100, seconds=1.0):
    return {"task": task, "method": method, "seed": seed, "accuracy": accuracy, "macs": macs, "seconds": seconds}


@pytest.mark.slow
def test_quick_run_prints_a_row_per_task_and_the_targets(import_benchmark, tmp_path, capsys):
    generalisation = import_benchmark("generalisation")
    out = tmp_path / "suite.json"
    summary = generalisation.main(["--quick", "--atoms", "8", "--out", str(out)])
    methods = list(generalisation.METHODS)
    assert [(s["task"], s["method"]) for s in summary] == [(t, m) for t in ("moons", "circles") for m in methods]
    lines = capsys.readouterr().out.strip().splitlines()
    table = [line for line in lines if line.startswith("| moons") or line.startswith("| circles")]
    assert len(table) == 2 and all(line.count("|") == len(methods) + 2 for line in table)
    assert any("LAST default >= SGD baseline" in line for line in lines)
    for s in summary:  # quick fits are short: their accuracies say nothing (circles defeats l2 rows)
        assert 0.0 <= s["accuracy"] <= 100.0 and s["macs"] > 0 and s["n_seeds"] == 1 and s["seconds"] > 0
    assert all(s["accuracy"] > 80.0 for s in summary if s["method"] == "svm-rbf")  # the tasks are learnable
    assert len(json.loads(out.read_text())["rows"]) == 2 * len(methods)


def test_time_limit_records_the_fits_not_run(import_benchmark, monkeypatch):
    generalisation = import_benchmark("generalisation")
    ran = []
    monkeypatch.setattr(generalisation, "load", lambda task, seed, data: None)
    monkeypatch.setattr(generalisation, "run_one", lambda split, task, method, seed, n, budget:
                        ran.append(method) or fit(task, method, seed, 90.0))
    clock = iter([0.0, 0.0, 5.0, 20.0, 20.0])
    monkeypatch.setattr(generalisation.time, "perf_counter", lambda: next(clock))
    args = generalisation.parse_args(["--tasks", "moons", "--methods", "last", "sgd", "mlp", "--seeds", "1",
                                      "--time-limit", "10"])
    rows = generalisation.run(args)
    assert ran == ["last", "sgd"] and [r["accuracy"] for r in rows] == [90.0, 90.0, None]


def test_targets_count_wins_within_one_standard_error(import_benchmark):
    report = import_benchmark("generalisation_report")
    rows = [fit("a", "last", s, acc) for s, acc in enumerate((80.0, 82.0))]  # mean 81, se 1
    rows += [fit("a", "sgd", s, acc) for s, acc in enumerate((82.0, 82.0))]  # mean 82, se 0: within
    rows += [fit("b", "last", s, acc) for s, acc in enumerate((70.0, 70.0))]
    rows += [fit("b", "sgd", s, acc) for s, acc in enumerate((75.0, 75.0))]  # 5 points behind
    rows += [fit("b", "svm-rbf", s, acc) for s, acc in enumerate((78.0, 78.0))]
    summary = report.summarise(rows)
    assert report.at_least(summary, "last", "sgd") == (1, 2)
    assert report.median_gap(summary, "last", "svm-rbf") == pytest.approx(8.0)
    assert report.median_gap(summary, "last-cv", "svm-rbf") is None
    assert dict(report.targets(summary))["LAST default >= SGD baseline (within one s.e.)"] == "1 of 2 tasks"


def test_summary_leaves_out_fits_not_run(import_benchmark):
    report = import_benchmark("generalisation_report")
    summary = report.summarise([fit("a", "last", 0, 80.0), fit("a", "last", 1, None), fit("a", "sgd", 0, None)])
    assert summary[0]["n_seeds"] == 1 and summary[0]["accuracy"] == 80.0
    assert summary[1]["accuracy"] is None and "n/a" in report.markdown(summary, ["last", "sgd"])


def test_unknown_method_is_a_value_error(import_benchmark):
    generalisation = import_benchmark("generalisation")
    with pytest.raises(ValueError, match="unknown method"):
        generalisation.build("svm-poly", 8, 0, generalisation.Budget.of(True, None))


def test_unknown_task_is_a_value_error(import_benchmark):
    with pytest.raises(ValueError, match="unknown task"):
        import_benchmark("generalisation_tasks").load("mnist-full", 0)


def test_texture_and_synthetic_tasks_are_listed(import_benchmark):
    tasks = import_benchmark("generalisation_tasks").TASKS
    assert len(tasks) >= 12
    assert {"moons", "circles", "digits", "usps", "mnist-sub", "cifar-deer-horse"} <= set(tasks)
    assert sum(name.endswith("-eq") for name in tasks) >= 2


def test_tables_from_joins_runs_without_fitting(import_benchmark, tmp_path, capsys, monkeypatch):
    generalisation = import_benchmark("generalisation")
    monkeypatch.setattr(generalisation, "run_one", lambda *args: pytest.fail("fitted"))
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"rows": [fit("moons", "sgd", 0, 80.0), fit("moons", "last", 0, 70.0)]}))
    second.write_text(json.dumps({"rows": [fit("moons", "last", 0, 85.0), fit("moons", "mlp", 0, None)]}))
    summary = generalisation.main(["--tables-from", str(first), str(second)])
    assert {s["method"]: s["accuracy"] for s in summary} == {"sgd": 80.0, "last": 85.0, "mlp": None}
    out = capsys.readouterr().out
    assert "| task | last | sgd | mlp |" in out and "1 of 3 fits not run" in out


def test_first_seed_adds_seeds_to_an_earlier_run(import_benchmark, monkeypatch):
    generalisation = import_benchmark("generalisation")
    monkeypatch.setattr(generalisation, "load", lambda task, seed, data: None)
    monkeypatch.setattr(generalisation, "run_one", lambda split, task, method, seed, n, budget: fit(task, method, seed, 90.0))
    args = generalisation.parse_args(["--tasks", "moons", "--methods", "last", "--seeds", "2", "--first-seed", "1"])
    assert [r["seed"] for r in generalisation.run(args)] == [1, 2]
    with pytest.raises(SystemExit):
        generalisation.parse_args(["--first-seed", "-1"])
