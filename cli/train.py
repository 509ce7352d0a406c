"""``lastedge train``: fit LAST or its SGD/Adam baseline on a data file and save the model."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .common import add_image_size_option, json_text

METHODS = ("last", "sgd", "adam")
PREPROCESS = ("none", "l2", "center-l2", "standardize")
SELECTION_HOLDOUT = 0.1  # share of the training rows that judges each candidate of a --mu/... grid
GRID_OPTIONS = ("mu", "atoms_against", "ovr_hinge_weight")  # options that take a grid to choose from


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-command, ``train``, to the ``lastedge`` parser."""
    p = subparsers.add_parser(
        "train", help="train a soft-threshold classifier and save it (.npz)",
        description="Train LAST (DCA) or the SGD/Adam baseline on 'digits', an .npz archive "
                    "(X_train, y_train[, X_test, y_test]), a CSV file (one row per sample, one "
                    "label column), a folder of IDX files (MNIST's format: train-images-idx3-ubyte"
                    "[.gz], train-labels-..., optionally t10k-...) or an image folder (one "
                    "subfolder per class, or train/ and test/ holding them; images of one size). "
                    "CSV files and image folders without a test part are split 75/25, "
                    "stratified; an .npz or IDX folder without one trains on all its rows. "
                    "Prints train/test "
                    "accuracy, training time, feature sparsity and model size; writes the model "
                    "atomically. Ctrl-C stops LAST after the DCA iteration under way, SGD/Adam at the "
                    "next checkpoint of the run under way (one every 2% of its steps; in the step-size "
                    "trials the best trial run so far is kept), and saves the model so far (exit status "
                    "130); in a --mu/... grid it stops the grid after the candidate fit under way and "
                    "goes on to the final fit with the best of those finished (exit status 130 too). A "
                    "second Ctrl-C stops at once.")
    p.add_argument("--data", required=True, metavar="PATH|digits",
                   help="training data: .npz, .csv, a folder, or digits")
    p.add_argument("--atoms", required=True, type=int, metavar="N",
                   help="atoms per head (one head per class for > 2 classes; with --multiclass "
                        "shared, atoms in all), e.g. 25")
    p.add_argument("--method", choices=METHODS, default="last",
                   help="last: DCA (default); sgd / adam: the baselines on the same objective")
    p.add_argument("--preprocess", choices=PREPROCESS, default="l2",
                   help="applied to every input, recorded in the model (default l2)")
    p.add_argument("--inner-solver", default=None, metavar="NAME",
                   help="LAST only: sub-problem solver, e.g. adam or subgradient (the paper's); "
                        "default: LASTClassifier's")
    p.add_argument("--max-dca-iter", type=int, default=None, metavar="K",
                   help="LAST only: DCA iterations (default: LASTClassifier's, the paper's 50)")
    p.add_argument("--inner-iter", type=int, default=None, metavar="T",
                   help="LAST only: iterations per sub-problem (default: LASTClassifier's rule)")
    p.add_argument("--mu", type=_grid_values, default=None, metavar="MU[,MU...]",
                   help="LAST only: weight decay (mu/2)||U||^2 on the atoms (default 0, the paper's "
                        "objective). Several values, e.g. 0,1,10: each (with every combination of the "
                        "other grids) is fitted on 90%% of the training rows, the one most accurate "
                        "on the other 10%% is refitted on all")
    p.add_argument("--multiclass", choices=("ovr", "shared"), default=None,
                   help="LAST only, > 2 classes: ovr = one dictionary per class (default, the paper); "
                        "shared = one dictionary of --atoms atoms, each voting for one class")
    p.add_argument("--hinge", choices=("max", "sum"), default=None,
                   help="LAST only, --multiclass shared: multi-class hinge, max = best rival "
                        "(default), sum = every rival")
    p.add_argument("--atoms-against", type=_grid_values, default=None, metavar="A[,A...]",
                   help="LAST only, --multiclass shared: share of each class's atoms voting against it "
                        "(default 0; several values are chosen on the hold-out as --mu's are)")
    p.add_argument("--ovr-hinge-weight", type=_grid_values, default=None, metavar="L[,L...]",
                   help="LAST only, --multiclass shared: weight of one-vs-all's hinges added to the "
                        "multi-class hinge (default 0; several values are chosen as --mu's are)")
    p.add_argument("--sub-dictionaries", type=int, default=None, metavar="K",
                   help="LAST only, --multiclass shared: train the atoms as K independent dictionaries "
                        "of --atoms / K atoms whose class scores are averaged (default 1; the model "
                        "file is the same shape)")
    p.add_argument("--max-iter", type=int, default=None, metavar="N",
                   help="sgd/adam only: iterations of the final run (default: the paper's 250000)")
    p.add_argument("--early-stopping", action="store_true",
                   help="LAST only: hold out 10%% of the training rows, stop when their accuracy has "
                        "not improved for 3 DCA iterations, keep the best iterate")
    p.add_argument("--nu", type=float, default=None, metavar="NU",
                   help="weight of (nu/2)||w||^2 (default 1, the paper's)")
    p.add_argument("--batch-size", type=_batch_size, default=None, metavar="B|full",
                   help="minibatch rows, or full (LAST only: every row in each step, as --inner-solver "
                        "lbfgs needs); default: LAST full batch below 5000 rows, else 500; sgd/adam 10")
    p.add_argument("--device", default="cpu",
                   help="torch device to train on, e.g. cuda or cuda:1, or auto: a GPU when torch "
                        "sees one, else the CPU (default cpu)")
    p.add_argument("--threads", type=int, default=1, metavar="N",
                   help="torch threads while training (default 1; raise it on an idle many-core machine)")
    p.add_argument("--seed", type=int, default=0, help="seeds the split and the training (default 0)")
    p.add_argument("--label-column", default="-1", metavar="C",
                   help="CSV label column: name (with a header) or index (default -1, the last)")
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="also draw the training curve (objective per iteration; hold-out accuracy "
                        "with --early-stopping) to this .png/.pdf/.svg file (needs matplotlib)")
    add_image_size_option(p, "image folders: scale every image to HEIGHTxWIDTH pixels (recorded in "
                             "the model, so predict scales new images the same way)")
    p.add_argument("--image-shape", type=_image_shape, default=None, metavar="HxW|HxWx3",
                   help=".npz and CSV data: each row is an image of this shape (colour channels last), "
                        "recorded in the model as image folders' shapes are")
    p.add_argument("--shift-augment", type=int, default=None, metavar="K",
                   help="LAST only, image data: train also on copies of every training image moved "
                        "1..K pixels up, down, left and right (4K copies; the model keeps its size)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary (with the training curve) as JSON")
    p.add_argument("--out", required=True, help="model file to write (.npz)")
    p.set_defaults(func=run_train)


