"""Training curves (``train.curves``): rows from ``history_`` and the figure of ``lastedge train --plot``."""

from __future__ import annotations

import sys
import warnings
from itertools import pairwise

import pytest
from sklearn.exceptions import ConvergenceWarning

from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
from lastedge.train.curves import plot_training_curve, training_curve


def record(objective: float, time: float) -> dict:
    return {"objective": objective, "step": 0.1, "extrapolation": 0.0, "change": 0.5, "time": time}


def test_one_vs_all_curve_sums_heads_and_holds_a_stopped_heads_last_objective():
    estimator = LASTClassifier()
    estimator.history_ = [[record(10, 1.0), record(6, 2.0), record(5, 3.0)],
                          [record(4, 1.0)],  # this head met tol after one iteration
                          [record(3, 1.0), record(2, 2.0)]]
    estimator.validation_scores_ = [0.5, 0.75]
    assert training_curve(estimator) == [
        {"iteration": 1, "time_s": 1.0, "objective": 17, "validation_accuracy": 0.5},
        {"iteration": 2, "time_s": 2.0, "objective": 12, "validation_accuracy": 0.75},
        {"iteration": 3, "time_s": 3.0, "objective": 11},
    ]


def test_fitted_curve_matches_history(tiny_last):
    rows = training_curve(tiny_last)
    assert len(rows) == tiny_last.n_iter_
    last = sum(head[-1]["objective"] for head in tiny_last.history_)
    assert rows[-1]["objective"] == pytest.approx(last)
    assert all(later["time_s"] >= earlier["time_s"] for earlier, later in pairwise(rows))


def test_unfitted_estimator_has_no_curve():
    with pytest.raises(ValueError, match="has no training history; fit it first"):
        training_curve(LASTClassifier())


def test_figure_as_pdf(tiny_last, tmp_path):
    path = plot_training_curve(tiny_last, tmp_path / "curve.pdf")
    assert path.read_bytes()[:5] == b"%PDF-"
    assert [p.name for p in tmp_path.iterdir()] == ["curve.pdf"]


def test_figure_title_fits_and_iterations_are_whole_numbers(tmp_path, monkeypatch):
    # SGD's title ran past the figure's right edge, and two DCA iterations were ticked 1.2, 1.4, ...
    import numpy as np

    from lastedge.train import curves

    drawn = []
    monkeypatch.setattr(curves, "save_figure", lambda fig, path: drawn.append(fig) or path)
    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2
    for estimator in (LASTClassifier(n_atoms=2, max_dca_iter=2, inner_iter=5, verbose=0),
                      SGDSoftThresholdClassifier(n_atoms=2, max_iter=20, step_sizes=(0.1,), verbose=0)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            plot_training_curve(estimator.fit(X, y), tmp_path / "curve.png")
    for fig in drawn:
        fig.canvas.draw()
        ax = fig.axes[0]
        title = ax.title.get_window_extent(fig.canvas.get_renderer())
        assert fig.bbox.x0 <= title.x0 and title.x1 <= fig.bbox.x1
        low, high = ax.get_xlim()
        assert all(float(tick).is_integer() for tick in ax.get_xticks() if low <= tick <= high)


def test_figure_needs_matplotlib(tiny_last, tmp_path, monkeypatch):
    for name in [n for n in sys.modules if n.split(".")[0] == "matplotlib"] + ["matplotlib"]:
        monkeypatch.setitem(sys.modules, name, None)  # importing any of them now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'lastedge\[plot\]'"):
        plot_training_curve(tiny_last, tmp_path / "curve.png")
    assert not list(tmp_path.iterdir())
