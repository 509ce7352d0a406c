"""LAST against its baselines on scikit-learn's 8x8 digits (1797 images, 10 classes).

    python benchmarks/digits.py [--n-atoms 10,50,100] [--methods ...] [--quick] [--json PATH]

Stratified 75/25 split (seed 0), inputs centred and scaled to unit l2 norm per image (the paper's
digits setting). One-vs-all: LAST and SGD train N atoms per class (10 N in all); the k-means
encoder baseline gets one shared dictionary of the same size, 10 N atoms. Prints one Markdown table.
"""

from __future__ import annotations

import sys

from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import harness
import report

PREPROCESS = "center-l2"


def digits_split() -> tuple:
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
    return X_train, y_train, X_test, y_test


def main(argv: list[str] | None = None) -> int:
    args = harness.parser(__doc__.splitlines()[0]).parse_args(argv)
    n_atoms = harness.n_atoms_list(args)
    budget = harness.Budget(args.quick)
    rows = harness.run_all(args.methods, n_atoms, digits_split(), "digits", PREPROCESS, args.seed, budget)
    print(f"Digits (sklearn, 1347 train / 450 test, {PREPROCESS}); N = atoms per one-vs-all head "
          "(the k-means encoder: one dictionary of 10 N atoms)"
          + ("; QUICK budgets, not results" if args.quick else "") + ".\n")
    report.report("digits", args, rows, harness.notes(budget))
    return 0


if __name__ == "__main__":
    sys.exit(main())
