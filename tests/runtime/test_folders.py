"""Folder data sources: IDX files (MNIST's format) and image folders, through ``load_dataset``, the
``train`` / ``predict`` / ``export`` commands, and every way such a folder can be wrong."""

from __future__ import annotations

import gzip
import json
import sys

import numpy as np
import pytest

from lastedge.cli import main
from lastedge.runtime import Model, load
from lastedge.runtime.data import load_dataset
from lastedge.runtime.idx import read_idx

Image = pytest.importorskip("PIL.Image")

IDX_CODES = {np.dtype("u1"): 0x08, np.dtype("i1"): 0x09, np.dtype(">i2"): 0x0B, np.dtype(">i4"): 0x0C,
             np.dtype(">f4"): 0x0D, np.dtype(">f8"): 0x0E}


def write_idx(path, array: np.ndarray, *, gz: bool = False, extra: bytes = b"", cut: int = 0):
    """An IDX file as the MNIST family writes it (big-endian values); ``extra`` / ``cut`` damage it."""
    array = np.asarray(array)
    stored = array.astype(array.dtype.newbyteorder(">"))
    head = bytes([0, 0, IDX_CODES[stored.dtype], array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    data = (head + stored.tobytes() + extra)[:len(head) + stored.nbytes + len(extra) - cut]
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def digits_images():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return (X * 255 / 16).astype(np.uint8).reshape(-1, 8, 8), y


def mnist_like_folder(folder, *, gz: bool = True, test: bool = True):
    images, labels = digits_images()
    suffix = ".gz" if gz else ""
    write_idx(folder / f"train-images-idx3-ubyte{suffix}", images[:1400], gz=gz)
    write_idx(folder / f"train-labels-idx1-ubyte{suffix}", labels[:1400].astype(np.uint8), gz=gz)
    if test:
        write_idx(folder / f"t10k-images-idx3-ubyte{suffix}", images[1400:], gz=gz)
        write_idx(folder / f"t10k-labels-idx1-ubyte{suffix}", labels[1400:].astype(np.uint8), gz=gz)
    return folder


def image_folder(folder, images, labels, names=None):
    for i, (image, label) in enumerate(zip(images, labels)):
        sub = folder / (names[label] if names else str(label))
        sub.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(sub / f"{i}.png")
    return folder


# --- IDX -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["u1", "i1", ">i2", ">i4", ">f4", ">f8"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gz"])
def test_idx_round_trip(tmp_path, dtype, gz):
    array = (np.arange(2 * 3 * 4) - 5).reshape(2, 3, 4).astype(dtype) if dtype != "u1" else \
        np.arange(24, dtype="u1").reshape(2, 3, 4)
    read = read_idx(write_idx(tmp_path / f"a-idx3{'.gz' if gz else ''}", array, gz=gz))
    np.testing.assert_array_equal(read, array)
    assert read.dtype.isnative and read.shape == (2, 3, 4)


def test_idx_folder_gives_the_mnist_split(tmp_path):
    data = load_dataset(str(mnist_like_folder(tmp_path)))
    images, labels = digits_images()
    assert data.X_train.shape == (1400, 64) and data.X_test.shape == (397, 64)
    np.testing.assert_array_equal(data.X_train, images[:1400].reshape(1400, 64))
    np.testing.assert_array_equal(data.y_test, labels[1400:])
    assert data.image_shape == (8, 8) and data.name == tmp_path.name


def test_idx_folder_without_test_part_and_plain_copies_preferred(tmp_path):
    mnist_like_folder(tmp_path, gz=False, test=False)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(b"stale, damaged copy")  # the plain one is read
    data = load_dataset(str(tmp_path))
    assert not data.has_test and data.X_train.shape == (1400, 64)


@pytest.mark.parametrize("damage, message", [
    (lambda p: write_idx(p, np.zeros((3, 4, 4), "u1"), cut=5), "is truncated: its header declares shape"),
    (lambda p: write_idx(p, np.zeros((3, 4, 4), "u1"), extra=b"x"), "more bytes than its header declares"),
    (lambda p: p.write_bytes(b"\x00\x00\x08\x03\x00\x00"), "truncated inside its header"),
    (lambda p: p.write_bytes(b"PK\x03\x04 a zip, not idx"), "is not an IDX file"),
    (lambda p: p.write_bytes(b""), "is not an IDX file"),
    (lambda p: p.write_bytes(b"\x00\x00\x08\x03" + b"\xff\xff\xff\xff" * 3), "than the 4 GiB limit"),
    (lambda p: p.write_bytes(b"\x00\x00\x08\x03" + (1000).to_bytes(4, "big") * 3 + b"\0" * 9),
     r"1000000000 bytes of values\), the file can hold at most 9$"),
    (lambda p: p.write_bytes(b"\x00\x00\x0e\xff" + b"\xff\xff\xff\xff" * 255), r"\(255 dimensions\)"),
    # one value in 65 dimensions: numpy's own reshape error named no file
    (lambda p: p.write_bytes(b"\x00\x00\x08\x41" + b"\x00\x00\x00\x01" * 65 + b"\0"),
     "train-images-idx3-ubyte declares 65 dimensions, more than the 32"),
])
def test_damaged_idx_files_are_refused(tmp_path, damage, message):
    damage(tmp_path / "train-images-idx3-ubyte")
    with pytest.raises(ValueError, match=message):
        read_idx(tmp_path / "train-images-idx3-ubyte")


def test_gzip_declaring_more_than_deflate_can_hold_is_refused_before_reading(tmp_path):
    path = tmp_path / "x-idx3.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x03" + (1000).to_bytes(4, "big") * 3 + b"\0" * 9))
    with pytest.raises(ValueError, match=r"x-idx3.gz is truncated: .* the file can hold at most \d+$"):
        read_idx(path)


