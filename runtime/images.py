"""Image folders: one subfolder of images per class, the layout most image data sets come in.

``folder/<class>/*.png`` (any format Pillow reads) gives labelled rows, one flattened image per
row: ``H*W`` grey values, or ``H*W*3`` RGB values (channels last) when any image has colour. A
folder holding ``train/`` and ``test/`` (each with class subfolders) keeps that split. Images of
different sizes are an error unless a ``size`` is given: then each is scaled to it (Pillow's
antialiased bilinear filter; the aspect ratio is not kept: crop first where that matters).
Pillow is imported on first use (``pip install 'lastedge[images]'``).
"""

from __future__ import annotations

import operator
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm", ".pbm")
GREY_MODES = ("1", "L", "LA", "P")  # "P" is checked for a grey palette below
MAX_IMAGE_PIXELS = 4096 * 4096  # a scaled image's size: 200 MB per colour row of float32 already


def image_split(folder: Path) -> dict[str, Path] | None:
    """``{"train": folder/train, "test": folder/test}`` when ``folder`` is split that way (``test``
    optional), else None."""
    train = _child(folder, "train")
    if train is None or not class_folders(train):
        return None
    test = _child(folder, "test")
    return {"train": train} if test is None else {"train": train, "test": test}


def parse_image_size(text: str) -> tuple[int, int]:
    """``"32x32"`` -> ``(height, width)``, checked by ``check_image_size``."""
    parts = [part.strip() for part in text.lower().split("x")]
    if len(parts) != 2 or not all(part.isdecimal() for part in parts):  # isdigit() takes "²"
        raise ValueError(f"an image size is HEIGHTxWIDTH in pixels (e.g. 32x32), got {text!r}")
    digits = [part.lstrip("0") or "0" for part in parts]
    if any(len(d) > 9 for d in digits):  # too large for any image (and int() refuses 4300 digits)
        raise _too_large(text)
    return check_image_size((int(digits[0]), int(digits[1])))


def check_image_size(size: tuple[int, int]) -> tuple[int, int]:
    """``size`` (height, width) if images can be scaled to it: whole numbers >= 1 of at most
    ``MAX_IMAGE_PIXELS`` pixels in all, refused before any image is decoded (scaling to
    60000x60000 asked for gigabytes per image before the model said it wanted 8x8)."""
    try:
        height, width = (operator.index(n) for n in size)  # Python or numpy integers
    except (TypeError, ValueError):
        raise ValueError(f"an image size is (height, width) in pixels, got {size!r}") from None
    if min(height, width) < 1:
        raise ValueError(f"an image size is HEIGHTxWIDTH in pixels (e.g. 32x32), got {height}x{width}")
    if height * width > MAX_IMAGE_PIXELS:
        raise _too_large(f"{height}x{width}")
    return height, width


def _too_large(size: str) -> ValueError:
    return ValueError(f"an image size is at most {MAX_IMAGE_PIXELS:,} pixels (e.g. 4096x4096), got {size}")


def read_image_folder(folder: Path, size: tuple[int, int] | None = None
                      ) -> tuple[np.ndarray, list[str], tuple[int, ...]]:
    """``(X float32 [m, H*W or H*W*3], labels [m], image shape)`` from ``folder/<class>/<image>``.

    Each row's label is its subfolder's name. Files with other suffixes
    (and hidden files) are skipped; a class folder without images is an error. ``size`` (height,
    width) scales every image to it.
    """
    classes = class_folders(folder)
    if not classes:
        raise ValueError(f"{folder} has no class subfolders: an image folder holds one subfolder "
                         f"of images per class (e.g. {folder}/cat/1.png, {folder}/dog/2.png)")
    paths, labels = [], []
    for class_folder in classes:
        images = image_files(class_folder)
        if not images:
            raise ValueError(f"class folder {class_folder} holds no images "
                             f"({', '.join(IMAGE_SUFFIXES)})")
        paths += images
        labels += [class_folder.name] * len(images)
    X, shape = read_images(paths, folder, size)
    return X, labels, shape


