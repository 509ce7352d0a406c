"""``runtime.data.load_dataset`` and ``load_csv``: every source, and clear errors for bad files."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest

from lastedge.runtime.csv_rows import label_array, load_csv
from lastedge.runtime.data import load_dataset


def write(path, text: str):
    path.write_text(text)
    return path


def test_digits_is_a_stratified_75_25_split():
    data = load_dataset("digits")
    assert data.X_train.shape == (1347, 64) and data.X_test.shape == (450, 64)
    assert data.name == "digits" and data.has_test
    train_share = np.bincount(data.y_train) / len(data.y_train)
    test_share = np.bincount(data.y_test) / len(data.y_test)
    np.testing.assert_allclose(train_share, test_share, atol=0.01)
    again = load_dataset("digits")
    np.testing.assert_array_equal(data.X_test, again.X_test)  # seed 0 by default


def test_npz_with_and_without_test_part(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), np.arange(20) % 2
    np.savez(tmp_path / "full.npz", X_train=X[:15], y_train=y[:15], X_test=X[15:], y_test=y[15:])
    np.savez(tmp_path / "train_only.npz", X_train=X, y_train=y)

    full = load_dataset(str(tmp_path / "full.npz"))
    np.testing.assert_array_equal(full.X_test, X[15:])
    np.testing.assert_array_equal(full.y_train, y[:15])
    assert full.name == "full" and full.has_test
    train_only = load_dataset(str(tmp_path / "train_only.npz"))
    assert not train_only.has_test and train_only.X_test.shape == (0, 3)
    np.testing.assert_array_equal(train_only.X_train, X)


def test_csv_with_header_and_string_labels(tmp_path):
    rows = "\n".join(f"{i},{i * 0.5},{'cat' if i % 2 else 'dog'}" for i in range(8))
    path = write(tmp_path / "pets.csv", "weight,height,species\n" + rows + "\n")
    X, y = load_csv(path)
    assert X.shape == (8, 2) and X[3].tolist() == [3.0, 1.5]
    assert y.tolist()[:2] == ["dog", "cat"]
    by_name = load_csv(path, "species")[1]
    np.testing.assert_array_equal(by_name, y)
    data = load_dataset(str(path), label_column="species")
    assert len(data.X_train) == 6 and len(data.X_test) == 2 and set(data.y_test) == {"cat", "dog"}


def test_csv_without_header_string_labels_in_first_column(tmp_path):
    # The first row holds a non-number (a label) but is data, not a header.
    path = write(tmp_path / "raw.csv", "cat,1,2\ndog,3,4\ncat,5,6\n")
    X, y = load_csv(path, 0)
    assert X.tolist() == [[1, 2], [3, 4], [5, 6]]
    assert y.tolist() == ["cat", "dog", "cat"]


def test_csv_without_header_integer_labels_by_index(tmp_path):
    path = write(tmp_path / "raw.csv", "1.5,2,0\n3,4.25,1\n-1,0,1\n")
    X, y = load_csv(path)
    assert y.dtype.kind == "i" and y.tolist() == [0, 1, 1]
    X_first, y_first = load_csv(path, "0")  # an index given as text, as the CLI passes it
    assert y_first.tolist() == ["1.5", "3", "-1"]  # not all integers: labels stay text
    assert X_first.shape == (3, 2)


def test_csv_feature_columns_only(tmp_path):
    path = write(tmp_path / "rows.csv", "a,b\n1,2\n3,4\n")
    X, y = load_csv(path, None)
    assert y is None and X.tolist() == [[1, 2], [3, 4]]


def test_csv_from_an_open_stream():
    X, y = load_csv(io.StringIO("a,b,label\n1,2,x\n3,4,y\n"), "label")
    assert X.tolist() == [[1, 2], [3, 4]] and y.tolist() == ["x", "y"]
    with pytest.raises(ValueError, match="the stream has no rows"):
        load_csv(io.StringIO("\n\n"), None)


def test_csv_with_excel_byte_order_mark(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufefflabel,x\n1,0.5\n0,0.25\n".encode("utf-8"))
    X, y = load_csv(path, "label")
    assert y.tolist() == [1, 0] and X.tolist() == [[0.5], [0.25]]


def test_a_byte_order_mark_on_a_stream_does_not_make_the_first_row_a_header():
    X, y = load_csv(io.StringIO("\ufeff1,2,0\n3,4,1\n"))
    assert X.tolist() == [[1, 2], [3, 4]] and y.tolist() == [0, 1]


def test_an_empty_first_cell_is_a_missing_value_not_a_header(tmp_path):
    with pytest.raises(ValueError, match=r"gap.csv: line 1, column 0 is empty \(a missing value\)"):
        load_csv(write(tmp_path / "gap.csv", ",2,0\n3,4,1\n"))


def test_one_row_with_a_text_label_is_data_and_one_row_of_names_a_header(tmp_path):
    X, y = load_csv(write(tmp_path / "one.csv", "1,2,cat\n"))
    assert X.tolist() == [[1, 2]] and y.tolist() == ["cat"]
    with pytest.raises(ValueError, match="header but no data rows"):
        load_csv(write(tmp_path / "names.csv", "a,b,label\n"))


@pytest.mark.parametrize("texts, expected", [
    (["7", "0", "7"], [7, 0, 7]),
    (["7.000000e+00", "0.0", "-1"], [7, 0, -1]),  # np.savetxt writes whole numbers this way
    (["1", "01", "7"], ["1", "01", "7"]),  # "1" and "01" would fall on one class: kept as text
    (["\u00b2", "\u00b3"], ["\u00b2", "\u00b3"]),  # superscripts: str.isdigit says yes, int() no
    (["0.5", "1"], ["0.5", "1"]),
    (["nan", "1"], ["nan", "1"]),
])
def test_labels_are_integers_only_when_every_text_is_one_distinct_whole_number(texts, expected):
    assert label_array(texts).tolist() == expected


def test_an_npz_of_text_features_is_refused(tmp_path):
    np.savez(tmp_path / "text.npz", X_train=np.array([["1", "2"], ["3", "4"]]), y_train=np.array([0, 1]))
    with pytest.raises(ValueError, match="features must be numbers, got dtype <U1"):
        load_dataset(str(tmp_path / "text.npz"))


def test_nan_labels_and_arrays_declaring_more_data_than_they_hold_are_refused(tmp_path):
    np.savez(tmp_path / "nan.npz", X_train=np.zeros((2, 2)), y_train=np.array([0.0, np.nan]))
    with pytest.raises(ValueError, match="a label is NaN"):
        load_dataset(str(tmp_path / "nan.npz"))
    member = io.BytesIO()  # a 64-byte array whose header says 1e12 values: numpy would allocate 7 TiB
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**6, 10**6)})
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive:
        archive.writestr("X_train.npy", member.getvalue() + bytes(64))
        archive.writestr("y_train.npy", _npy(np.zeros(2)))
    with pytest.raises(ValueError, match=r"X_train.npy declares shape \(1000000, 1000000\)"):
        load_dataset(str(tmp_path / "big.npz"))


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_split_falls_back_to_unstratified_when_a_class_has_one_row(tmp_path):
    rows = [f"{i},{i % 2}" for i in range(12)] + ["99,7"]  # class 7 has a single row
    data = load_dataset(str(write(tmp_path / "rare.csv", "\n".join(rows) + "\n")))
    assert len(data.X_train) + len(data.X_test) == 13
    assert sorted(np.concatenate([data.y_train, data.y_test]).tolist()).count(7) == 1


@pytest.mark.parametrize("name, content, match", [
    ("ragged.csv", "1,2,0\n3,4\n", "ragged.csv: line 2 has 2 columns, line 1 has 3"),
    ("text.csv", "x,y\n1,0\nabc,1\n", "text.csv: line 3, column 'x' holds 'abc', not a finite number$"),
    ("empty.csv", "\n\n", "has no rows"),
    ("header_only.csv", "x,y\n", "header but no data rows"),
    ("one_column.csv", "1\n2\n", "no feature columns"),
    ("data.json", "{}", "unsupported data file 'data.json'"),
    # a quote left open swallowed every later row into one label, silently
    ("open_quote.csv", '1,2,0\n3,4,"1\n5,6,0\n7,8,1\n', "open_quote.csv is not a readable CSV text file"),
], ids=["ragged", "non-numeric", "empty", "header-only", "label-only", "unknown-extension", "open-quote"])
def test_bad_files_give_clear_errors(tmp_path, name, content, match):
    path = write(tmp_path / name, content)
    with pytest.raises(ValueError, match=match):
        load_dataset(str(path))


def test_unknown_label_column_names_the_columns(tmp_path):
    path = write(tmp_path / "h.csv", "a,b\n1,2\n3,4\n")
    with pytest.raises(ValueError, match="label column 'label' not found .*its 2 columns are a, b"):
        load_csv(path, "label")
    with pytest.raises(ValueError, match="label column 5 is out of range for 2 columns"):
        load_csv(path, 5)


def test_missing_file():
    with pytest.raises(ValueError, match="neither 'digits' nor an existing file"):
        load_dataset("no/such/file.csv")


def test_npz_missing_keys_or_mismatched_parts(tmp_path):
    np.savez(tmp_path / "bad.npz", X=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="bad.npz lacks X_train, y_train"):
        load_dataset(str(tmp_path / "bad.npz"))
    np.savez(tmp_path / "half.npz", X_train=np.zeros((3, 2)), y_train=np.zeros(3),
             X_test=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="only one of X_test and y_test"):
        load_dataset(str(tmp_path / "half.npz"))
    np.savez(tmp_path / "short.npz", X_train=np.zeros((3, 2)), y_train=np.zeros(2))
    with pytest.raises(ValueError, match=r"shapes \(3, 2\) and \(2,\)"):
        load_dataset(str(tmp_path / "short.npz"))


@pytest.mark.parametrize("content", [b"not a zip archive at all", b"PK\x03\x04truncated"],
                         ids=["garbage", "truncated-zip"])
def test_corrupt_npz_is_a_value_error(tmp_path, content):
    (tmp_path / "c.npz").write_bytes(content)
    with pytest.raises(ValueError, match="cannot read c.npz as .npz"):
        load_dataset(str(tmp_path / "c.npz"))


def test_an_npz_without_training_rows_is_refused(tmp_path):
    """predict printed "accuracy nan% on 0 rows" (and numpy's warnings) for such a file."""
    np.savez(tmp_path / "empty.npz", X_train=np.zeros((0, 3)), y_train=np.zeros(0, dtype=int))
    with pytest.raises(ValueError, match="empty.npz: X_train has no rows"):
        load_dataset(str(tmp_path / "empty.npz"))


@pytest.mark.parametrize("labels", [np.array([b"a", b"b"]), np.array(["2020-01-01"] * 2, dtype="M8[D]"),
                                    np.array([1j, 2j])], ids=["bytes", "dates", "complex"])
def test_npz_labels_that_no_model_can_hold_are_refused_before_training(tmp_path, labels):
    """Dates trained to the end and were refused by the Model; bytes never matched a class in predict."""
    np.savez(tmp_path / "odd.npz", X_train=np.zeros((2, 3)), y_train=labels)
    with pytest.raises(ValueError, match="odd.npz X_train/y_train: labels must be numbers or strings"):
        load_dataset(str(tmp_path / "odd.npz"))


def test_text_labels_name_numeric_classes_by_value_beside_labels_the_model_does_not_know():
    """One unknown label among "0", "7.0", "1" kept them all text: predict scored every row wrong."""
    from lastedge.cli.predict import as_class_labels

    labels = as_class_labels(np.array(["0", "7.0", "x", " 1", "nan"]), np.array([0, 1, 7]))
    assert labels.tolist() == [0, 7, "x", 1, "nan"]
    assert (np.array([0, 7, 1, 1, 0]) == labels).tolist() == [True, True, False, True, False]


def test_npy_named_npz_is_refused(tmp_path):
    with open(tmp_path / "a.npz", "wb") as f:
        np.save(f, np.zeros(3))
    with pytest.raises(ValueError, match="single .npy array"):
        load_dataset(str(tmp_path / "a.npz"))


def test_files_named_only_by_their_suffix_are_read_as_that_kind(tmp_path):
    """Path(".csv").suffix is "": such a file was refused as "unsupported data file '.csv': use
    .npz, .csv, ..." although it was one."""
    write(tmp_path / ".csv", "1,2,0\n3,4,1\n5,6,0\n7,8,1\n")
    data = load_dataset(str(tmp_path / ".csv"))
    assert len(data.X_train) + len(data.X_test) == 4 and data.name == ".csv"
    np.savez(tmp_path / ".npz", X_train=np.ones((2, 3)), y_train=np.arange(2))
    assert load_dataset(str(tmp_path / ".npz")).X_train.shape == (2, 3)
    with pytest.raises(ValueError, match=r"unsupported data file '\.json'"):
        load_dataset(str(write(tmp_path / ".json", "{}")))