def test_damaged_gzip_is_refused(tmp_path):
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
def test_incomplete_idx_folders_are_refused(tmp_path, files, message):
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
def test_idx_labels_and_shapes_that_make_no_data_set_are_refused(tmp_path, arrays, message):
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

def test_image_folder_is_split_like_a_csv(tmp_path):
    images, labels = digits_images()
    data = load_dataset(str(image_folder(tmp_path / "digits_png", images[:200], labels[:200])))
    assert data.X_train.shape == (150, 64) and data.X_test.shape == (50, 64)
    assert data.image_shape == (8, 8) and data.y_train.dtype.kind == "i"
    rows = {tuple(r) for r in images[:200].reshape(200, 64).astype(np.float32)}
    assert all(tuple(r) in rows for r in data.X_test)  # pixel values as stored
    again = load_dataset(str(tmp_path / "digits_png"), random_state=0)
    np.testing.assert_array_equal(data.X_test, again.X_test)


def test_train_and_test_subfolders_are_kept_and_names_are_labels(tmp_path):
    images, labels = digits_images()
    names = {d: f"digit_{d}" for d in range(10)}
    image_folder(tmp_path / "train", images[:100], labels[:100], names)
    image_folder(tmp_path / "test", images[100:130], labels[100:130], names)
    (tmp_path / "train" / "digit_0" / "notes.txt").write_text("not an image")
    (tmp_path / "train" / "digit_0" / ".DS_Store").write_bytes(b"\0")
    data = load_dataset(str(tmp_path))
    assert len(data.X_train) == 100 and len(data.X_test) == 30
    assert set(data.y_train) == {f"digit_{d}" for d in labels[:100]}


def test_colour_anywhere_makes_every_row_rgb(tmp_path):
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


# --- through the commands ------------------------------------------------------------------------

