"""LASTBudgetSearch and the device costs: the budget is kept, the runner-up is over it, the latency
model reads bench figures, and bad budgets are ValueErrors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from lastedge.runtime.model import count_macs
from lastedge.train import LASTBudgetSearch, LASTClassifier, LatencyModel
from lastedge.train.device_cost import DeviceBudget, flash_bytes, model_shape
from lastedge.train.model_search import AUTO_MU_FACTORS
from lastedge.train.selection import holdout_split

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # fast settings

FAST = dict(random_state=0, n_sizes=2, estimator_params={"max_dca_iter": 2, "inner_iter": 20})


@pytest.fixture(scope="module")
def digits_subset():
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, [0, 1, 2, 3])
    return X[keep][:240], y[keep][:240]


def bench_row(macs: int, p50_us: float, backend: str = "onnxruntime", precision: str = "int8") -> dict:
    """One object of ``lastedge bench --json`` (the fields the latency model reads, and a few more)."""
    return {"schema": "lastedge-bench/1", "file": f"m{macs}.onnx", "backend": backend, "precision": precision,
            "macs_per_sample": macs, "machine": {"cpu": "test cpu"},
            "batches": [{"batch_size": 64, "p50_us": 100 * p50_us}, {"batch_size": 1, "p50_us": p50_us}]}


# ------------------------------------------------------------------- costs
@pytest.mark.parametrize("n_classes, n_atoms, multiclass, shape", [
    (2, 7, "ovr", (7, 1)), (2, 7, "shared", (7, 1)), (4, 7, "ovr", (28, 4)), (4, 7, "shared", (7, 4))])
def test_model_shape_matches_a_fitted_model(n_classes, n_atoms, multiclass, shape, small_blobs, fit_quietly):
    assert model_shape(n_classes, n_atoms, multiclass) == shape
    X, y = small_blobs(n_classes=n_classes, m=24)
    model = fit_quietly(LASTClassifier(n_atoms=n_atoms, multiclass=multiclass, max_dca_iter=1, inner_iter=2,
                                       verbose=0, random_state=0), X, y).to_model()
    assert (model.n_atoms, model.n_outputs) == shape


def test_flash_counts_bytes_per_weight():
    assert flash_bytes(64, 10, 3, "fp32") == 4 * (640 + 30)
    assert flash_bytes(64, 10, 3, "int8") == 640 + 30 + 40  # int8 weights, an int32 bias per atom
    with pytest.raises(ValueError, match="flash_format"):
        flash_bytes(64, 10, 3, "int4")


@pytest.mark.parametrize("limits, named", [
    ({"macs": 0}, "MACs"), ({"macs": -5}, "MACs"), ({"flash_bytes": 0.0}, "flash"),
    ({"latency_us": -1.0, "latency_model": LatencyModel(1.0, 0.01)}, "latency"),
    ({"macs": float("nan")}, "MACs"), ({}, "at least one budget"),
    ({"latency_us": 50.0}, "latency_model"), ({"macs": 100, "flash_format": "int4"}, "flash_format")])
def test_bad_budgets_are_value_errors(limits, named):
    with pytest.raises(ValueError, match=named):
        DeviceBudget(**limits)


def test_excess_names_each_limit_exceeded_and_by_how_much():
    budget = DeviceBudget(macs=1000, flash_bytes=10_000)
    assert budget.excess({"macs": 1500, "flash_bytes": 9000, "latency_us": None}) == {"macs": 1.5}
    assert budget.excess({"macs": 1000, "flash_bytes": 10_000, "latency_us": None}) == {}


# ------------------------------------------------------------------- latency model
def test_latency_model_recovers_a_line_from_bench_rows():
    rows = [bench_row(m, 3.0 + 0.002 * m) for m in (1000, 4000, 16000)] + [bench_row(9, 1.0, precision="fp32")]
    latency = LatencyModel.from_bench(rows, precision="int8")
    assert latency.intercept_us == pytest.approx(3.0) and latency.us_per_mac == pytest.approx(0.002)
    assert latency.predict(10_000) == pytest.approx(23.0)
    assert "3 files" in latency.source and "onnxruntime int8" in latency.source


def test_a_negative_intercept_is_refitted_through_zero():
    latency = LatencyModel.from_bench([bench_row(1000, 0.5), bench_row(2000, 2.5)])
    assert latency.intercept_us == 0.0 and latency.predict(2000) < 2.5 and latency.predict(1000) > 0.5


@pytest.mark.parametrize("rows, precision, message", [
    ([bench_row(1000, 2.0), bench_row(1000, 2.1)], None, "at least two sizes"),
    ([bench_row(1000, 2.0), bench_row(2000, 3.0, precision="fp32")], "int8", "at least two sizes"),
    ([bench_row(1000, 2.0), bench_row(2000, 3.0, backend="litert")], None, "several backends"),
    ([bench_row(1000, 3.0), bench_row(2000, 2.0)], None, "does not grow"),
    ([{"file": "m.npz"}], None, "lastedge bench --json"),
    ("not rows", None, "lastedge bench --json"),
])
def test_unusable_bench_figures_are_value_errors(rows, precision, message):
    with pytest.raises(ValueError, match=message):
        LatencyModel.from_bench(rows, precision=precision)


def test_latency_model_from_real_bench_figures(tmp_path, small_blobs, fit_quietly):
    from lastedge.runtime.bench import bench

    X, y = small_blobs(n_classes=2, m=40, n=32)
    paths = []
    for n_atoms in (4, 256):
        path = tmp_path / f"m{n_atoms}.npz"
        fit_quietly(LASTClassifier(n_atoms=n_atoms, max_dca_iter=1, inner_iter=2, verbose=0, random_state=0),
                    X, y).to_model().save(path)
        paths.append(str(path))
    rows = bench(paths, runs=200, warmup=20)
    try:
        latency = LatencyModel.from_bench(rows)
    except ValueError as err:  # timing noise on a shared machine can hide the slope; say so, do not fail
        pytest.skip(f"bench figures too noisy here: {err}")
    assert latency.predict(rows[1]["macs_per_sample"]) > latency.predict(rows[0]["macs_per_sample"]) > 0


# ------------------------------------------------------------------- candidates
@pytest.mark.parametrize("limits", [{"max_macs": 5000}, {"max_flash_bytes": 20_000, "flash_format": "fp32"},
                                    {"max_latency_us": 40.0, "latency_model": LatencyModel(10.0, 0.01)}])
def test_candidates_within_fit_and_the_next_size_does_not(limits):
    search = LASTBudgetSearch(**limits, n_sizes=3)
    budget = search.budget()
    table = search.candidates(64, 10)
    within = [row for row in table if row["fits"]]
    assert {row["multiclass"] for row in within} == {"ovr", "shared"}
    for row in table:
        assert row["fits"] == (not budget.excess(row))
    for form in ("ovr", "shared"):
        largest = max(row["n_atoms"] for row in within if row["multiclass"] == form)
        assert budget.excess(budget.cost(64, 10, largest + 1, form))  # one more atom would not fit
        over = [row for row in table if row["multiclass"] == form and not row["fits"]]
        assert [row["n_atoms"] for row in over] == [2 * largest]


def test_binary_data_has_one_form_and_max_atoms_caps_the_sizes():
    table = LASTBudgetSearch(max_macs=10**9, max_atoms=40, n_sizes=3).candidates(64, 2)
    assert [(row["multiclass"], row["n_atoms"], row["fits"]) for row in table] == [
        ("ovr", 40, True), ("ovr", 20, True), ("ovr", 10, True)]  # nothing over: the cap, not the budget


def test_a_budget_no_model_fits_names_the_smallest_models_cost():
    smallest = count_macs(64, 10, 10)  # 1 atom per class, or a shared dictionary of 10
    with pytest.raises(ValueError, match=rf"no model fits the budget: .*needs {smallest:,} MACs \(budget 500\)"):
        LASTBudgetSearch(max_macs=500).candidates(64, 10)


@pytest.mark.parametrize("bad, named", [({"multiclass": "ovr"}, "multiclass"), ({"multiclass": ("all",)}, "multiclass"),
                                        ({"max_atoms": 0}, "max_atoms"), ({"n_sizes": 1.5}, "n_sizes"),
                                        ({"time_budget": -1}, "time_budget"), ({"max_macs": 0}, "MACs"),
                                        ({"estimator_params": {"n_atoms": 3}}, "n_atoms"),
                                        ({"settings": {"n_atoms": [2, 4]}}, "settings must not set"),
                                        ({"settings": {"mu": 1.0}}, "sequence of candidate values"),
                                        ({"settings": "all"}, "settings must be"),
                                        ({"settings": [0.0, 1.0]}, "sequence of dicts"),
                                        ({"settings": [{"n_atoms": 2}]}, "settings must not set"),
                                        ({"settings": [{"mu_factor": -1.0}]}, "mu_factor"),
                                        ({"settings": {"mu": [0.0, -1.0]}}, "mu"),
                                        ({"settings": {"preprocess": ["whiten"]}}, "whiten")])
def test_bad_search_settings_are_value_errors(digits_subset, bad, named):
    X, y = digits_subset
    with pytest.raises(ValueError, match=named):
        LASTBudgetSearch(**{"max_macs": 3000, **FAST, **bad}).fit(X, y)


# ------------------------------------------------------------------- the search
def test_the_chosen_model_keeps_the_budget_and_the_runner_up_exceeds_it(digits_subset):
    X, y = digits_subset
    search = LASTBudgetSearch(max_macs=1500, **FAST).fit(X, y)
    fitted = [row for row in search.cv_results_ if row["holdout_accuracy"] is not None]
    assert len(fitted) == len(search.cv_results_) == 6  # 2 sizes x 2 forms within, 1 over per form
    model = search.to_model()
    assert model.macs_per_sample <= 1500
    assert {"n_atoms": search.best_estimator_.n_atoms, "multiclass": search.best_estimator_.multiclass} \
        == search.best_params_
    assert search.best_score_ == max(row["holdout_accuracy"] for row in fitted if row["fits"])
    runner_up = search.runner_up_
    assert not runner_up["fits"] and runner_up["macs"] > 1500
    assert runner_up["exceeds"] == {"macs": pytest.approx(runner_up["macs"] / 1500, abs=1e-4)}
    assert runner_up["holdout_accuracy"] == max(row["holdout_accuracy"] for row in fitted if not row["fits"])
    np.testing.assert_array_equal(search.predict(X), model.predict(X))


def test_a_spent_time_budget_keeps_the_largest_model_of_the_first_form(digits_subset):
    X, y = digits_subset
    search = LASTBudgetSearch(max_macs=1500, time_budget=1e-9, refit=False, **FAST).fit(X, y)
    scored = [row for row in search.cv_results_ if row["holdout_accuracy"] is not None]
    assert [(row["multiclass"], row["fits"]) for row in scored] == [("ovr", True)]
    assert search.best_params_ == {k: scored[0][k] for k in ("n_atoms", "multiclass")}
    assert not hasattr(search, "best_estimator_")  # refit=False: the search alone
    assert search.runner_up_["holdout_accuracy"] is None and search.runner_up_["exceeds"]["macs"] > 1


def test_clone_keeps_the_settings():
    search = LASTBudgetSearch(max_flash_bytes=4096, latency_model=LatencyModel(2.0, 0.01), **FAST)
    assert clone(search).get_params() == search.get_params()


@parametrize_with_checks([LASTBudgetSearch(max_macs=400, n_sizes=1, fit_over_budget=False, random_state=0,
                                           estimator_params={"max_dca_iter": 2, "inner_iter": 10})])
def test_scikit_learn_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_a_monitor_stops_the_search_after_a_candidate(digits_subset):
    X, y = digits_subset
    seen = []
    search = LASTBudgetSearch(max_macs=1500, refit=False, **FAST).fit(
        X, y, monitor=lambda k, fitted: seen.append((fitted.n_atoms, fitted.multiclass)) or k == 1)
    scored = [(row["n_atoms"], row["multiclass"]) for row in search.cv_results_ if row["holdout_accuracy"] is not None]
    assert scored == seen == [(row["n_atoms"], row["multiclass"]) for row in search.cv_results_[:2]]


# ------------------------------------------------------------------- settings for the chosen shape
def test_settings_are_chosen_for_the_chosen_shape_on_the_same_holdout(digits_subset):
    X, y = digits_subset
    plain = LASTBudgetSearch(max_macs=1500, refit=False, **FAST).fit(X, y)
    search = LASTBudgetSearch(max_macs=1500, settings={"mu": [0.0, 1.0]}, **FAST).fit(X, y)
    assert search.cv_results_ == plain.cv_results_ and search.runner_up_ == plain.runner_up_  # the shapes' stage
    shape = plain.best_params_
    rows = search.settings_results_
    assert rows == [{"mu": "auto", "holdout_accuracy": plain.best_score_},  # the shapes' setting stays a candidate
                    {"mu": 0.0, "holdout_accuracy": rows[1]["holdout_accuracy"]},
                    {"mu": 1.0, "holdout_accuracy": rows[2]["holdout_accuracy"]}]
    best = max(rows, key=lambda row: row["holdout_accuracy"])
    assert search.best_params_ == {**shape, "mu": best["mu"]} and search.best_score_ == best["holdout_accuracy"]
    assert search.best_estimator_.get_params()["mu"] == best["mu"] and search.to_model().macs_per_sample <= 1500
    train, held_out = next(holdout_split(0.2, 0).split(X, y))  # the hold-out the shapes were scored on
    alone = LASTClassifier(**shape, mu=1.0, verbose=0, random_state=0, **FAST["estimator_params"])
    assert alone.fit(X[train], y[train]).score(X[held_out], y[held_out]) == rows[2]["holdout_accuracy"]


def test_auto_settings_search_the_cv_defaults_less_those_fixed(digits_subset):
    X, y = digits_subset
    fixed = {**FAST["estimator_params"], "preprocess": "l2", "mu": 0.1}
    search = LASTBudgetSearch(max_macs=800, fit_over_budget=False, settings="auto", refit=False,
                              **{**FAST, "n_sizes": 1, "estimator_params": fixed}).fit(X, y)
    assert search.settings_results_ == []  # nothing left to search
    search.set_params(estimator_params={**FAST["estimator_params"], "preprocess": "l2"}).fit(X, y)
    assert [row["mu_factor"] for row in search.settings_results_] == [None, *AUTO_MU_FACTORS]
    assert {row["preprocess"] for row in search.settings_results_} == {"l2"}
    assert search.best_params_["mu_factor"] in [None, *AUTO_MU_FACTORS] and search.best_params_["preprocess"] == "l2"


def test_a_candidate_equal_to_the_shapes_setting_is_not_fitted_twice(digits_subset):
    X, y = digits_subset
    search = LASTBudgetSearch(max_macs=800, fit_over_budget=False, refit=False, settings={"mu": [1, 0]},
                              **{**FAST, "n_sizes": 1, "estimator_params": {**FAST["estimator_params"], "mu": 0.0}}
                              ).fit(X, y)
    assert [row["mu"] for row in search.settings_results_] == [0.0, 1]


class FakeClock:
    """``time`` for the searches, whose clock moves 1 s per candidate fitted."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_the_time_budget_gives_the_shapes_half_and_the_settings_the_rest(digits_subset, monkeypatch):
    from lastedge.train import budget, model_search

    X, y = digits_subset
    clock = FakeClock()
    for module in (budget, model_search):
        monkeypatch.setattr(module, "time", clock)
    fit = LASTClassifier.fit

    def timed_fit(self, *args, **kwargs):
        clock.now += 1.0
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(LASTClassifier, "fit", timed_fit)
    search = LASTBudgetSearch(max_macs=1500, time_budget=5, settings={"mu": [0.0, 0.1, 1.0, 10.0]}, refit=False,
                              **FAST).fit(X, y)
    assert sum(row["holdout_accuracy"] is not None for row in search.cv_results_) == 3  # none started after 2.5 s
    assert [row["holdout_accuracy"] is not None for row in search.settings_results_] == [True, True, True, False, False]


