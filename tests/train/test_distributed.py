"""Data-parallel LASTClassifier fits on torch.distributed: 2 CPU ranks (gloo, started by torchrun on
localhost) against the single-process fit on the same rows, and a rank that fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from lastedge.runtime import load
from lastedge.train import LASTClassifier
from lastedge.train.distributed import Shard, is_distributed, shard_of, shard_rows

WORKER = Path(__file__).with_name("distributed_fit.py")
TIMEOUT = 300  # seconds for a whole torchrun job; the ranks' process group times out after 60


def torchrun(data: Path, out: Path, params: dict | str, fail: str = "") -> subprocess.CompletedProcess:
    """``distributed_fit.py`` on 2 ranks; its output and exit status."""
    params = params if isinstance(params, str) else json.dumps(params)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               str(WORKER), str(data), str(out), params, *([fail] if fail else [])]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)


@pytest.mark.parametrize("n_rows", [0, 1, 7, 10])
@pytest.mark.parametrize("world", [1, 2, 3])
def test_shards_cover_the_rows_in_rank_order(n_rows, world):
    blocks = [shard_rows(n_rows, r, world) for r in range(world)]
    assert [i for block in blocks for i in range(n_rows)[block]] == list(range(n_rows))
    assert max(len(range(n_rows)[b]) for b in blocks) - min(len(range(n_rows)[b]) for b in blocks) <= 1


def test_without_a_process_group_a_fit_is_not_sharded():
    assert not is_distributed()
    assert shard_of(100) is None


def test_a_shard_maps_global_row_indices_to_its_own():
    shard = Shard(offset=5, rows=3, total=10)
    assert shard.local(torch.tensor([0, 5, 7, 8, 6, 5])).tolist() == [0, 2, 1, 0]
    assert shard.columns(np.arange(20).reshape(2, 10)).tolist() == [[5, 6, 7], [15, 16, 17]]


# Rows (digits, repeated to 6000 for minibatches) and parameters of each fit compared; shared with
# text labels, so the ranks gather labels that are not numbers.
CASES = {
    "ovr-minibatch": (6000, {"n_atoms": 8, "inner_iter": 60}),
    "ovr-full-batch": (1200, {"n_atoms": 6, "inner_iter": 50, "mu": 0}),  # Adam: mu > 0 is L-BFGS
    "shared-minibatch-standardize": (6000, {"n_atoms": 30, "multiclass": "shared", "inner_iter": 60,
                                            "preprocess": "standardize", "labels": "text"}),
}


@pytest.fixture(scope="module")
def digits_rows():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return np.tile(X, (4, 1)), np.tile(y, 4)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 3 DCA iterations
@pytest.mark.parametrize("case", CASES)
def test_two_ranks_train_the_single_process_model(case, digits_rows, tmp_path):
    """Same global minibatches, so the same model up to the order of the sums over rows: the
    gradients of the ranks' rows are added after each rank's sum, not row after row. Measured: the
    objectives agree to 2e-5 (relative), coef_ to 2e-5 and dictionary_ to 3e-3 of their largest
    entry, predictions on all but a few rows. (L-BFGS, ``mu > 0`` in full batch, is not compared:
    a change of 1e-7 in the rows moves its fit by a few per cent.)"""
    n_rows, params = CASES[case]
    params = {**params, "max_dca_iter": 3, "random_state": 1, "verbose": 0}
    text = params.pop("labels", None) == "text"
    X, y = digits_rows[0][:n_rows], digits_rows[1][:n_rows]
    y = np.char.add("digit ", y.astype(str)) if text else y
    np.savez(tmp_path / "data.npz", X=X, y=y)
    done = torchrun(tmp_path / "data.npz", tmp_path, params)
    assert done.returncode == 0, done.stderr[-3000:]
    single = LASTClassifier(**params).fit(X, y)
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in (0, 1)]
    for name in ("dictionary", "coef", "objectives"):
        assert np.array_equal(ranks[0][name], ranks[1][name])  # every rank computes the same iterates
    history = single.history_ if isinstance(single.history_[0], list) else [single.history_]
    objectives = np.array([[record["objective"] for record in head] for head in history])
    np.testing.assert_allclose(ranks[0]["objectives"], objectives, rtol=1e-4)
    np.testing.assert_allclose(ranks[0]["coef"], single.coef_, rtol=0, atol=1e-4 * np.abs(single.coef_).max())
    np.testing.assert_allclose(ranks[0]["dictionary"], single.dictionary_, rtol=0,
                               atol=1e-2 * np.abs(single.dictionary_).max())
    model = load(tmp_path / "model.npz")
    assert list(model.classes) == list(single.classes_)
    assert np.mean(model.predict(X) == single.predict(X)) >= 0.99


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ranks_choose_the_preprocessing_together(digits_rows, tmp_path):
    """One column a thousand times the rest: preprocess="auto" chooses "standardize" from the
    nearest-neighbour counts of both ranks, as the single process does from all rows. (The
    objectives are not compared: the ranks' standardisation sums in another order, and full-batch
    Adam at mu = 0 carries the difference of 1e-7 to 1e-3 in three iterations.)"""
    X, y = digits_rows[0][:1200].copy(), digits_rows[1][:1200]
    X[:, 20] *= 1000.0
    np.savez(tmp_path / "data.npz", X=X, y=y)
    params = {"n_atoms": 6, "inner_iter": 50, "mu": 0, "max_dca_iter": 3, "random_state": 1, "verbose": 0}
    done = torchrun(tmp_path / "data.npz", tmp_path, params)
    assert done.returncode == 0, done.stderr[-3000:]
    single = LASTClassifier(**params).fit(X, y)
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in (0, 1)]
    assert np.array_equal(ranks[0]["dictionary"], ranks[1]["dictionary"])
    model = load(tmp_path / "model.npz")
    assert model.preprocess.kind == single.preprocess_.kind == "standardize"
    assert np.mean(model.predict(X) == single.predict(X)) >= 0.98


@pytest.mark.slow
def test_a_rank_that_fails_ends_the_job_without_a_model(digits_rows, tmp_path):
    X, y = digits_rows[0][:1200], digits_rows[1][:1200]
    np.savez(tmp_path / "data.npz", X=X, y=y)
    params = {"n_atoms": 4, "inner_iter": 20, "max_dca_iter": 5, "random_state": 0, "verbose": 0}
    done = torchrun(tmp_path / "data.npz", tmp_path, params, fail="1:1")
    assert done.returncode != 0
    assert "rank 1 failed on purpose after DCA iteration 1" in done.stderr
    assert not list(tmp_path.glob("rank*.npz")) and not (tmp_path / "model.npz").exists()


@pytest.mark.slow
def test_bad_rows_on_one_rank_fail_every_rank_with_their_reason(digits_rows, tmp_path):
    X, y = digits_rows[0][:1200].copy(), digits_rows[1][:1200]
    X[1000, 3] = np.nan  # in rank 1's half
    np.savez(tmp_path / "data.npz", X=X, y=y)
    done = torchrun(tmp_path / "data.npz", tmp_path, {"n_atoms": 4, "verbose": 0})
    assert done.returncode != 0
    assert "rank 1 of the distributed fit failed: ValueError: Input X contains NaN" in done.stderr
    assert not (tmp_path / "model.npz").exists()


@pytest.mark.slow
def test_what_a_distributed_fit_cannot_do_is_refused_on_every_rank(digits_rows, tmp_path):
    np.savez(tmp_path / "data.npz", X=digits_rows[0][:200], y=digits_rows[1][:200])
    done = torchrun(tmp_path / "data.npz", tmp_path, "refusals")
    assert done.returncode == 0, done.stderr[-3000:]
    for r in (0, 1):
        sgd, warm, search = json.loads((tmp_path / f"refusals{r}.json").read_text())
        assert sgd.startswith("SGDSoftThresholdClassifier trains in one process")
        assert warm.startswith("warm_start is not supported in a distributed fit")
        assert search.startswith("choosing parameters runs in one process")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_early_stopping_and_shifted_copies_per_rank_agree_across_ranks(digits_rows, tmp_path):
    """Each rank holds out its share of its own rows and shifts its own images, so the fit is not
    the single-process one; the ranks still agree on every iterate and on when to stop."""
    X, y = digits_rows[0][:1600], digits_rows[1][:1600]
    np.savez(tmp_path / "data.npz", X=X[:1400], y=y[:1400])
    params = {"n_atoms": 6, "inner_iter": 40, "max_dca_iter": 4, "early_stopping": True, "n_iter_no_change": 1,
              "shift_augment": 1, "image_shape": [8, 8], "batch_size": 200, "random_state": 0, "verbose": 0}
    done = torchrun(tmp_path / "data.npz", tmp_path, params)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [np.load(tmp_path / f"rank{r}.npz") for r in (0, 1)]
    for name in ("dictionary", "coef", "objectives"):
        assert np.array_equal(ranks[0][name], ranks[1][name])
    single = LASTClassifier(**params).fit(X[:1400], y[:1400])
    assert np.mean(load(tmp_path / "model.npz").predict(X[1400:]) == y[1400:]) >= single.score(X[1400:], y[1400:]) - 0.05
