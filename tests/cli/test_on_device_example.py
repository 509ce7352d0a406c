"""``examples/on_device.py`` runs as a user would run it: rows from a CSV file or from stdin."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "on_device.py"


@pytest.fixture(scope="module")
def files(blobs, export, prototype_model, tmp_path_factory):
    X, y = blobs()
    model = prototype_model(X, y)
    folder = tmp_path_factory.mktemp("device")
    np.savetxt(folder / "rows.csv", X[:20], delimiter=",")
    return model, X[:20], export(model, folder, X), folder / "rows.csv"


@pytest.mark.parametrize("name", ["m.npz", "m.onnx", "m.tflite"])
def test_on_device_example_classifies_csv_and_stdin(files, name):
    model, X, paths, csv = files
    if name not in paths:
        pytest.skip(f"no exporter for {name}")
    expected = [str(label) for label in model.predict(X)]
    by_file = subprocess.run([sys.executable, str(EXAMPLE), str(paths[name]), str(csv)],
                             capture_output=True, text=True, check=True)
    by_stdin = subprocess.run([sys.executable, str(EXAMPLE), str(paths[name])], input=csv.read_text(),
                              capture_output=True, text=True, check=True)
    assert by_file.stdout.split() == expected == by_stdin.stdout.split()
    assert "20 rows on" in by_file.stderr and "p50" in by_file.stderr


def test_on_device_example_answers_each_row_as_it_arrives(files):
    model, X, paths, _ = files
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), str(paths["m.npz"])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for row, expected in zip(X[:3], model.predict(X[:3])):
            proc.stdin.write(",".join(map(repr, row.tolist())) + "\n")
            proc.stdin.flush()  # stdin stays open: the label must come before the stream ends
            ready, _, _ = select.select([proc.stdout], [], [], 60)
            assert ready, "no label within 60 s of its row"
            assert proc.stdout.readline().strip() == str(expected)
        proc.stdin.close()
        assert proc.wait(60) == 0 and "3 rows on numpy" in proc.stderr.read()
    finally:
        proc.kill()
        proc.stdout.close()
        proc.stderr.close()


def test_on_device_example_summarises_a_stream_stopped_by_ctrl_c(files):
    """Ctrl-C, the only end of a sensor's stream, gave a traceback and no latency summary."""
    model, X, paths, _ = files
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), str(paths["m.npz"])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("".join(",".join(map(repr, row.tolist())) + "\n" for row in X[:2]))
        proc.stdin.flush()  # and left open, as a sensor leaves it
        assert [proc.stdout.readline().strip() for _ in range(2)] == [str(label) for label in model.predict(X[:2])]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130
        stderr = proc.stderr.read()
        assert "2 rows on numpy" in stderr and "Traceback" not in stderr
    finally:
        proc.kill()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()


@pytest.mark.parametrize("bad_line, why", [("1,2,3", "3 features, the model expects 24"),
                                           ("1,abc" + ",0" * 22, "could not convert"),
                                           (",".join(["nan"] * 24), "NaN")])
