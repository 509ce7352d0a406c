"""Folder data sources: IDX files (MNIST's format) and image folders through ``load_dataset``, and
every way such a folder can be wrong (``test_folder_commands.py``: the same through the commands)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from lastedge.runtime.data import load_dataset
from lastedge.runtime.idx import read_idx

Image = pytest.importorskip("PIL.Image")

# --- IDX -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["u1", "i1", ">i2", ">i4", ">f4", ">f8"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_idx_round_trip(write_idx, tmp_path, dtype, gz):
    array = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4).astype(dtype) if dtype != "u1" else \
        np.arange(24, dtype="u1").reshape(2, 3, 4)
    read = read_idx(write_idx(tmp_path / f"a-idx3{'.gz' if gz else ''}", array, gz=gz))
    np.testing.assert_array_equal(read, array)
    assert read.dtype.isnative and read.shape == (2, 3, 4)


def test_idx_folder_gives_the_mnist_split(digits_images, mnist_like_folder, tmp_path):
    data = load_dataset(str(mnist_like_folder(tmp_path)))
    images, labels = digits_images()
    assert data.X_train.shape == (1400, 64) and data.X_test.shape == (397, 64)
    np.testing.assert_array_equal(data.X_train, images[:1400].reshape(1400, 64))
    np.testing.assert_array_equal(data.y_test, labels[1400:])
    assert data.image_shape == (8, 8) and data.name == tmp_path.name


def test_idx_folder_without_test_part_and_plain_copies_preferred(mnist_like_folder, tmp_path):
    mnist_like_folder(tmp_path, gz=False, test=False)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(b"stale, damaged copy")  # the plain one is read
    data = load_dataset(str(tmp_path))
    assert not data.has_test and data.X_train.shape == (1400, 64)


@pytest.mark.parametrize("damage, message", [
    (lambda p, write_idx: write_idx(p, np.zeros((3, 4, 4), "u1"), cut=5), "is truncated: its header declares shape"),
    (lambda p, write_idx: write_idx(p, np.zeros((3, 4, 4), "u1"), extra=b"x"), "more bytes than its header declares"),
    (lambda p, _: p.write_bytes(b"\x00\x00\x08\x03\x00\x00"), "truncated inside its header"),
    (lambda p, _: p.write_bytes(b"PK\x03\x04 a zip, not idx"), "is not an IDX file"),
    (lambda p, _: p.write_bytes(b""), "is not an IDX file"),
    (lambda p, _: p.write_bytes(b"\x00\x00\x08\x03" + b"\xff\xff\xff\xff" * 3), "than the 4 GiB limit"),
    (lambda p, _: p.write_bytes(b"\x00\x00\x08\x03" + (1000).to_bytes(4, "big") * 3 + b"\0" * 9),
     r"1000000000 bytes of values\), the file can hold at most 9$"),
    (lambda p, _: p.write_bytes(b"\x00\x00\x0e\xff" + b"\xff\xff\xff\xff" * 255), r"\(255 dimensions\)"),
    # one value in 65 dimensions: numpy's own reshape error named no file
    (lambda p, _: p.write_bytes(b"\x00\x00\x08\x41" + b"\x00\x00\x00\x01" * 65 + b"\0"),
     "train-images-idx3-ubyte declares 65 dimensions, more than the 32"),
])
def test_damaged_idx_files_are_refused(write_idx, tmp_path, damage, message):
    damage(tmp_path / "train-images-idx3-ubyte", write_idx)
    with pytest.raises(ValueError, match=message):
        read_idx(tmp_path / "train-images-idx3-ubyte")


def test_gzip_declaring_more_than_deflate_can_hold_is_refused_before_reading(tmp_path):
    path = tmp_path / "x-idx3.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x03" + (1000).to_bytes(4, "big") * 3 + b"\0" * 9))
    with pytest.raises(ValueError, match=r"x-idx3.gz is truncated: .* the file can hold at most \d+$"):
        read_idx(path)


def test_damaged_gzip_is_refused(write_idx, tmp_path):
    path = write_idx(tmp_path / "x-idx3.gz", np.zeros((3, 4, 4), "u1"), gz=True)
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(ValueError, match="cannot read x-idx3.gz"):
        read_idx(path)
    path.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ValueError, match="cannot read x-idx3.gz"):
        read_idx(path)


@pytest.mark.parametrize("files, message", [
    ({"train-images-idx3-ubyte": 5}, "lacks the IDX file of the training labels"),
    ({"train-images-idx3-ubyte": 5, "train-labels-idx1-ubyte": 5, "t10k-images-idx3-ubyte": 5},
     "only one of the test images and test labels"),
    ({"train-images-idx3-ubyte": 5, "train-labels-idx1-ubyte": 4}, "expected images"),
    ({"train-images-idx3-ubyte": 5, "train-images-2-idx3-ubyte": 5}, "two files for the training images"),
])
def test_incomplete_idx_folders_are_refused(write_idx, tmp_path, files, message):
    for name, rows in files.items():
        shape = (rows, 4, 4) if "images" in name else (rows,)
        write_idx(tmp_path / name, np.zeros(shape, "u1"))
    with pytest.raises(ValueError, match=message):
        load_dataset(str(tmp_path))


@pytest.mark.parametrize("arrays, message", [
    ({"train-labels-idx1-ubyte": np.array([0, np.nan, 1, 1, 0], ">f4")}, "labels must be whole numbers"),
    ({"train-labels-idx1-ubyte": np.array([0, 0.5, 1, 1, 0], ">f4")}, "labels must be whole numbers"),
    ({"t10k-images-idx3-ubyte": np.zeros((2, 2, 8), "u1"), "t10k-labels-idx1-ubyte": np.zeros(2, "u1")},
     "test images are 2x8, training images 4x4"),
    ({"train-images-idx3-ubyte": np.zeros((0, 4, 4), "u1"), "train-labels-idx1-ubyte": np.zeros(0, "u1")},
     "at least one row"),
], ids=["nan-labels", "fractional-labels", "test-shape", "empty"])
def test_idx_labels_and_shapes_that_make_no_data_set_are_refused(write_idx, tmp_path, arrays, message):
    files = {"train-images-idx3-ubyte": np.zeros((5, 4, 4), "u1"), "train-labels-idx1-ubyte": np.zeros(5, "u1")}
    for name, array in {**files, **arrays}.items():
        write_idx(tmp_path / name, array)
    with pytest.raises(ValueError, match=message):
        load_dataset(str(tmp_path))


def test_a_broken_png_and_big_endian_16_bit_images(tmp_path):
    """Pillow raises SyntaxError for a broken PNG chunk, and its resize garbles 16-bit big-endian
    values (the little-endian twin is right)."""
    Image = pytest.importorskip("PIL.Image")
    from lastedge.runtime.images import read_images

    png = tmp_path / "ok.png"
    Image.fromarray(np.arange(256, dtype=np.uint8).reshape(16, 16)).save(png)
    data = bytearray(png.read_bytes())
    at = data.find(b"IDAT") - 4
    data[at:at + 4] = (int.from_bytes(data[at:at + 4], "big") - 8).to_bytes(4, "big")
    (tmp_path / "broken.png").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="cannot read image .*broken.png"):
        read_images([tmp_path / "broken.png"], tmp_path)
    values = (np.arange(64, dtype=np.uint16) * 1000).reshape(8, 8)
    little = Image.fromarray(values)  # mode I;16
    little.save(tmp_path / "le.tif")
    Image.frombytes("I;16B", (8, 8), values.astype(">u2").tobytes()).save(tmp_path / "be.tif")
    X_le, _ = read_images([tmp_path / "le.tif"], tmp_path, (4, 4))
    X_be, _ = read_images([tmp_path / "be.tif"], tmp_path, (4, 4))
    np.testing.assert_allclose(X_be, X_le, rtol=1e-6)
    assert 0 < X_le.mean() < 64000


def test_images_of_mixed_sizes_are_refused_before_any_is_decoded(tmp_path, monkeypatch):
    Image = pytest.importorskip("PIL.Image")
    from lastedge.runtime import images

    for name, size in (("a.png", (8, 8)), ("b.png", (9, 8))):
        Image.new("L", size).save(tmp_path / name)

    def decoded(*args, **kwargs):
        raise AssertionError("an image was decoded before the sizes were compared")

    monkeypatch.setattr(images, "_read_image", decoded)
    with pytest.raises(ValueError, match=r"images differ in size: a.png is 8x8, b.png is 8x9 "
                                         r"\(height x width, as --image-size HxW takes it\)"):
        images.read_images([tmp_path / "a.png", tmp_path / "b.png"], tmp_path)


# --- image folders -------------------------------------------------------------------------------

def test_image_folder_is_split_like_a_csv(digits_images, image_folder, tmp_path):
    images, labels = digits_images()
    data = load_dataset(str(image_folder(tmp_path / "digits_png", images[:200], labels[:200])))
    assert data.X_train.shape == (150, 64) and data.X_test.shape == (50, 64)
    assert data.image_shape == (8, 8) and data.y_train.dtype.kind == "i"
    rows = {tuple(r) for r in images[:200].reshape(200, 64).astype(np.float32)}
    assert all(tuple(r) in rows for r in data.X_test)  # pixel values as stored
    again = load_dataset(str(tmp_path / "digits_png"), random_state=0)
    np.testing.assert_array_equal(data.X_test, again.X_test)


def test_train_and_test_subfolders_are_kept_and_names_are_labels(digits_images, image_folder, tmp_path):
    images, labels = digits_images()
    names = {d: f"digit_{d}" for d in range(10)}
    image_folder(tmp_path / "train", images[:100], labels[:100], names)
    image_folder(tmp_path / "test", images[100:130], labels[100:130], names)
    (tmp_path / "train" / "digit_0" / "notes.txt").write_text("not an image")
    (tmp_path / "train" / "digit_0" / ".DS_Store").write_bytes(b"\0")
    data = load_dataset(str(tmp_path))
    assert len(data.X_train) == 100 and len(data.X_test) == 30
    assert set(data.y_train) == {f"digit_{d}" for d in labels[:100]}


def test_colour_anywhere_makes_every_row_rgb(image_folder, tmp_path):
    rng = np.random.default_rng(0)
    grey = rng.integers(0, 255, (6, 5, 4), dtype=np.uint8)
    image_folder(tmp_path, grey, np.arange(6) % 2)
    Image.fromarray(np.full((5, 4, 3), [255, 0, 0], np.uint8)).save(tmp_path / "1" / "red.png")
    data = load_dataset(str(tmp_path), test_size=0.4)
    assert data.image_shape == (5, 4, 3) and data.X_train.shape[1] == 60
    X = np.concatenate([data.X_train, data.X_test]).reshape(-1, 5, 4, 3)
    red = X[(X[..., 0] == 255).all(axis=(1, 2)) & (X[..., 1] == 0).all(axis=(1, 2))]
    assert len(red) == 1
    others = X[~((X[..., 0] == 255).all(axis=(1, 2)) & (X[..., 1] == 0).all(axis=(1, 2)))]
    np.testing.assert_array_equal(others[..., 0], others[..., 2])  # grey images, replicated


@pytest.mark.parametrize("setup, message", [
    (lambda d: (d / "a").mkdir(), "class folder .* holds no images"),
    (lambda d: (d / "loose.png").write_bytes(b""), "has no class subfolders"),
    (lambda d: ((d / "a").mkdir(), (d / "a" / "x.png").write_bytes(b"\x89PNG damaged")), "cannot read image"),
])
def test_broken_image_folders_are_refused(tmp_path, setup, message):
    setup(tmp_path)
    with pytest.raises(ValueError, match=message):
        load_dataset(str(tmp_path))


def test_images_of_different_sizes_are_refused_by_name(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "a" / "small.png")
    Image.fromarray(np.zeros((8, 9), np.uint8)).save(tmp_path / "b" / "wide.png")
    with pytest.raises(ValueError, match=r"a/small.png is 8x8, b/wide.png is 8x9 \(height x width"):
        load_dataset(str(tmp_path))
