"""``lastedge demo``: train LAST, SGD and a linear SVM on digits and print one comparison table,
then export the LAST model (ONNX/TFLite, fp32, static and dynamic int8), check each file and benchmark them."""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from .common import CommandError

PREPROCESS = "center-l2"
# Adam: on digits at these settings more accurate than L-BFGS in a quarter of the time. The
# settings were chosen on the paper's objective (mu = 0); with mu="auto" (LASTClassifier's default
# since issue 55) the --quick model's int8 file agreed on 98.9 % of rows, below export's 99 %.
SOLVER, MU = "adam", 0.0
PREDICT_REPEATS = 5  # predict ms: the median of these calls, on one BLAS thread


@dataclass(frozen=True)
class Settings:
    """How much work the demo does."""

    atoms: int           # atoms per class (LAST and SGD)
    dca_iter: int        # LAST: DCA iterations K
    inner_iter: int      # LAST: Adam iterations T per sub-problem
    sgd_iter: int        # SGD: iterations of the final run (the step search adds 80 %)
    bench_runs: int      # timed calls per file


FULL = Settings(atoms=25, dca_iter=5, inner_iter=300, sgd_iter=5000, bench_runs=200)
QUICK = Settings(atoms=4, dca_iter=2, inner_iter=30, sgd_iter=50, bench_runs=20)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``demo`` to the ``lastedge`` parser."""
    parser = subparsers.add_parser(
        "demo", help="compare LAST, SGD and a linear SVM on digits, export and benchmark LAST",
        description="On scikit-learn's digits (stratified 75/25 split, seed 0, center-l2 inputs): "
                    f"train LAST ({FULL.atoms} atoms per class, {FULL.dca_iter} DCA iterations), "
                    f"the SGD baseline ({FULL.sgd_iter} steps) and LinearSVC; print test error, "
                    "train time, time to predict the test part (median of 5 calls, 1 thread) and "
                    "feature sparsity; then export LAST to ONNX and TFLite (fp32, static and dynamic int8), check "
                    "each file and benchmark them at batch 1. Takes 30-60 s on 2 cores.")
    parser.add_argument("--quick", action="store_true", help="tiny settings (seconds; for tests)")
    parser.add_argument("--out", metavar="DIR",
                        help="keep the exported files in DIR, with figures of LAST's training curve, "
                             "atoms and latencies when matplotlib is installed (default: a temporary "
                             "folder, no figures)")
    parser.set_defaults(func=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    """``lastedge demo``: comparison table, export table, bench table, total time."""
    from lastedge.runtime.data import load_dataset

    start = time.perf_counter()
    out = None if args.out is None else check_out_folder(args.out)
    settings = QUICK if args.quick else FULL
    data = load_dataset("digits", test_size=0.25, random_state=0)
    print(f"digits: {len(data.X_train)} train / {len(data.X_test)} test rows, "
          f"{data.X_train.shape[1]} features, {len(np.unique(data.y_train))} classes, "
          f"{PREPROCESS} inputs")
    candidates = methods(settings)
    rows = [measure(name, estimator, data) for name, estimator in candidates]
    print(table(("method", "test error %", "train s", "predict ms", "sparsity"), rows))
    print(f"predict ms: median of {PREDICT_REPEATS} calls on the {len(data.X_test)} test rows, one "
          "BLAS thread; sparsity: share of zero features on them")
    print(f"\nexport to {args.out}" if args.out else
          "\nexport to a temporary folder (--out DIR keeps the files)")
    last = candidates[0][1]
    with output_folder(out) as folder:
        bench_rows = export_and_bench(last.to_model(), data, folder, settings)
        if out is not None:
            draw_figures(last, bench_rows, folder)
    print(f"demo took {time.perf_counter() - start:.0f} s")
    return 0


def methods(settings: Settings) -> list[tuple[str, Any]]:
    """(name, unfitted estimator) for LAST (first), the SGD baseline and LinearSVC on the same
    inputs."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.svm import LinearSVC

    from lastedge.runtime import Preprocess
    from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier

    common = {"n_atoms": settings.atoms, "preprocess": PREPROCESS, "random_state": 0, "verbose": 0}
    return [
        (f"LAST ({settings.atoms} atoms/class, K={settings.dca_iter})",
         LASTClassifier(**common, max_dca_iter=settings.dca_iter, inner_solver=SOLVER, mu=MU,
                        inner_iter=settings.inner_iter)),
        (f"SGD ({settings.atoms} atoms/class, {settings.sgd_iter} steps)",
         SGDSoftThresholdClassifier(**common, optimizer="sgd", max_iter=settings.sgd_iter)),
        ("LinearSVC", make_pipeline(FunctionTransformer(Preprocess(PREPROCESS).apply),
                                    LinearSVC(random_state=0))),
    ]


