"""Export benchmark: file size, parity error and agreement for each format x precision.

Two models: digits (64 features, 10 heads x 20 atoms) and MNIST size (784 features, 10 heads x 400
atoms). Atoms are per-class k-means centroids scaled so a few percent of the features are active;
each head's weights come from a logistic regression on its own atoms' features (block-structured,
one-vs-all), so the models are trained, fast to build, and shaped like LAST models.

    python benchmarks/export.py [--data ../shared/data] [--skip-mnist]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from arguments import positive_int
from lastedge.export import export_all
from lastedge.runtime import Model, Preprocess
from paper_data import DEFAULT_DATA, check_data

ACTIVE = 0.05  # fraction of soft-threshold features active on training rows


def build_model(X: np.ndarray, y: np.ndarray, atoms_per_class: int, seed: int = 0) -> Model:
    """One-vs-all soft-threshold model: per-class k-means atoms, per-head logistic weights."""
    pre = Preprocess.fit("center-l2", X)
    Z = pre.apply(X)
    classes = np.unique(y)
    blocks = [KMeans(atoms_per_class, n_init=1, max_iter=50, random_state=seed)
              .fit(Z[y == c]).cluster_centers_.T for c in classes]
    D = np.concatenate(blocks, axis=1)
    D /= np.linalg.norm(D, axis=0)
    D *= 1.0 / np.quantile(Z[:2000] @ D, 1 - ACTIVE)
    F = np.maximum(Z @ D - 1.0, 0)
    W = np.zeros((D.shape[1], len(classes)), np.float32)
    for c, label in enumerate(classes):
        atoms = slice(c * atoms_per_class, (c + 1) * atoms_per_class)
        head = LogisticRegression(C=10, max_iter=1000).fit(F[:, atoms], y == label)
        W[atoms, c] = head.coef_[0]
    return Model(D, W, classes, 1.0, pre)


def digits() -> tuple:
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X.astype(np.float32), y, test_size=0.3, random_state=0, stratify=y)
    return build_model(X_train, y_train, 20), X_train, X_test, y_test


def mnist(data: Path, n_train: int = 10000) -> tuple:
    with np.load(data / "mnist.npz", allow_pickle=False) as f:
        X_train = f["X_train"].reshape(len(f["X_train"]), -1)[:n_train].astype(np.float32)
        y_train = f["y_train"][:n_train]
        X_test = f["X_test"].reshape(len(f["X_test"]), -1).astype(np.float32)
        y_test = f["y_test"]
    return build_model(X_train, y_train, 400), X_train, X_test, y_test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="folder with mnist.npz (default: ../shared/data beside the repo)")
    parser.add_argument("--skip-mnist", action="store_true")
    parser.add_argument("--calibration-rows", type=positive_int, default=2000)
    args = parser.parse_args()
    cases = {"digits": digits}
    if not args.skip_mnist:
        check_data(parser, args.data, "mnist.npz")
        cases["mnist"] = lambda: mnist(args.data)
    header = (f"{'model':<8} {'format':<7} {'prec':<5} {'size KiB':>9} {'max err':>9} {'mean err':>9} "
              f"{'agree %':>8} {'acc %':>7} {'py acc %':>8} {'clipped % (in/feat/out)':>24} bounds")
    print(header)
    print("-" * len(header))
    for name, load in cases.items():
        t0 = time.perf_counter()
        model, X_train, X_test, y_test = load()
        calibration = X_train[np.random.default_rng(0).permutation(len(X_train))[:args.calibration_rows]]
        with tempfile.TemporaryDirectory() as folder:
            rows = export_all(model, folder, calibration, X_test, y_test, strict=False)
        problems = [p for r in rows for p in r["problems"]]
        for r in rows:
            status = "OUT" if r["problems"] else "ok"
            clipped = "/".join(f"{100 * v:.2f}" for v in r["clipped"].values()) if "clipped" in r else "-"
            print(f"{name:<8} {r['format']:<7} {r['precision']:<5} {r['size_bytes'] / 1024:>9.1f} "
                  f"{r['max_score_error']:>9.2e} {r['mean_score_error']:>9.2e} "
                  f"{100 * r['agreement']:>8.2f} {100 * r['accuracy']:>7.2f} "
                  f"{100 * r['reference_accuracy']:>8.2f} {clipped:>24} {status}")
        print(f"# {name}: {model.n_features} features, {model.n_atoms} atoms, {model.n_outputs} outputs, "
              f"{len(calibration)} calibration rows, {len(X_test)} test rows, "
              f"{time.perf_counter() - t0:.0f} s")
        for problem in problems:
            print(f"# out of bounds: {problem}")


if __name__ == "__main__":
    main()
