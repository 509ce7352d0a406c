"""``lastedge predict``: classify rows with a model file (any backend) and report accuracy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .common import add_image_size_option, json_text

SHOWN_PREDICTIONS = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``predict`` to the ``lastedge`` parser."""
    p = subparsers.add_parser(
        "predict", help="classify rows with a model file and report accuracy",
        description="Classify rows with a model (.npz, or an exported .onnx/.tflite). Rows: "
                    "'digits', .npz archives and IDX or image folders give their held-out part "
                    "(X_test/y_test, test/; digits and unsplit folders split as by 'train --seed "
                    "0'), or the training rows when there is none; a CSV "
                    "(a file, or '-' for stdin) gives all its rows, with a label column unless "
                    "--no-labels; an image file, or a folder holding only images, gives one "
                    "unlabelled row per image (named in --json and --out). Prints the accuracy "
                    "when labels are known and the first predictions (all with --json or --out).")
    p.add_argument("model", help="model file (.npz, .onnx or .tflite)")
    p.add_argument("--data", required=True, metavar="PATH|digits|-",
                   help="rows to classify (.npz, .csv, an image, a folder, digits); - reads CSV "
                        "rows from stdin")
    p.add_argument("--label-column", default="-1", metavar="C",
                   help="CSV label column: name or index (default -1, the last)")
    p.add_argument("--no-labels", action="store_true",
                   help="the CSV has feature columns only (no accuracy is printed)")
    p.add_argument("--json", action="store_true", help="print JSON with every prediction")
    p.add_argument("--out", metavar="PATH", default=None,
                   help="also write every row's prediction and scores to this .csv file")
    p.add_argument("--plot", metavar="PATH", default=None,
                   help="with labels: also draw the confusion matrix to this .png/.pdf/.svg file "
                        "(needs matplotlib)")
    add_image_size_option(p, "scale images to HEIGHTxWIDTH pixels (default: the training images' "
                             "size, which model files record)")
    p.set_defaults(func=run_predict)


def run_predict(args: argparse.Namespace) -> int:
    """``lastedge predict``: classify rows, print accuracy (with labels) and predictions."""
    from lastedge.runtime.loading import load
    from lastedge.runtime.model import check_output_path, labels_from_scores

    out = None if args.out is None else check_output_path(args.out, ".csv", "--out", inputs={"--data": args.data})
    if args.plot is not None:
        from lastedge.runtime.figures import check_figure_path

        if args.no_labels:
            raise ValueError("--plot draws the confusion matrix, which needs labels; drop --no-labels")
        check_figure_path(args.plot)
    predictor = load(args.model)
    X, y, source, files = _predict_rows(args, predictor.n_features, _image_size_of(args, predictor))
    if args.plot is not None and y is None:
        raise ValueError(f"--plot draws the confusion matrix, which needs labels; {source} has none")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused in one line instead
        if isinstance(X, np.ndarray):
            scores = predictor.decision_function(X)
        else:  # a data file's part, read a block at a time
            scores = np.concatenate([predictor.decision_function(block) for block in X.blocks()])
    labels = labels_from_scores(predictor.classes, scores)
    result: dict[str, Any] = {"model": args.model, "data": source, "rows": len(labels), "accuracy": None}
    if files is not None:
        result["files"] = files
    if y is not None:
        y = as_class_labels(y, predictor.classes)
        names, matrix = confusion(y, labels, predictor.classes)
        result.update(accuracy=float(np.mean(labels == y)),
                      confusion={"labels": names, "matrix": matrix.tolist()})
    result["predictions"] = labels.tolist()
    if out is not None:
        _write_predictions(out, predictor.classes, labels, scores, files)
        result["out"] = str(out)
    if args.plot is not None:
        from lastedge.runtime.figures import confusion_chart

        title = f"{Path(args.model).name} on {source}: accuracy {result['accuracy']:.2%}"
        result["figure"] = str(confusion_chart(matrix, names, args.plot, title))
    if args.json:
        print(json_text(result))
        return 0
    if y is not None:
        print(f"accuracy {result['accuracy']:.2%} on {len(labels)} rows ({source})")
        print(_most_confused(names, matrix))
    first = labels[:SHOWN_PREDICTIONS].tolist()
    shown = " ".join(map(str, first) if files is None else (f"{f}={label}" for f, label in zip(files, first)))
    print(f"predictions (first {min(SHOWN_PREDICTIONS, len(labels))} of {len(labels)}): {shown}")
    if out is not None:
        print(f"wrote {out}: prediction and scores of every row")
    if args.plot is not None:
        print(f"wrote {result['figure']}: confusion matrix")
    return 0


