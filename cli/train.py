"""``lastedge train``: fit LAST or its SGD/Adam baseline on a data file and save the model."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .auto import add_auto_options, choose_auto
from .budget import add_budget_options, budget_given, check_budget_options, choose_budget
from .common import add_image_size_option, json_text
from .holdout import StopOnInterrupt, choose_on_holdout, cluster_backend, search_jobs
from .train_distributed import is_writer, launched, load_block, metrics_over_ranks, process_group, record_ranks
from .train_report import interrupted_record, metrics, provenance, step_trials_notice, summary_fields

METHODS = ("last", "sgd", "adam")
PREPROCESS = ("auto", "none", "l2", "center-l2", "standardize")
DESCRIPTION = (
    "Train LAST (DCA) or the SGD/Adam baseline on 'digits', an .npz archive (X_train, y_train[, X_test, "
    "y_test]), a CSV file (one row per sample, one label column), a folder of IDX files (MNIST's format: "
    "train-images-idx3-ubyte[.gz], train-labels-..., optionally t10k-...) or an image folder (one "
    "subfolder per class, or train/ and test/ holding them; images of one size). CSV files and image "
    "folders without a test part are split 75/25, stratified; an .npz or IDX folder without one trains on "
    "all its rows. Prints train/test accuracy, training time, feature sparsity and model size; writes the "
    "model atomically. Ctrl-C stops LAST after the DCA iteration under way, SGD/Adam at the next "
    "checkpoint of the run under way (one every 2% of its steps; in the step-size trials the best trial "
    "run so far is kept), and saves the model so far (exit status 130); in a --mu grid it stops the grid "
    "after the candidate fit under way and goes on to the final fit with the best of those finished (exit "
    "status 130 too). A second Ctrl-C stops at once.")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-command, ``train``, to the ``lastedge`` parser."""
    p = subparsers.add_parser("train", help="train a soft-threshold classifier and save it (.npz)",
                              description=DESCRIPTION)
    _add_data_options(p)
    _add_model_options(p)
    _add_last_options(p)
    add_auto_options(p)
    add_budget_options(p)
    _add_output_options(p)
    p.set_defaults(func=run_train)


def _add_data_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, metavar="PATH|digits",
                   help="training data: .npz, .csv, a folder, or digits")
    p.add_argument("--label-column", default="-1", metavar="C",
                   help="CSV label column: name (with a header) or index (default -1, the last)")
    add_image_size_option(p, "image folders: scale every image to HEIGHTxWIDTH pixels (recorded in "
                             "the model, so predict scales new images the same way)")
    p.add_argument("--image-shape", type=_image_shape, default=None, metavar="HxW|HxWx3",
                   help=".npz and CSV data: each row is an image of this shape (colour channels last), "
                        "recorded in the model as image folders' shapes are")
    p.add_argument("--seed", type=int, default=0, help="seeds the split and the training (default 0)")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--atoms", type=int, default=None, metavar="N",
                   help="atoms per head (one head per class for > 2 classes; with --multiclass "
                        "shared, atoms in all), e.g. 25; required unless a --budget-* option chooses it")
    p.add_argument("--method", choices=METHODS, default="last",
                   help="last: DCA (default); sgd / adam: the baselines on the same objective")
    p.add_argument("--preprocess", choices=PREPROCESS, default=None,
                   help="applied to every input, recorded in the model (default auto: l2, or standardize where "
                        "a nearest-neighbour vote on the training rows is clearly better with it)")
    p.add_argument("--nu", type=float, default=None, metavar="NU",
                   help="weight of (nu/2)||w||^2 (default 1, the paper's)")
    p.add_argument("--batch-size", type=_batch_size, default=None, metavar="B|full",
                   help="minibatch rows, or full (LAST only: every row in each step, as --inner-solver "
                        "lbfgs needs); default: LAST full batch below 5000 rows, else 500; sgd/adam 10")
    p.add_argument("--max-iter", type=int, default=None, metavar="N",
                   help="sgd/adam only: iterations of the final run (default: the paper's 250000)")
    p.add_argument("--device", default="cpu",
                   help="torch device to train on, e.g. cuda or cuda:1, or auto: a GPU when torch "
                        "sees one, else the CPU (default cpu)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="torch threads while training (default 1; raise it on an idle many-core machine)")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="--mu grid, --auto and budgets: fit their candidates in N joblib processes (default 1, one at a time)")
    p.add_argument("--cluster", default=None, metavar="ADDRESS",
                   help="--mu grid, --auto and budgets: fit their candidates on the Dask scheduler at ADDRESS "
                        "(tcp://host:8786)")


def _add_last_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--multiclass", choices=("ovr", "shared"), default=None,
                   help="LAST only, > 2 classes: ovr = one dictionary per class (default, the paper); "
                        "shared = one dictionary of --atoms atoms, each voting for or against one class")
    p.add_argument("--mu", type=_mu_values, default=None, metavar="MU[,MU...]",
                   help="LAST only: weight decay (mu/2)||U||^2 on the atoms (default: 0.1 or 0.3 times the "
                        "preprocessed rows' mean squared norm, the better on 20%% of the training rows "
                        "held out where fits are cheap; 0 is the paper's objective). Several values, e.g. 0,1,10: each is fitted on 90%% of the training "
                        "rows, the one most accurate on the other 10%% is refitted on all")
    p.add_argument("--max-dca-iter", type=int, default=None, metavar="K",
                   help="LAST only: DCA iterations (default: LASTClassifier's, the paper's 50)")
    p.add_argument("--early-stopping", action="store_true",
                   help="LAST only: hold out 10%% of the training rows, stop when their accuracy has "
                        "not improved for 3 DCA iterations, keep the best iterate")
    p.add_argument("--shift-augment", type=int, default=None, metavar="K",
                   help="LAST only, image data: train also on copies of every training image moved "
                        "1..K pixels up, down, left and right (4K copies; the model keeps its size)")
    p.add_argument("--inner-solver", default=None, metavar="NAME",
                   help="LAST only: sub-problem solver, e.g. adam or subgradient (the paper's); "
                        "default: LASTClassifier's")
    p.add_argument("--inner-iter", type=int, default=None, metavar="T",
                   help="LAST only: iterations per sub-problem (default: LASTClassifier's rule)")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="also draw the training curve (objective per iteration; hold-out accuracy "
                        "with --early-stopping) to this .png/.pdf/.svg file (needs matplotlib)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary (with the training curve) as JSON")
    p.add_argument("--out", required=True, help="model file to write (.npz)")