@pytest.mark.slow
def test_train_predict_export_on_an_image_folder(tmp_path, capsys):
    images, labels = digits_images()
    folder = image_folder(tmp_path / "pngs", images[:600], labels[:600])
    model_path = tmp_path / "m.npz"
    assert main(["train", "--data", str(folder), "--atoms", "5", "--max-dca-iter", "3",
                 "--preprocess", "center-l2", "--out", str(model_path), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["metrics"]["test_accuracy"] > 0.8  # measured 0.95 (chance 0.1)
    assert Model.load(model_path).meta["data"]["image_shape"] == [8, 8]  # for `inspect --atoms`
    assert main(["predict", str(model_path), "--data", str(folder), "--json"]) == 0
    predicted = json.loads(capsys.readouterr().out)
    recorded = summary["metrics"]["test_accuracy"]  # stored to 5 digits
    assert predicted["rows"] == 150 and predicted["accuracy"] == pytest.approx(recorded, abs=1e-5)
    pytest.importorskip("onnxruntime")
    assert main(["export", str(model_path), "--format", "onnx", "--precision", "int8", "--calibration", str(folder),
                 "--out", str(tmp_path / "m.onnx"), "--json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert exported["parity"]["agreement"] >= 0.99


@pytest.mark.slow
def test_train_on_an_idx_folder(tmp_path, capsys):
    (tmp_path / "mnist_like").mkdir()
    folder = mnist_like_folder(tmp_path / "mnist_like")
    assert main(["train", "--data", str(folder), "--atoms", "5", "--max-dca-iter", "3",
                 "--preprocess", "center-l2", "--out", str(tmp_path / "m.npz"), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["data"]["train_rows"] == 1400 and summary["data"]["test_rows"] == 397
    assert summary["metrics"]["test_accuracy"] > 0.8


def test_missing_pillow_names_the_extra(tmp_path, capsys, monkeypatch):
    images, labels = digits_images()
    folder = image_folder(tmp_path / "pngs", images[:20], labels[:20])
    monkeypatch.setitem(sys.modules, "PIL", None)
    assert main(["train", "--data", str(folder), "--atoms", "2", "--out", str(tmp_path / "m.npz")]) == 1
    assert capsys.readouterr().err == (f"lastedge train: reading {folder} ...\n"
                                       "lastedge train: error: PIL is not installed: pip install 'lastedge[images]'\n")


def test_inspect_draws_atoms_in_the_recorded_colour_image_shape(tmp_path, capsys):
    """27 features are no square image: only the shape recorded at training tells how to draw them."""
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    for label, channel in (("red", 0), ("blue", 2)):
        (tmp_path / "rgb" / label).mkdir(parents=True)
        for i in range(12):
            image = rng.integers(0, 80, (3, 3, 3), dtype=np.uint8)
            image[..., channel] += 150
            Image.fromarray(image).save(tmp_path / "rgb" / label / f"{i}.png")
    model_path = tmp_path / "m.npz"
    assert main(["train", "--data", str(tmp_path / "rgb"), "--atoms", "2", "--max-dca-iter", "2",
                 "--out", str(model_path), "--quiet"]) == 0
    assert main(["inspect", str(model_path), "--atoms", str(tmp_path / "atoms.png")]) == 0
    assert (tmp_path / "atoms.png").stat().st_size > 0
    capsys.readouterr()


def test_a_decompression_bomb_is_refused_not_decoded(tmp_path):
    """A small file that decodes to 100 M pixels (Pillow only warns) would take 1.2 GB as rows."""
    (tmp_path / "a").mkdir()
    Image.new("1", (10_000, 10_000)).save(tmp_path / "a" / "bomb.png")
    with pytest.raises(ValueError, match="cannot read image .*bomb.png .*exceeds limit"):
        load_dataset(str(tmp_path))


def test_predict_on_unlabelled_images_names_each_file(tmp_path, capsys):
    images, labels = digits_images()
    model = train_on_pngs(tmp_path, images[:300], labels[:300])
    capsys.readouterr()
    frames = tmp_path / "frames"
    (frames / ".thumbnails").mkdir(parents=True)  # a hidden folder (a file browser's) is no class
    for i in range(300, 305):
        Image.fromarray(images[i]).save(frames / f"frame{i}.png")
    expected = model.predict(images[300:305].reshape(5, 64).astype(np.float32)).tolist()
    out = tmp_path / "labels.csv"
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(frames), "--out", str(out), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["files"] == [f"frame{i}.png" for i in range(300, 305)] and result["accuracy"] is None
    assert result["predictions"] == expected
    lines = out.read_text().splitlines()
    assert lines[0].startswith("file,prediction,score_0") and lines[1].startswith(f"frame300.png,{expected[0]},")
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(frames / "frame301.png")]) == 0
    assert capsys.readouterr().out.strip() == f"predictions (first 1 of 1): frame301.png={expected[1]}"
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(frames), "--plot", str(tmp_path / "c.png")]) == 1
    assert "--plot draws the confusion matrix, which needs labels; 5 image(s) in" in capsys.readouterr().err


def test_grey_images_meet_a_colour_model_as_equal_channels(tmp_path, capsys):
    rng = np.random.default_rng(1)
    colour = rng.integers(0, 255, (40, 4, 4, 3), dtype=np.uint8)
    colour[:20, ..., 0] = 255  # class 0 is red, class 1 is not
    model = train_on_pngs(tmp_path, colour, np.r_[[0] * 20, [1] * 20])
    capsys.readouterr()
    grey = rng.integers(0, 255, (3, 4, 4), dtype=np.uint8)
    (tmp_path / "grey").mkdir()
    for i, image in enumerate(grey):
        Image.fromarray(image).save(tmp_path / "grey" / f"{i}.png")
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(tmp_path / "grey"), "--json"]) == 0
    as_rgb = np.repeat(grey[..., None], 3, axis=3).reshape(3, -1).astype(np.float32)
    assert json.loads(capsys.readouterr().out)["predictions"] == model.predict(as_rgb).tolist()


