"""Labelled rows of a CSV file or stream: the delimiter (comma, or semicolon/tab with decimal
commas), an optional header, the label column, and labels as numbers or text. numpy only."""

from __future__ import annotations

import contextlib
import csv
import difflib
import re
from pathlib import Path
from typing import TextIO

import numpy as np

MAX_COLUMNS_SHOWN = 8  # of a CSV header, in an error naming a label column it lacks


def load_csv(path: str | Path | TextIO,
             label_column: str | int | None = -1) -> tuple[np.ndarray, np.ndarray | None]:
    """Rows of a CSV file (or an open text stream such as ``sys.stdin``) as
    ``(X float64 [m, n], y labels [m])``; ``y`` is None when ``label_column`` is None (every column
    is a feature).

    Cells are separated by commas, or by semicolons or tabs when the first line has them and no
    comma outside a decimal-comma number (as spreadsheets in many locales save CSV files: ``1,5;2``
    is 1.5 and 2). In such a file, numbers written with a decimal comma are read as such, unless
    others have a decimal point, which is refused as ambiguous (a thousands separator?); a
    comma-separated file never has decimal commas. The first row is a header when it has a name
    where the next row has a number, or, in a file of one row, when it has no number at all.
    ``label_column`` is a column name (with a header) or index (negative counts from the end).
    Labels are read by ``label_array``. A bad row is named by its line in the file.
    """
    stream = not isinstance(path, (str, Path))
    name = getattr(path, "name", "the stream") if stream else Path(path).name
    try:
        with contextlib.nullcontext(path) if stream else open(path, newline="", encoding="utf-8-sig") as f:
            lines = list(f)
            delimiter = _delimiter(lines, name)
            plain = _plain_numbers(lines, delimiter, label_column)
            if plain is not None:
                return plain
            # strict: a quote left open is an error, not every later row swallowed into one cell
            reader = csv.reader(lines, delimiter=delimiter, strict=True)
            numbered = [(reader.line_num, row) for row in reader if row and any(cell.strip() for cell in row)]
    except (UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"{name} is not a readable CSV text file ({err})") from None
    if not numbered:
        raise ValueError(f"{name} has no rows")
    line_numbers, rows = (list(part) for part in zip(*numbered))
    if delimiter != "," and any("," in line for line in lines):
        rows = _read_decimal_commas(rows, line_numbers, name)
    if rows[0][0].startswith("\ufeff"):  # a byte-order mark (a stream is not read as utf-8-sig)
        rows[0][0] = rows[0][0][1:]
    header = rows.pop(0) if _has_header(rows) else None
    first_line = line_numbers.pop(0) if header else line_numbers[0]
    width = len(header) if header else len(rows[0])
    for line, row in zip(line_numbers, rows):
        if len(row) != width:
            raise ValueError(f"{name}: line {line} has {len(row)} columns, line {first_line} has {width}")
    if not rows:
        raise ValueError(f"{name} has a header but no data rows")
    column = None if label_column is None else _column_index(label_column, header, width)
    if width - (column is not None) < 1:
        raise ValueError(f"{name} has no feature columns besides the label column")
    try:
        X = np.array([[float(c) for i, c in enumerate(row) if i != column] for row in rows])
    except ValueError:
        X = None
    if X is None or not np.isfinite(X).all():
        raise ValueError(f"{name}: {_bad_cell(rows, line_numbers, header, column)}")
    if column is None:
        return X, None
    return X, label_array([row[column].strip() for row in rows])


