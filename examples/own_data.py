"""Train on your own data: a CSV file (one row per sample, numeric feature columns and one label
column) or a folder of images (one subfolder per class) or of IDX files (MNIST's format).

    python examples/own_data.py my_data.csv [LABEL_COLUMN]   # column name or index (default: last)
    python examples/own_data.py photos/                      # photos/cat/*.png, photos/dog/*.png
    python examples/own_data.py                              # writes a demo CSV from digits first

A CSV header row is optional; labels may be numbers or text. Data without a test part is split
75/25 (stratified). CSV features are standardized with the training statistics, images are
centred and scaled to unit norm one by one (the paper's preprocessing for digits); either way the
preprocessing is stored in the model, saved as <data name>.npz in the current folder (an .npz
archive of rows there is kept: its model is then <data name>-model.npz). The CLI does the same
given this script's short schedule, --max-dca-iter 3 --inner-solver adam --inner-iter 200 (without
them it runs LAST's full default schedule, which takes minutes):
    lastedge train --data my_data.csv --atoms 20 --preprocess standardize --out my_data.npz
    lastedge train --data photos/ --atoms 20 --preprocess center-l2 --out photos.npz
"""

import os
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from lastedge.runtime import load
from lastedge.runtime.data import load_dataset
from lastedge.train import LASTClassifier

NAMES = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"])


def write_demo_csv(folder: Path) -> Path:
    """The digits as a spreadsheet would export them: a header row and text labels last."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    lines = [",".join([f"pixel{i}" for i in range(X.shape[1])] + ["digit"])]
    lines += [",".join([*(f"{v:g}" for v in row), NAMES[label]]) for row, label in zip(X, y)]
    path = folder / "digits_table.csv"  # its model, digits_table.npz, leaves quickstart's digits.npz be
    path.write_text("\n".join(lines) + "\n")
    return path


def train(source: Path, label_column: str | int) -> None:
    named = Path(os.path.abspath(source))  # "." (this folder) has no name of its own; links keep theirs
    data = load_dataset(str(source), label_column=label_column).with_test_part()  # 75/25 if none
    images = "" if data.image_shape is None else f" ({'x'.join(map(str, data.image_shape))} images)"
    print(f"{named.name}: {len(data.X_train)} training rows, {len(data.X_test)} test rows, "
          f"{data.X_train.shape[1]} features{images}, classes {np.unique(data.y_train).tolist()}")
    warnings.simplefilter("ignore", ConvergenceWarning)  # a short run, on purpose
    preprocess = "standardize" if data.image_shape is None else "center-l2"
    clf = LASTClassifier(n_atoms=20, preprocess=preprocess, max_dca_iter=3, inner_solver="adam",
                         inner_iter=200, random_state=0).fit(data.X_train, data.y_train)
    print(f"train accuracy {clf.score(data.X_train, data.y_train):.2%}, "
          f"test accuracy {clf.score(data.X_test, data.y_test):.2%}")
    path = Path(f"{named.stem}.npz")
    if path.exists() and path.samefile(source):  # an .npz archive of rows here: keep it
        path = Path(f"{named.stem}-model.npz")
    clf.to_model().save(path)
    predictor = load(path)  # what a device would do with the file
    print(f"saved {path}; first test rows: predicted {predictor.predict(data.X_test[:5]).tolist()}, "
          f"true {data.y_test[:5].tolist()}")


def main(argv: list[str]) -> int:
    if argv:
        try:
            train(Path(argv[0]), argv[1] if len(argv) > 1 else -1)
        except (OSError, ValueError, ImportError) as err:  # no such file, unreadable rows, no Pillow
            print(err, file=sys.stderr)
            return 1
        return 0
    with tempfile.TemporaryDirectory() as folder:
        csv = write_demo_csv(Path(folder))
        print(f"no CSV given: wrote a demo file from digits to {csv}")
        train(csv, "digit")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
