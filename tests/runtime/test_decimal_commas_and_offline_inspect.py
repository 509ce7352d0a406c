"""Device-side polish: decimal-comma CSVs, the bench warning for oversubscribed cores, ``inspect``
of an ONNX file where neither onnx nor onnxruntime is installed, and the params ``inspect`` shows."""

from __future__ import annotations

import io
import json
import os
import random
import sys
import time

import pytest

from lastedge.cli import main
from lastedge.runtime.csv_rows import load_csv
from lastedge.runtime.onnx_metadata import read_onnx_summary

bench_module = sys.modules["lastedge.runtime.bench"]  # the package's ``bench`` is the function


def csv_rows(text: str, **kwargs):
    stream = io.StringIO(text)
    stream.name = "rows.csv"
    return load_csv(stream, **kwargs)


# --- decimal-comma CSVs ------------------------------------------------------------------------

@pytest.mark.parametrize("text, labels", [
    ("1,5;2,25;7\n-0,5;,75;8\n", [7, 8]),  # no header, integer labels
    ("a;b;kind\n1,5;2,25;cat\n-0,5;,75;dog\n", ["cat", "dog"]),  # a header and string labels
    ("a\tb\tkind\n1,5\t2,25\tcat\n-0,5\t,75\tdog\n", ["cat", "dog"]),  # tabs
], ids=["semicolons", "header", "tabs"])
def test_decimal_commas_are_read_as_decimal_points(text, labels):
    """A European spreadsheet's ``1,5;2,25;7`` was split on its commas."""
    X, y = csv_rows(text, label_column="kind" if "kind" in text else -1)
    assert X.tolist() == [[1.5, 2.25], [-0.5, 0.75]] and y.tolist() == labels