def measure(name: str, estimator: Any, data: Any) -> tuple[str, ...]:
    """Fit on the training part; test error, fit time, median time to predict the test part,
    feature sparsity on it."""
    from sklearn.exceptions import ConvergenceWarning

    from lastedge.runtime.blas import blas_threads

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the demo's budgets are deliberate
        start = time.perf_counter()
        estimator.fit(data.X_train, data.y_train)
        fit_s = time.perf_counter() - start
    seconds = []
    with blas_threads(1):  # as on a device; two threads on a busy 2-core machine stall ~20 ms
        for _ in range(PREDICT_REPEATS):
            start = time.perf_counter()
            predicted = estimator.predict(data.X_test)
            seconds.append(time.perf_counter() - start)
    predict_ms = 1e3 * float(np.median(seconds))
    error = 100 * float(np.mean(predicted != data.y_test))
    sparsity = (f"{estimator.feature_sparsity(data.X_test):.1%}"
                if hasattr(estimator, "feature_sparsity") else "-")
    return name, f"{error:.2f}", f"{fit_s:.1f}", f"{predict_ms:.1f}", sparsity


def export_and_bench(model: Any, data: Any, folder: Path, settings: Settings) -> list[dict[str, Any]]:
    """Save ``model``, export it in every format and precision (when lastedge[export] is
    installed), print sizes and parity, then bench every file at batch 1; returns the bench rows."""
    from lastedge.export import ParityError, export_all
    from lastedge.runtime import bench, format_table

    npz = model.save(folder / "digits.npz")
    try:
        exported = export_all(model, folder, data.X_train, data.X_test, data.y_test, stem="digits")
    except ImportError as err:
        print(f"export skipped: {err}")
        exported = []
    except ParityError as err:  # one line, as every command's errors
        raise CommandError(f"an exported file failed its parity check: {err}") from None
    rows = [(npz.name, f"{npz.stat().st_size / 1024:.1f}", "-", "-", "-")]
    rows += [(Path(r["path"]).name, f"{r['size_bytes'] / 1024:.1f}", f"{r['max_score_error']:.2g}",
              f"{r['agreement']:.2%}", f"{r['accuracy']:.2%}") for r in exported]
    print(table(("file", "KiB", "max score error", "agreement", "accuracy"), rows))
    files = [npz] + [Path(r["path"]) for r in exported]
    print()
    rows = bench(files, batch_sizes=(1,), runs=settings.bench_runs, X=data.X_test)
    print(format_table(rows))
    return rows


def draw_figures(last: Any, bench_rows: list[dict[str, Any]], folder: Path) -> None:
    """LAST's training curve, its atoms and the latencies as PNGs in ``folder`` (with matplotlib)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("\nfigures skipped: matplotlib is not installed (pip install 'lastedge[plot]')")
        return
    from lastedge.runtime.figures import latency_chart, model_atoms
    from lastedge.train import plot_training_curve

    paths = [plot_training_curve(last, folder / "digits_training_curve.png"),
             model_atoms(last.to_model(), folder / "digits_atoms.png"),
             latency_chart(bench_rows, folder / "digits_latency.png")]
    print("\nfigures: " + ", ".join(path.name for path in paths))


def check_out_folder(out: str) -> Path:
    """``out``, created if needed, once a file can be written in it: checked before the 30-60 s of
    training, so that a bad --out does not cost them."""
    from lastedge.runtime.model import cannot_write, check_output_path

    folder = Path(out)
    existing = next(path for path in (folder, *folder.parents) if path.exists())
    if not existing.is_dir():
        raise ValueError(f"--out {out}{'' if existing == folder else f': {existing}'} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # /proc, a read-only mount
        raise cannot_write(Path(err.filename or folder), err) from None
    return check_output_path(folder / "digits.npz", ".npz", "--out").parent


@contextlib.contextmanager
def output_folder(out: Path | None) -> Iterator[Path]:
    """``out``, or a temporary folder removed afterwards."""
    if out is not None:
        yield out
        return
    with tempfile.TemporaryDirectory(prefix="lastedge-demo-") as tmp:
        yield Path(tmp)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A text table: first column left-aligned, the others right-aligned."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    lines = []
    for cells in (header, *rows):
        lines.append("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(cells, widths))))
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])