@pytest.mark.parametrize("time_budget, monitor", [(1e-9, None), (None, lambda k, fitted: True)],
                         ids=["time-budget", "monitor"])
def test_a_stop_in_the_shapes_stage_skips_the_settings(digits_subset, time_budget, monitor):
    X, y = digits_subset
    search = LASTBudgetSearch(max_macs=1500, time_budget=time_budget, settings={"mu": [0.0, 1.0]}, refit=False,
                              **FAST).fit(X, y, monitor=monitor)
    assert sum(row["holdout_accuracy"] is not None for row in search.cv_results_) == 1
    assert [row["holdout_accuracy"] is None for row in search.settings_results_] == [False, True, True]
    assert search.best_params_["mu"] == "auto"


def test_settings_given_as_candidates_run_in_their_order(digits_subset):
    """A sequence of parameter dicts is tried as given (``lastedge train --auto`` passes its
    candidates so); each row holds every setting named, the shapes' own for those it leaves."""
    X, y = digits_subset
    search = LASTBudgetSearch(max_macs=800, fit_over_budget=False, refit=False,
                              settings=[{"mu_factor": 0.3}, {"preprocess": "standardize", "mu_factor": 0.0}],
                              **{**FAST, "n_sizes": 1}).fit(X, y)
    assert [{k: v for k, v in row.items() if k != "holdout_accuracy"} for row in search.settings_results_] == [
        {"mu_factor": None, "preprocess": "auto"}, {"mu_factor": 0.3, "preprocess": "auto"},
        {"mu_factor": 0.0, "preprocess": "standardize"}]
    assert set(search.best_params_) == {"n_atoms", "multiclass", "mu_factor", "preprocess"}
