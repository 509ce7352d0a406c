"""CSV files of plain numbers are read by numpy's C parser (``csv_rows._plain_numbers``); every other
file by the cell-by-cell reader. Both must give the same rows and labels wherever the fast one
answers, and the fast one must step aside wherever the other would say something different."""

import io

import numpy as np
import pytest

from lastedge.runtime import csv_rows
from lastedge.runtime.csv_rows import load_csv

PLAIN = {
    "header, labels last": "a,b,label\n1,2,0\n3.5,-4e-3,1\n",
    "no header": "1,2,0\n3,4,1\n5,6,0\n",
    "labels first": "label,a,b\n7,1,2\n8,3,4\n",
    "string labels": "x,y,kind\n1,2,cat\n3,4,dog\n",
    "labels as floats": "1,2,1.0\n3,4,2.0\n",
    "labels 1 and 01": "1,2,1\n3,4,01\n",
    "spaces around cells": " 1 , 2 , 0 \n 3 , 4 , 1 \n",
    "CRLF endings": "a,b,y\r\n1,2,0\r\n3,4,1\r\n",
    "no final newline": "1,2,0\n3,4,1",
    "blank lines between": "1,2,0\n\n3,4,1\n   \n5,6,0\n",
    "byte-order mark, no header": "\ufeff1,2,0\n3,4,1\n",
    "byte-order mark, header": "\ufeffa,b,y\n1,2,0\n3,4,1\n",
    "semicolons": "a;b;y\n1.5;2;0\n3;4;1\n",
    "tabs": "a\tb\ty\n1\t2\t0\n3\t4\t1\n",
    "signs and exponents": "+1,-.5,1E3,0\n.25,-0,2e-2,1\n",
    "wide": "\n".join(",".join(str((r * 31 + c) % 17) for c in range(40)) for r in range(30)) + "\n",
}

NOT_PLAIN = {
    "quoted cells": 'a,b,y\n"1",2,0\n3,4,1\n',
    "decimal commas": "a;b;y\n1,5;2;0\n3;4;1\n",
    "a NaN": "1,2,0\nnan,4,1\n",
    "an empty cell": "1,2,0\n,4,1\n",
    "a ragged row": "1,2,0\n3,4\n",
    "a longer row": "1,2,0\n3,4,1,9\n",
    "float() digits numpy does not read": "1_0,2,0\n3,4,1\n",
    "text in a feature column": "1,2,0\n3,x,1\n",
    "one row": "1,2,0\n",
    "a row of delimiters": "1,2,0\n,,\n3,4,1\n",
}


def _cell_by_cell(monkeypatch, text, **kwargs):
    with monkeypatch.context() as patch:
        patch.setattr(csv_rows, "_plain_numbers", lambda *args: None)
        return _read(text, **kwargs)


def _read(text, **kwargs):
    try:
        return load_csv(io.StringIO(text), **kwargs)
    except ValueError as err:
        return f"ValueError: {err}"


def _same(a, b):
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    (Xa, ya), (Xb, yb) = a, b
    return (Xa.dtype == Xb.dtype and np.array_equal(Xa, Xb)
            and (ya is None) == (yb is None)
            and (ya is None or (ya.dtype == yb.dtype and np.array_equal(ya, yb))))


@pytest.mark.parametrize("name", sorted(PLAIN))
@pytest.mark.parametrize("label_column", [-1, 0, 1, None])
def test_plain_files_read_fast_as_cell_by_cell(name, label_column, monkeypatch):
    text = PLAIN[name]
    lines = io.StringIO(text).readlines()
    fast = csv_rows._plain_numbers(lines, csv_rows._delimiter(lines, "t"), label_column)
    slow = _cell_by_cell(monkeypatch, text, label_column=label_column)
    if isinstance(slow, str):  # e.g. a text column read as features: the fast path steps aside
        assert fast is None
    else:
        assert fast is not None, f"{name}: the fast path stepped aside"
        assert _same(fast, slow)
    assert _same(_read(text, label_column=label_column), slow)


def test_a_label_column_by_name_reads_fast(monkeypatch):
    text = PLAIN["labels first"]
    lines = io.StringIO(text).readlines()
    assert csv_rows._plain_numbers(lines, ",", "label") is not None
    assert _same(_read(text, label_column="label"), _cell_by_cell(monkeypatch, text, label_column="label"))
    assert "not found" in _read(text, label_column="lable")  # the cell-by-cell reader's message


@pytest.mark.parametrize("name", sorted(NOT_PLAIN))
def test_other_files_step_aside_and_read_cell_by_cell(name, monkeypatch):
    text = NOT_PLAIN[name]
    lines = io.StringIO(text).readlines()
    assert csv_rows._plain_numbers(lines, csv_rows._delimiter(lines, "t"), -1) is None
    assert _same(_read(text), _cell_by_cell(monkeypatch, text))


def test_a_large_file_reads_fast_by_path(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, (2000, 50)) * (rng.random((2000, 50)) < 0.3)
    y = rng.integers(0, 10, 2000)
    path = tmp_path / "big.csv"
    path.write_text("label," + ",".join(f"p{i}" for i in range(50)) + "\n"
                    + "".join(f"{label}," + ",".join(map(str, row)) + "\n" for label, row in zip(y, X)))
    calls = []
    plain = csv_rows._plain_numbers
    monkeypatch.setattr(csv_rows, "_plain_numbers", lambda *args: calls.append(1) or plain(*args))
    X_read, y_read = load_csv(path, label_column="label")
    assert calls and np.array_equal(X_read, X) and np.array_equal(y_read, y)