def test_on_device_example_stops_at_a_bad_line_naming_it(files, tmp_path, bad_line, why):
    model, X, paths, _ = files
    csv = tmp_path / "rows.csv"
    csv.write_text("\n".join([",".join(map(str, X[0])), "", bad_line, ",".join(map(str, X[1]))]) + "\n")
    result = subprocess.run([sys.executable, str(EXAMPLE), str(paths["m.npz"]), str(csv)],
                            capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout.split() == [str(model.predict(X[:1])[0])]
    assert result.stderr.startswith("line 3: ") and why in result.stderr and "Traceback" not in result.stderr


def test_on_device_example_refuses_a_damaged_model_in_one_line(files, tmp_path):
    _, _, _, csv = files
    (tmp_path / "m.npz").write_bytes(b"not a model")
    result = subprocess.run([sys.executable, str(EXAMPLE), str(tmp_path / "m.npz"), str(csv)],
                            capture_output=True, text=True)
    assert result.returncode == 1 and "m.npz" in result.stderr and len(result.stderr.splitlines()) == 1


def test_on_device_example_stops_at_a_line_that_is_not_text_naming_it(files, tmp_path):
    model, X, paths, _ = files
    csv = tmp_path / "rows.csv"
    csv.write_bytes(",".join(map(str, X[0])).encode() + b"\n\xff\xfe1,2\n")
    result = subprocess.run([sys.executable, str(EXAMPLE), str(paths["m.npz"]), str(csv)],
                            capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout.split() == [str(model.predict(X[:1])[0])]
    assert result.stderr.startswith("line 2: 'utf-8' codec can't decode") and "Traceback" not in result.stderr


def test_on_device_example_reads_a_csv_that_starts_with_a_byte_order_mark(files, tmp_path):
    """A spreadsheet's "CSV UTF-8" starts with one (lastedge predict reads it); line 1 was refused."""
    model, X, paths, _ = files
    csv = tmp_path / "rows.csv"
    csv.write_bytes(b"\xef\xbb\xbf" + "\n".join(",".join(map(str, row)) for row in X[:2]).encode() + b"\n")
    result = subprocess.run([sys.executable, str(EXAMPLE), str(paths["m.npz"]), str(csv)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(label) for label in model.predict(X[:2])]


def test_on_device_example_stops_quietly_when_its_reader_does(files):
    _, _, paths, csv = files
    with subprocess.Popen([sys.executable, str(EXAMPLE), str(paths["m.npz"]), str(csv)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        proc.stdout.readline()  # as ``python on_device.py m.npz rows.csv | head -1``
        proc.stdout.close()
        assert proc.wait(60) == 0 and "Traceback" not in proc.stderr.read()


@pytest.mark.parametrize("missing", ["model", "rows"])
def test_on_device_example_names_a_missing_file_in_plain_words(files, tmp_path, missing):
    """It printed "[Errno 2] No such file or directory: 'm.tflite'"."""
    _, _, paths, csv = files
    argv = [tmp_path / "m.tflite", csv] if missing == "model" else [paths["m.npz"], tmp_path / "rows.csv"]
    result = subprocess.run([sys.executable, str(EXAMPLE), *map(str, argv)], capture_output=True, text=True)
    assert result.returncode == 1 and result.stderr == f"no such file: {argv[0 if missing == 'model' else 1]}\n"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a pseudo-terminal")
def test_on_device_example_asks_for_rows_typed_at_a_terminal(files):
    """Run without a rows file and nothing piped in, it waited without a word, as if it hung."""
    import os
    import pty

    model, X, paths, _ = files
    terminal, keyboard = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), str(paths["m.npz"])], stdin=keyboard,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(keyboard)
    try:
        os.write(terminal, (",".join(map(repr, X[0].tolist())) + "\n").encode())
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready and proc.stdout.readline().strip() == str(model.predict(X[:1])[0])
        os.write(terminal, b"\x04")  # Ctrl-D
        assert proc.wait(60) == 0
        stderr = proc.stderr.read()
        assert stderr.startswith("reading rows from the terminal: 24 comma-separated numbers a line, "
                                 "Ctrl-D ends\n") and "1 row on numpy (fp32): p50" in stderr
    finally:
        proc.kill()
        os.close(terminal)
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize("header, skipped", [("f0,f1,f2,...", True), ("\ufefffeature 1,feature 2", True),
                                             ("1,abc" + ",0" * 22, False)])
def test_on_device_example_skips_a_header_of_column_names_only(files, tmp_path, header, skipped):
    """A spreadsheet's CSV starts with its column names: it stopped at "line 1: could not convert".
    A first line with any number in it is a row, and a bad one still stops the script."""
    model, X, paths, _ = files
    csv = tmp_path / "rows.csv"
    csv.write_text("\n".join([header, *(",".join(map(str, row)) for row in X[:2])]) + "\n", encoding="utf-8")
    result = subprocess.run([sys.executable, str(EXAMPLE), str(paths["m.npz"]), str(csv)],
                            capture_output=True, text=True)
    if skipped:
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == [str(label) for label in model.predict(X[:2])]
    else:
        assert result.returncode == 1 and result.stderr.startswith("line 1: could not convert")