def test_a_spreadsheet_file_with_a_byte_order_mark_and_crlf(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("\ufeffkind;x;y\r\n7;1,5e-3;2\r\n8;3;4,5\r\n".encode("utf-8"))
    X, y = load_csv(path, label_column="kind")
    assert X.tolist() == [[0.0015, 2.0], [3.0, 4.5]] and y.tolist() == [7, 8]


def test_a_comma_separated_file_never_has_decimal_commas():
    X, y = csv_rows("1,5,2\n3,4,5\n")
    assert X.tolist() == [[1, 5], [3, 4]] and y.tolist() == [2, 5]


def test_decimal_points_in_a_semicolon_file_are_kept():
    X, _ = csv_rows("1.5;2;7\n3;4.25;8\n")
    assert X.tolist() == [[1.5, 2], [3, 4.25]]


def test_mixed_decimal_marks_are_refused():
    with pytest.raises(ValueError, match=r"rows.csv mixes decimal commas \(line 1: '1,5'\) and decimal "
                                         r"points \(line 2: '1.500'\): write every number one way"):
        csv_rows("1,5;2;7\n1.500;4;8\n")


def test_a_first_line_split_either_way_is_refused():
    with pytest.raises(ValueError, match="rows.csv: its first line has semicolons and commas that are not "
                                         "decimal commas, so either may separate the cells"):
        csv_rows("length, cm;width;kind\n1,5;2;a\n")


def test_a_quoted_comma_does_not_make_a_semicolon_file_ambiguous():
    X, y = csv_rows('"size, cm";kind\n1,5;"a,b"\n2;c\n', label_column="kind")
    assert X.tolist() == [[1.5], [2.0]] and y.tolist() == ["a,b", "c"]


def test_a_semicolon_cell_in_a_comma_split_file_says_how_it_was_split():
    with pytest.raises(ValueError, match=r"holds '2;3', not a finite number \(cells are split on commas"):
        csv_rows("a,b,c\n1,2;3,4\n5,6,7\n")


def test_predict_reads_a_decimal_comma_csv_as_the_comma_one(blobs, prototype_model, tmp_path, capsys):
    X, y = blobs()
    model = prototype_model(X, y).save(tmp_path / "m.npz")
    rows = [[f"{v:.6g}" for v in row] + [str(label)] for row, label in zip(X[:20], y[:20])]
    (tmp_path / "points.csv").write_text("\n".join(",".join(r) for r in rows) + "\n")
    (tmp_path / "commas.csv").write_text("\n".join(";".join(c.replace(".", ",") for c in r) for r in rows) + "\n")
    outputs = []
    for name in ("points.csv", "commas.csv"):
        assert main(["predict", str(model), "--data", str(tmp_path / name), "--json"]) == 0
        outputs.append(json.loads(capsys.readouterr().out))
    assert outputs[0]["predictions"] == outputs[1]["predictions"]
    assert outputs[0]["accuracy"] == outputs[1]["accuracy"] > 0.9


# --- bench: threads beyond the usable cores ----------------------------------------------------

@pytest.fixture
def two_cores(monkeypatch):
    """A process allowed on cores 0 and 1."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)


def test_oversubscription_is_named_with_the_usable_cores(two_cores):
    assert bench_module.oversubscription(3) == (
        "3 threads oversubscribe the 2 usable cores (this process's CPU affinity): latency will be "
        "skewed by threads waiting for a core")
    assert "the 1 usable core (--cpus 1)" in bench_module.oversubscription(2, [1])
    for threads, cpus in ((2, None), (None, None), (1, [0]), (2, [0, 5]), (10**9, None)):
        assert bench_module.oversubscription(threads, cpus) is None  # fits, default, refused later


def test_bench_warns_once_and_still_runs(blobs, prototype_model, tmp_path, capsys):
    X, y = blobs()
    model = prototype_model(X, y).save(tmp_path / "m.npz")
    core = min(os.sched_getaffinity(0))
    assert main(["bench", str(model), "--runs", "2", "--warmup", "0", "--threads", "2",
                 "--cpus", str(core), "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert err == (f"lastedge bench: warning: 2 threads oversubscribe the 1 usable core (--cpus {core}): "
                   "latency will be skewed by threads waiting for a core\n")
    assert "samples/s" in out
    assert main(["bench", str(model), "--runs", "2", "--warmup", "0", "--threads", "1", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


# --- inspect .onnx without onnx and onnxruntime -----------------------------------------------

@pytest.fixture(scope="module")
def onnx_files(blobs, prototype_model, tmp_path_factory):
    """An fp32 and a dynamic int8 ONNX file of a 24-feature, 3-class model, and that model."""
    pytest.importorskip("onnx")
    from lastedge.export import to_onnx

    X, y = blobs()
    model = prototype_model(X, y)
    folder = tmp_path_factory.mktemp("onnx")
    return (to_onnx(model, folder / "m.onnx"), to_onnx(model, folder / "q.onnx", precision="int8-dynamic"),
            model)


@pytest.fixture
def tflite_only_device(monkeypatch):
    """Neither onnx nor onnxruntime importable, as on a device with a TFLite interpreter only."""
    for module in ("onnx", "onnxruntime"):
        monkeypatch.setitem(sys.modules, module, None)  # import raises ModuleNotFoundError


def test_inspect_onnx_reads_the_metadata_from_the_bytes(onnx_files, tflite_only_device, capsys):
    """It failed "onnxruntime is not installed"."""
    fp32, _, model = onnx_files
    assert main(["inspect", str(fp32)]) == 0
    out = capsys.readouterr().out
    assert f"file         {fp32} (onnx, {fp32.stat().st_size / 1024:.1f} KiB, fp32)\n" in out
    assert "classes      3: 0, 1, 2\n" in out and "outputs      3\n" in out
    assert "features     24, preprocess center-l2 (applied before the file)\n" in out
    assert f"MACs/sample  {model.macs_per_sample:,}\n" in out
    assert out.endswith("graph        not shown: onnx is not installed (pip install 'lastedge[export]'); "
                        "running it needs onnxruntime (pip install 'lastedge[onnx]')\n")
    assert main(["inspect", str(fp32), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["n_features"], info["precision"], info["backend"], info["size_bytes"]) == \
        (24, "fp32", None, fp32.stat().st_size)


def test_precision_comes_from_the_metadata_else_the_weights(onnx_files, tmp_path):
    import onnx

    _, int8, _ = onnx_files
    assert read_onnx_summary(int8).precision == "int8"
    proto = onnx.load(int8)
    entry = next(p for p in proto.metadata_props if p.key == "lastedge")
    entry.value = json.dumps({k: v for k, v in json.loads(entry.value).items() if k != "precision"})
    onnx.save(proto, tmp_path / "unsaid.onnx")
    assert read_onnx_summary(tmp_path / "unsaid.onnx").precision == "int8"  # uint8 weights


def test_every_truncation_is_a_value_error(onnx_files, tmp_path):
    data = onnx_files[0].read_bytes()
    path = tmp_path / "cut.onnx"
    for length in range(1, len(data), 3):
        path.write_bytes(data[:length])
        with pytest.raises(ValueError, match="cut.onnx"):
            read_onnx_summary(path)


def test_random_bytes_are_a_value_error_fast(tmp_path):
    rng = random.Random(0)
    path = tmp_path / "noise.onnx"
    start = time.perf_counter()
    for _ in range(300):
        path.write_bytes(b"\x08" + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))))
        with pytest.raises(ValueError):
            read_onnx_summary(path)
    assert time.perf_counter() - start < 5


@pytest.mark.parametrize("data, message", [
    (b"\x08\x08\x3a" + b"\xff" * 9 + b"\x01", r"field 7 at byte 2 claims 18446744073709551615 bytes, 0 remain"),
    (b"\x08\x08\x72\x05\x0a\x08", "field 14 at byte 2 claims 5 bytes, 2 remain"),
    (b"\x08" + b"\x80" * 11, "the number at byte 1 is longer than 10 bytes"),
    (b"\x08\x08\x3b", "field 7 at byte 2 has wire type 3"),
    (b"\x08\x08\x00\x00", "field number 0 at byte 2"),
    (b"\x08\x08\x38\x01", "field 7 has wire type 0, expected 2"),
    (b"\x08\x08", "it has no graph"),
], ids=["huge-length", "past-the-end", "long-varint", "group", "field-0", "wrong-type", "no-graph"])
def test_crafted_files_name_the_problem(tmp_path, data, message):
    path = tmp_path / "crafted.onnx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match=f"crafted.onnx is not a readable ONNX file: {message}"):
        read_onnx_summary(path)


def test_inspect_of_a_broken_onnx_file_is_one_line(onnx_files, tflite_only_device, tmp_path, capsys):
    path = tmp_path / "broken.onnx"
    path.write_bytes(onnx_files[0].read_bytes()[:100])
    assert main(["inspect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"lastedge inspect: error: {path} is not a readable ONNX file: ") and \
        len(err.splitlines()) == 1


# --- inspect .npz: the params that describe the model ------------------------------------------

def test_inspect_shows_model_params_and_json_keeps_them_all(blobs, prototype_model, tmp_path, capsys):
    X, y = blobs()
    model = prototype_model(X, y)
    params = {"n_atoms": 24, "mu": 0.5, "verbose": 1, "n_jobs": 2, "device": "cuda", "image_shape": None,
              "inner_iter": None, "random_state": 0}
    model.meta = {"trainer": "LASTClassifier", "params": params, "fit_seconds": 1.5}
    path = model.save(tmp_path / "m.npz")
    assert main(["inspect", str(path)]) == 0
    assert "params       mu=0.5 n_atoms=24 random_state=0\n" in capsys.readouterr().out
    assert main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["params"] == params