def train_on_pngs(tmp_path, images, labels) -> Model:
    folder = image_folder(tmp_path / "pngs", images, labels)
    assert main(["train", "--data", str(folder), "--atoms", "4", "--max-dca-iter", "2",
                 "--out", str(tmp_path / "m.npz"), "--quiet"]) == 0
    return Model.load(tmp_path / "m.npz")


def test_test_images_unlike_training_images_are_refused(tmp_path):
    images, labels = digits_images()
    image_folder(tmp_path / "train", images[:20], labels[:20])
    (tmp_path / "test" / "0").mkdir(parents=True)
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tmp_path / "test" / "0" / "colour.png")
    with pytest.raises(ValueError, match=r"test images have shape \(8, 8, 3\), training images \(8, 8\)"):
        load_dataset(str(tmp_path))


def test_an_image_size_scales_every_image(tmp_path):
    for label, (height, width, value) in enumerate([(8, 8, 40), (12, 10, 200), (5, 9, 90)]):
        (tmp_path / f"c{label}").mkdir()
        for i in range(4):
            Image.fromarray(np.full((height, width), value, np.uint8)).save(tmp_path / f"c{label}" / f"{i}.png")
    Image.fromarray(np.full((7, 7, 4), 255, np.uint8), "RGBA").save(tmp_path / "c0" / "rgba.png")
    data = load_dataset(str(tmp_path), image_size=(6, 4), test_size=0.25)
    assert data.image_shape == (6, 4, 3) and data.X_train.shape[1] == 6 * 4 * 3
    X = np.concatenate([data.X_train, data.X_test])
    assert sorted({int(v) for v in np.unique(X)}) == [40, 90, 200, 255]  # flat images stay flat
    with pytest.raises(ValueError, match="applies to image folders only"):
        load_dataset("digits", image_size=(6, 4))


@pytest.mark.parametrize("text", ["32", "0x4", "axb", "4x4x3", "", "\u00b2x2"])
def test_bad_image_sizes_are_refused(text):
    from lastedge.runtime.images import parse_image_size

    with pytest.raises(ValueError, match="HEIGHTxWIDTH"):
        parse_image_size(text)


@pytest.mark.parametrize("text", ["60000x60000", "4097x4096", "9" * 5000 + "x1"])
def test_an_absurd_image_size_is_refused_before_any_image_is_read(tmp_path, capsys, text):
    """60000x60000 was accepted and every image scaled to it (gigabytes each) before predict said
    the model wanted 8x8; 5000 digits raised Python's own int() limit message."""
    from lastedge.runtime.images import MAX_IMAGE_PIXELS, parse_image_size

    assert parse_image_size("4096x4096") == (4096, 4096) and 4096 * 4096 == MAX_IMAGE_PIXELS
    with pytest.raises(ValueError, match="an image size is at most 16,777,216 pixels"):
        parse_image_size(text)
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "1.png").write_bytes(b"not an image")  # decoding it would fail: it must not start
    for size in ((60000, 60000), (0, 4)):
        with pytest.raises(ValueError, match="an image size is (at most|HEIGHTxWIDTH)"):
            load_dataset(str(tmp_path), image_size=size)
    with pytest.raises(SystemExit) as exit_status:  # a usage error, before the model is opened
        main(["predict", "model.npz", "--data", str(tmp_path), "--image-size", text])
    err = capsys.readouterr().err
    assert exit_status.value.code == 2
    assert "at most 16,777,216 pixels" in err and len(err.strip().splitlines()) == 1