def run_train(args: argparse.Namespace) -> int:
    """``lastedge train``: fit, save, score, save again with the scores, report; under ``torchrun``
    on several ranks, one data-parallel fit (:mod:`.train_distributed`)."""
    if not launched():
        return _train(args)
    with process_group(args):
        return _train(args)


def _train(args: argparse.Namespace) -> int:
    from lastedge.runtime import check_output_path
    from lastedge.runtime.figures import check_figure_path

    out = check_output_path(args.out, ".npz", "--out", inputs={"--data": args.data})
    figure = None if args.plot is None else check_figure_path(args.plot)
    estimator = make_estimator(args)
    data = _load(args)
    if args.shift_augment:
        if data.image_shape is None:
            raise ValueError(f"--shift-augment needs images: {data.name} has no image shape (give "
                             "--image-shape HxW for .npz or CSV rows)")
        estimator.set_params(image_shape=data.image_shape)
    selection = None
    if args.auto or len(args.mu or ()) > 1 or budget_given(args):
        selection = (choose_budget(estimator, args, data) if budget_given(args)
                     else choose_auto(estimator, args, data) if args.auto
                     else _choose_mu(estimator, args.mu, data, args.seed, args))
        if selection is None:
            return 130
        estimator.set_params(**selection["chosen"])
    stop, summary = _fit_and_save(estimator, data, args, selection, out)
    try:
        if stop.requested and stop.stopped_after is None:
            raise KeyboardInterrupt  # pressed once the fit had finished
        summary["metrics"] = metrics_over_ranks(estimator, data) if launched() else metrics(estimator, data)
    except KeyboardInterrupt:
        print(f"lastedge train: interrupted after the fit: {out} holds the fitted model, without its "
              "accuracy", file=sys.stderr)
        return 130
    if not is_writer():
        return 0
    _save_with_curve(estimator, summary, out, figure)
    print(json_text(summary) if args.json else "\n".join(_field_lines(summary)))
    skipped = selection and (selection.get("skipped") or selection.get("settings", {}).get("skipped"))
    interrupted = stop.stopped_after is not None or bool(skipped)
    return 130 if interrupted else 0