def run_train(args: argparse.Namespace) -> int:
    """``lastedge train``: fit, report, save."""
    from sklearn.exceptions import ConvergenceWarning

    from lastedge.runtime.figures import check_figure_path
    from .inspect import field_lines
    from lastedge.runtime import check_output_path
    from lastedge.runtime.data import load_dataset

    from lastedge.train.curves import plot_training_curve, training_curve

    out = check_output_path(args.out, ".npz", "--out", inputs={"--data": args.data})
    figure = None if args.plot is None else check_figure_path(args.plot)
    estimator = make_estimator(args)
    if not args.quiet and Path(args.data).is_dir():  # thousands of images take seconds to read
        print(f"lastedge train: reading {args.data} ...", file=sys.stderr, flush=True)
    data = _with_image_shape(load_dataset(args.data, label_column=args.label_column,
                                          random_state=args.seed, image_size=args.image_size),
                             args.image_shape)
    _check_finite(data)
    if args.shift_augment:
        if data.image_shape is None:
            raise ValueError(f"--shift-augment needs images: {data.name} has no image shape (give "
                             "--image-shape HxW for .npz or CSV rows)")
        estimator.set_params(image_shape=data.image_shape)
    grid = {name: getattr(args, name) for name in GRID_OPTIONS if len(getattr(args, name) or ()) > 1}
    selection = None
    if grid:
        grid_stop = StopOnInterrupt("stopping the hold-out grid after this candidate fit, then fitting the "
                                    "best so far on all rows", estimator.verbose)
        try:
            with grid_stop.installed():
                selection = choose_on_holdout(estimator, grid, data.X_train, data.y_train, args.seed,
                                              monitor=grid_stop)
        except KeyboardInterrupt:  # the second Ctrl-C, before any model was fitted on all rows
            print("lastedge train: interrupted during the hold-out grid: nothing trained", file=sys.stderr)
            return 130
        estimator.set_params(**selection["chosen"])
    stop = StopOnInterrupt("stopping after this DCA iteration and saving the model so far" if args.method == "last"
                           else "stopping at the next checkpoint of this run (one every 2% of its steps) and "
                           "saving the best model so far", estimator.verbose)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        with stop.installed():  # the monitor stops the fit between DCA iterations or SGD checkpoints
            if args.method != "last" and estimator.verbose:  # its step trials, a third or more of the
                print(step_trials_notice(estimator), file=sys.stderr, flush=True)  # time, show no bar
            estimator.fit(data.X_train, data.y_train, monitor=stop)
            # written before anything else (scoring takes long on large data): a Ctrl-C from the fit's
            # end to here only asks to stop, one later finds the model saved
            summary = _provenance(args, estimator, data, selection, stop)
            _save(estimator, out, summary)
    for warning in caught:
        print(f"lastedge train: warning: {str(warning.message).splitlines()[0]}", file=sys.stderr)
    try:
        if stop.requested and stop.stopped_after is None:
            raise KeyboardInterrupt  # pressed once the fit had finished
        summary["metrics"] = _metrics(estimator, data)
    except KeyboardInterrupt:
        print(f"lastedge train: interrupted after the fit: {out} holds the fitted model, without its "
              "accuracy", file=sys.stderr)
        return 130
    model = _save(estimator, out, summary)  # again, with its accuracy
    summary["model"] = {"path": str(out), "size_bytes": out.stat().st_size, "atoms": model.n_atoms,
                        "macs_per_sample": model.macs_per_sample}
    summary["curve"] = training_curve(estimator) if estimator.history_ else []  # none: stopped in SGD's trials
    if figure is not None and summary["curve"]:
        summary["figure"] = str(plot_training_curve(estimator, figure))
    elif figure is not None:
        print("lastedge train: no training curve to draw: Ctrl-C stopped the step-size trials before the "
              "final run", file=sys.stderr)
    if args.json:
        print(json_text(summary))
    else:
        print("\n".join(field_lines(_summary_fields(summary))))
    interrupted = stop.stopped_after is not None or bool(selection and selection.get("skipped"))
    return 130 if interrupted else 0