def test_a_model_trained_at_one_size_scales_new_images_to_it(tmp_path, capsys):
    """train --image-size records the size (in the .npz and in exported files): predict and export
    --calibration scale images to it."""
    images, labels = digits_images()
    folder = image_folder(tmp_path / "pngs", images[:400], labels[:400])
    model_path = tmp_path / "m.npz"
    assert main(["train", "--data", str(folder), "--atoms", "4", "--max-dca-iter", "2", "--image-size", "6x6",
                 "--preprocess", "center-l2", "--out", str(model_path), "--quiet"]) == 0
    model = Model.load(model_path)
    assert model.n_features == 36 and model.meta["data"]["image_shape"] == [6, 6]
    frames = tmp_path / "frames"
    frames.mkdir()
    for i in range(400, 404):
        Image.fromarray(images[i]).save(frames / f"{i}.png")  # 8x8, as a camera would deliver
    capsys.readouterr()
    assert main(["predict", str(model_path), "--data", str(frames), "--json"]) == 0
    scaled = np.stack([np.asarray(Image.fromarray(images[i]).resize((6, 6), Image.Resampling.BILINEAR),
                                  dtype=np.float32).ravel() for i in range(400, 404)])
    assert json.loads(capsys.readouterr().out)["predictions"] == model.predict(scaled).tolist()
    pytest.importorskip("ai_edge_litert")
    tflite = tmp_path / "m.tflite"
    assert main(["export", str(model_path), "--format", "tflite", "--calibration", str(folder),
                 "--out", str(tflite)]) == 0  # the check rows come from the folder, scaled to 6x6
    assert load(tflite).image_shape == (6, 6)  # the export metadata carries the size too
    capsys.readouterr()
    assert main(["predict", str(tflite), "--data", str(frames), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["predictions"] == model.predict(scaled).tolist()
    assert main(["predict", str(tflite), "--data", str(frames), "--image-size", "5x5"]) == 1
    assert "--image-size 5x5 makes 25 values per grey image, 75 per colour one; the model expects 36 " \
           "(it was trained on 6x6 images)" in capsys.readouterr().err


@pytest.mark.parametrize("size, fits", [("8x8", True), ("4x4", False), ("8x24", False)])
def test_an_image_size_the_model_cannot_read_is_refused_before_any_image_is_decoded(
        tmp_path, capsys, monkeypatch, size, fits):
    """A wrong --image-size was found only after every image of the folder had been read and scaled."""
    import lastedge.runtime.images as images_module

    images, labels = digits_images()
    model_path = tmp_path / "m.npz"
    Model(np.eye(64, 2), np.ones((2, 1)), [0, 1]).save(model_path)  # 64 features, no recorded shape
    folder = image_folder(tmp_path / "pngs", images[:6], labels[:6] % 2)
    decoded = []
    read = images_module.read_images
    monkeypatch.setattr(images_module, "read_images", lambda *a, **k: (decoded.append(1), read(*a, **k))[1])
    code = main(["predict", str(model_path), "--data", str(folder / "0"), "--image-size", size])
    err = capsys.readouterr().err
    assert (code == 0) == fits and bool(decoded) == fits
    if not fits:
        assert len(err.splitlines()) == 1 and f"--image-size {size} makes" in err and "the model expects 64" in err


@pytest.mark.parametrize("value", [[6, 6], [2, 6, 3], None, [6, 7], [6, 3, 2], [6, "6"], [True, 36], "6x6", [0, 36], [1, 36, 1]])
def test_a_recorded_image_shape_is_used_only_when_it_fits(value):
    """A convenience, not a contract: a shape that cannot hold the model's 36 features is ignored."""
    model = Model(np.eye(36, 2), np.ones((2, 1)), [0, 1], meta={"data": {"image_shape": value}})
    fits = value in ([6, 6], [2, 6, 3])
    assert model.image_shape == (tuple(value) if fits else None)


def test_colour_images_meet_a_grey_model_as_their_luma(tmp_path, capsys):
    images, labels = digits_images()
    model = train_on_pngs(tmp_path, images[:200], labels[:200])
    capsys.readouterr()
    (tmp_path / "colour").mkdir()
    rgb = np.stack([images[200:203]] * 3, axis=-1)  # grey digits stored as RGB files
    rgb[..., 0] = np.minimum(rgb[..., 0].astype(int) + 30, 255)  # with a red tint
    for i, image in enumerate(rgb):
        Image.fromarray(image).save(tmp_path / "colour" / f"{i}.png")
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(tmp_path / "colour"), "--json"]) == 0
    luma = np.stack([np.asarray(Image.fromarray(image).convert("L"), np.float32).ravel() for image in rgb])
    assert json.loads(capsys.readouterr().out)["predictions"] == model.predict(luma).tolist()


def test_a_folder_given_as_dot_or_dot_dot_is_named_by_the_folder_it_is(tmp_path, capsys, monkeypatch):
    """Path(".").name is "": `train --data .` printed and recorded an empty source name."""
    images, labels = digits_images()
    (tmp_path / "mnist_like" / "sub").mkdir(parents=True)
    mnist_like_folder(tmp_path / "mnist_like")
    image_folder(tmp_path / "pngs", images[:40], labels[:40] % 2)
    monkeypatch.chdir(tmp_path / "mnist_like")
    assert load_dataset(".").name == "mnist_like" and load_dataset("sub/..").name == "mnist_like"
    monkeypatch.chdir(tmp_path / "pngs")
    assert load_dataset(".").name == "pngs" and load_dataset("0/..").name == "pngs"
    assert main(["train", "--data", ".", "--atoms", "2", "--max-dca-iter", "1", "--out",
                 str(tmp_path / "m.npz"), "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["source"] == "pngs"
    assert Model.load(tmp_path / "m.npz").meta["data"]["source"] == "pngs"
