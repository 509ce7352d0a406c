"""``lastedge train`` writes the fitted model before it scores it (issue 54): a Ctrl-C once the fit
has finished, while the model is scored on the data (seconds to minutes on large data), left no
model at all. Now the model is on disk, without its accuracy, and the command exits 130."""

from __future__ import annotations

import signal

import numpy as np

from lastedge.runtime import Model
from lastedge.train import LASTClassifier

LAST = ["--data", "digits", "--atoms", "2", "--max-dca-iter", "2", "--inner-iter", "10", "--quiet"]


def test_ctrl_c_while_the_model_is_scored_keeps_the_model(run, tmp_path, monkeypatch):
    def pressed(self, X, y):
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(LASTClassifier, "score", pressed)
    code, out, err = run("train", *LAST, "--out", tmp_path / "m.npz")
    assert code == 130 and out == ""
    assert err.splitlines()[-1] == (f"lastedge train: interrupted after the fit: {tmp_path / 'm.npz'} holds "
                                    "the fitted model, without its accuracy")
    model = Model.load(tmp_path / "m.npz")
    assert model.n_atoms > 0 and "metrics" not in model.meta and model.meta["data"]["source"] == "digits"


def test_ctrl_c_just_after_the_fit_keeps_the_model(run, tmp_path, monkeypatch):
    """Pressed between the fit's last step and the save: the save goes on, then the command stops."""
    fit = LASTClassifier.fit

    def fit_then_press(self, X, y, monitor=None):
        fitted = fit(self, X, y, monitor=monitor)
        signal.raise_signal(signal.SIGINT)
        return fitted

    monkeypatch.setattr(LASTClassifier, "fit", fit_then_press)
    code, _, err = run("train", *LAST, "--out", tmp_path / "m.npz")
    assert code == 130 and "interrupted after the fit" in err.splitlines()[-1]
    assert "metrics" not in Model.load(tmp_path / "m.npz").meta


def test_without_ctrl_c_the_saved_model_records_its_accuracy(run, tmp_path):
    code, _, _ = run("train", *LAST, "--out", tmp_path / "m.npz")
    metrics = Model.load(tmp_path / "m.npz").meta["metrics"]
    assert code == 0 and 0 < metrics["test_accuracy"] <= 1 and np.isfinite(metrics["fit_seconds"])
