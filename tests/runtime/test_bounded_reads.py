"""Bounded reads (issue 54): what a file declares is checked before it is expanded, a FIFO or a
device is refused where a file is expected, and numpy's header errors of every kind are the usual
ValueError, for model files and data files alike."""

from __future__ import annotations

import contextlib
import gzip
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from lastedge.runtime import Model, load
from lastedge.runtime import bounded
from lastedge.runtime.backends import TFLitePredictor
from lastedge.runtime.data import load_dataset
from lastedge.runtime.idx import read_idx


@contextlib.contextmanager
def within(seconds: int):
    """Fail (rather than hang the suite) if the block blocks: a FIFO opened for reading waits
    for a writer for ever."""
    def expired(*_):
        raise TimeoutError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def model_file(tmp_path, fuzz_cases):
    return fuzz_cases.random_model().save(tmp_path / "m.npz")


@pytest.mark.parametrize("suffix", [".npz", ".onnx", ".tflite", ".csv"])
def test_a_fifo_is_refused_where_a_file_is_expected(tmp_path, suffix):
    fifo = tmp_path / f"pipe{suffix}"
    os.mkfifo(fifo)
    with within(5), pytest.raises(ValueError, match=r"pipe\.\w+ is a FIFO \(named pipe\), not a regular file"):
        (load if suffix != ".csv" else load_dataset)(fifo if suffix != ".csv" else str(fifo))


def test_a_device_is_refused_as_a_model_or_data(tmp_path):
    with within(5):
        with pytest.raises(ValueError, match="/dev/zero is a character device"):
            load("/dev/zero")
        with pytest.raises(ValueError, match="/dev/zero is a character device"):
            load_dataset("/dev/zero")


def test_a_model_bomb_is_refused_before_it_is_decompressed(tmp_path, fuzz_cases, model_file):
    """1.5 GiB of zeros in 3 MB, shapes consistent: loaded and used before."""
    import fuzz_bombs

    arrays = dict(np.load(model_file))
    rows = 96 * fuzz_bombs.CHUNK // 4096
    members = fuzz_bombs.npy_members({**arrays, "classes": np.arange(2), "weights": np.zeros((rows, 1), np.float32)})
    del members["dictionary.npy"]
    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(fuzz_bombs.zip_file(members, {"dictionary.npy": (fuzz_bombs.npy_header((1024, rows)), 96)}))
    assert bomb.stat().st_size < 4 << 20
    with pytest.raises(ValueError, match=r"bomb.npz .*expand \d+ stored bytes to \d+, more than 32 times"):
        Model.load(bomb)


def test_a_model_may_be_compressed(tmp_path, model_file):
    """np.savez_compressed of a model's own arrays expands far less than the bound."""
    np.savez_compressed(tmp_path / "small.npz", **dict(np.load(model_file)))
    assert Model.load(tmp_path / "small.npz").n_atoms == 10


def test_arrays_a_model_has_not_or_of_shapes_it_cannot_have_are_not_read(tmp_path, model_file):
    arrays = dict(np.load(model_file))
    np.savez(tmp_path / "extra.npz", **arrays, junk=np.zeros(10))
    with pytest.raises(ValueError, match="extra.npz .*unknown fields junk"):
        Model.load(tmp_path / "extra.npz")
    np.savez(tmp_path / "long.npz", **{**arrays, "meta": np.array("x" * (1 << 23))})
    with pytest.raises(ValueError, match=r"long.npz .*meta of <U8388608"):
        Model.load(tmp_path / "long.npz")
    np.savez(tmp_path / "scalar.npz", **{**arrays, "alpha": np.ones(3)})
    with pytest.raises(ValueError, match=r"scalar.npz .*alpha \(3,\)"):
        Model.load(tmp_path / "scalar.npz")


@pytest.mark.parametrize("old, new, error", [(b"(12, 10), }", b"(12, 10(, }", "TokenError"),
                                             (b"'<f4'", b"',f4'", "SyntaxError")])
def test_numpy_header_errors_of_every_kind_are_value_errors(tmp_path, fuzz_cases, model_file, old, new, error):
    """Two bytes changed, CRC kept valid: numpy's parser raised tokenize's and ast's errors."""
    arrays = dict(np.load(model_file))
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(fuzz_cases.npz_bytes(arrays, ("dictionary.npy", old, new)))
    with pytest.raises(ValueError, match=f"dictionary.npy has a corrupt .npy header \\({error}"):
        load(damaged)
    data = tmp_path / "data.npz"
    X = np.zeros((12, 10), np.float32)
    data.write_bytes(fuzz_cases.npz_bytes({"X_train": X, "y_train": np.zeros(12)}, ("X_train.npy", old, new)))
    with pytest.raises(ValueError, match=f"X_train.npy has a corrupt .npy header \\({error}"):
        load_dataset(str(data))


@pytest.mark.parametrize("version", [-5, 0, 2])
def test_format_versions_outside_those_written_are_refused(tmp_path, model_file, version):
    np.savez(tmp_path / "v.npz", **{**dict(np.load(model_file)), "format_version": np.array(version)})
    with pytest.raises(ValueError, match="unsupported format_version"):
        Model.load(tmp_path / "v.npz")


def test_data_larger_than_the_memory_available_is_refused_with_its_size(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    np.savez_compressed(tmp_path / "d.npz", X_train=rng.normal(size=(4000, 100)), y_train=np.zeros(4000))
    images = rng.integers(0, 255, (1000, 28, 28), dtype=np.uint8)
    (tmp_path / "idx").mkdir()
    for name, array in (("train-images-idx3-ubyte.gz", images), ("train-labels-idx1-ubyte.gz", np.zeros(1000, np.uint8))):
        with gzip.open(tmp_path / "idx" / name, "wb") as f:
            f.write(bytes([0, 0, 8, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes())
    assert load_dataset(str(tmp_path / "d.npz")).X_train.shape == (4000, 100)  # 3.2 MB: fits
    monkeypatch.setattr(bounded, "available_memory", lambda: 4 << 20)
    with pytest.raises(ValueError, match=r"its arrays \(3232\d+ bytes\) needs about 6 MiB of memory to read, "
                                         r"more than the 4 MiB available"):
        load_dataset(str(tmp_path / "d.npz"))
    with pytest.raises(ValueError, match=r"train-images-idx3-ubyte.gz \(shape \(1000, 28, 28\)\) needs about 4 MiB"):
        read_idx(tmp_path / "idx" / "train-images-idx3-ubyte.gz")


def test_the_memory_available_counts_the_address_space_limit():
    """Under RLIMIT_AS (a container's or the fuzz harness's limit), what may still be mapped."""
    code = ("import resource; from lastedge.runtime.bounded import available_memory, _meminfo; "
            "mapped = _meminfo('/proc/self/status', 'VmSize'); "
            "resource.setrlimit(resource.RLIMIT_AS, (mapped + (300 << 20),) * 2); "
            "print(available_memory() >> 20)")
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 250 <= int(shown.stdout) <= 300


def test_the_legacy_interpreters_memory_error_is_a_value_error(tmp_path, base_files):
    """tflite_runtime raised MemoryError for a tensor of 8 GB (a TILE; refused by the graph
    check, but a trusted file may still ask)."""
    if "fp32.tflite" not in base_files:
        pytest.skip("tflite is not installed")

    class Exhausted:
        def __init__(self, **_):
            raise MemoryError

    with pytest.raises(ValueError, match="fp32.tflite needs more memory than there is to load"):
        TFLitePredictor(base_files["fp32.tflite"], Exhausted, "tflite_runtime")