def as_class_labels(y: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """True labels in the kind of the model's classes, so that 7, 7.0 and "7" name one class
    (a CSV written by ``np.savetxt`` holds "7.000e+00"; a model trained on text labels has "7").
    Text that names no class by its value (a label the model does not know) stays text."""
    if classes.dtype.kind == "U" and y.dtype.kind in "biuf":
        whole = y.dtype.kind == "f" and np.all(np.mod(y, 1) == 0)
        return (y.astype(np.int64) if whole else y).astype(str)
    if classes.dtype.kind in "biuf" and y.dtype.kind == "U":
        from lastedge.runtime.csv_rows import DECIMAL

        by_value = {float(c): c for c in classes.tolist()}
        return np.array([by_value.get(float(text), text) if DECIMAL.fullmatch(text.strip()) else text
                         for text in y.tolist()], dtype=object)
    return y


def confusion(y_true: np.ndarray, y_pred: np.ndarray, classes: np.ndarray) -> tuple[list, np.ndarray]:
    """(labels, counts): ``counts[i, j]`` rows of true label i predicted as j. The labels are the
    model's classes, then any true label the model does not know."""
    names = classes.tolist()
    names += sorted(set(y_true.tolist()) - set(names), key=str)
    index = {name: i for i, name in enumerate(names)}
    matrix = np.zeros((len(names), len(names)), dtype=np.int64)
    np.add.at(matrix, ([index[v] for v in y_true.tolist()], [index[v] for v in y_pred.tolist()]), 1)
    return names, matrix


def _most_confused(names: list, matrix: np.ndarray, shown: int = 3) -> str:
    """One line: the largest off-diagonal counts of a confusion matrix."""
    errors = matrix * (1 - np.eye(len(names), dtype=matrix.dtype))
    order = [ij for ij in zip(*np.unravel_index(np.argsort(-errors, axis=None, kind="stable"), errors.shape))
             if errors[ij]][:shown]
    if not order:
        return "no row misclassified"
    pairs = ", ".join(f"{names[i]} as {names[j]} ({errors[i, j]})" for i, j in order)
    return f"most confused (true as predicted): {pairs}"


def _write_predictions(path: Path, classes: np.ndarray, labels: np.ndarray, scores: np.ndarray,
                       files: list[str] | None = None) -> None:
    """CSV, one line per row: the image file (for images), the label, then the scores (binary: one
    score, > 0 means classes[1])."""
    import csv
    import io

    from lastedge.runtime.model import write_atomically

    names = ["score"] if scores.ndim == 1 else [f"score_{c}" for c in classes.tolist()]
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    row_names = [[]] * len(labels) if files is None else [[name] for name in files]
    writer.writerow([*([] if files is None else ["file"]), "prediction", *names])
    writer.writerows([*row_name, label, *(f"{v:.6g}" for v in np.atleast_1d(row))]
                     for row_name, label, row in zip(row_names, labels.tolist(), scores))
    # an image's name keeps its bytes, UTF-8 or not (the file system's own encoding of names)
    write_atomically(path, lambda f: f.write(text.getvalue().encode("utf-8", "surrogateescape")))


def _image_size_of(args: argparse.Namespace, predictor: Any) -> tuple[int, int] | None:
    """``--image-size``, else the training images' size the model file records, else None. A
    size the model cannot read (neither H x W nor 3 x H x W values make its rows) is refused
    before any image is decoded, not after a whole folder was read."""
    if args.image_size is not None:
        height, width = args.image_size
        if predictor.n_features not in (height * width, 3 * height * width):
            trained = "" if predictor.image_shape is None else \
                f" (it was trained on {'x'.join(map(str, predictor.image_shape))} images)"
            raise ValueError(f"--image-size {height}x{width} makes {height * width} values per grey image, "
                             f"{3 * height * width} per colour one; the model expects {predictor.n_features}"
                             f"{trained}")
        return args.image_size
    return None if predictor.image_shape is None else predictor.image_shape[:2]


def _predict_rows(args: argparse.Namespace, n_features: int, image_size: tuple[int, int] | None
                  ) -> tuple[Any, np.ndarray | None, str, list[str] | None]:
    """(X, labels or None, description, image file names or None) for ``predict --data``; images
    are scaled to ``image_size`` (height, width) when given. X is an array, or for an .npz archive
    or an IDX folder a ``data_blocks.HeldOut`` whose rows are read a block at a time."""
    from lastedge.runtime.csv_rows import load_csv
    from lastedge.runtime.data import is_image_folder, load_dataset
    from lastedge.runtime.data_blocks import held_out
    from lastedge.runtime.images import IMAGE_SUFFIXES, class_folders, image_files, read_images

    path = Path(args.data)
    is_csv = args.data == "-" or path.suffix.lower() == ".csv"
    if is_csv and args.image_size is not None:
        raise ValueError("an image size (--image-size) applies to images, not to CSV rows")
    if args.data == "-":
        reconfigure = getattr(sys.stdin, "reconfigure", None)  # absent on a StringIO
        if reconfigure is not None:  # UTF-8 as CSV files: a C locale let Latin-1 "café" in as "caf\udce9"
            reconfigure(encoding="utf-8", errors="strict")
        if sys.stdin.isatty():  # else it waits silently, as if it hung
            print("lastedge predict: reading CSV rows from stdin (end them with Ctrl-D)", file=sys.stderr,
                  flush=True)
        X, y = load_csv(sys.stdin, None if args.no_labels else args.label_column)
        _check_csv_width(X, y is not None, n_features, "stdin")
        return X, y, "CSV rows from stdin", None
    if is_csv:
        if not path.is_file():
            raise ValueError(f"no such data file: {args.data}")
        X, y = load_csv(args.data, None if args.no_labels else args.label_column)
        _check_csv_width(X, y is not None, n_features, args.data)
        return X, y, f"{args.data}, all rows", None
    loose = image_files(path) if path.is_dir() and not class_folders(path) else []
    if loose or (path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES):
        paths = loose or [path]  # images without labels: one file, or a folder holding only images
        X, shape = read_images(paths, path if loose else path.parent, image_size)
        described = f"{len(paths)} image(s) in {path}" if loose else str(path)
        return _fitted_images(X, shape, n_features), None, described, [p.name for p in paths]
    if args.no_labels:
        raise ValueError("--no-labels applies to CSV files only")
    part = held_out(args.data) if args.image_size is None else None  # else load_dataset refuses it
    if part is not None:  # an .npz archive or an IDX folder: read in blocks when predicting
        return part, part.labels, part.description, None
    images = is_image_folder(path)
    data = load_dataset(args.data, image_size=image_size if images else args.image_size)
    if data.has_test:
        X, y, part = data.X_test, data.y_test, "held-out part"
    else:
        X, y, part = data.X_train, data.y_train, "training rows"
    if images:
        X = _fitted_images(X, data.image_shape, n_features)
    return X, y, f"{data.name}, {part}", None


def _check_csv_width(X: np.ndarray, labelled: bool, n_features: int, name: str) -> None:
    """Name the option that fixes a CSV one column off the model's width: a forgotten or a
    wrong ``--no-labels`` (a plain "X has 63 features, the model expects 64" did not)."""
    columns = X.shape[1] + labelled
    if labelled and columns == n_features:
        raise ValueError(f"{name} has {columns} columns, the model's {n_features} features and no label "
                         "column: add --no-labels")
    if not labelled and columns == n_features + 1:
        raise ValueError(f"{name} has {columns} columns, one more than the model's {n_features} features: "
                         "if one is the label column, drop --no-labels (--label-column names it)")


# Pillow's convert("L") weights (ITU-R 601-2 luma), for colour images given to a grey model.
LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _fitted_images(X: np.ndarray, image_shape: tuple[int, ...], n_features: int) -> np.ndarray:
    """Image rows as the model reads them: grey images for a model trained on colour ones get
    each value as R, G and B (channels last), colour images for a grey model their luma; images
    of another size are an error that says how to scale them."""
    if len(image_shape) == 2 and n_features == 3 * X.shape[1]:
        return np.repeat(X, 3, axis=1)
    if len(image_shape) == 3 and 3 * n_features == X.shape[1]:
        return X.reshape(len(X), n_features, 3) @ LUMA
    if X.shape[1] != n_features:
        size = "x".join(map(str, image_shape))
        raise ValueError(f"the images are {size} ({X.shape[1]} values), the model expects {n_features} "
                         "values per row: scale them with --image-size HxW (the training size)")
    return X
