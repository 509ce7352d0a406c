"""The ``lastedge`` command's failures: one-line errors and exit statuses, missing extras, output
encodings, Ctrl-C and ``--debug``."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lastedge.cli import main
from lastedge.runtime import Model

TINY = ["--atoms", "2", "--max-dca-iter", "1", "--inner-iter", "10", "--quiet"]


@pytest.fixture()
def bad_files(tmp_path):
    (tmp_path / "corrupt.npz").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "folder.npz").mkdir()
    (tmp_path / "narrow.csv").write_text("1,2,0\n3,4,1\n")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "lonely.npz", X_train=rng.normal(size=(41, 4)), y_train=np.r_[[0] * 20, [1] * 20, 2])
    X = rng.normal(size=(40, 64))
    np.savez(tmp_path / "locked.npz", X_train=X, y_train=np.arange(40) % 2, X_test=X, y_test=np.arange(40) % 2)
    return tmp_path


def mark_encrypted(path: Path) -> Path:
    """Set the 'encrypted' flag of every entry in a zip's central directory: zipfile then raises
    RuntimeError (password required) when an entry is read, as it does for such a damaged file."""
    data = bytearray(path.read_bytes())
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        data[at + 8] |= 1
        at = data.find(b"PK\x01\x02", at + 4)
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("argv, message", [
    (["train", "--data", "missing.csv", *TINY, "--out", "{d}/m.npz"],
     "neither 'digits' nor an existing file"),
    (["train", "--data", "digits", "--atoms", "0", "--out", "{d}/m.npz"],
     "n_atoms must be an integer >= 1, got 0"),
    (["train", "--data", "digits", *TINY, "--out", "{d}/m.txt"], "--out must be a .npz file"),
    (["train", "--data", "digits", *TINY, "--out", "{d}/no/m.npz"], "folder .* does not exist"),
    (["train", "--data", "digits", *TINY, "--out", "{d}/folder.npz"], "cannot write .*folder.npz: it is a folder"),
    (["train", "--data", "digits", *TINY, "--out", "/proc/m.npz"], r"cannot write /proc/m.npz: folder /proc is not writable \(it does not accept new files\)$"),  # root too
    (["train", "--data", "{d}/notes.txt", *TINY, "--out", "{d}/m.npz"],
     "unsupported data file 'notes.txt'"),
    (["train", "--data", "digits", "--atoms", "2", "--method", "sgd", "--max-dca-iter", "3",
      "--out", "{d}/m.npz"], "--max-dca-iter applies to --method last only"),
    (["train", "--data", "digits", "--atoms", "2", "--method", "sgd", "--early-stopping", "--mu", "1",
      "--out", "{d}/m.npz"], "--mu, --early-stopping apply to --method last only"),
    (["train", "--data", "{d}/lonely.npz", *TINY, "--mu", "0,1", "--out", "{d}/m.npz"],
     "choosing mu needs a 10% hold-out with every class, and a class has only 1 training row"),
    (["train", "--data", "{d}/lonely.npz", *TINY, "--shift-augment", "1", "--out", "{d}/m.npz"],
     "--shift-augment needs images: lonely has no image shape .give --image-shape HxW"),
    (["train", "--data", "digits", *TINY, "--image-shape", "8x8", "--out", "{d}/m.npz"],
     "--image-shape applies to .npz and CSV data; digits holds 8x8 images already"),
    (["train", "--data", "{d}/lonely.npz", *TINY, "--image-shape", "3x3", "--out", "{d}/m.npz"],
     r"image_shape \(3, 3\) holds 9 values, but the rows have 4 features"),
    (["train", "--data", "digits", "--atoms", "2", "--method", "sgd", "--shift-augment", "1", "--out", "{d}/m.npz"],
     "--shift-augment applies to --method last only"),
    (["train", "--data", "digits", *TINY, "--device", "gpu", "--out", "{d}/m.npz"],
     "device must name a torch device such as 'cpu' or 'cuda', got 'gpu'"),
    (["train", "--data", "digits", *TINY, "--threads", "0", "--out", "{d}/m.npz"], r"--threads must be in \[1, \d+\]"),
    (["train", "--data", "digits", *TINY, "--jobs", "0", "--out", "{d}/m.npz"], "--jobs must be at least 1, got 0"),
    (["train", "--data", "digits", *TINY, "--plot", "{d}/curve.jpg", "--out", "{d}/m.npz"],
     "the figure must be a .png, .pdf, .svg file, got 'curve.jpg'"),
    (["train", "--data", "digits", *TINY, "--plot", "{d}/no/curve.png", "--out", "{d}/m.npz"],
     "cannot write .*curve.png: folder .* does not exist"),
    (["predict", "{d}/corrupt.npz", "--data", "digits"], "not a readable lastedge model file"),
    (["predict", "{d}/locked-model.npz", "--data", "digits"],
     "locked-model.npz is not a readable lastedge model file .*password required"),
    (["train", "--data", "{d}/locked.npz", *TINY, "--out", "{d}/m.npz"],
     "cannot read the arrays of locked.npz: .*password required"),
    (["export", "{model}", "--format", "onnx", "--precision", "int8", "--calibration", "{d}/locked.npz",
      "--out", "{d}/m.onnx"], "locked.npz is not a readable .npz file .*password required"),
    (["predict", "{model}", "--data", "{d}/narrow.csv"], "X has 2 features, the model expects 64"),
    (["predict", "{model}", "--data", "digits", "--no-labels"],
     "--no-labels applies to CSV files only"),
    (["predict", "{model}", "--data", "digits", "--out", "{d}/m.npz"], "--out must be a .csv file"),
    (["predict", "{model}", "--data", "{d}/narrow.csv", "--out", "{d}/narrow.csv"],
     "--out .*narrow.csv is the file --data reads; writing it would destroy that input"),
    (["predict", "{model}", "--data", "{d}/narrow.csv", "--no-labels", "--plot", "{d}/c.png"],
     "--plot draws the confusion matrix, which needs labels"),
    (["inspect", "{d}/corrupt.npz"], "not a readable lastedge model file"),
    (["inspect", "{d}/notes.txt"], "notes.txt is not a model file"),
    (["inspect", "{d}/missing.npz"], "no such file"),
    (["predict", "{d}/missing.npz", "--data", "digits"], "no such file: .*missing.npz$"),
    (["export", "{d}/missing.npz", "--format", "onnx", "--out", "{d}/m.onnx"], "no such file: .*missing.npz$"),
    (["predict", "{d}", "--data", "digits"], "test_user_errors_are_one_line.* is a folder, not a regular file$"),
    (["inspect", "{model}", "--per-class", "3"], "--image-shape and --per-class apply to --atoms only"),
    (["inspect", "{model}", "--atoms", "{d}/a.png", "--image-shape", "5x5"],
     "an image of shape 5x5 has 25 values; the model has 64 features"),
    (["inspect", "{model}", "--atoms", "{d}/a.png", "--image-shape", "8by8"], "image shape must be HxW"),
], ids=["missing-data", "zero-atoms", "out-not-npz", "out-folder", "out-is-a-folder", "out-folder-not-writable", "unknown-data-format",
        "option-of-other-method", "options-of-other-method", "mu-grid-class-too-small",
        "shift-without-images", "image-shape-of-images", "train-image-shape-wrong-size", "shift-with-sgd", "bad-device",
        "zero-threads", "zero-jobs", "plot-format", "plot-folder", "corrupt-model", "encrypted-model", "encrypted-data", "encrypted-calibration", "wrong-width", "no-labels-not-csv", "predictions-not-csv",
        "predictions-over-data",
        "confusion-without-labels",
        "inspect-corrupt", "inspect-unknown-format", "inspect-missing", "predict-missing", "export-missing",
        "model-is-a-folder", "per-class-without-atoms",
        "image-shape-wrong-size", "image-shape-unreadable"])
def test_user_errors_are_one_line(run, capsys, bad_files, tiny_model_file, argv, message):
    mark_encrypted(bad_files / "locked.npz")
    locked_model = bad_files / "locked-model.npz"
    locked_model.write_bytes(Path(tiny_model_file).read_bytes())
    mark_encrypted(locked_model)
    argv = [a.format(d=bad_files, model=tiny_model_file) for a in argv]
    code, out, err = run(*argv)
    assert code == 1
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"lastedge {argv[0]}: error: ")
    assert re.search(message, err), err
    assert not (bad_files / "m.npz").exists()


def test_a_command_line_that_does_not_parse_is_one_usage_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--data", "digits", "--atoms", "x", "--out", str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.splitlines() == [
        "lastedge train: error: argument --atoms: invalid int value: 'x' (see lastedge train --help)"]


@pytest.mark.parametrize("argv, line", [
    (["demo", "--json"], "lastedge demo: error: unrecognized arguments: --json (see lastedge demo --help)"),
    (["--bogus"], "lastedge: error: unrecognized arguments: --bogus (see lastedge --help)"),
])
def test_an_unknown_option_is_reported_by_its_command(capsys, argv, line):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2 and capsys.readouterr().err.splitlines() == [line]


@pytest.mark.parametrize("argv", [["predict", "{model}", "--data", "{d}/rows.csv", "--image-size", "8x8"],
                                  ["predict", "{model}", "--data", "digits", "--image-size", "8x8"]],
                         ids=["csv", "digits"])
def test_an_image_size_for_rows_that_are_no_images_is_refused(run, capsys, tmp_path, tiny_model_file, argv):
    (tmp_path / "rows.csv").write_text(",".join(["0"] * 65) + "\n")
    code, _, err = run(*[a.format(d=tmp_path, model=tiny_model_file) for a in argv])
    assert code == 1 and "image size" in err.lower() and len(err.splitlines()) == 1


def test_out_of_memory_is_one_line(run, capsys, tiny_model_file, monkeypatch):
    def too_big(*args, **kwargs):
        raise MemoryError()

    monkeypatch.setattr(sys.modules["lastedge.runtime.bench"], "bench", too_big)
    code, _, err = run("bench", tiny_model_file, "--runs", "3")
    assert code == 1 and err == "lastedge bench: error: out of memory (try smaller batches or data)\n"


def test_device_out_of_memory_in_training_is_one_line_saying_what_to_change(run, capsys, tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")

    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr("lastedge.train.last.run_dca", out_of_memory)
    code, _, err = run("train", "--data", "digits", *TINY, "--out", tmp_path / "m.npz")
    assert code == 1 and err == ("lastedge train: error: device 'cpu' ran out of memory (CUDA out of memory. "
                                 "Tried to allocate 2.00 GiB); try a smaller batch_size, fewer atoms or rows, "
                                 "or device='cpu'\n")
    assert not (tmp_path / "m.npz").exists()


def test_a_missing_extra_is_named(run, capsys, tiny_model_file, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # as on a device: digits needs it
    code, _, err = run("predict", tiny_model_file, "--data", "digits")
    assert code == 1
    # scikit-learn alone: the train extra would pull torch onto the device too
    assert err == "lastedge predict: error: reading digits needs scikit-learn: pip install scikit-learn\n"


def test_a_source_to_split_without_scikit_learn_names_it_alone(run, capsys, tiny_model_file, monkeypatch, tmp_path):
    pytest.importorskip("PIL")
    from PIL import Image

    for label in ("a", "b"):
        (tmp_path / "photos" / label).mkdir(parents=True)
        for i in range(2):
            Image.fromarray(np.full((8, 8), 60 * i, np.uint8)).save(tmp_path / "photos" / label / f"{i}.png")
    monkeypatch.setitem(sys.modules, "sklearn.model_selection", None)
    code, _, err = run("predict", tiny_model_file, "--data", tmp_path / "photos")
    assert code == 1
    assert err == ("lastedge predict: error: splitting photos into training and test parts needs scikit-learn: "
                   "pip install scikit-learn\n")


@pytest.mark.parametrize("fmt", ["onnx", "tflite"])
def test_inspect_without_the_export_extra_shows_what_the_interpreter_reads(run, capsys, tmp_path, tiny_model_file,
                                                                            monkeypatch, fmt):
    from lastedge.export import to_onnx, to_tflite

    model = Model.load(tiny_model_file)
    path = (to_onnx if fmt == "onnx" else to_tflite)(model, tmp_path / f"m.{fmt}")
    monkeypatch.setitem(sys.modules, fmt, None)  # the graph parser, as on a device
    code, out, err = run("inspect", path)
    assert code == 0, err
    assert f"classes      {model.classes.size}: " in out and f"MACs/sample  {model.macs_per_sample:,}" in out
    assert f"graph        not shown: {fmt} is not installed (pip install 'lastedge[export]')" in out
    info = json.loads(run("inspect", path, "--json")[1])
    assert (info["n_features"], info["n_outputs"], info["precision"]) == (model.n_features, model.n_outputs, "fp32")


def test_console_script_help():
    script = Path(sys.executable).parent / "lastedge"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    for command in ("train", "predict", "export", "bench", "inspect", "demo"):
        assert command in result.stdout


@pytest.mark.parametrize("where", ["lastedge.cli.app.build_parser", "lastedge.cli.inspect.model_info"],
                         ids=["importing-the-commands", "running"])
def test_ctrl_c_is_one_line_and_status_130(run, capsys, tiny_model_file, monkeypatch, where):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(where, interrupted)
    code, _, err = run("inspect", tiny_model_file)
    assert code == 130 and err == "lastedge: interrupted\n"


def test_inspect_help_says_atoms_default_to_the_recorded_image_shape(capsys, tiny_model_file):
    model = Model.load(tiny_model_file)
    model.meta = {**model.meta, "data": {"image_shape": [4, 16]}}  # as ``train --image-shape 4x16`` records
    assert model.image_shape == (4, 16)  # what ``inspect --atoms`` draws by default, not 8x8
    with pytest.raises(SystemExit):
        main(["inspect", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "default: the training images' shape, which the model records, else square grayscale" in help_text


@pytest.mark.parametrize("target, message", [("{d}", "is a folder, not a model file"),
                                              ("/dev/null", "/dev/null is a special file, not a model file")],
                         ids=["folder", "device"])
def test_inspect_says_what_a_path_that_is_no_file_is(run, capsys, tmp_path, target, message):
    """Both said "no such file"; a FIFO would have blocked the read."""
    code, _, err = run("inspect", target.format(d=tmp_path))
    assert code == 1 and len(err.splitlines()) == 1 and message in err


def test_per_class_below_one_is_named_by_its_option(run, capsys, tmp_path, tiny_model_file):
    code, _, err = run("inspect", tiny_model_file, "--atoms", tmp_path / "a.png", "--per-class", "0")
    assert code == 1 and err == "lastedge inspect: error: --per-class must be >= 1, got 0\n"  # was "atoms per output"


def test_predict_names_images_whose_file_names_are_not_utf8(tmp_path, tiny_model_file, monkeypatch):
    """The CSV failed ("surrogates not allowed") and so did the text output on a strict UTF-8
    terminal, after the work was done."""
    import os

    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    pixels = (np.arange(64).reshape(8, 8) * 4).astype(np.uint8)
    for name in (b"bad\xff.png", b"ok.png"):
        Image.fromarray(pixels).save(os.fsencode(folder) + b"/" + name)
    terminal = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", terminal)
    code = main(["predict", str(tiny_model_file), "--data", str(folder), "--image-size", "8x8",
                 "--out", str(tmp_path / "p.csv")])
    terminal.flush()
    assert code == 0
    assert b"bad\\udcff.png=" in terminal.buffer.getvalue()
    lines = (tmp_path / "p.csv").read_bytes().splitlines()
    assert sorted(line.split(b",")[0] for line in lines[1:]) == [b"bad\xff.png", b"ok.png"]  # the name's own bytes


def test_csv_rows_from_stdin_are_utf8_as_files_are(run, capsys, tiny_model_file, monkeypatch):
    """A C locale decodes stdin leniently: Latin-1 "café" became the label "caf\\udce9" and a bad
    byte in a number was "not a number"; a file with the same bytes is refused as not UTF-8."""
    rows = ",".join(["0"] * 64).encode() + b",caf\xe9\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(rows), encoding="utf-8", errors="surrogateescape"))
    code, out, err = run("predict", tiny_model_file, "--data", "-")
    assert code == 1 and out == ""
    assert "is not a readable CSV text file ('utf-8' codec can't decode byte 0xe9" in err and len(err.splitlines()) == 1


def test_json_text_writes_every_non_finite_number_as_null():
    """``json.dumps`` writes NaN and infinity as ``NaN``/``Infinity``, which JSON readers refuse;
    every command's --json goes through json_text."""
    import json

    from lastedge.cli.common import json_text

    value = {"a": float("nan"), "b": [1.5, float("inf"), {"c": -float("inf")}], "d": (2, "x"), "e": True}
    assert json.loads(json_text(value), parse_constant=pytest.fail) == {
        "a": None, "b": [1.5, None, {"c": None}], "d": [2, "x"], "e": True}


def test_debug_shows_the_traceback_of_a_user_error(tmp_path, monkeypatch, capsys):
    missing = str(tmp_path / "missing.npz")
    assert main(["inspect", missing]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(FileNotFoundError):
        main(["--debug", "inspect", missing])
    monkeypatch.setenv("LASTEDGE_DEBUG", "1")
    with pytest.raises(FileNotFoundError):
        main(["inspect", missing])


@pytest.mark.parametrize("bug", [TypeError("unsupported operand"), KeyError("n_atoms")])
def test_a_bug_in_a_command_is_not_reported_as_a_user_error(tmp_path, monkeypatch, bug):
    def broken(path):
        raise bug

    monkeypatch.setattr("lastedge.runtime.files.sniff", broken)
    (tmp_path / "m.npz").write_bytes(b"PK")
    with pytest.raises(type(bug)):
        main(["inspect", str(tmp_path / "m.npz")])
