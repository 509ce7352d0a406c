"""``lastedge train --budget-macs/--budget-flash/--budget-latency-us``: the model written keeps the
budget, the summary names the runner-up over it, the latency model reads ``bench --json``, ``--auto``
and ``--mu`` grids then choose the settings of the shape chosen, and bad budgets are one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.datasets import load_digits

FAST = ["--max-dca-iter", "2", "--inner-iter", "20", "--quiet"]


@pytest.fixture(scope="module")
def four_digits(tmp_path_factory):
    """An .npz of 200 training and 100 test rows of digits 0-3 (64 features, 4 classes)."""
    X, y = load_digits(return_X_y=True)
    keep = np.flatnonzero(np.isin(y, [0, 1, 2, 3]))[:300]
    path = tmp_path_factory.mktemp("data") / "four.npz"
    np.savez(path, X_train=X[keep[:200]], y_train=y[keep[:200]], X_test=X[keep[200:]], y_test=y[keep[200:]])
    return str(path)


@pytest.mark.parametrize("extra, message", [
    (["--budget-macs", "0"], "--budget-macs must be a positive number, got 0"),
    (["--budget-flash", "-4096"], "--budget-flash must be a positive number, got -4096"),
    (["--budget-latency-us", "nan", "--bench-json", "b.json"], "--budget-latency-us must be a positive number"),
    (["--budget-macs", "100"], "no model fits the budget: the smallest, ovr with 1 atom per head, needs 272 MACs "
                               "(budget 100)"),
    (["--budget-macs", "5000", "--atoms", "4"], "--atoms and a budget exclude each other"),
    (["--budget-macs", "5000", "--auto", "--time-budget", "-1"], "--time-budget must be positive seconds"),
    (["--budget-macs", "5000", "--method", "sgd"], "budgets apply to --method last only"),
    (["--budget-latency-us", "20"], "--budget-latency-us needs --bench-json"),
    (["--atoms", "4", "--bench-json", "b.json"], "--bench-json applies to a budget"),
    ([], "--atoms is required, unless a budget"),
    (["--budget-latency-us", "20", "--bench-json", "missing.json"], "missing.json"),
])
def test_bad_budgets_are_one_line_errors(run, tmp_path, four_digits, extra, message):
    status, out, err = run("train", "--data", four_digits, "--out", str(tmp_path / "m.npz"), *FAST, *extra)
    assert status != 0 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "m.npz").exists()


def test_bench_json_that_is_no_bench_output_is_a_one_line_error(run, tmp_path, four_digits):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"not": "bench"}))
    status, _, err = run("train", "--data", four_digits, "--out", str(tmp_path / "m.npz"), "--budget-latency-us",
                         "20", "--bench-json", str(bench), *FAST)
    assert status != 0 and "lastedge bench --json" in err and len(err.strip().splitlines()) == 1


def test_the_model_written_keeps_the_macs_budget_and_the_runner_up_exceeds_it(run, tmp_path, four_digits):
    from lastedge.runtime import load

    out = tmp_path / "m.npz"
    status, text, _ = run("train", "--data", four_digits, "--budget-macs", "3000", "--json", "--out", str(out), *FAST)
    assert status == 0
    summary = json.loads(text)
    selection = summary["selection"]
    model = load(out)
    assert model.macs_per_sample <= 3000 and summary["model"]["macs_per_sample"] == model.macs_per_sample
    best = max((row for row in selection["candidates"] if row["fits"]),
               key=lambda row: (row["holdout_accuracy"], -row["macs"]))
    assert selection["chosen"] == {"n_atoms": best["n_atoms"], "multiclass": best["multiclass"]}
    assert best["macs"] == model.macs_per_sample
    runner_up = selection["runner_up"]
    assert runner_up["macs"] > 3000 and runner_up["exceeds"]["macs"] == pytest.approx(runner_up["macs"] / 3000, 1e-3)
    assert {row["multiclass"] for row in selection["candidates"]} == {"ovr", "shared"}


def test_the_summary_names_the_choice_and_the_runner_up(run, tmp_path, four_digits):
    status, text, _ = run("train", "--data", four_digits, "--budget-flash", "4096", "--budget-format", "fp32",
                          "--multiclass", "shared", "--out", str(tmp_path / "m.npz"), *FAST)
    assert status == 0
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert "4.0 KiB fp32 flash" in lines["budget"]
    assert lines["budget choice"].split(":")[0].startswith("budget choice     shared with")
    assert "x the flash budget" in lines["over the budget"] and "points)" in lines["over the budget"]
    status, shown, _ = run("inspect", str(tmp_path / "m.npz"))  # the model's metadata keeps the record
    assert status == 0 and "over the budget" in shown


def test_a_latency_budget_uses_the_targets_bench_figures(run, tmp_path, four_digits):
    models = []
    for atoms in ("1", "64"):
        models.append(str(tmp_path / f"a{atoms}.npz"))
        assert run("train", "--data", four_digits, "--atoms", atoms, "--out", models[-1], *FAST)[0] == 0
    status, bench_text, _ = run("bench", *models, "--runs", "300", "--json", "--quiet")
    assert status == 0
    (tmp_path / "bench.json").write_text(bench_text)
    rows = json.loads(bench_text)
    fast, slow = (row["batches"][0]["p50_us"] for row in rows)
    budget = round((fast + slow) / 2, 3)  # between the smallest and the largest model timed
    status, text, err = run("train", "--data", four_digits, "--budget-latency-us", str(budget), "--bench-json",
                            str(tmp_path / "bench.json"), "--budget-format", "fp32", "--json",
                            "--out", str(tmp_path / "m.npz"), *FAST)
    if status != 0 and "latency" in err:  # timing noise on a shared machine can hide the slope
        pytest.skip(f"bench figures too noisy here: {err.strip()}")
    assert status == 0, err
    selection = json.loads(text)["selection"]
    latency = selection["budget"]["latency_model"]
    assert latency["us_per_mac"] > 0 and "2 files, numpy fp32" in latency["source"]
    chosen = next(row for row in selection["candidates"]
                  if {k: row[k] for k in ("n_atoms", "multiclass")} == selection["chosen"])
    assert chosen["latency_us"] <= budget
    assert chosen["latency_us"] == pytest.approx(latency["intercept_us"] + latency["us_per_mac"] * chosen["macs"])


def test_a_budget_record_this_version_cannot_read_is_one_line():
    from lastedge.cli.budget import budget_fields

    assert budget_fields({"chosen": {"n_atoms": 3}, "budget": "hand-edited"}) == [
        ("budget choice", "recorded, in a form this version cannot read")]


def _chosen_row(selection):
    """The budget candidate the search chose (the shape's keys of ``chosen``)."""
    return next(row for row in selection["candidates"]
                if all(row[k] == selection["chosen"][k] for k in ("n_atoms", "multiclass")))


def test_auto_with_a_budget_chooses_the_shape_then_the_settings(run, tmp_path, four_digits):
    from lastedge.runtime import Model

    out = tmp_path / "m.npz"
    status, text, err = run("train", "--data", four_digits, "--budget-macs", "3000", "--auto", "--json",
                            "--out", out, *FAST)
    assert status == 0, err
    selection = json.loads(text)["selection"]
    model = Model.load(out)
    assert model.meta["selection"] == selection  # the model file keeps both choices
    shape = _chosen_row(selection)
    assert shape["fits"] and model.macs_per_sample == shape["macs"] <= 3000 and selection["runner_up"]["macs"] > 3000
    settings = selection["settings"]
    assert [(row["mu_factor"], row["preprocess"]) for row in settings["candidates"]] == [
        (None, "auto"), *((f, p) for f in (0.1, 0.3, 0, 1) for p in ("l2", "standardize"))]
    assert settings["candidates"][0]["holdout_accuracy"] == shape["holdout_accuracy"]  # the same hold-out
    best = max(settings["candidates"], key=lambda row: row["holdout_accuracy"])
    assert settings["chosen"] == {"mu_factor": best["mu_factor"], "preprocess": best["preprocess"]}
    assert selection["chosen"] == {"n_atoms": shape["n_atoms"], "multiclass": shape["multiclass"], **settings["chosen"]}
    assert model.meta["params"]["mu_factor"] == best["mu_factor"] and model.meta["params"]["preprocess"] == best["preprocess"]
    status, shown, _ = run("inspect", out)
    assert status == 0 and "settings choice" in shown and "over the budget" in shown


def test_the_text_summary_names_both_choices(run, tmp_path, four_digits):
    status, text, _ = run("train", "--data", four_digits, "--budget-macs", "3000", "--auto", "--mu", "0,1",
                          "--out", tmp_path / "m.npz", *FAST)
    assert status == 0
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert {"budget", "budget choice", "over the budget", "settings choice"} <= set(lines)
    assert "mu=0 preprocess=l2: " in lines["settings choice"] and "mu=10" not in lines["settings choice"]


@pytest.mark.parametrize("extra, expected", [
    (["--mu", "0,1"], [{"mu": 0}, {"mu": 1}]),  # the budget search ran at the first value
    (["--auto", "--preprocess", "standardize", "--mu", "0,1"],
     [{"mu": 0, "preprocess": "standardize"}, {"mu": 1, "preprocess": "standardize"}]),
    (["--auto", "--mu", "1"], [{"mu": 1, "preprocess": "auto"}, {"mu": 1, "preprocess": "l2"},
                               {"mu": 1, "preprocess": "standardize"}]),
], ids=["mu-grid", "auto-preprocess-fixed", "auto-mu-fixed"])
def test_settings_given_explicitly_stay_fixed(run, tmp_path, four_digits, extra, expected):
    from lastedge.runtime import Model

    out = tmp_path / "m.npz"
    status, text, err = run("train", "--data", four_digits, "--budget-macs", "3000", *extra, "--json",
                            "--out", out, *FAST)
    assert status == 0, err
    settings = json.loads(text)["selection"]["settings"]
    assert [{k: v for k, v in row.items() if k != "holdout_accuracy"} for row in settings["candidates"]] == expected
    if "standardize" in extra:
        assert Model.load(out).preprocess.kind == "standardize"


def test_a_spent_time_budget_keeps_the_first_shape_at_the_default_settings(run, tmp_path, four_digits):
    status, text, err = run("train", "--data", four_digits, "--budget-macs", "3000", "--auto", "--time-budget",
                            "1e-6", "--out", tmp_path / "m.npz", *FAST)
    assert status == 0, err
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert "time budget       spent after 1 candidate;" in text
    assert lines["settings choice"].startswith("settings choice   mu_factor=default preprocess=auto (")
    assert "time budget spent after 1 of 9 candidates; not fitted: mu_factor=0.1 preprocess=l2," in lines["settings grid"]


@pytest.mark.slow
def test_auto_with_a_budget_and_jobs_chooses_as_one_at_a_time(run, tmp_path, four_digits):
    """--jobs 2 fits both stages' candidates two at a time (joblib processes) and chooses the same."""
    chosen = []
    for jobs in ("1", "2"):
        status, text, err = run("train", "--data", four_digits, "--budget-macs", "3000", "--auto", "--jobs", jobs,
                                "--json", "--out", tmp_path / "m.npz", *FAST)
        assert status == 0, err
        chosen.append(json.loads(text)["selection"])
    assert chosen[0]["chosen"] == chosen[1]["chosen"]
    assert chosen[0]["settings"] == chosen[1]["settings"] and chosen[0]["candidates"] == chosen[1]["candidates"]
