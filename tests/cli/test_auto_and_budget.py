"""``lastedge train --auto``: the search space the command line leaves, its budget and its errors."""

from __future__ import annotations

import argparse
import json

import pytest

from lastedge.cli.app import main
from lastedge.cli.auto import auto_grid
from lastedge.train.model_search import AUTO_MU_FACTORS, settings_candidates
from lastedge.train.model_search import DEFAULT_PREPROCESS as AUTO_PREPROCESS


def test_auto_searches_the_estimators_candidates_in_their_order():
    assert auto_grid(argparse.Namespace(mu=None, preprocess=None)) == settings_candidates()


@pytest.mark.parametrize("mu, preprocess, expected", [
    (None, "l2", [{"mu_factor": f, "preprocess": "l2"} for f in AUTO_MU_FACTORS]),
    ([1.0], None, [{"mu": 1.0, "preprocess": p} for p in AUTO_PREPROCESS]),
    ([0.0, 10.0], "center-l2", [{"mu": 0.0, "preprocess": "center-l2"}, {"mu": 10.0, "preprocess": "center-l2"}]),
])
def test_explicit_settings_are_fixed_not_searched(mu, preprocess, expected):
    assert auto_grid(argparse.Namespace(mu=mu, preprocess=preprocess)) == expected


@pytest.mark.parametrize("extra, message", [
    (["--time-budget", "5"], "--time-budget applies to --auto and budgets only"),
    (["--auto", "--time-budget", "0"], "--time-budget must be positive"),
    (["--auto", "--method", "sgd"], "--auto applies to --method last only"),
])
def test_bad_auto_options_are_one_line_errors(tmp_path, capsys, extra, message):
    code = main(["train", "--data", "digits", "--atoms", "2", "--out", str(tmp_path / "m.npz"), *extra])
    assert code != 0
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_auto_reports_candidates_and_writes_the_chosen_model(tmp_path, capsys):
    from lastedge.runtime import load

    out = tmp_path / "m.npz"
    code = main(["train", "--data", "digits", "--atoms", "3", "--max-dca-iter", "2", "--inner-iter", "20",
                 "--auto", "--mu", "0,1", "--quiet", "--json", "--out", str(out)])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    selection = summary["selection"]
    assert len(selection["candidates"]) == 4  # 2 mu x 2 preprocessings, within the default budget
    best = max(selection["candidates"], key=lambda row: row["holdout_accuracy"])
    assert selection["chosen"] == {k: best[k] for k in ("mu", "preprocess")}
    assert load(out).preprocess.kind == selection["chosen"]["preprocess"]


@pytest.mark.slow
def test_auto_with_jobs_chooses_as_one_at_a_time(tmp_path, capsys):
    """--jobs 2 fits --auto's candidates two at a time (joblib processes) and chooses the same."""
    chosen = []
    for jobs in ("1", "2"):
        code = main(["train", "--data", "digits", "--atoms", "2", "--max-dca-iter", "2", "--inner-iter", "20",
                     "--auto", "--mu", "0,1", "--jobs", jobs, "--quiet", "--json", "--out", str(tmp_path / "m.npz")])
        assert code == 0
        chosen.append(json.loads(capsys.readouterr().out)["selection"])
    assert chosen[0]["chosen"] == chosen[1]["chosen"]
    assert chosen[0]["candidates"] == chosen[1]["candidates"]  # the same fits, scored alike


def test_auto_tries_every_candidate_by_default_and_names_the_weight_decays_unit(tmp_path, capsys):
    from lastedge.runtime import Model

    out = tmp_path / "m.npz"
    argv = ["train", "--data", "digits", "--atoms", "2", "--max-dca-iter", "2", "--inner-iter", "20",
            "--auto", "--quiet", "--out", str(out)]
    assert main([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    selection = summary["selection"]
    tried = [{k: v for k, v in row.items() if k != "holdout_accuracy"} for row in selection["candidates"]]
    assert tried == settings_candidates() and "over_budget" not in selection  # no time budget by default
    assert selection["time_budget_s"] is None
    best = max(selection["candidates"], key=lambda row: row["holdout_accuracy"])
    assert selection["chosen"] == {"mu_factor": best["mu_factor"], "preprocess": best["preprocess"]}
    assert summary["model"]["mu_factor"] == best["mu_factor"] and summary["model"]["mu_choice"] is None
    assert Model.load(out).meta["params"]["mu_factor"] == best["mu_factor"]
    assert main(argv) == 0
    shown = capsys.readouterr().out
    assert f"({best['mu_factor']:g} x the rows' mean squared norm)" in shown