def step_trials_notice(estimator: Any) -> str:
    """What an SGD/Adam fit does before its progress bar shows: one trial run per step size."""
    from lastedge.train.sgd import step_trials

    steps, trial_iter = step_trials(estimator)
    return (f"lastedge train: choosing the step size: {len(steps)} trial runs of "
            f"{trial_iter:,} steps, then the {int(estimator.max_iter):,}-step "
            "run (its progress bar follows)")


def _interrupted_sgd_record(estimator: Any) -> dict[str, Any]:
    """What an SGD/Adam fit stopped by its monitor kept, for the summary and the model's metadata:
    the final run's steps, or (no ``history_``: stopped in the step trials) the trial run kept."""
    from lastedge.train.sgd import step_trials

    if estimator.history_:
        return {"after_step": int(estimator.n_iter_), "max_iter": int(estimator.max_iter)}
    steps, trial_iter = step_trials(estimator)
    return {"during": "step trials", "trials_run": len(estimator.step_trials_), "trials": len(steps),
            "kept_step": float(estimator.step_), "after_step": int(estimator.n_iter_), "trial_steps": trial_iter}


class StopOnInterrupt:
    """A monitor that makes Ctrl-C stop a fit (LAST's, SGD's) or a hold-out grid at its next
    stopping point, so that the work so far is kept rather than lost; a second Ctrl-C interrupts
    at once. ``stopping`` is what the first Ctrl-C prints it will do."""

    def __init__(self, stopping: str, verbose: int = 0):
        self.verbose = verbose
        self.stopping = stopping
        self.requested = False
        self.stopped_after: int | None = None  # the monitor's steps (DCA iterations, ...) done when it stopped

    def __call__(self, iteration: int, estimator: Any) -> bool:
        if self.requested:
            self.stopped_after = iteration + 1  # the hook counts from 0
        return self.requested

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Catch SIGINT while the block runs (in the main thread only, where signals arrive)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT) or signal.default_int_handler  # None: set outside Python

        def request_stop(signum: int, frame: Any) -> None:
            self.requested = True
            signal.signal(signal.SIGINT, previous)
            below_bar = "\n" if self.verbose else ""
            print(f"{below_bar}lastedge train: {self.stopping} (Ctrl-C again to stop at once)",
                  file=sys.stderr, flush=True)

        signal.signal(signal.SIGINT, request_stop)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


