"""Folder data sources through the ``train`` / ``predict`` / ``export`` / ``inspect`` commands:
IDX folders and image folders, their image sizes and colours, and their one-line errors."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from lastedge.cli import main
from lastedge.runtime import Model, load
from lastedge.runtime.data import load_dataset

Image = pytest.importorskip("PIL.Image")

# --- through the commands ------------------------------------------------------------------------

@pytest.mark.slow
def test_train_predict_export_on_an_image_folder(digits_images, image_folder, tmp_path, capsys):
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
def test_train_on_an_idx_folder(mnist_like_folder, tmp_path, capsys):
    (tmp_path / "mnist_like").mkdir()
    folder = mnist_like_folder(tmp_path / "mnist_like")
    assert main(["train", "--data", str(folder), "--atoms", "5", "--max-dca-iter", "3",
                 "--preprocess", "center-l2", "--out", str(tmp_path / "m.npz"), "--quiet", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["data"]["train_rows"] == 1400 and summary["data"]["test_rows"] == 397
    assert summary["metrics"]["test_accuracy"] > 0.8


def test_missing_pillow_names_the_extra(digits_images, image_folder, tmp_path, capsys, monkeypatch):
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


def test_predict_on_unlabelled_images_names_each_file(image_folder, digits_images, tmp_path, capsys):
    images, labels = digits_images()
    model = train_on_pngs(image_folder, tmp_path, images[:300], labels[:300])
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


def test_grey_images_meet_a_colour_model_as_equal_channels(image_folder, tmp_path, capsys):
    rng = np.random.default_rng(1)
    colour = rng.integers(0, 255, (40, 4, 4, 3), dtype=np.uint8)
    colour[:20, ..., 0] = 255  # class 0 is red, class 1 is not
    model = train_on_pngs(image_folder, tmp_path, colour, np.r_[[0] * 20, [1] * 20])
    capsys.readouterr()
    grey = rng.integers(0, 255, (3, 4, 4), dtype=np.uint8)
    (tmp_path / "grey").mkdir()
    for i, image in enumerate(grey):
        Image.fromarray(image).save(tmp_path / "grey" / f"{i}.png")
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(tmp_path / "grey"), "--json"]) == 0
    as_rgb = np.repeat(grey[..., None], 3, axis=3).reshape(3, -1).astype(np.float32)
    assert json.loads(capsys.readouterr().out)["predictions"] == model.predict(as_rgb).tolist()


def train_on_pngs(image_folder, tmp_path, images, labels) -> Model:
    folder = image_folder(tmp_path / "pngs", images, labels)
    assert main(["train", "--data", str(folder), "--atoms", "4", "--max-dca-iter", "2",
                 "--out", str(tmp_path / "m.npz"), "--quiet"]) == 0
    return Model.load(tmp_path / "m.npz")


def test_test_images_unlike_training_images_are_refused(digits_images, image_folder, tmp_path):
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


def test_a_model_trained_at_one_size_scales_new_images_to_it(digits_images, image_folder, tmp_path, capsys):
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
def test_an_image_size_the_model_cannot_read_is_refused_before_any_image_is_decoded(digits_images, image_folder, 
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


def test_colour_images_meet_a_grey_model_as_their_luma(image_folder, digits_images, tmp_path, capsys):
    images, labels = digits_images()
    model = train_on_pngs(image_folder, tmp_path, images[:200], labels[:200])
    capsys.readouterr()
    (tmp_path / "colour").mkdir()
    rgb = np.stack([images[200:203]] * 3, axis=-1)  # grey digits stored as RGB files
    rgb[..., 0] = np.minimum(rgb[..., 0].astype(int) + 30, 255)  # with a red tint
    for i, image in enumerate(rgb):
        Image.fromarray(image).save(tmp_path / "colour" / f"{i}.png")
    assert main(["predict", str(tmp_path / "m.npz"), "--data", str(tmp_path / "colour"), "--json"]) == 0
    luma = np.stack([np.asarray(Image.fromarray(image).convert("L"), np.float32).ravel() for image in rgb])
    assert json.loads(capsys.readouterr().out)["predictions"] == model.predict(luma).tolist()


def test_a_folder_given_as_dot_or_dot_dot_is_named_by_the_folder_it_is(digits_images, image_folder, mnist_like_folder, tmp_path, capsys, monkeypatch):
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
