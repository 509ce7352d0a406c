"""Train on your own CSV file: one row per sample, numeric feature columns and one label column.

    python examples/own_data.py my_data.csv [LABEL_COLUMN]   # column name or index (default: last)
    python examples/own_data.py                              # writes a demo CSV from digits first

A header row is optional; labels may be numbers or text. The rows are split 75/25 (stratified),
features are standardized with the training statistics (stored in the model), and the model is
saved as <csv name>.npz in the current folder. The CLI does the same:
    lastedge train --data my_data.csv --atoms 20 --preprocess standardize --out my_data.npz
"""

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from lastedge.runtime import load
from lastedge.train import LASTClassifier
from lastedge.runtime.data import load_dataset

NAMES = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])


def write_demo_csv(folder: Path) -> Path:
    """The digits as a spreadsheet would export them: a header row and text labels last."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    lines = [",".join([f"pixel{i}" for i in range(X.shape[1])] + ["digit"])]
    lines += [",".join([*(f"{v:g}" for v in row), NAMES[label]]) for row, label in zip(X, y)]
    path = folder / "digits.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def train(csv: Path, label_column: str | int) -> None:
    data = load_dataset(str(csv), label_column=label_column)
    print(f"{csv.name}: {len(data.X_train)} training rows, {len(data.X_test)} test rows, "
          f"{data.X_train.shape[1]} features, classes {np.unique(data.y_train).tolist()}")
    warnings.simplefilter("ignore", ConvergenceWarning)  # a short run, on purpose
    clf = LASTClassifier(n_atoms=20, preprocess="standardize", max_dca_iter=3, inner_solver="adam",
                         inner_iter=200, random_state=0).fit(data.X_train, data.y_train)
    print(f"train accuracy {clf.score(data.X_train, data.y_train):.2%}, "
          f"test accuracy {clf.score(data.X_test, data.y_test):.2%}")
    path = clf.to_model().save(f"{csv.stem}.npz")
    predictor = load(path)  # what a device would do with the file
    print(f"saved {path}; first test rows: predicted {predictor.predict(data.X_test[:5]).tolist()}, "
          f"true {data.y_test[:5].tolist()}")


def main(argv: list[str]) -> int:
    if argv:
        train(Path(argv[0]), argv[1] if len(argv) > 1 else -1)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        csv = write_demo_csv(Path(folder))
        print(f"no CSV given: wrote a demo file from digits to {csv}")
        train(csv, "digit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