def image_files(folder: Path) -> list[Path]:
    """The images directly in ``folder``, sorted by name (hidden files and other suffixes skipped)."""
    return [p for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_SUFFIXES]


def read_images(paths: list[Path], root: Path, size: tuple[int, int] | None = None
                ) -> tuple[np.ndarray, tuple[int, ...]]:
    """``(X float32 [m, H*W or H*W*3], image shape)``: one flattened image per row, all grey or
    (when any has colour) all RGB, each scaled to ``size`` (height, width) when given; without
    it, images of different sizes are an error naming two of them (relative to ``root``)."""
    if size is None:
        _check_one_size(paths, root)
    else:
        size = check_image_size(size)
    pixels = [_read_image(path, size) for path in paths]
    if any(p.ndim == 3 for p in pixels):
        pixels = [p if p.ndim == 3 else np.repeat(p[..., None], 3, axis=2) for p in pixels]
    return np.stack(pixels).reshape(len(pixels), -1), pixels[0].shape


def _check_one_size(paths: list[Path], root: Path) -> None:
    """Refuse images of different sizes from their headers, before any is decoded (a folder of
    large images of mixed sizes would otherwise fill memory first)."""
    first = None
    for path in paths:
        with _opened(path) as image:
            width, height = image.size
        first = first or (path, width, height)
        if (width, height) != first[1:]:
            raise ValueError(f"images differ in size: {first[0].relative_to(root)} is "
                             f"{first[2]}x{first[1]}, {path.relative_to(root)} is {height}x{width} "
                             "(height x width, as --image-size HxW takes it); give an image size to "
                             "scale them to")


def _read_image(path: Path, size: tuple[int, int] | None = None) -> np.ndarray:
    """float32 [H, W] (grey) or [H, W, 3] (colour) values as stored (0-255 for 8-bit images),
    scaled to ``size`` (height, width) when given."""
    with _opened(path) as image:
        image.load()
        if size is not None and image.size != (size[1], size[0]):
            image = _scaled(image, size)
        return _pixels(image)


@contextmanager
def _opened(path: Path) -> Iterator[Any]:
    """``path`` opened by Pillow (its header read, its pixels not yet decoded); any failure to
    read it, in the block too, is a ``ValueError`` naming the file."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # a damaged file's metadata warnings are noise; a huge image is an error, not a warning
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                yield image
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning,
            OSError, ValueError, SyntaxError) as err:  # SyntaxError: Pillow's "broken PNG file"
        raise ValueError(f"cannot read image {path} ({err})") from None


def _scaled(image, size: tuple[int, int]):
    """``image`` scaled to (height, width); palette and 1-bit images first become L or RGB, so
    that the filter averages values rather than palette indices."""
    from PIL import Image

    if image.mode == "P":
        image = image.convert("RGB" if _coloured_palette(image) else "L")
    elif image.mode in ("1", "LA"):
        image = image.convert("L")
    elif image.mode in ("RGBA", "PA"):
        image = image.convert("RGB")
    elif image.mode.startswith("I;16"):  # Pillow's resize garbles big-endian 16-bit values
        image = image.convert("I")
    return image.resize((size[1], size[0]), Image.Resampling.BILINEAR)


def _pixels(image) -> np.ndarray:
    if image.mode in GREY_MODES and not _coloured_palette(image):
        return np.asarray(image.convert("L"), dtype=np.float32)
    if image.mode.startswith(("I", "F")):  # 16-bit and float grey
        return np.asarray(image, dtype=np.float32)
    return np.asarray(image.convert("RGB"), dtype=np.float32)


def _coloured_palette(image) -> bool:
    if image.mode != "P":
        return False
    palette = np.asarray(image.getpalette() or [], dtype=np.int64).reshape(-1, 3)
    return bool((palette != palette[:, :1]).any())


def class_folders(folder: Path) -> list[Path]:
    """The subfolders of ``folder`` that name classes (hidden ones, such as ``.thumbs``, do not)."""
    return [p for p in sorted(folder.iterdir()) if p.is_dir() and not p.name.startswith(".")]


def _child(folder: Path, name: str) -> Path | None:
    path = folder / name
    return path if path.is_dir() else None
