"""The paper's published numbers (PAPER.md), as test error %, for the tables of ``reproduce.py``.

Keys are ``(task, method, N)`` with the method keys of ``harness.METHODS``; ``N`` is None for
methods without atoms. Accuracies in the paper are turned into errors (100 - accuracy).
"""

from __future__ import annotations

PaperKey = tuple[str, str, "int | None"]


def _from_accuracy(table: dict[PaperKey, float]) -> dict[PaperKey, float]:
    return {key: round(100.0 - accuracy, 2) for key, accuracy in table.items()}


PAPER_ERROR: dict[PaperKey, float] = {
    **_from_accuracy({
        ("bark-woodgrain", "linear-svm", None): 49.5, ("bark-woodgrain", "rbf-svm", None): 98.5,
        ("bark-woodgrain", "sparse-coding", 50): 97.5, ("bark-woodgrain", "sparse-coding", 400): 98.1,
        ("bark-woodgrain", "centroid-nn", 50): 94.3, ("bark-woodgrain", "centroid-nn", 400): 97.8,
        ("bark-woodgrain", "last", 50): 98.7, ("bark-woodgrain", "last", 400): 98.6,
        ("pigskin-pressedcl", "linear-svm", None): 49.1, ("pigskin-pressedcl", "rbf-svm", None): 90.1,
        ("pigskin-pressedcl", "sparse-coding", 50): 85.5, ("pigskin-pressedcl", "sparse-coding", 400): 90.9,
        ("pigskin-pressedcl", "centroid-nn", 50): 84.1, ("pigskin-pressedcl", "centroid-nn", 400): 86.6,
        ("pigskin-pressedcl", "last", 50): 87.3, ("pigskin-pressedcl", "last", 400): 93.5,
        ("deer-horse", "linear-svm", None): 72.6, ("deer-horse", "rbf-svm", None): 83.5,
        ("deer-horse", "sparse-coding", 10): 70.6, ("deer-horse", "sparse-coding", 100): 76.2,
        ("deer-horse", "centroid-nn", 10): 67.7, ("deer-horse", "centroid-nn", 100): 70.9,
        ("deer-horse", "last", 2): 77.0, ("deer-horse", "last", 10): 80.1, ("deer-horse", "last", 100): 82.8,
    }),
    ("mnist", "linear-svm", None): 8.19, ("mnist", "rbf-svm", None): 1.4, ("mnist", "knn", None): 5.0,
    ("mnist", "last", 400): 1.32, ("mnist", "sgd", 400): 2.22,
    ("usps", "linear-svm", None): 9.07, ("usps", "rbf-svm", None): 4.2, ("usps", "knn", None): 5.2,
    ("usps", "last", 200): 4.53, ("usps", "sgd", 200): 5.88,
}
# The paper does not give the dictionary size of its digits sparse-coding baseline: its error
# is shown beside ours whatever N we run.
PAPER_ANY_N: dict[tuple[str, str], float] = {("mnist", "sparse-coding"): 3.0, ("usps", "sparse-coding"): 5.33}

# Test-time table: seconds to classify the 10000 MNIST test images (2.6 GHz Core i7, 2015).
PAPER_TEST_TIME_S = {"linear-svm": 0.4, "rbf-svm": 154.0, "sparse-coding": 14.0, "last": 1.0}
PAPER_SPARSITY_PCT = {"mnist": 96.7}


def paper_error(task: str, method: str, n_atoms: int | None) -> float | None:
    """The paper's test error % for this row, or None when it reports none.

    Every LAST variant (``last-lbfgs``, ``last-adam``, ...) is compared with the paper's LAST.
    """
    method = "last" if method.startswith("last") else method
    if (task, method, n_atoms) in PAPER_ERROR:
        return PAPER_ERROR[task, method, n_atoms]
    return PAPER_ANY_N.get((task, method))