def _plain_numbers(lines: list[str], delimiter: str,
                   label_column: str | int | None) -> tuple[np.ndarray, np.ndarray | None] | None:
    """What ``load_csv`` returns, read by numpy's C parser, for the common large file: no
    quotes, no decimal commas, every row as wide as the first and every feature cell a finite
    number numpy reads (a subset of what ``float`` reads, to the same value). None for any other
    file, which the cell-by-cell reader then reads and whose faults it names. A 20000 x 785 MNIST
    CSV: 0.9 s and about 0.3 GB at most, against 4.8 s and 1.25 GB cell by cell."""
    if any('"' in line for line in lines) or (delimiter != "," and any("," in line for line in lines)):
        return None
    body = [line.rstrip("\r\n") for line in lines if line.strip()]
    if len(body) < 2:
        return None
    body[0] = body[0].removeprefix("\ufeff")  # a byte-order mark (a stream is not read as utf-8-sig)
    first_rows = [line.split(delimiter) for line in body[:2]]
    header = first_rows[0] if _has_header(first_rows) else None
    rows = body[1:] if header else body
    width = len(first_rows[0])
    if not rows or not all(line.count(delimiter) == width - 1 for line in rows):
        return None
    try:
        column = None if label_column is None else _column_index(label_column, header, width)
        features = [i for i in range(width) if i != column]
        if not features:
            return None
        X = np.loadtxt(rows, delimiter=delimiter, usecols=features, comments=None, dtype=np.float64, ndmin=2)
    except ValueError:
        return None
    if not np.isfinite(X).all():
        return None
    if column is None:
        return X, None
    if column <= width // 2:  # split no further than the label cell, from the nearer end
        labels = [line.split(delimiter, column + 1)[column] for line in rows]
    else:
        labels = [line.rsplit(delimiter, width - column)[1] for line in rows]
    return X, label_array([label.strip() for label in labels])


def _delimiter(lines: list[str], name: str) -> str:
    """The semicolon or tab that separates the cells of the first line, when it has one and its
    commas (if any) are decimal commas of numbers in those cells; else a comma. A first line with
    semicolons and other commas (quoted text aside) is refused: either may separate its cells.
    A tab beside such commas is whitespace (a comma, a tab, then a number), as ``float`` takes it."""
    first = re.sub(r'"[^"]*"', "", next((line for line in lines if line.strip()), ""))
    if ";" not in first and "\t" not in first:
        return ","
    delimiter = max((";", "\t"), key=first.count)
    if all("," not in cell or DECIMAL_COMMA.fullmatch(cell.strip()) for cell in first.split(delimiter)):
        return delimiter
    if ";" in first:
        raise ValueError(f"{name}: its first line has semicolons and commas that are not decimal commas, "
                         "so either may separate the cells: use one separator (quote cells that hold "
                         "the other)")
    return ","


# A decimal number written with a decimal comma ("1,5", "-0,25", ",5", "1,5e-3").
DECIMAL_COMMA = re.compile(r"[+-]?[0-9]*,[0-9]+([eE][+-]?[0-9]+)?")


def _read_decimal_commas(rows: list[list[str]], lines: list[int], name: str) -> list[list[str]]:
    """``rows`` (of a file separated by semicolons or tabs) with numbers written with a decimal
    comma as Python reads them ("1,5" -> "1.5"); refused when other numbers have a decimal point,
    as "1.500" may then be a thousands separator (1500) as well as a decimal point."""
    comma = next(((line, cell) for line, row in zip(lines, rows) for cell in row
                  if "," in cell and DECIMAL_COMMA.fullmatch(cell.strip())), None)
    if comma is None:
        return rows
    point = next(((line, cell) for line, row in zip(lines, rows) for cell in row
                  if "." in cell and DECIMAL.fullmatch(cell.strip())), None)
    if point is not None:
        raise ValueError(f"{name} mixes decimal commas (line {comma[0]}: {comma[1].strip()!r}) and decimal "
                         f"points (line {point[0]}: {point[1].strip()!r}): write every number one way")
    return [[cell.replace(",", ".") if "," in cell and DECIMAL_COMMA.fullmatch(cell.strip()) else cell
             for cell in row] for row in rows]


