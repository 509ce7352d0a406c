"""Tasks of the generalisation suite (issue 55): textures, small scikit-learn sets (standardised and
raw), digits, CIFAR, synthetic.

Every loader takes a seed and the data folder (``../shared/data``: the texture images, USPS, MNIST,
CIFAR) and returns ``X_train, y_train, X_test, y_test``; the texture pairs take train patches from
the top half of each image and test patches from the bottom half (disjoint). :func:`load` runs one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
from sklearn import datasets
from sklearn.model_selection import train_test_split

from paper_data import DEFAULT_DATA, deer_horse_task, digits_task, equalized, texture_patches

Split = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_USABLE_ROWS = {"pigskin": 486}


def texture_pair(first: str, second: str, size: int, equalise: bool, seed: int, data: Path = DEFAULT_DATA,
                 n_train: int = 500, n_test: int = 1000) -> Split:
    """Binary texture task: ``n_train`` + ``n_train`` patches from the top halves, ``n_test`` per class
    from the bottom halves; raw or histogram-equalised; unit l2 norm per patch."""
    rng = np.random.RandomState(seed)
    parts: dict[str, list] = {"Xtr": [], "ytr": [], "Xte": [], "yte": []}
    with np.load(Path(data) / "brodatz_usc_sipi.npz") as archive:
        for label, name in enumerate((first, second)):
            image = archive[name][:_USABLE_ROWS.get(name, 510)].astype(np.float64)
            image = equalized(image) if equalise else image
            half = image.shape[0] // 2
            for key, region, n in (("tr", image[:half], n_train), ("te", image[half:], n_test // 2)):
                parts["X" + key].append(texture_patches(region, n, size, rng))
                parts["y" + key].append(np.full(n, label))
    X_train, y_train, X_test, y_test = (np.concatenate(parts[k]) for k in ("Xtr", "ytr", "Xte", "yte"))
    unit = lambda X: X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # noqa: E731
    return unit(X_train), y_train, unit(X_test), y_test


def _split(X: np.ndarray, y: np.ndarray, seed: int, test_size: float = 0.3) -> Split:
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    return X_train, y_train, X_test, y_test


def _standardised(split: Split) -> Split:
    X_train, y_train, X_test, y_test = split
    mean, std = X_train.mean(axis=0), X_train.std(axis=0) + 1e-12
    return (X_train - mean) / std, y_train, (X_test - mean) / std, y_test


def _subsample(split: Split, seed: int, n_train: int, n_test: int) -> Split:
    X_train, y_train, X_test, y_test = split
    rng = np.random.RandomState(seed)
    tr, te = rng.choice(len(X_train), n_train, replace=False), rng.choice(len(X_test), n_test, replace=False)
    scale = float(X_train.max())
    return X_train[tr] / scale, y_train[tr], X_test[te] / scale, y_test[te]


def _synthetic(seed: int, data: Path) -> Split:
    X, y = datasets.make_classification(n_samples=2000, n_features=40, n_informative=8, n_redundant=8,
                                        n_classes=3, weights=[0.6, 0.3, 0.1], random_state=seed)
    return _standardised(_split(X, y, seed))


TEXTURE_PAIRS = [("bark", "woodgrain"), ("pigskin", "pressedcl"), ("beachsand", "water"),
                 ("bubbles", "brick"), ("grass", "bark")]

TASKS: dict[str, Callable[[int, Path], Split]] = {
    "moons": lambda s, d: _split(*datasets.make_moons(1000, noise=0.25, random_state=s), s),
    "circles": lambda s, d: _split(*datasets.make_circles(1000, noise=0.1, factor=0.5, random_state=s), s),
    "synthetic-imbalanced": _synthetic,
    "wine": lambda s, d: _standardised(_split(*datasets.load_wine(return_X_y=True), s)),
    "breast-cancer": lambda s, d: _standardised(_split(*datasets.load_breast_cancer(return_X_y=True), s)),
    "digits": lambda s, d: _split(datasets.load_digits().data / 16.0, datasets.load_digits().target, s),
    "usps": lambda s, d: _subsample(digits_task("usps", d), s, 3000, 2000),
    "mnist-sub": lambda s, d: _subsample(digits_task("mnist", d), s, 5000, 2000),
    "cifar-deer-horse": lambda s, d: _subsample(deer_horse_task(d), s, 4000, 2000),
    # as a user's CSV holds them: raw columns of different units, classes told apart by the norm
    "wine-raw": lambda s, d: _split(*datasets.load_wine(return_X_y=True), s),
    "breast-cancer-raw": lambda s, d: _split(*datasets.load_breast_cancer(return_X_y=True), s),
    "gaussian-quantiles": lambda s, d: _split(*datasets.make_gaussian_quantiles(
        n_samples=1000, n_features=6, n_classes=3, random_state=s), s),
    "hastie": lambda s, d: _split(*datasets.make_hastie_10_2(n_samples=2000, random_state=s), s),
}
for _a, _b in TEXTURE_PAIRS:
    for _size in (12, 16):
        for _eq in (False, True):
            TASKS[f"{_a}-{_b}-{_size}{'-eq' if _eq else ''}"] = (
                lambda s, d, a=_a, b=_b, z=_size, e=_eq: texture_pair(a, b, z, e, s, d))


def load(task: str, seed: int, data: Path = DEFAULT_DATA) -> Split:
    """``X_train, y_train, X_test, y_test`` of ``task`` for ``seed`` (files read from ``data``)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; choose from {sorted(TASKS)}")
    return TASKS[task](seed, Path(data))
