"""The paper's test-time table: seconds to classify the 10,000 MNIST test images, one run.

Used by ``reproduce.py test-time``. LAST is timed through every runtime backend (the ``.npz`` on
numpy, ONNX and TFLite in fp32 and int8), beside a linear SVM, an RBF SVM and l1 sparse coding +
linear SVM, all on one thread and on the same machine. Each time is the best of ``REPEATS`` calls
on the whole test set (a shared machine only ever adds time). The LAST model is the one
``reproduce.py digits`` saved (``OUT/mnist_last-mu.npz``, else ``OUT/mnist_last.npz``); without
either a short fit is made and said so.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

import harness
import report
from lastedge.export import export_all
from lastedge.runtime import Model, load
from lastedge.train import LASTClassifier
from paper_data import digits_task
from paper_results import PAPER_TEST_TIME_S

REPEATS = 3
PREPROCESS = "center-l2"
# Kernel and sparse-coding baselines are fitted on a stratified subset: only their test-time cost
# is measured here (their accuracy is in the digits table), and that cost grows with the support
# vectors and the dictionary, which the subset keeps realistic.
FIT_ROWS = {"full": 10_000, "quick": 300}
CV_ROWS = 2000  # hyper-parameters by 3-fold CV on this many rows, then a refit on the fit rows
SPARSE_CODING_ATOMS = 400


def columns(n_images: int) -> list[report.Column]:
    """The table's columns; the seconds say how many images were timed (10,000, or --quick's few)."""
    return [("method", "label", "{}"), ("backend", "backend", "{}"), ("test error %", "error_pct", "{:.2f}"),
            (f"seconds ({n_images:,} images)", "seconds", "{:.3f}"), ("paper s", "paper_s", "{:g}"),
            ("cost per image", "complexity", "{}")]


def _best_time(predict, X: np.ndarray) -> tuple[np.ndarray, float]:
    times = []
    with threadpool_limits(limits=1):
        for _ in range(REPEATS):
            start = time.perf_counter()
            labels = predict(X)
            times.append(time.perf_counter() - start)
    return labels, min(times)


def _last_model(args: argparse.Namespace, X: np.ndarray, y: np.ndarray) -> tuple[Model, str]:
    # the weight-decay-validated model when there is one (the better of the two on MNIST)
    for saved in (args.out / "mnist_last-mu.npz", args.out / "mnist_last.npz"):
        if saved.is_file():
            return Model.load(saved), f"the model saved by `reproduce.py digits` ({saved.name})"
    budget = {"max_dca_iter": 1, "inner_iter": 20} if args.quick else {"max_dca_iter": 3, "inner_iter": 300}
    clf = LASTClassifier(400, preprocess=PREPROCESS, batch_size=1000, n_jobs=2, random_state=args.seed,
                         verbose=0, **budget).fit(X, y)
    return clf.to_model(), f"no saved model: a short fit here ({budget}); its accuracy is not LAST's"


def run(args: argparse.Namespace) -> str:
    """Measure every method, print nothing, return the Markdown section."""
    X_train, y_train, X_test, y_test = digits_task("mnist", args.data)
    n_fit = FIT_ROWS["quick" if args.quick else "full"]
    if args.quick:
        X_test, y_test = X_test[:n_fit], y_test[:n_fit]
    X_fit, _, y_fit, _ = train_test_split(X_train, y_train, train_size=n_fit, stratify=y_train,
                                          random_state=args.seed)
    n = X_test.shape[1]
    rows: list[dict[str, Any]] = []

    def record(label: str, backend: str, labels: np.ndarray, seconds: float, key: str, complexity: str):
        rows.append({"label": label, "backend": backend, "error_pct": 100.0 * float(np.mean(labels != y_test)),
                     "seconds": seconds, "paper_s": PAPER_TEST_TIME_S.get(key), "complexity": complexity})

    model, origin = _last_model(args, X_fit if args.quick else X_train, y_fit if args.quick else y_train)
    last_cost = f"O(nN): {model.macs_per_sample:,} MACs ({model.n_atoms} atoms)"
    with tempfile.TemporaryDirectory() as folder:
        exported = export_all(model, folder, X_fit[:1000], X_test[:500], y_test[:500], stem="last",
                              strict=False)
        for path in [model.save(Path(folder) / "last.npz"), *(Path(row["path"]) for row in exported)]:
            predictor = load(path, threads=1)
            labels, seconds = _best_time(predictor.predict, X_test)
            record("LAST", f"{predictor.backend} {predictor.precision}", labels, seconds, "last", last_cost)

    # the linear SVM is fitted on every training row, except under --quick (its few rows, like the rest)
    linear = ("linear SVM", X_train, y_train) if not args.quick else (f"linear SVM (fit on {n_fit} rows)", X_fit, y_fit)
    baselines = (("linear-svm", *linear, f"O(nC): {n * 10:,} MACs"),
                 ("rbf-svm", f"RBF SVM (fit on {n_fit} rows)", X_fit, y_fit, None),
                 ("sparse-coding", f"l1 sparse coding + linear SVM (fit on {n_fit} rows)", X_fit, y_fit,
                  f"O(nN / sqrt(eps)): iterative, {n * SPARSE_CODING_ATOMS:,} MACs per iteration"))
    for key, label, X, y, complexity in baselines:
        setting = harness.Setting(SPARSE_CODING_ATOMS, 10, PREPROCESS, args.seed, harness.Budget(args.quick),
                                  cv_rows=min(CV_ROWS, len(y)))
        fitted = harness.METHODS[key].build(setting).fit(X, y)
        labels, seconds = _best_time(fitted.predict, X_test)
        if key == "rbf-svm":
            n_sv = int(fitted.best_estimator_[-1].n_support_.sum())
            complexity = f"O(n S): {n * n_sv:,} MACs ({n_sv} support vectors)"
        record(f"{label}; {harness._notes(fitted)}", "scikit-learn", labels, seconds, key, complexity)

    caption = (f"Time to classify the {len(y_test)} MNIST test images, best of {REPEATS} calls on the whole "
               "set, one thread, this machine; the paper's times are from a 2.6 GHz Core i7 (2015). "
               f"LAST: {origin}.")
    title = "### test-time" + (" (QUICK: tiny subsets, not results)" if args.quick else "")
    return "\n".join([title, "", caption, "", report.markdown_table(rows, columns(len(y_test)))])