def make_estimator(args: argparse.Namespace) -> Any:
    """The estimator the ``train`` arguments ask for (options of the other method are refused)."""
    from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier
    from lastedge.train.params import max_threads

    if not 1 <= args.threads <= max_threads():  # far more threads crash torch's thread pool
        raise ValueError(f"--threads must be in [1, {max_threads()}] (64 per core, at least 256), "
                         f"got {args.threads}")
    if not 0 <= args.seed < 2**32:  # numpy's seeds
        raise ValueError(f"--seed must be an integer in [0, {2**32 - 1}], got {args.seed}")
    if args.batch_size == "full" and args.method != "last":
        raise ValueError("--batch-size full applies to --method last only")
    common = {"n_atoms": args.atoms, "preprocess": args.preprocess, "random_state": args.seed,
              "verbose": 0 if args.quiet else 1, "device": args.device, "n_jobs": args.threads}
    common.update({k: v for k, v in (("nu", args.nu), ("batch_size", args.batch_size)) if v is not None})
    first = {name: (getattr(args, name) or [None])[0] for name in GRID_OPTIONS}  # until the hold-out chooses
    last_only = {"inner_solver": args.inner_solver, "max_dca_iter": args.max_dca_iter,
                 "inner_iter": args.inner_iter, "mu": first["mu"], "multiclass": args.multiclass,
                 "hinge": args.hinge, "atoms_against": first["atoms_against"],
                 "ovr_hinge_weight": first["ovr_hinge_weight"], "sub_dictionaries": args.sub_dictionaries,
                 "early_stopping": args.early_stopping or None,
                 "shift_augment": args.shift_augment}
    if args.method == "last":
        if args.max_iter is not None:
            raise ValueError("--max-iter applies to --method sgd/adam; LAST uses --max-dca-iter")
        shared_only = [name for name in ("hinge", "atoms_against", "ovr_hinge_weight", "sub_dictionaries")
                       if getattr(args, name) is not None]
        if shared_only and args.multiclass != "shared":
            raise ValueError(f"--{shared_only[0].replace('_', '-')} applies to --multiclass shared only")
        given = {k: v for k, v in last_only.items() if v is not None}
        return LASTClassifier(**common, **given)
    given = [f"--{k.replace('_', '-')}" for k, v in last_only.items() if v is not None]
    if given:
        raise ValueError(f"{', '.join(given)} appl{'y' if len(given) > 1 else 'ies'} to --method last only")
    extra = {} if args.max_iter is None else {"max_iter": args.max_iter}
    return SGDSoftThresholdClassifier(**common, optimizer=args.method, **extra)


def choose_on_holdout(estimator: Any, grid: dict[str, list[float]], X: np.ndarray, y: np.ndarray,
                      seed: int, monitor: Callable[[int, Any], bool | None] | None = None) -> dict[str, Any]:
    """``{"chosen": {name: value}, "holdout_fraction", "candidates": [{name: value, ...,
    "holdout_accuracy"}]}``: each combination of ``grid`` fitted on ``1 - SELECTION_HOLDOUT`` of the
    rows (stratified) and scored on the rest. ``monitor`` may stop the grid after a candidate (see
    :func:`~lastedge.train.selection.choose_params`); then ``"skipped"`` lists those not fitted."""
    from sklearn.base import clone
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import ParameterGrid

    from lastedge.train.selection import candidate_grid, choose_params, holdout_split

    for params in ParameterGrid(grid):  # a bad value is named before any fit, not after some
        clone(estimator).set_params(**params)._check_params()
    if min(np.unique(y, return_counts=True)[1]) < 2:
        raise ValueError(f"choosing {', '.join(grid)} needs a {SELECTION_HOLDOUT:.0%} hold-out with every "
                         "class, and a class has only 1 training row")
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):  # progress, not output
        warnings.simplefilter("ignore", ConvergenceWarning)  # the final fit reports its own
        best, candidates = choose_params(estimator, grid, X, y, holdout_split(SELECTION_HOLDOUT, seed),
                                         verbose=estimator.verbose, monitor=monitor)
    selection = {"chosen": best, "holdout_fraction": SELECTION_HOLDOUT,
                 "candidates": [{**params, "holdout_accuracy": score} for params, score in candidates]}
    skipped = candidate_grid(grid)[len(candidates):]
    if skipped:
        selection["skipped"] = skipped
    return selection


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


