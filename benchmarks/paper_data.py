"""The paper's data sets, built from the files in ``../shared/data`` (see its SOURCES.md).

Run by the benchmark scripts only; tests never need these files.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TEXTURE_TASKS = {"bark-woodgrain": ("bark", "woodgrain"), "pigskin-pressedcl": ("pigskin", "pressedcl")}
# Dark rows at the bottom of the USC-SIPI scans: 2 for every image, 26 for pigskin (SOURCES.md).
_USABLE_ROWS = {"pigskin": 486}
_DEFAULT_USABLE_ROWS = 510


def check_data(parser: argparse.ArgumentParser, folder: Path, *names: str) -> None:
    """Exit with a usage error naming the files of ``names`` that ``folder`` lacks, before any work."""
    missing = [name for name in names if not (Path(folder) / name).is_file()]
    if missing:
        parser.error(f"no {', '.join(missing)} in {folder}; pass --data")


def texture_patches(image: np.ndarray, n: int, size: int, rng: np.random.RandomState) -> np.ndarray:
    """``n`` random ``size x size`` patches of ``image``, flattened, [n, size * size]."""
    rows = rng.randint(0, image.shape[0] - size + 1, n)
    cols = rng.randint(0, image.shape[1] - size + 1, n)
    return np.stack([image[r:r + size, c:c + size].ravel() for r, c in zip(rows, cols)]).astype(np.float64)


def equalized(image: np.ndarray) -> np.ndarray:
    """``image`` halved (means of 2x2 blocks) and histogram-equalised to 256 grey levels.

    The form the paper's 32-texture Brodatz set is believed to take (256x256, histogram-equalised;
    ``SOURCES.md``): every grey level equally frequent, so mean brightness and contrast no longer
    tell two textures apart and only their structure does.
    """
    rows, cols = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
    halved = image[:rows, :cols].astype(np.float64).reshape(rows // 2, 2, cols // 2, 2).mean(axis=(1, 3))
    ranks = np.argsort(np.argsort(halved, axis=None, kind="stable"), kind="stable")
    return (ranks * 256 // ranks.size).reshape(halved.shape).astype(np.float64)


TEXTURE_SOURCES = {"equalized": equalized, "scan": lambda image: image}


def texture_task(task: str, data_dir: Path = DEFAULT_DATA, n_per_class: int = 500, size: int = 12,
                 seed: int = 0, source: str = "equalized") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One binary texture task: train patches from the top half, test from the bottom half.

    ``source`` is ``"equalized"`` (each scan halved and histogram-equalised, see :func:`equalized`)
    or ``"scan"`` (the USC-SIPI scan as stored). Returns ``X_train, y_train, X_test, y_test`` (pixel
    values; label 0 / 1 = first / second texture of the pair); models normalise each patch to unit
    l2 norm (``preprocess="l2"``).
    """
    if task not in TEXTURE_TASKS:
        raise ValueError(f"unknown texture task {task!r}; choose from {sorted(TEXTURE_TASKS)}")
    if source not in TEXTURE_SOURCES:
        raise ValueError(f"unknown texture source {source!r}; choose from {sorted(TEXTURE_SOURCES)}")
    rng = np.random.RandomState(seed)
    archive = np.load(Path(data_dir) / "brodatz_usc_sipi.npz")
    splits = {"train": ([], []), "test": ([], [])}
    for label, name in enumerate(TEXTURE_TASKS[task]):
        image = TEXTURE_SOURCES[source](archive[name][:_USABLE_ROWS.get(name, _DEFAULT_USABLE_ROWS)])
        half = image.shape[0] // 2
        for split, region in (("train", image[:half]), ("test", image[half:])):
            splits[split][0].append(texture_patches(region, n_per_class, size, rng))
            splits[split][1].append(np.full(n_per_class, label))
    X_train, y_train = (np.concatenate(part) for part in splits["train"])
    X_test, y_test = (np.concatenate(part) for part in splits["test"])
    return X_train, y_train, X_test, y_test


def digits_task(name: str, data_dir: Path = DEFAULT_DATA) -> tuple[np.ndarray, ...]:
    """MNIST or USPS: ``X_train, y_train, X_test, y_test`` as stored."""
    with np.load(Path(data_dir) / f"{name}.npz") as archive:
        return tuple(archive[k] for k in ("X_train", "y_train", "X_test", "y_test"))


DEER_HORSE_CLASSES = {4: "deer", 7: "horse"}  # CIFAR-10 label indices kept in the file


def deer_horse_task(data_dir: Path = DEFAULT_DATA) -> tuple[np.ndarray, ...]:
    """CIFAR-10 deer (label 0) vs horse (label 1): raw pixels in [0, 255] as float32, 3072 features.

    Rows are channel-first (R plane, G plane, B plane, each 32x32); the paper uses raw pixels (its
    "permutation invariant" setting).
    """
    with np.load(Path(data_dir) / "cifar10_deer_horse.npz") as archive:
        X_train, y_train, X_test, y_test = (archive[k] for k in ("X_train", "y_train", "X_test", "y_test"))
    horse = max(DEER_HORSE_CLASSES)
    return (X_train.astype(np.float32), (y_train == horse).astype(np.int64),
            X_test.astype(np.float32), (y_test == horse).astype(np.int64))
