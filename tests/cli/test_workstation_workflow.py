"""A workstation user's own data through ``lastedge train`` / ``export`` / ``inspect``: the rough
edges met on the way (a bad CSV line, labels in another column, a semicolon file, Ctrl-C in a fit)."""

from __future__ import annotations

import io
import json
import signal
from pathlib import Path

import numpy as np
import pytest

from lastedge.runtime import Model
from lastedge.runtime.csv_rows import load_csv

NAMES = np.array(["zero", "one", "two"])


def digits_csv(path: Path, label_first: bool = False, separator: str = ",") -> list[str]:
    """120 rows of digits 0-2 with a header and text labels (last, or first); returns its lines."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    keep = np.flatnonzero(y < 3)[:120]
    features = [f"px{i}" for i in range(64)]
    header = ["kind", *features] if label_first else [*features, "kind"]
    lines = [separator.join(header)]
    for row, label in zip(X[keep].astype(int), NAMES[y[keep]]):
        cells = [str(v) for v in row]
        lines.append(separator.join([label, *cells] if label_first else [*cells, label]))
    path.write_text("\n".join(lines) + "\n")
    return lines


# --- CSV files --------------------------------------------------------------------------------

def test_a_row_with_an_extra_column_is_named_by_its_line(tmp_path):
    """It said "rows have different numbers of columns [65, 66]" of a 121-line file."""
    lines = digits_csv(tmp_path / "d.csv")
    lines[11] += ",7"
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="^d.csv: line 12 has 66 columns, line 1 has 65$"):
        load_csv(tmp_path / "d.csv", "kind")


def test_an_empty_or_nan_cell_is_named_by_its_line_and_column(tmp_path):
    """An empty cell was "a feature cell is not a number (could not convert string to float: '')";
    a 'nan' passed the reader and was refused later without a place."""
    lines = digits_csv(tmp_path / "d.csv")
    cells = lines[5].split(",")
    cells[3] = ""
    lines[5] = ",".join(cells)
    cells = lines[7].split(",")
    cells[3] = "nan"
    lines[7] = ",".join(cells)
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"^d.csv: line 6, column 'px3' is empty \(a missing value\)"):
        load_csv(tmp_path / "d.csv", "kind")
    lines[5] = lines[4]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="^d.csv: line 8, column 'px3' holds 'nan', not a finite number$"):
        load_csv(tmp_path / "d.csv", "kind")


def test_labels_in_another_column_than_the_default_name_the_option(run, tmp_path, capsys):
    """Labels first, read with the default (the last column): the error named no column or fix."""
    digits_csv(tmp_path / "first.csv", label_first=True)
    code, _, err = run("train", "--data", tmp_path / "first.csv", "--atoms", "2",
                       "--max-dca-iter", "1", "--quiet", "--out", tmp_path / "m.npz")
    assert code == 1
    assert err == ("lastedge train: error: first.csv: line 2, column 'kind' holds 'zero', not a finite "
                   "number; if that column holds the labels, name it as the label column "
                   "(--label-column kind)\n")
    headerless = io.StringIO("cat,1,2\ndog,3,4\n")
    with pytest.raises(ValueError, match=r"line 1, column 0 holds 'cat'.*\(--label-column 0\)$"):
        load_csv(headerless)


def test_a_mistyped_label_column_suggests_the_near_name_and_shows_few_columns(tmp_path):
    """It listed all 65 column names in one line."""
    digits_csv(tmp_path / "d.csv")
    with pytest.raises(ValueError, match=r"^label column 'Kind' not found \(did you mean 'kind'\?\)$"):
        load_csv(tmp_path / "d.csv", "Kind")
    with pytest.raises(ValueError, match=r"not found \(its 65 columns are px0, px1, px2, px3, px4, \.\.\., "
                                         r"px63, kind\)$"):
        load_csv(tmp_path / "d.csv", "label")


@pytest.mark.parametrize("separator", [";", "\t"], ids=["semicolon", "tab"])
def test_semicolon_and_tab_separated_files_are_read(tmp_path, separator):
    """A spreadsheet's semicolon CSV was one column: "label column 'kind' not found (the file has no
    header)"."""
    digits_csv(tmp_path / "comma.csv")
    digits_csv(tmp_path / "other.csv", separator=separator)
    X, y = load_csv(tmp_path / "other.csv", "kind")
    X_comma, y_comma = load_csv(tmp_path / "comma.csv", "kind")
    assert X.shape == (120, 64) and np.array_equal(X, X_comma) and np.array_equal(y, y_comma)


