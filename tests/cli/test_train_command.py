"""``lastedge train``'s own options: ``--batch-size full`` and the one-line errors around it."""

from __future__ import annotations

import os

import numpy as np
import pytest
TINY = ["--atoms", "2", "--max-dca-iter", "1", "--inner-iter", "10", "--quiet"]

from lastedge.cli import main
from lastedge.runtime import Model


def test_batch_size_full_lets_lbfgs_train_on_shifted_copies(run, capsys, tmp_path):
    # 1347 digits rows + 4 shifted copies each = 6735 rows: minibatches by default, which L-BFGS refuses
    code, _, err = run("train", "--data", "digits", *TINY, "--inner-solver", "lbfgs",
                       "--shift-augment", "1", "--batch-size", "full", "--out", tmp_path / "m.npz")
    assert code == 0, err
    assert Model.load(tmp_path / "m.npz").meta["params"]["batch_size"] == "full"


def test_lbfgs_on_minibatches_says_how_to_ask_for_full_batches(run, capsys, tmp_path):
    code, _, err = run("train", "--data", "digits", *TINY, "--inner-solver", "lbfgs",
                       "--batch-size", "100", "--out", tmp_path / "m.npz")
    assert code == 1
    assert err.strip().endswith("needs full-batch solves: give batch_size='full' (lastedge train: "
                                "--batch-size full) or use inner_solver='adam'")


@pytest.mark.parametrize("options, message", [
    (["--method", "sgd", "--batch-size", "full"], "--batch-size full applies to --method last only"),
    (["--device", "hpu"], "device 'hpu' cannot train"),  # was "torch is not installed"
    (["--device", "meta"], "device 'meta' cannot train"),  # was a traceback mid-training
    (["--threads", "100000"], f"--threads must be in [1, {max(256, 64 * os.cpu_count())}] (64 per core, "
                              "at least 256), got 100000"),  # was a segmentation fault in torch's thread pool
    (["--seed", "-1"], "--seed must be an integer in [0, 4294967295], got -1"),  # named train_test_split
])
def test_bad_train_options_give_one_line(run, capsys, tmp_path, options, message):
    code, _, err = run("train", "--data", "digits", *TINY, *options, "--out", tmp_path / "m.npz")
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "m.npz").exists()


def test_batch_size_must_be_a_number_or_full(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--data", "digits", *TINY, "--batch-size", "abc", "--out", str(tmp_path / "m.npz")])
    assert exit_info.value.code == 2
    assert "expected a number of rows or 'full', got 'abc'" in capsys.readouterr().err


@pytest.mark.parametrize("part", ["X_train", "X_test"])
def test_a_nan_in_either_part_is_refused_before_training(run, capsys, tmp_path, digits_data, part):
    arrays = {"X_train": digits_data.X_train.copy(), "y_train": digits_data.y_train,
              "X_test": digits_data.X_test.copy(), "y_test": digits_data.y_test}
    arrays[part][3, 5] = np.nan
    np.savez(tmp_path / "d.npz", **arrays)
    code, _, err = run("train", "--data", tmp_path / "d.npz", *TINY, "--out", tmp_path / "m.npz")
    assert code == 1 and len(err.strip().splitlines()) == 1, err  # no DCA warning: nothing was fitted
    assert f"d, {'test' if part == 'X_test' else 'training'} rows: X contains NaN or infinite values" in err
    assert not (tmp_path / "m.npz").exists()  # was: the test part's NaN named only after the fit


def test_out_that_is_the_data_file_is_refused(run, capsys, tmp_path, digits_data):
    data = tmp_path / "d.npz"
    np.savez(data, X_train=digits_data.X_train, y_train=digits_data.y_train)
    before = data.read_bytes()
    (tmp_path / "link.npz").symlink_to(data)
    for out in (data, tmp_path / "link.npz"):  # was: the model written over the training data
        code, _, err = run("train", "--data", data, *TINY, "--out", out)
        assert code == 1 and len(err.strip().splitlines()) == 1
        assert f"--out {out} is the file --data reads" in err
    assert data.read_bytes() == before


@pytest.mark.parametrize("preprocess, shown", [
    ([], "standardize (chosen by --preprocess auto)"),  # the norm is the class: auto standardises
    (["--preprocess", "l2"], "l2"),
])
def test_the_summary_names_the_preprocessing_used(run, capsys, tmp_path, preprocess, shown):
    from sklearn.datasets import make_circles

    X, y = make_circles(200, noise=0.1, factor=0.5, random_state=0)
    np.savetxt(tmp_path / "circles.csv", np.c_[X, y], delimiter=",")
    code, out, err = run("train", "--data", tmp_path / "circles.csv", *TINY, *preprocess,
                         "--out", tmp_path / "m.npz")
    assert code == 0, err
    assert f"preprocessing     {shown}\n" in out
    assert Model.load(tmp_path / "m.npz").preprocess.kind == shown.split()[0]


@pytest.mark.parametrize("mu, shown", [
    ([], r"mu 0\.[13] \(default: 0\.[13] x the rows' mean squared norm, the better on 20% of the training rows "
         r"held out: 0\.1 -> \d+\.\d\d%, 0\.3 -> \d+\.\d\d%\)"),
    (["--mu", "0.5"], r"mu 0\.5"),
])
def test_the_summary_names_the_weight_decay_and_how_it_was_chosen(run, tmp_path, mu, shown):
    import json
    import re

    from sklearn.datasets import make_classification

    X, y = make_classification(300, 6, random_state=0)
    np.savetxt(tmp_path / "rows.csv", np.c_[X, y], delimiter=",")
    argv = ["train", "--data", tmp_path / "rows.csv", *TINY, "--preprocess", "l2", *mu, "--out", tmp_path / "m.npz"]
    code, out, err = run(*argv)
    assert code == 0, err
    assert re.search(rf"^weight decay      {shown}$", out, re.MULTILINE), out
    code, out, err = run(*argv, "--json")
    model = json.loads(out)["model"]
    assert (model["mu_choice"] is None) == bool(mu)
    if not mu:
        assert list(model["mu_choice"]) == ["0.1", "0.3"] and model["mu"] in (pytest.approx(0.1), pytest.approx(0.3))