def _load(args: argparse.Namespace) -> Any:
    """The training (and test) rows ``args`` name, checked finite."""
    from lastedge.runtime.data import load_dataset

    if not args.quiet and Path(args.data).is_dir():  # thousands of images take seconds to read
        print(f"lastedge train: reading {args.data} ...", file=sys.stderr, flush=True)
    data = load_block(args) if launched() else load_dataset(
        args.data, label_column=args.label_column, random_state=args.seed, image_size=args.image_size)
    data = _with_image_shape(data, args.image_shape)
    _check_finite(data)
    return data


def _choose_mu(estimator: Any, grid: list[float], data: Any, seed: int,
               args: argparse.Namespace) -> dict[str, Any] | None:
    """The hold-out choice among ``--mu``'s values; None when a second Ctrl-C stopped it before
    any model was fitted on all rows."""
    grid_stop = StopOnInterrupt("stopping the hold-out grid after this candidate fit, then fitting the "
                                "best so far on all rows", estimator.verbose)
    try:
        with grid_stop.installed(), cluster_backend(args.cluster):
            return choose_on_holdout(estimator, {"mu": grid}, data.X_train, data.y_train, seed, monitor=grid_stop,
                                     n_jobs=search_jobs(args.jobs, args.cluster))
    except KeyboardInterrupt:
        print("lastedge train: interrupted during the hold-out grid: nothing trained", file=sys.stderr)
        return None


def _fit_and_save(estimator: Any, data: Any, args: argparse.Namespace, selection: dict[str, Any] | None,
                  out: Path) -> tuple[StopOnInterrupt, dict[str, Any]]:
    """Fit on the training rows and write the model at once, Ctrl-C stopping the fit at its next
    stopping point; warnings of the fit (e.g. DCA's ConvergenceWarning) printed as one line each.
    Returns the Ctrl-C monitor and the summary without metrics."""
    from sklearn.exceptions import ConvergenceWarning

    stop = StopOnInterrupt("stopping after this DCA iteration and saving the model so far" if args.method == "last"
                           else "stopping at the next checkpoint of this run (one every 2% of its steps) and "
                           "saving the best model so far", estimator.verbose)
    label_column = args.label_column if Path(args.data).suffix.lower() == ".csv" else None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        with stop.installed():  # the monitor stops the fit between DCA iterations or SGD checkpoints
            if args.method != "last" and estimator.verbose:  # its step trials, a third or more of the
                print(step_trials_notice(estimator), file=sys.stderr, flush=True)  # time, show no bar
            estimator.fit(data.X_train, data.y_train, monitor=stop)
            # written before anything else (scoring takes long on large data): a Ctrl-C from the fit's
            # end to here only asks to stop, one later finds the model saved
            interrupted = (None if stop.stopped_after is None else
                           interrupted_record(estimator, args.method, stop.stopped_after))
            summary = provenance(estimator, data, label_column, selection, interrupted)
            if launched():
                record_ranks(summary)
            if is_writer():
                _save(estimator, out, summary)
    for warning in caught if is_writer() else ():
        print(f"lastedge train: warning: {str(warning.message).splitlines()[0]}", file=sys.stderr)
    return stop, summary


def _save(estimator: Any, out: Path, summary: dict[str, Any]) -> Any:
    """The fitted model with the summary's record in its metadata, written (atomically) to ``out``."""
    model = estimator.to_model()
    record = {key: summary[key] for key in ("data", "metrics", "selection", "interrupted")
              if summary.get(key) is not None}
    model = dataclasses.replace(model, meta={**model.meta, **record})
    model.save(out)
    return model


def _save_with_curve(estimator: Any, summary: dict[str, Any], out: Path, figure: Path | None) -> None:
    """Write the model again, now with its metrics, and the training curve's figure; add both, and
    the curve, to ``summary``."""
    from lastedge.train.curves import plot_training_curve, training_curve

    model = _save(estimator, out, summary)
    summary["model"] = {"path": str(out), "size_bytes": out.stat().st_size, "atoms": model.n_atoms,
                        "macs_per_sample": model.macs_per_sample, "preprocess": model.preprocess.kind,
                        "preprocess_chosen": getattr(estimator, "preprocess", None) == "auto"}
    if hasattr(estimator, "mu_"):  # LAST: the weight decay, and mu="auto"'s hold-out scores
        choice = estimator.mu_choice_
        summary["model"]["mu"] = float(estimator.mu_)
        summary["model"]["mu_factor"] = estimator.mu_factor_
        summary["model"]["mu_choice"] = None if choice is None else {f"{k:g}": v for k, v in choice.items()}
    summary["curve"] = training_curve(estimator) if estimator.history_ else []  # none: stopped in SGD's trials
    if figure is not None and summary["curve"]:
        summary["figure"] = str(plot_training_curve(estimator, figure))
    elif figure is not None:
        print("lastedge train: no training curve to draw: Ctrl-C stopped the step-size trials before the "
              "final run", file=sys.stderr)


