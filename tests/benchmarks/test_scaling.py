"""benchmarks/scaling.py's table: speed-up, efficiency and time to the target loss from the fits'
records (the fits themselves need MNIST and minutes; the script is run by hand)."""

from __future__ import annotations

import pytest


def record(objectives, times, fit_s=1.0):
    return {"objectives": objectives, "times": times, "fit_s": fit_s, "error_pct": 5.0}


@pytest.fixture(scope="module")
def scaling(import_benchmark):
    return import_benchmark("scaling")


def test_time_to_target_is_the_first_iteration_at_or_below_it(scaling):
    fit = record([300.0, 200.0, 150.0], [1.0, 2.0, 3.0])
    assert scaling.time_to_target(fit, 100, 2.0) == 2.0
    assert scaling.time_to_target(fit, 100, 1.0) is None


def test_ratios_are_against_the_one_rank_fit_of_the_same_scaling(scaling):
    rows = [scaling.summarise(record([200.0, 100.0], [1.0, 2.0]), "strong", 1, 0, 100, 10, 5),
            scaling.summarise(record([200.0, 101.0], [0.5, 1.0]), "strong", 2, 0, 100, 10, 5),
            scaling.summarise(record([90.0, 50.0], [1.0, 2.0]), "weak", 1, 0, 50, 5, 5),
            scaling.summarise(record([200.0, 100.0], [1.0, 4.0 / 3]), "weak", 2, 0, 100, 10, 5)]
    scaling.add_ratios(rows, None)  # target: 1.01 x the 1-rank strong fit's final loss per row, 1.01
    assert [row["samples_per_s"] for row in rows] == [50.0, 100.0, 25.0, 75.0]
    assert [row["speed_up"] for row in rows] == [1.0, 2.0, 1.0, 3.0]
    assert [row["efficiency"] for row in rows] == [1.0, 1.0, 1.0, 1.5]
    assert [row["to_target_s"] for row in rows] == ["2.0", "1.0", "-", "-"]
    scaling.add_ratios(rows, 0.5)
    assert rows[1]["to_target_s"] == "not reached"