# --- Ctrl-C in a fit --------------------------------------------------------------------------

def _ctrl_c_after_first_iteration(monkeypatch):
    """Make the train command's LAST fit receive SIGINT once, at the end of the first DCA iteration
    it watches (with ``mu="auto"`` choosing: its weight decay choice's first fit's)."""
    from lastedge.train import LASTClassifier

    fit = LASTClassifier.fit

    def fit_with_ctrl_c(self, X, y, monitor=None):
        pending = [1]

        def pressed(k, estimator):
            if pending:
                pending.pop()
                signal.raise_signal(signal.SIGINT)
            return monitor(k, estimator)
        return fit(self, X, y, monitor=pressed)

    monkeypatch.setattr(LASTClassifier, "fit", fit_with_ctrl_c)


def test_ctrl_c_stops_a_fit_after_the_dca_iteration_and_saves_the_model(run, tmp_path, capsys, monkeypatch):
    """Ctrl-C threw the whole fit away ("lastedge: interrupted", no file)."""
    _ctrl_c_after_first_iteration(monkeypatch)
    before = signal.getsignal(signal.SIGINT)
    code, out, err = run("train", "--data", "digits", "--atoms", "2", "--max-dca-iter", "20",
                         "--inner-iter", "10", "--quiet", "--json", "--out", tmp_path / "m.npz")
    assert code == 130
    assert "stopping after this DCA iteration and saving the model so far" in err
    summary = json.loads(out)
    assert summary["interrupted"] == {"after_dca_iteration": 1, "max_dca_iter": 20}
    assert len(summary["curve"]) == 1 and "warning" not in err  # no "stopped at max_dca_iter"
    model = Model.load(tmp_path / "m.npz")
    assert model.meta["interrupted"] == summary["interrupted"]
    assert signal.getsignal(signal.SIGINT) is before  # the handler is the caller's again
    code, out, _ = run("inspect", tmp_path / "m.npz")
    assert "interrupted  after_dca_iteration=1 max_dca_iter=20" in out


def test_ctrl_c_summary_line_in_text_output(run, tmp_path, capsys, monkeypatch):
    _ctrl_c_after_first_iteration(monkeypatch)
    code, out, _ = run("train", "--data", "digits", "--atoms", "2", "--max-dca-iter", "20",
                       "--inner-iter", "10", "--quiet", "--out", tmp_path / "m.npz")
    assert code == 130
    assert out.splitlines()[-1] == ("interrupted       Ctrl-C: stopped after DCA iteration 1 of at most 20; "
                                    "the model so far is saved")


def test_sgd_announces_its_silent_step_trials(run, tmp_path, capsys):
    """SGD's default run spent minutes choosing its step before any progress bar showed."""
    code, _, err = run("train", "--data", "digits", "--method", "sgd", "--atoms", "2",
                       "--max-iter", "50", "--out", tmp_path / "m.npz")
    assert code == 0
    assert ("lastedge train: choosing the step size: 4 trial runs of 10 steps, then the 50-step run "
            "(its progress bar follows)") in err.splitlines()


# --- export and inspect -----------------------------------------------------------------------

