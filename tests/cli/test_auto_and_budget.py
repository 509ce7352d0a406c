"""``lastedge train --auto``: the search space the command line leaves, its budget and its errors."""

from __future__ import annotations

import argparse
import json

import pytest

from lastedge.cli.auto import AUTO_MU, AUTO_PREPROCESS, auto_grid
from lastedge.cli.app import main
from lastedge.train.model_search import DEFAULT_MU, DEFAULT_PREPROCESS


def test_auto_searches_the_estimators_defaults():
    assert AUTO_PREPROCESS == list(DEFAULT_PREPROCESS) and AUTO_MU == list(DEFAULT_MU)


@pytest.mark.parametrize("mu, preprocess, expected", [
    (None, None, {"mu": AUTO_MU, "preprocess": AUTO_PREPROCESS}),
    ([1.0], None, {"mu": [1.0], "preprocess": AUTO_PREPROCESS}),
    ([0.0, 10.0], "center-l2", {"mu": [0.0, 10.0], "preprocess": ["center-l2"]}),
])
def test_explicit_settings_are_fixed_not_searched(mu, preprocess, expected):
    assert auto_grid(argparse.Namespace(mu=mu, preprocess=preprocess)) == expected


@pytest.mark.parametrize("extra, message", [
    (["--time-budget", "5"], "--time-budget applies to --auto only"),
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
