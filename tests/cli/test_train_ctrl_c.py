"""Ctrl-C in ``lastedge train`` beyond LAST's fit (tests/test_workstation_journey.py has that one):
the SGD/Adam baselines' final run and step-size trials, and the hold-out grid of ``--mu`` and the
other grids. Each stop keeps what was done so far; without a Ctrl-C the results are as before.

Ctrl-C is a real SIGINT: raised in-process from inside a monitor (``signal.raise_signal``, at a
known point of the fit), and once sent to a ``lastedge train`` subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV

from lastedge.runtime import Model
from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train.selection import candidate_grid, choose_params, holdout_split
from lastedge.train.sgd import step_trials

SGD = ["--data", "digits", "--atoms", "2", "--quiet", "--json"]
LAST = ["--data", "digits", "--atoms", "2", "--max-dca-iter", "2", "--inner-iter", "10", "--quiet"]


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return X[:400], y[:400]


def _press_ctrl_c_in_sgd(monkeypatch, trial: int | None, checkpoint: int, times: int = 1) -> None:
    """SIGINT at ``checkpoint`` of the CLI's SGD fit: in step trial ``trial`` (counted from 0), or
    in the final run when ``trial`` is None."""
    fit = SGDSoftThresholdClassifier.fit

    def fit_with_ctrl_c(self, X, y, monitor=None):
        def pressed(k, estimator):
            finished = len(estimator.step_trials_)  # trial runs scored so far
            in_final_run = finished == len(step_trials(estimator)[0])
            if k == checkpoint and (in_final_run if trial is None else finished == trial):
                for _ in range(times):
                    signal.raise_signal(signal.SIGINT)
            return monitor(k, estimator)
        return fit(self, X, y, monitor=pressed)

    monkeypatch.setattr(SGDSoftThresholdClassifier, "fit", fit_with_ctrl_c)


def _press_ctrl_c_in_last(monkeypatch, presses: dict[int, int]) -> list[int]:
    """SIGINT ``presses[n]`` times at the end of the first DCA iteration the CLI's ``n``-th LAST
    fit watches (counted from 1: the grid's candidates, then the final fit; with ``mu="auto"`` that
    of its weight decay choice's first fit); returns each fit's row count."""
    fit = LASTClassifier.fit
    rows: list[int] = []

    def fit_with_ctrl_c(self, X, y, monitor=None):
        rows.append(len(X))
        pending = [presses.get(len(rows), 0)]

        def pressed(k, estimator):
            for _ in range(pending.pop() if pending else 0):
                signal.raise_signal(signal.SIGINT)
            return monitor is not None and monitor(k, estimator)
        return fit(self, X, y, monitor=pressed)

    monkeypatch.setattr(LASTClassifier, "fit", fit_with_ctrl_c)
    return rows


# --- SGD / Adam -------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["sgd", "adam"])
def test_ctrl_c_in_the_final_run_saves_the_steps_so_far(run, tmp_path, capsys, monkeypatch, method):
    """The baselines lost everything to Ctrl-C ("lastedge: interrupted", no file)."""
    _press_ctrl_c_in_sgd(monkeypatch, trial=None, checkpoint=4)  # a checkpoint every 2 of 100 steps
    before = signal.getsignal(signal.SIGINT)
    code, out, err = run("train", *SGD, "--method", method, "--max-iter", "100", "--out", tmp_path / "m.npz")
    assert code == 130, err
    assert "stopping at the next checkpoint of this run (one every 2% of its steps)" in err
    summary = json.loads(out)
    assert summary["interrupted"] == {"after_step": 10, "max_iter": 100}
    assert [row["iteration"] for row in summary["curve"]] == [2, 4, 6, 8, 10]
    model = Model.load(tmp_path / "m.npz")
    assert model.meta["interrupted"] == summary["interrupted"]
    assert signal.getsignal(signal.SIGINT) is before
    code, out, _ = run("inspect", tmp_path / "m.npz")
    assert "interrupted  after_step=10 max_iter=100" in out


def test_ctrl_c_in_the_final_run_text_summary(run, tmp_path, capsys, monkeypatch):
    _press_ctrl_c_in_sgd(monkeypatch, trial=None, checkpoint=0)
    code, out, _ = run("train", *SGD[:-1], "--method", "sgd", "--max-iter", "100", "--out", tmp_path / "m.npz")
    assert code == 130
    assert out.splitlines()[-1] == "interrupted       Ctrl-C: stopped after step 2 of 100; the model so far is saved"


def test_a_second_ctrl_c_stops_sgd_at_once_and_writes_nothing(run, tmp_path, capsys, monkeypatch):
    _press_ctrl_c_in_sgd(monkeypatch, trial=None, checkpoint=3, times=2)
    code, out, err = run("train", *SGD, "--method", "sgd", "--max-iter", "100", "--out", tmp_path / "m.npz")
    assert code == 130 and out == "" and err.splitlines()[-1] == "lastedge: interrupted"
    assert not (tmp_path / "m.npz").exists()


def test_ctrl_c_in_the_step_trials_keeps_the_best_trial_run_so_far(run, tmp_path, capsys, monkeypatch):
    """In the second trial run: it stops there, the first (finished) and second (stopped) are scored on
    the hold-out, the better one is the model; there is no final run, so no curve to draw."""
    _press_ctrl_c_in_sgd(monkeypatch, trial=1, checkpoint=0)  # 20-step trials: a checkpoint every step
    code, out, err = run("train", *SGD, "--method", "sgd", "--max-iter", "100", "--plot",
                         tmp_path / "c.png", "--out", tmp_path / "m.npz")
    assert code == 130, err
    assert "no training curve to draw: Ctrl-C stopped the step-size trials before the final run" in err
    summary = json.loads(out)
    stopped = summary["interrupted"]
    assert {k: v for k, v in stopped.items() if k not in ("kept_step", "after_step")} == {
        "during": "step trials", "trials_run": 2, "trials": 4, "trial_steps": 20}
    assert (stopped["kept_step"], stopped["after_step"]) in ((0.1, 20), (0.01, 1))
    assert summary["curve"] == [] and "figure" not in summary and not (tmp_path / "c.png").exists()
    model = Model.load(tmp_path / "m.npz")
    assert model.meta["interrupted"] == stopped
    assert 0 <= summary["metrics"]["test_accuracy"] <= 1


def test_a_stop_in_the_trials_keeps_the_trial_run_of_lowest_hold_out_error(digits):
    X, y = digits
    seen = {}

    def monitor(k, estimator):
        trial = len(estimator.step_trials_)
        seen[trial] = (estimator.dictionary_.copy(), estimator.coef_.copy())  # the iterate at the checkpoint
        return trial == 2 and k == 4  # five steps into the third trial run

    clf = SGDSoftThresholdClassifier(n_atoms=2, max_iter=100, random_state=0, verbose=0).fit(X, y, monitor=monitor)
    trials = clf.step_trials_
    assert [t["step"] for t in trials] == [0.1, 0.01, 0.001] and [t["iterations"] for t in trials] == [20, 20, 5]
    best = int(np.argmin([t["validation_error"] for t in trials]))
    assert clf.step_ == trials[best]["step"] and clf.n_iter_ == trials[best]["iterations"]
    assert clf.history_ == []
    np.testing.assert_array_equal(clf.dictionary_, seen[best][0])  # the kept run's last iterate
    np.testing.assert_array_equal(clf.coef_, seen[best][1])


def test_the_monitor_sees_each_checkpoint_of_the_final_run_and_can_stop_it(digits):
    X, y = digits
    final = []

    def monitor(k, estimator):
        if len(estimator.step_trials_) == 3:  # Adam's three trial runs are done
            final.append((k, estimator.predict(X[:5])))
            return k == 6
        return False

    clf = SGDSoftThresholdClassifier(n_atoms=2, optimizer="adam", max_iter=150, random_state=0,
                                     verbose=0).fit(X, y, monitor=monitor)
    assert [k for k, _ in final] == list(range(7))
    assert [h["iteration"] for h in clf.history_] == [3, 6, 9, 12, 15, 18, 21] and clf.n_iter_ == 21
    np.testing.assert_array_equal(clf.predict(X[:5]), final[-1][1])


@pytest.mark.parametrize("optimizer, max_iter", [("sgd", 53), ("adam", 120)])
def test_without_a_stop_a_monitored_fit_is_the_unmonitored_one(digits, optimizer, max_iter):
    X, y = digits
    params = {"n_atoms": 3, "optimizer": optimizer, "max_iter": max_iter, "random_state": 0, "verbose": 0}
    plain = SGDSoftThresholdClassifier(**params).fit(X, y)
    calls = []
    watched = SGDSoftThresholdClassifier(**params).fit(X, y, monitor=lambda k, est: calls.append(k))
    np.testing.assert_array_equal(plain.dictionary_, watched.dictionary_)
    np.testing.assert_array_equal(plain.coef_, watched.coef_)
    assert plain.step_ == watched.step_ and plain.n_iter_ == watched.n_iter_ == max_iter
    assert [h["objective"] for h in plain.history_] == [h["objective"] for h in watched.history_]
    trial_checkpoints = min(50, max_iter // 5)
    assert len(calls) == len(plain.step_trials_) * trial_checkpoints + len(plain.history_)


def test_cli_sgd_without_ctrl_c_is_the_plain_fit(run, tmp_path, capsys):
    from lastedge.runtime.data import load_dataset

    code, out, err = run("train", *SGD, "--method", "sgd", "--max-iter", "60", "--out", tmp_path / "m.npz")
    assert code == 0, err
    assert "interrupted" not in json.loads(out)
    data = load_dataset("digits", random_state=0)
    plain = SGDSoftThresholdClassifier(n_atoms=2, max_iter=60, random_state=0, verbose=0)
    plain.fit(data.X_train, data.y_train)
    model = Model.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(model.dictionary, plain.dictionary_)
    np.testing.assert_array_equal(model.weights, plain.coef_)
    assert "interrupted" not in model.meta


@pytest.mark.slow
def test_a_real_sigint_to_lastedge_train_in_the_step_trials(tmp_path):
    """SIGINT once the step trials are announced: the trial run under way stops at its next
    checkpoint (every 2,000 of its 100,000 steps) and is saved as the model."""
    command = "from lastedge.cli import main; raise SystemExit(main())"
    proc = subprocess.Popen([sys.executable, "-c", command, "train", "--data", "digits", "--atoms", "2",
                             "--method", "sgd", "--max-iter", "500000", "--json", "--out", str(tmp_path / "m.npz")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:  # the notice comes once Ctrl-C is caught
            if line.startswith("lastedge train: choosing the step size: 4 trial runs"):
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "stopping at the next checkpoint" in err
    stopped = json.loads(out)["interrupted"]
    assert stopped["during"] == "step trials" and stopped["trials_run"] == 1 and stopped["kept_step"] == 0.1
    assert stopped["after_step"] % 2000 == 0 and 0 < stopped["after_step"] < 100_000
    assert Model.load(tmp_path / "m.npz").meta["interrupted"] == stopped


# --- the hold-out grid ------------------------------------------------------------------------

@pytest.mark.parametrize("final_too", [False, True], ids=["grid", "grid-then-final-fit"])
def test_ctrl_c_in_the_grid_chooses_among_the_candidates_fitted(run, tmp_path, capsys, monkeypatch, final_too):
    """Ctrl-C in the first of three candidates: it finishes, the other two are skipped (and said so),
    and the final fit runs, on all rows, with its own Ctrl-C (a second press there stops it)."""
    rows = _press_ctrl_c_in_last(monkeypatch, {1: 1, 2: 1 if final_too else 0})
    before = signal.getsignal(signal.SIGINT)
    code, out, err = run("train", *LAST, "--mu", "0,1,10", "--json", "--out", tmp_path / "m.npz")
    assert code == 130, err
    assert len(rows) == 2 and rows[0] < rows[1]  # one candidate on the 90 %, then the final fit on all
    assert "stopping the hold-out grid after this candidate fit, then fitting the best so far on all rows" in err
    summary = json.loads(out)
    selection = summary["selection"]
    assert selection["chosen"] == {"mu": 0} and [c["mu"] for c in selection["candidates"]] == [0]
    assert selection["skipped"] == [{"mu": 1.0}, {"mu": 10.0}]
    assert summary.get("interrupted") == ({"after_dca_iteration": 1, "max_dca_iter": 2} if final_too else None)
    model = Model.load(tmp_path / "m.npz")
    assert model.meta["selection"] == selection and model.meta["params"]["mu"] == 0
    assert signal.getsignal(signal.SIGINT) is before


def test_ctrl_c_in_the_grid_text_summary_names_the_skipped(run, tmp_path, capsys, monkeypatch):
    _press_ctrl_c_in_last(monkeypatch, {2: 1})  # in the second of four candidates
    code, out, _ = run("train", *LAST, "--atoms", "20", "--multiclass", "shared", "--mu", "0,0.5,1,2",
                       "--out", tmp_path / "m.npz")
    assert code == 130
    stopped = "Ctrl-C: stopped after 2 of 4 candidates; not fitted: mu=1, mu=2"
    assert f"hold-out grid     {stopped}" in out.splitlines()
    code, out, _ = run("inspect", tmp_path / "m.npz")  # the model records it
    assert code == 0 and f"hold-out grid    {stopped}" in out.splitlines()


def test_a_second_ctrl_c_in_the_grid_trains_nothing(run, tmp_path, capsys, monkeypatch):
    _press_ctrl_c_in_last(monkeypatch, {1: 2})
    before = signal.getsignal(signal.SIGINT)
    code, out, err = run("train", *LAST, "--mu", "0,1", "--out", tmp_path / "m.npz")
    assert code == 130 and out == ""
    assert err.splitlines()[-1] == "lastedge train: interrupted during the hold-out grid: nothing trained"
    assert "Traceback" not in err and not (tmp_path / "m.npz").exists()
    assert signal.getsignal(signal.SIGINT) is before


def test_a_grid_without_ctrl_c_skips_nothing(run, tmp_path, capsys):
    code, out, err = run("train", *LAST, "--mu", "0,1", "--json", "--out", tmp_path / "m.npz")
    assert code == 0, err
    summary = json.loads(out)
    assert "skipped" not in summary["selection"] and "interrupted" not in summary


@pytest.mark.parametrize("stage", ["shapes", "settings"])
def test_ctrl_c_in_a_budget_search_with_auto_fits_the_best_so_far(run, tmp_path, capsys, monkeypatch, stage):
    """Ctrl-C in the budget's search of shapes skips the rest and the settings; in the settings'
    search, the settings left. Either way the best so far is refitted on all rows (exit 130)."""
    from lastedge.train import LASTBudgetSearch

    shapes = len(LASTBudgetSearch(max_macs=3000, multiclass=["ovr"]).candidates(64, 10))
    rows = _press_ctrl_c_in_last(monkeypatch, {1 if stage == "shapes" else shapes + 1: 1})
    code, out, err = run("train", *LAST[:2], *LAST[4:], "--budget-macs", "3000", "--multiclass", "ovr", "--auto",
                         "--json", "--out", tmp_path / "m.npz")
    assert code == 130, err
    selection = json.loads(out)["selection"]
    settings = selection["settings"]
    if stage == "shapes":
        assert len(selection["candidates"]) == 1 and len(selection["skipped"]) == shapes - 1
        assert len(settings["candidates"]) == 1 and len(settings["skipped"]) == 8
    else:
        assert len(selection["candidates"]) == shapes and "skipped" not in selection
        assert len(settings["candidates"]) == 2 and len(settings["skipped"]) == 7
    fitted = len(selection["candidates"]) + len(settings["candidates"]) - 1  # the settings' first: the shape's
    assert len(rows) == fitted + 1  # and the final fit
    assert rows[-1] > rows[0]  # the final fit on all rows
    assert Model.load(tmp_path / "m.npz").meta["selection"] == selection


def test_a_second_ctrl_c_in_a_budget_search_with_auto_trains_nothing(run, tmp_path, capsys, monkeypatch):
    _press_ctrl_c_in_last(monkeypatch, {2: 2})
    code, out, err = run("train", *LAST[:2], *LAST[4:], "--budget-macs", "3000", "--auto", "--out", tmp_path / "m.npz")
    assert code == 130 and out == ""
    assert err.splitlines()[-1] == "lastedge train: interrupted during the budget search: nothing trained"
    assert not (tmp_path / "m.npz").exists()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_choose_params_monitor_stops_after_a_candidate_and_otherwise_changes_nothing(digits):
    X, y = digits
    estimator = LASTClassifier(n_atoms=2, max_dca_iter=1, inner_iter=10, random_state=0, verbose=0)
    grid = {"mu": [10, 0, 1]}
    for cv in (3, holdout_split(0.2, seed=0)):
        search = GridSearchCV(estimator, {"mu": [0, 1, 10]}, cv=cv, refit=False, error_score="raise").fit(X, y)
        seen = []
        best, candidates = choose_params(estimator, grid, X, y, cv, monitor=lambda k, est: seen.append(est.mu))
        assert [score for _, score in candidates] == search.cv_results_["mean_test_score"].tolist()
        assert seen == [0, 1, 10] and [params for params, _ in candidates] == candidate_grid(grid)
        best, candidates = choose_params(estimator, grid, X, y, cv, monitor=lambda k, est: k == 1)
        assert [params for params, _ in candidates] == [{"mu": 0}, {"mu": 1}]
        assert candidate_grid(grid)[len(candidates):] == [{"mu": 10}]
        assert best == max(candidates, key=lambda c: c[1])[0]


# --- mu="auto"'s weight decay choice ------------------------------------------------------------

def test_ctrl_c_in_the_weight_decay_choice_stops_it_and_the_final_fit(run, tmp_path, capsys, monkeypatch):
    """mu='auto''s hold-out fits see Ctrl-C too (they did not: a press there acted only after the
    choice): pressed in the first candidate, the choice stops there and keeps the first candidate,
    and the final fit stops after its first DCA iteration, its model saved."""
    fit = LASTClassifier._fit
    factors: list[float | None] = []

    def fit_with_ctrl_c(self, X, y, monitor=None):
        factors.append(self.mu_factor)
        number = len(factors)

        def pressed(k, estimator):
            if k == 0 and number == 2:  # the first candidate (the first call is the final fit's own)
                signal.raise_signal(signal.SIGINT)
            return monitor is not None and monitor(k, estimator)
        return fit(self, X, y, monitor=pressed)

    monkeypatch.setattr(LASTClassifier, "_fit", fit_with_ctrl_c)
    code, out, err = run("train", *LAST, "--preprocess", "l2", "--json", "--out", tmp_path / "m.npz")
    assert code == 130, err
    assert factors == [None, 0.1]  # the second candidate was never fitted
    summary = json.loads(out)
    assert summary["interrupted"] == {"after_dca_iteration": 1, "max_dca_iter": 2}
    assert summary["model"]["mu_factor"] == 0.1 and summary["model"]["mu_choice"] is None
    assert Model.load(tmp_path / "m.npz").meta["interrupted"] == summary["interrupted"]
