"""``predict --data`` reads an .npz archive or an IDX folder a block of rows at a time
(``runtime.data_blocks``): the rows and labels are those ``load_dataset`` gives, and the memory is
a block's whatever the data's size (issue 54: a 3 MB archive of zeros took 4.3 GB)."""

from __future__ import annotations

import gzip
import tracemalloc

import numpy as np
import pytest

from lastedge.runtime import data_blocks
from lastedge.runtime.data import load_dataset
from lastedge.runtime.data_blocks import held_out


def idx_file(path, array: np.ndarray) -> None:
    with gzip.open(path, "wb") as f:
        f.write(bytes([0, 0, 8, array.ndim]) + np.array(array.shape, ">u4").tobytes() + array.tobytes())


def test_an_archive_gives_the_rows_and_labels_load_dataset_gives(tmp_path, monkeypatch):
    monkeypatch.setattr(data_blocks, "BLOCK_VALUES", 3000)  # 100 rows a block
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(5000, 30)), rng.integers(0, 3, 5000)
    np.savez_compressed(tmp_path / "d.npz", X_train=X[:100], y_train=y[:100], X_test=X[100:], y_test=y[100:])
    part, data = held_out(str(tmp_path / "d.npz")), load_dataset(str(tmp_path / "d.npz"))
    blocks = list(part.blocks())
    assert len(blocks) == 49 and part.description == "d, held-out part"
    np.testing.assert_array_equal(np.concatenate(blocks), data.X_test)
    np.testing.assert_array_equal(part.labels, data.y_test)
    np.savez(tmp_path / "train.npz", X_train=X[:100], y_train=y[:100])
    part = held_out(str(tmp_path / "train.npz"))
    assert part.description == "train, training rows" and part.shape == (100, 30)


def test_an_idx_folder_gives_the_rows_and_labels_load_dataset_gives(tmp_path):
    rng = np.random.default_rng(1)
    images, labels = rng.integers(0, 256, (300, 5, 4), dtype=np.uint8), rng.integers(0, 10, 300).astype(np.uint8)
    idx_file(tmp_path / "train-images-idx3-ubyte.gz", images)
    idx_file(tmp_path / "train-labels-idx1-ubyte.gz", labels)
    part, data = held_out(str(tmp_path)), load_dataset(str(tmp_path))
    np.testing.assert_array_equal(np.concatenate(list(part.blocks())).astype(np.float32), data.X_train)
    np.testing.assert_array_equal(part.labels, data.y_train)
    assert part.n_features == 20


def test_a_part_of_hundreds_of_megabytes_is_read_in_bounded_memory(tmp_path):
    """256 MiB of deflated zeros (131072 rows of 256 float64) in 0.3 MB."""
    import fuzz_bombs

    rows = 16 * fuzz_bombs.CHUNK // (8 * 256)
    members = fuzz_bombs.npy_members({"y_train": np.zeros(rows, np.int8)})
    archive = fuzz_bombs.zip_file(members, {"X_train.npy": (fuzz_bombs.npy_header((rows, 256), "<f8"), 16)})
    (tmp_path / "big.npz").write_bytes(archive)
    tracemalloc.start()
    try:
        part = held_out(str(tmp_path / "big.npz"))
        total = sum(float(block.sum()) + len(block) for block in part.blocks())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == rows and peak < 64 << 20, f"peak {peak >> 20} MiB"


def test_sources_it_does_not_read_in_blocks(tmp_path):
    """CSV files, the built-in digits and Fortran-ordered arrays are read whole."""
    np.savez(tmp_path / "f.npz", X_train=np.asfortranarray(np.ones((10, 3))), y_train=np.zeros(10))
    (tmp_path / "r.csv").write_text("a,b\n1,0\n")
    assert held_out(str(tmp_path / "f.npz")) is None and held_out(str(tmp_path / "r.csv")) is None
    assert held_out("digits") is None


def test_a_truncated_part_is_refused_as_it_is_read(tmp_path):
    images = np.zeros((100, 4, 4), np.uint8)
    idx_file(tmp_path / "train-labels-idx1-ubyte.gz", np.zeros(100, np.uint8))
    with gzip.open(tmp_path / "train-images-idx3-ubyte.gz", "wb") as f:  # header for 100, values for 60
        f.write(bytes([0, 0, 8, 3]) + np.array(images.shape, ">u4").tobytes() + images[:60].tobytes())
    part = held_out(str(tmp_path))
    with pytest.raises(ValueError, match="train-images-idx3-ubyte.gz is truncated"):
        list(part.blocks())
