"""``benchmarks/sgd_step.py``: every case and optimizer timed, on the problems a fit prepares."""

from __future__ import annotations

import pytest

from lastedge import train


@pytest.fixture(scope="module")
def sgd_step(import_benchmark):
    return import_benchmark("sgd_step")


def test_each_case_is_the_layout_it_names(sgd_step):
    for case, (heads, groups) in zip(sgd_step.CASES, [(1, 2), (10, 2), (1, 10)]):
        _, Z, targets, layout, U0, v0 = sgd_step.problem(case, train)
        assert layout.shape == (heads, 50, groups) and U0.shape == (heads, Z.shape[1], 50)
        assert targets.shape == (heads, len(Z)) and v0.shape == (heads, 50)


def test_every_case_and_optimizer_is_timed(sgd_step):
    times = sgd_step.step_times(steps=3, repeats=2)
    assert sorted(times) == sorted(f"{c} / {o}" for c in sgd_step.CASES for o in sgd_step.OPTIMIZERS)
    assert all(len(spent) == 2 and min(spent) > 0 for spent in times.values())
