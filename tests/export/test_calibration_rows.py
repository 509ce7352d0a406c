"""``lastedge export --calibration``: the data files ``lastedge train`` reads are calibration rows
too, and a bad file is one line of error."""

import warnings

import numpy as np
import pytest


from lastedge.export.rows import load_rows

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def model(digits_case):
    return digits_case()[0]


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    return load_digits(return_X_y=True)


def _csv(path, X, header=None, labels=None, label_first=False):
    rows = [[f"{v:g}" for v in row] for row in X]
    if labels is not None:
        rows = [[str(label), *row] if label_first else [*row, str(label)]
                for row, label in zip(rows, labels)]
    lines = ([",".join(header)] if header else []) + [",".join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_npz_with_training_rows_only_calibrates_on_70_percent_and_checks_the_rest(tmp_path, model,
                                                                                   digits):
    X, y = digits
    np.savez(tmp_path / "train_only.npz", X_train=X, y_train=y)
    rows = load_rows(str(tmp_path / "train_only.npz"), model)
    cut = int(0.7 * len(X))
    np.testing.assert_array_equal(rows.calibration, X[:cut].astype(np.float32))
    np.testing.assert_array_equal(rows.y_check, y[cut:])


def test_a_csv_with_a_header_row_is_read(tmp_path, model, digits):
    X, _ = digits
    path = _csv(tmp_path / "h.csv", X[:200], header=[f"p{i}" for i in range(64)])
    rows = load_rows(str(path), model)
    np.testing.assert_array_equal(rows.calibration, X[:140].astype(np.float32))
    assert rows.y_check is None


def test_a_csv_with_a_label_column_gives_labelled_check_rows(tmp_path, model, digits):
    X, y = digits
    last = load_rows(str(_csv(tmp_path / "l.csv", X[:400], labels=y[:400])), model)
    assert last.X_check.shape[1] == 64 and set(last.y_check) <= set(range(10))
    names = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])
    path = _csv(tmp_path / "n.csv", X[:400], header=["kind", *(f"p{i}" for i in range(64))],
                labels=names[y[:400]], label_first=True)
    named = load_rows(str(path), model, label_column="kind")
    assert named.X_check.shape == last.X_check.shape and set(named.y_check) <= set(names)


def _export(digits_case, tmp_path, calibration, capsys):
    from lastedge.cli import main

    digits_case()[0].save(tmp_path / "m.npz")
    code = main(["export", str(tmp_path / "m.npz"), "--format", "onnx", "--precision", "int8", "--calibration",
                 str(calibration), "--out", str(tmp_path / "m.onnx")])
    return code, capsys.readouterr()


def test_cli_exports_with_a_labelled_csv_and_reports_the_accuracy(digits_case, tmp_path, capsys, digits):
    pytest.importorskip("onnxruntime")
    X, y = digits
    code, out = _export(digits_case, tmp_path, _csv(tmp_path / "l.csv", X, labels=y), capsys)
    assert code == 0 and "accuracy" in out.out and "held out from" in out.out


@pytest.mark.parametrize("name, content, message", [
    ("empty.csv", "", "empty.csv has no rows"),
    ("big.npy", np.full((100, 64), 1e300), "beyond float32's range"),
])
def test_cli_data_file_errors_are_one_line_without_warnings(digits_case, tmp_path, capsys, name, content, message):
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        np.save(path, content)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out = _export(digits_case, tmp_path, path, capsys)
    err = out.err.strip()
    assert code == 1 and message in err and "\n" not in err
    assert not [w for w in caught if issubclass(w.category, (UserWarning, RuntimeWarning))]


def test_image_folders_with_or_without_class_subfolders_are_read(tmp_path, model, digits):
    """Class subfolders (as ``train`` reads them: labelled check rows) or only images, such as a
    camera's frames (rows alone: the first 70 % calibrate)."""
    Image = pytest.importorskip("PIL.Image")
    X, y = digits
    (tmp_path / "frames").mkdir()
    for i, (row, label) in enumerate(zip(X[:60], y[:60])):
        image = Image.fromarray((row.reshape(8, 8) * 15).astype(np.uint8))
        image.save(tmp_path / "frames" / f"{i:02d}.png")
        (tmp_path / "classes" / str(label)).mkdir(parents=True, exist_ok=True)
        image.save(tmp_path / "classes" / str(label) / f"{i}.png")
    frames = load_rows(str(tmp_path / "frames"), model)
    np.testing.assert_array_equal(frames.calibration, (X[:42] * 15).astype(np.float32))
    assert frames.y_check is None and len(frames.X_check) == 18
    classes = load_rows(str(tmp_path / "classes"), model)
    assert len(classes.calibration) + len(classes.X_check) == 60 and len(classes.y_check) == 15


def test_an_npz_declaring_more_than_it_holds_is_refused_before_allocating(tmp_path, model):
    import io
    import zipfile

    member = io.BytesIO()  # 64 bytes whose header says 1e12 values: numpy would allocate 7 TiB
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**6, 10**6)})
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("X.npy", member.getvalue() + bytes(64))
    with pytest.raises(ValueError, match=r"X.npy declares shape \(1000000, 1000000\)"):
        load_rows(str(tmp_path / "big.npz"), model)