def _bad_cell(rows: list[list[str]], lines: list[int], header: list[str] | None,
              label_column: int | None) -> str:
    """Where the first feature cell that is not a finite number is (columns by name, or by index
    as ``label_column`` counts them), and what may fix it: a column of text is most likely the
    labels, in another column than the one read as such."""
    for line, row in zip(lines, rows):
        for index, cell in enumerate(row):
            if index == label_column or (_is_number(cell) and np.isfinite(float(cell))):
                continue
            column = repr(header[index]) if header else str(index)
            if not cell.strip():
                return f"line {line}, column {column} is empty (a missing value): fill it in or drop the row"
            what = f"line {line}, column {column} holds {cell.strip()[:40]!r}, not a finite number"
            if ";" in cell or "\t" in cell:
                return f"{what} (cells are split on commas, as the first line has commas that are " \
                       "not decimal commas)"
            if any(_is_number(other[index]) for other in rows[:10]):
                return what
            return f"{what}; if that column holds the labels, name it as the label column " \
                   f"(--label-column {header[index] if header else index})"
    raise AssertionError("no bad cell")  # called only when there is one


def label_array(labels: list[str]) -> np.ndarray:
    """Labels read as text (CSV cells, folder names): integers when every one is a whole number
    ("7", "7.0", "7e0") and no two different texts name the same one ("1" and "01" stay two
    classes, as strings), else strings."""
    numbers = [float(v) for v in labels if DECIMAL.fullmatch(v.strip())]
    if len(numbers) != len(labels) or not all(v.is_integer() and abs(v) < 2**53 for v in numbers):
        return np.array(labels)
    integers = [int(v) for v in numbers]
    return np.array(integers) if len(set(integers)) == len(set(labels)) else np.array(labels)


# A decimal number written with ASCII digits (float() also takes "nan", "1_0" and other scripts' digits).
DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _has_header(rows: list[list[str]]) -> bool:
    """A header has a name (a non-empty cell that is not a number) above a number; a file of one
    row is a header when none of its cells is a number. A string label column alone is no header,
    nor is an empty cell (a missing value, refused as such)."""
    if len(rows) == 1:
        return not any(_is_number(cell) for cell in rows[0])
    return any(top.strip() and not _is_number(top) and _is_number(below)
               for top, below in zip(rows[0], rows[1]))


def _column_index(label_column: str | int, header: list[str] | None, width: int) -> int:
    if isinstance(label_column, str) and not _is_int(label_column):
        if header is None or label_column not in header:
            raise ValueError(f"label column {label_column!r} not found ({_columns_known(label_column, header)})")
        return header.index(label_column)
    index = int(label_column)
    if not -width <= index < width:
        raise ValueError(f"label column {index} is out of range for {width} columns")
    return index % width


def _columns_known(name: str, header: list[str] | None) -> str:
    """What a label column name not in ``header`` may have meant: the nearest names (``Kind`` for
    ``kind``), else the first and last columns (a row of 784 pixel names is no help)."""
    if header is None:
        return "the file has no header"
    near = difflib.get_close_matches(name.lower(), [h.lower() for h in header], n=3, cutoff=0.6)
    if near:
        return "did you mean " + " or ".join(repr(h) for h in header if h.lower() in near) + "?"
    shown = header if len(header) <= MAX_COLUMNS_SHOWN else [*header[:5], "...", *header[-2:]]
    return f"its {len(header)} columns are {', '.join(shown)}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_int(text: str) -> bool:
    return re.fullmatch(r"[+-]?[0-9]+", text.strip()) is not None



def lines_of_block(path: str | Path, index: int, count: int) -> list[str] | None:
    """The lines of a CSV file with those of rows outside block ``index`` of ``count``
    (``row_block`` over its non-blank data lines) blanked, which ``load_csv`` skips unparsed:
    what one rank of a distributed ``lastedge train`` reads; errors name the file's own line
    numbers. None when the file has quotes, whose cells may span lines: then lines are no rows."""
    from .data_shards import row_block

    with open(path, newline="", encoding="utf-8-sig") as f:
        lines = list(f)
    filled = [i for i, line in enumerate(lines) if line.strip()]
    if not filled or any('"' in line for line in lines):
        return None
    delimiter = _delimiter(lines, Path(path).name)
    header = _has_header([lines[i].rstrip("\r\n").split(delimiter) for i in filled[:2]])
    data = filled[1:] if header else filled
    kept = set(data[row_block(len(data), index, count)]) | ({filled[0]} if header else set())
    return [line if i in kept else "\n" for i, line in enumerate(lines)]
