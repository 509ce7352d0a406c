"""Each rank's block of a training data source (``runtime.data_shards``): the blocks in order are
the source's rows, read by rows where the format allows."""

from __future__ import annotations

import numpy as np
import pytest

from lastedge.runtime.data import load_dataset
from lastedge.runtime.data_shards import load_dataset_block, row_block


def blocks(source, count, **kwargs):
    return [load_dataset_block(str(source), index, count, **kwargs) for index in range(count)]


def joined(parts, name):
    return np.concatenate([getattr(part, name) for part in parts])


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_blocks_are_the_rows_of_each_part(tmp_path, save):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(37, 4)).astype(np.float32), rng.integers(0, 3, 37)
    save(tmp_path / "d.npz", X_train=X, y_train=y, X_test=X[:10] * 2, y_test=y[:10])
    whole, parts = load_dataset(str(tmp_path / "d.npz")), blocks(tmp_path / "d.npz", 3)
    for name in ("X_train", "y_train", "X_test", "y_test"):
        assert np.array_equal(joined(parts, name), getattr(whole, name))
    assert [len(part.X_train) for part in parts] == [12, 12, 13]


def test_npz_without_test_part_and_in_fortran_order(tmp_path):
    X = np.asfortranarray(np.arange(40, dtype=np.float64).reshape(20, 2))
    np.savez(tmp_path / "f.npz", X_train=X, y_train=np.arange(20) % 2)
    parts = blocks(tmp_path / "f.npz", 2)
    assert np.array_equal(joined(parts, "X_train"), X)
    assert all(not part.has_test for part in parts)


def test_npz_block_refuses_what_load_dataset_refuses(tmp_path):
    np.savez(tmp_path / "bad.npz", X_train=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="lacks y_train"):
        load_dataset_block(str(tmp_path / "bad.npz"), 0, 2)


@pytest.mark.parametrize("header", ["a;b;label\n", ""])
def test_csv_blocks_hold_their_lines_split_75_25(tmp_path, header):
    lines = "".join(f"{i},5;{i % 2};{'ab'[i % 2]}\n" for i in range(40))
    (tmp_path / "d.csv").write_text(header + lines)
    parts = blocks(tmp_path / "d.csv", 2)
    assert sorted(np.r_[joined(parts, "X_train")[:, 0], joined(parts, "X_test")[:, 0]]) == [i + 0.5 for i in range(40)]
    assert max(parts[0].X_train[:, 0]) < 20 <= min(parts[1].X_train[:, 0])  # rank 0 holds the first lines
    assert [len(part.X_test) for part in parts] == [5, 5]
    assert set(joined(parts, "y_train")) == {"a", "b"}


def test_csv_with_quotes_is_read_whole_then_cut(tmp_path):
    (tmp_path / "q.csv").write_text("x,label\n" + "".join(f'{i},"c{i % 2}"\n' for i in range(16)))
    parts = blocks(tmp_path / "q.csv", 2)
    assert sorted(np.r_[joined(parts, "X_train")[:, 0], joined(parts, "X_test")[:, 0]]) == list(range(16))


def test_other_sources_are_read_whole_then_cut():
    whole, parts = load_dataset("digits"), blocks("digits", 3)
    assert np.array_equal(joined(parts, "X_test"), whole.X_test)
    assert np.array_equal(joined(parts, "y_train"), whole.y_train)


def test_row_block_refuses_an_index_outside_the_blocks():
    assert row_block(10, 1, 2) == slice(5, 10)
    with pytest.raises(ValueError, match=r"block index must be in \[0, 2\), got 2"):
        row_block(10, 2, 2)
