"""``lastedge train`` under torchrun on 2 CPU ranks (gloo): one model, written by rank 0, the
summary printed once; what a distributed run cannot do is refused in one line; a rank that fails
ends the run without a model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lastedge.runtime import load

TIMEOUT = 300


def torchrun(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "lastedge.cli", "train", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, cwd=cwd)


@pytest.fixture(scope="module")
def digits_npz(tmp_path_factory):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    path = tmp_path_factory.mktemp("data") / "digits.npz"
    np.savez(path, X_train=X[:1400], y_train=y[:1400], X_test=X[1400:], y_test=y[1400:])
    return path


@pytest.mark.slow
def test_two_ranks_write_one_model_and_one_summary(digits_npz, tmp_path):
    done = torchrun("--data", str(digits_npz), "--atoms", "6", "--max-dca-iter", "3", "--quiet", "--json",
                    "--out", "m.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)  # rank 0's only: a second summary would not parse
    assert summary["data"]["train_rows"] == 1400 and summary["data"]["test_rows"] == 397
    assert summary["data"]["ranks"] == 2
    assert summary["metrics"]["test_accuracy"] > 0.8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npz"]  # no temporary file left
    assert load(tmp_path / "m.npz").n_atoms == 60


@pytest.mark.slow
def test_a_grid_is_refused_under_torchrun(digits_npz, tmp_path):
    done = torchrun("--data", str(digits_npz), "--atoms", "6", "--mu", "0,1", "--out", "m.npz", cwd=tmp_path)
    assert done.returncode != 0
    assert "lastedge train: error: --mu with several values cannot run under torchrun (WORLD_SIZE=2)" in done.stderr
    assert not list(tmp_path.iterdir())


def test_auto_with_a_budget_is_refused_under_torchrun_in_one_line(run, tmp_path, monkeypatch):
    """Checked before the process group starts, so a launcher's environment alone shows it."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    status, out, err = run("train", "--data", "digits", "--budget-macs", "5000", "--auto", "--out", tmp_path / "m.npz")
    assert status != 0 and out == "" and len(err.strip().splitlines()) == 1
    assert "--auto, a --budget-* option cannot run under torchrun (WORLD_SIZE=2)" in err
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_bad_rows_of_one_rank_end_the_run_without_a_model(tmp_path):
    lines = [f"{i % 7},{i % 5},{i % 2}" for i in range(60)]
    lines[50] = "1,nan,0"  # in rank 1's block
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    done = torchrun("--data", "d.csv", "--atoms", "2", "--quiet", "--out", "m.npz", cwd=tmp_path)
    assert done.returncode != 0
    assert "lastedge train: error: d.csv: line 51, column 1 holds 'nan', not a finite number" in done.stderr
    assert "lastedge train: error: another rank of this run failed (its error is above)" in done.stderr
    assert "[rank0]: Traceback" not in done.stderr and "[rank1]: Traceback" not in done.stderr
    assert not (tmp_path / "m.npz").exists()
