"""benchmarks/defaults_ablation.py: one change at a time to the default fit, and the tables."""

from __future__ import annotations

import json

import numpy as np

from lastedge.train import LASTClassifier, problem
from lastedge.train import last as last_module


def test_a_variant_changes_the_fit_settings_and_the_start_only_while_it_runs(import_benchmark):
    ablation = import_benchmark("defaults_ablation")
    resolve, fraction = last_module.resolve, problem.INIT_ACTIVE_FRACTION
    with ablation.patched({"settings": {"surrogate": "tight"}, "start": 0.2}):
        assert last_module.resolve(LASTClassifier(), 100, 2).surrogate == "tight"
        assert problem.INIT_ACTIVE_FRACTION == 0.2
    assert last_module.resolve is resolve and problem.INIT_ACTIVE_FRACTION == fraction
    assert last_module.resolve(LASTClassifier(), 100, 2).surrogate == "dc"


def test_the_paper_start_leaves_the_sampled_atoms_unscaled(import_benchmark):
    ablation = import_benchmark("defaults_ablation")
    Z = np.random.RandomState(0).rand(40, 5).astype(np.float32)
    targets, groups = np.array([[0, 1] * 20]), problem.sign_groups(np.array([[-1.0, 1.0, 1.0]]))
    with ablation.patched({"start": None}):
        U0, _ = problem.initial_atoms(Z, targets, groups, np.random.RandomState(0))
    assert {tuple(np.round(u, 5)) for u in U0[0].T} <= {tuple(np.round(z, 5)) for z in Z}
    U0, _ = problem.initial_atoms(Z, targets, groups, np.random.RandomState(0))
    assert not {tuple(np.round(u, 5)) for u in U0[0].T} <= {tuple(np.round(z, 5)) for z in Z}


def row(task, variant, seed, test):
    return {"task": task, "variant": variant, "seed": seed, "test": test, "train": 100.0, "objective": 0.1,
            "n_iter": 5, "seconds": 1.0, "curve": {"1": test}}


def test_gain_over_default_counts_tasks_beyond_one_standard_error(import_benchmark, tmp_path):
    ablation = import_benchmark("defaults_ablation")
    rows = [row("a", "former-default", 0, 80.0), row("a", "former-default", 1, 82.0), row("a", "lbfgs", 0, 84.0),
            row("a", "lbfgs", 1, 86.0),  # +4, no spread: better
            row("b", "former-default", 0, 90.0), row("b", "former-default", 1, 90.0), row("b", "lbfgs", 0, 89.0),
            row("b", "lbfgs", 1, 92.0)]  # +0.5 with s.e. 1.5: neither
    path = tmp_path / "run.log"
    path.write_text("\n".join(json.dumps(r) for r in rows + [row("a", "former-default", 0, 80.0)]))
    rows = ablation.read_rows([path])
    assert len(rows) == 8 and rows[0]["curve"] == {1: 80.0}
    assert "| lbfgs | 2 | +2.2 | 1 / 0 |" in ablation.against_base(rows)
    assert "| a | lbfgs | 85.0 ± 1.4 | 100.0 |" in ablation.table(rows)