def _grid_values(text: str) -> list[float]:
    """``--mu`` and the other grid options: one value or a comma-separated grid, each a finite
    number >= 0, no repeats (the estimator checks each value's own range)."""
    try:
        values = [float(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not all(np.isfinite(v) and v >= 0 for v in values) or len(set(values)) < len(values):
        raise argparse.ArgumentTypeError(f"expected distinct finite numbers >= 0, got {text!r}")
    return values


def _provenance(args: argparse.Namespace, estimator: Any, data: Any, selection: dict[str, Any] | None,
                stop: StopOnInterrupt) -> dict[str, Any]:
    """What the summary and the model's metadata record of the data and the fit (its metrics,
    which take a pass over the data, are added by ``_metrics``)."""
    facts = {"source": data.name, "train_rows": len(data.X_train), "test_rows": len(data.X_test),
             "features": int(data.X_train.shape[1]), "classes": len(estimator.classes_)}
    if data.image_shape is not None:  # lets `inspect --atoms` draw the atoms as these images
        facts["image_shape"] = [int(n) for n in data.image_shape]
    if Path(args.data).suffix.lower() == ".csv":  # export --calibration reads the same column by default
        facts["label_column"] = args.label_column
    summary: dict[str, Any] = {"data": facts, "metrics": None}
    if selection is not None:
        summary["selection"] = selection
    if stop.stopped_after is not None:
        summary["interrupted"] = (_interrupted_sgd_record(estimator) if args.method != "last" else
                                  {"after_dca_iteration": stop.stopped_after,
                                   "max_dca_iter": int(estimator.max_dca_iter)})
    return summary


def _save(estimator: Any, out: Path, summary: dict[str, Any]) -> Any:
    """The fitted model with the summary's record in its metadata, written (atomically) to ``out``."""
    model = estimator.to_model()
    provenance = {key: summary[key] for key in ("data", "metrics", "selection", "interrupted")
                  if summary.get(key) is not None}
    model = dataclasses.replace(model, meta={**model.meta, **provenance})
    model.save(out)
    return model


def _metrics(estimator: Any, data: Any) -> dict[str, Any]:
    """Accuracies and fit time; sparsity on the test rows (training rows when there is no test part)."""
    rows = data.X_test if data.has_test else data.X_train
    return {"train_accuracy": round(float(estimator.score(data.X_train, data.y_train)), 5),
            "test_accuracy": (round(float(estimator.score(data.X_test, data.y_test)), 5)
                              if data.has_test else None),
            "fit_seconds": round(estimator.fit_time_, 3),
            "feature_sparsity": round(estimator.feature_sparsity(rows), 5)}


def _summary_fields(summary: dict[str, Any]) -> list[tuple[str, str]]:
    from .inspect import grid_stop_text, selection_text

    data, metrics, model = summary["data"], summary["metrics"], summary["model"]
    test = metrics["test_accuracy"]
    sparsity_rows = "test" if test is not None else "train"
    fields = [
        ("data", f"{data['source']}: {data['train_rows']} train / {data['test_rows']} test rows, "
                 f"{data['features']} features, {data['classes']} classes"),
        ("train accuracy", f"{metrics['train_accuracy']:.2%}"),
        ("test accuracy", "no test part" if test is None else f"{test:.2%}"),
        ("training time", f"{metrics['fit_seconds']:.1f} s"),
        ("feature sparsity", f"{metrics['feature_sparsity']:.1%} zeros on {sparsity_rows} rows"),
        ("model", f"{model['path']}: {model['atoms']} atoms, {model['macs_per_sample']:,} MACs/sample, "
                  f"{model['size_bytes'] / 1024:.1f} KiB"),
    ]
    if "selection" in summary:
        fields.append(("hold-out choice", selection_text(summary["selection"])))
        stopped = grid_stop_text(summary["selection"])
        if stopped is not None:
            fields.append(("hold-out grid", stopped))
    scored = [row for row in summary["curve"] if "validation_accuracy" in row]
    if scored:
        best = max(scored, key=lambda row: row["validation_accuracy"])
        kept = f"kept DCA iteration {best['iteration']} of {len(summary['curve'])}"
        fields.append(("hold-out accuracy", f"{best['validation_accuracy']:.2%}, {kept}"))
    if "figure" in summary:
        fields.append(("training curve", summary["figure"]))
    if "interrupted" in summary:
        fields.append(("interrupted", _interrupted_text(summary["interrupted"])))
    return fields


def _interrupted_text(stopped: dict[str, Any]) -> str:
    """The summary line of a fit Ctrl-C stopped: LAST's, SGD's final run or SGD's step trials."""
    if "after_dca_iteration" in stopped:
        where = f"stopped after DCA iteration {stopped['after_dca_iteration']} of at most {stopped['max_dca_iter']}"
    elif "during" in stopped:
        where = (f"stopped the step-size trials ({stopped['trials_run']} of {stopped['trials']} run) and kept "
                 f"the trial run of step {stopped['kept_step']:g}, {stopped['after_step']:,} of "
                 f"{stopped['trial_steps']:,} steps on the rows not held out")
    else:
        where = f"stopped after step {stopped['after_step']:,} of {stopped['max_iter']:,}"
    return f"Ctrl-C: {where}; the model so far is saved"