def test_a_failed_int8_check_says_what_to_try(export, run, tmp_path, capsys, monkeypatch):
    import lastedge.export as export
    from lastedge.export import ParityError

    code, _, err = run("train", "--data", "digits", "--atoms", "2", "--max-dca-iter", "1",
                       "--inner-iter", "10", "--quiet", "--out", tmp_path / "m.npz")
    assert code == 0, err

    def failing(*args, **kwargs):
        raise ParityError("predictions agree on 98.00% of rows, need >= 99%")

    monkeypatch.setattr(export, "assert_parity", failing)
    code, _, err = run("export", tmp_path / "m.npz", "--format", "tflite", "--precision", "int8",
                       "--calibration", "digits", "--out", tmp_path / "m.tflite")
    assert code == 1
    assert err.rstrip().endswith("(int8 is too coarse for this model: try --per-channel or "
                                 "--precision int16x8 or --precision int8-dynamic, or export fp32)")
    for options, tries in ((["int8", "--per-channel"], "try --precision int16x8 or --precision int8-dynamic, "
                                                       "or "),
                           (["int8-dynamic"], "")):  # --calibration: the dynamic file's check rows
        code, _, err = run("export", tmp_path / "m.npz", "--format", "tflite", "--precision", *options,
                           "--calibration", "digits", "--out", tmp_path / "m.tflite")
        assert code == 1 and err.rstrip().endswith(f"(int8 is too coarse for this model: {tries}export fp32)")
    for precision, tries in (("int8", "try --per-channel or --precision int16x8 or "),
                             ("int8-dynamic", "try ")):
        code, _, err = run("export", tmp_path / "m.npz", "--format", "onnx", "--precision", precision,
                           "--calibration", "digits", "--out", tmp_path / "m.onnx")
        assert code == 1 and err.rstrip().endswith(
            f"(int8 is too coarse for this model: {tries}--format tflite --precision int8-dynamic, or export fp32)")
    code, _, err = run("export", tmp_path / "m.npz", "--format", "tflite", "--precision", "int16x8",
                       "--calibration", "digits", "--out", tmp_path / "m.tflite")
    assert code == 1 and err.rstrip().endswith("are too coarse for this model: export fp32)")


def test_atoms_of_rows_that_are_no_square_image_name_the_option(run, tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 10))
    np.savez(tmp_path / "ten.npz", X_train=X, y_train=(X[:, 0] > 0).astype(int))
    code, _, err = run("train", "--data", tmp_path / "ten.npz", "--atoms", "2", "--max-dca-iter",
                       "1", "--inner-iter", "10", "--quiet", "--out", tmp_path / "m.npz")
    assert code == 0, err
    code, _, err = run("inspect", tmp_path / "m.npz", "--atoms", tmp_path / "a.png")
    assert code == 1 and "(--image-shape HxW" in err and "1x10 to draw each atom as a strip" in err


def test_export_calibrates_on_the_csv_with_the_label_column_the_model_was_trained_with(run, tmp_path, capsys):
    """`export --calibration first.csv` needed `--label-column kind` again: train records it."""
    lines = digits_csv(tmp_path / "first.csv", label_first=True)
    assert run("train", "--data", tmp_path / "first.csv", "--label-column", "kind", "--atoms", "2",
               "--max-dca-iter", "1", "--quiet", "--out", tmp_path / "m.npz")[0] == 0
    assert Model.load(tmp_path / "m.npz").meta["data"]["label_column"] == "kind"
    code, out, err = run("export", tmp_path / "m.npz", "--format", "onnx", "--calibration",
                         tmp_path / "first.csv", "--out", tmp_path / "m.onnx", "--json")
    assert code == 0, err
    assert json.loads(out)["check_rows"] == f"held out from {tmp_path / 'first.csv'}"
    features_only = tmp_path / "features.csv"  # no label column: every column a feature, as before
    features_only.write_text("\n".join(line.split(",", 1)[1] for line in lines) + "\n")
    code, _, err = run("export", tmp_path / "m.npz", "--format", "onnx", "--calibration",
                       features_only, "--out", tmp_path / "f.onnx")
    assert code == 0, err