def _field_lines(summary: dict[str, Any]) -> list[str]:
    from .inspect import field_lines

    return field_lines(summary_fields(summary))


def make_estimator(args: argparse.Namespace) -> Any:
    """The estimator the ``train`` arguments ask for (options of the other method are refused)."""
    from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
    from lastedge.train.params import max_threads

    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if not 1 <= args.threads <= max_threads():  # far more threads crash torch's thread pool
        raise ValueError(f"--threads must be in [1, {max_threads()}] (64 per core, at least 256), "
                         f"got {args.threads}")
    if not 0 <= args.seed < 2**32:  # numpy's seeds
        raise ValueError(f"--seed must be an integer in [0, {2**32 - 1}], got {args.seed}")
    if args.batch_size == "full" and args.method != "last":
        raise ValueError("--batch-size full applies to --method last only")
    if args.time_budget is not None and not (args.auto or budget_given(args)):
        raise ValueError("--time-budget applies to --auto and budgets only")
    check_budget_options(args)
    common = {"n_atoms": args.atoms, "preprocess": args.preprocess or "auto", "random_state": args.seed,
              "verbose": 0 if args.quiet else 1, "device": args.device, "n_jobs": args.threads}
    common.update({k: v for k, v in (("nu", args.nu), ("batch_size", args.batch_size)) if v is not None})
    last_only = {"inner_solver": args.inner_solver, "max_dca_iter": args.max_dca_iter,
                 "inner_iter": args.inner_iter, "mu": (args.mu or [None])[0],  # until the hold-out chooses
                 "multiclass": args.multiclass, "early_stopping": args.early_stopping or None,
                 "shift_augment": args.shift_augment}
    if args.method == "last":
        if args.max_iter is not None:
            raise ValueError("--max-iter applies to --method sgd/adam; LAST uses --max-dca-iter")
        return LASTClassifier(**common, **{k: v for k, v in last_only.items() if v is not None})
    given = [f"--{k.replace('_', '-')}" for k, v in last_only.items() if v is not None]
    if given:
        raise ValueError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --method last only")
    extra = {} if args.max_iter is None else {"max_iter": args.max_iter}
    return SGDSoftThresholdClassifier(**common, optimizer=args.method, **extra)


def _with_image_shape(data: Any, shape: tuple[int, ...] | None) -> Any:
    """``data`` whose rows are declared images of ``shape`` (``--image-shape``), checked against
    its feature count. Sources that know their images' shape (folders, digits) refuse one."""
    from lastedge.runtime.model import check_image_shape

    if shape is None:
        return data
    if data.image_shape is not None:
        raise ValueError(f"--image-shape applies to .npz and CSV data; {data.name} holds "
                         f"{'x'.join(map(str, data.image_shape))} images already")
    return dataclasses.replace(data, image_shape=check_image_shape(shape, data.X_train.shape[1]))


def _check_finite(data: Any) -> None:
    """Refuse NaN or infinite features in either part before fitting: the test part is scored only
    after the fit, whose work a bad value found then would throw away."""
    from lastedge.runtime.model import check_input

    for part, X in (("training", data.X_train), ("test", data.X_test)):
        try:
            check_input(X, X.shape[1])
        except ValueError as err:
            raise ValueError(f"{data.name}, {part} rows: {err}") from None


def _image_shape(text: str) -> tuple[int, ...]:
    """``--image-shape``: HxW or HxWx3 (channels last, the layout every lastedge reader gives)."""
    from lastedge.runtime.figures import parse_image_shape

    try:
        shape, channels_first = parse_image_shape(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if channels_first:
        raise argparse.ArgumentTypeError(f"train needs rows with colour channels last (HxWx3), got {text!r}")
    return shape


def _batch_size(text: str) -> int | str:
    """``--batch-size``: a number of rows or "full" (checked by the estimator)."""
    if text == "full":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of rows or 'full', got {text!r}") from None


def _mu_values(text: str) -> list[float]:
    """``--mu``: one value or a comma-separated grid, each a finite number >= 0, no repeats."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not all(np.isfinite(v) and v >= 0 for v in values) or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(f"expected distinct finite numbers >= 0, got {text!r}")
    return values
