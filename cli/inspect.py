"""``lastedge inspect FILE``: what a model file holds.

A trained ``.npz`` model: classes, shapes, preprocessing, threshold, cost per sample and the
training facts recorded in its metadata. An exported ``.onnx``/``.tflite`` file: what
``lastedge.export.describe`` reports (ops, tensors, metadata, size); on a device without the
export extra, what the installed interpreter reads from the file (classes, shapes, precision), or
where no interpreter for the file is installed, what its bytes say after the checks loading makes
(``lastedge.runtime.onnx_metadata``, ``lastedge.runtime.tflite_summary``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Iterable

from .budget import budget_fields
from .common import install_hint, json_text

MAX_CLASSES_SHOWN = 12
# Trainer params that say how a fit was run, not what model it made: left out of the text (--json
# keeps every param), as are params set to None (a default chosen at fit time, e.g. inner_iter).
RUN_CONTROL_PARAMS = frozenset({"verbose", "n_jobs", "threads", "device"})
ATOMS_PER_CLASS = 10  # --per-class default


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``inspect`` to the ``lastedge`` parser."""
    parser = subparsers.add_parser(
        "inspect", help="show what a model file (.npz, .onnx, .tflite) holds",
        description="Print the classes, shapes, preprocessing, MACs per sample and training facts "
                    "of a trained .npz model, or the ops, tensors and metadata of an exported "
                    ".onnx/.tflite file (without lastedge[export]: what its interpreter, or "
                    "without one the file's metadata, says).")
    parser.add_argument("file", metavar="FILE", help="model file: .npz, .onnx or .tflite")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--atoms", metavar="PATH", default=None,
                        help=".npz only: also draw each class's strongest atoms as images to this "
                             ".png/.pdf/.svg file (needs matplotlib)")
    parser.add_argument("--image-shape", metavar="SHAPE", default=None,
                        help="with --atoms: how a row is an image, HxW, HxWx3 or 3xHxW (channels first); "
                             "default: the training images' shape, which the model records, else "
                             "square grayscale when the feature count is a square")
    parser.add_argument("--target", choices=("cortex-m4", "cortex-m3", "cortex-m0"), default=None,
                        help=".npz only: predict the flash and RAM of the model exported as C "
                             "(lastedge export --format c) for this microcontroller core")
    parser.add_argument("--per-class", type=int, default=ATOMS_PER_CLASS, metavar="K",
                        help=f"with --atoms: atoms drawn per class (default {ATOMS_PER_CLASS})")
    parser.set_defaults(func=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    """``lastedge inspect``: describe FILE as text or JSON."""
    from lastedge.runtime.files import sniff

    path = Path(args.file)
    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    if not path.is_file():  # it said "no such file" of a folder; a FIFO would block the read
        raise ValueError(f"{path} is {'a folder' if path.is_dir() else 'a special file'}, not a model file")
    if args.atoms is None and (args.image_shape is not None or args.per_class != ATOMS_PER_CLASS):
        raise ValueError("--image-shape and --per-class apply to --atoms only")
    if args.per_class < 1:  # it said "atoms per output must be >= 1", the figure's words
        raise ValueError(f"--per-class must be >= 1, got {args.per_class}")
    kind = sniff(path)
    if kind == "npz":
        info = model_info(path)
        if args.atoms is not None:
            info["atoms_figure"] = str(_draw_atoms(path, args))
        if args.target is not None:
            info["microcontroller"] = _c_sizes(path, args.target)
        lines = model_lines(info)
    elif args.target is not None:
        raise ValueError(f"--target predicts a trained .npz model's C build; {path.name} is an exported file")
    elif args.atoms is not None:
        raise ValueError(f"--atoms draws a trained .npz model's dictionary; {path.name} is an exported file")
    else:
        info, lines = _exported_info(path, kind)
    print(json_text(info) if args.json else "\n".join(lines))
    return 0


def _c_sizes(path: Path, target: str) -> list[dict[str, Any]]:
    """Flash and RAM of the model as C for ``target``, int8 (and with the DSP path) and fp32."""
    from lastedge.export.c_size import predict_size
    from lastedge.runtime import Model

    model = Model.load(path)
    variants = [("int8", False)] + ([("int8", True)] if target == "cortex-m4" else []) + [("fp32", False)]
    return [predict_size(model, target, precision, dsp) for precision, dsp in variants]


def _exported_info(path: Path, kind: str) -> tuple[dict[str, Any], list[str]]:
    """An exported file's graph (``lastedge.export.describe``); without the packages that parse
    graphs, as on a device, what the runtime reads from the file through its interpreter, or,
    without an interpreter for it, from the file's bytes."""
    from lastedge.export import describe
    from lastedge.export.describe import summary_lines

    try:
        info = describe(path)
        return info, summary_lines(info)
    except ModuleNotFoundError as err:
        missing = (err.name or "").split(".")[0]
        if missing not in ("onnx", "tflite", "flatbuffers"):
            raise
    from lastedge.runtime import load

    graph = f"not shown: {missing} is not installed ({install_hint(missing)})"
    try:
        predictor = load(path)
    except ImportError as err:  # no interpreter for it: what the file's bytes say
        info = _bytes_info(path, kind, graph, str(err))
    else:
        info = {
            "path": str(path), "format": kind, "size_bytes": predictor.file_size,
            "precision": predictor.precision, "backend": predictor.backend,
            "classes": predictor.classes.tolist(), "n_features": predictor.n_features,
            "n_outputs": predictor.n_outputs, "preprocess": predictor.preprocess.kind,
            "preprocess_in_graph": predictor.preprocess_in_graph,
            "macs_per_sample": predictor.macs_per_sample,
            "image_shape": None if predictor.image_shape is None else list(predictor.image_shape),
            "graph": graph,
        }
    return info, _runtime_lines(info)


def _bytes_info(path: Path, kind: str, graph: str, no_interpreter: str) -> dict[str, Any]:
    """What an ONNX or TFLite file's bytes say (``runtime.onnx_metadata``,
    ``runtime.tflite_summary``, which check the file as loading it does), where no interpreter
    for it is installed: the same fields as an interpreter's, no backend, and a graph line saying
    what running the file needs (``no_interpreter``, the loader's message)."""
    from lastedge.runtime.model import count_macs
    from lastedge.runtime.onnx_metadata import read_onnx_summary
    from lastedge.runtime.tflite_summary import read_tflite_summary

    summary = (read_onnx_summary if kind == "onnx" else read_tflite_summary)(path)
    header = summary.header
    image_shape = header.image_shape(summary.n_features)
    needs = (f"onnxruntime ({install_hint('onnxruntime')})" if kind == "onnx" else
             f"a TFLite interpreter ({no_interpreter.partition(': ')[2] or no_interpreter})")
    return {
        "path": str(path), "format": kind, "size_bytes": path.stat().st_size,
        "precision": summary.precision, "backend": None,
        "classes": header.classes.tolist(), "n_features": summary.n_features,
        "n_outputs": summary.n_outputs, "preprocess": header.preprocess.kind,
        "preprocess_in_graph": header.preprocess_in_graph,
        "macs_per_sample": None if header.n_atoms is None else
        count_macs(summary.n_features, header.n_atoms, summary.n_outputs),
        "image_shape": None if image_shape is None else list(image_shape),
        "graph": f"{graph}; running it needs {needs}",
    }


def _runtime_lines(info: dict[str, Any]) -> list[str]:
    """Human-readable lines for ``_exported_info`` without the graph parsers."""
    where = "in the graph" if info["preprocess_in_graph"] else "applied before the file"
    shape = info["image_shape"]
    images = "" if shape is None else f", {'x'.join(map(str, shape))} images"
    macs = "unknown" if info["macs_per_sample"] is None else f"{info['macs_per_sample']:,}"
    runs = "" if info["backend"] is None else f", runs on {info['backend']}"
    size = f"{info['size_bytes'] / 1024:.1f} KiB"
    return field_lines([
        ("file", f"{info['path']} ({info['format']}, {size}, {info['precision']}{runs})"),
        ("classes", _classes_shown(info["classes"])),
        ("features", f"{info['n_features']}{images}, preprocess {info['preprocess']} ({where})"),
        ("outputs", info["n_outputs"]),
        ("MACs/sample", macs),
        ("graph", info["graph"]),
    ])


def _draw_atoms(path: Path, args: argparse.Namespace) -> Path:
    from lastedge.runtime.figures import model_atoms, parse_image_shape
    from lastedge.runtime import Model

    shape, channels_first = (None, False) if args.image_shape is None else parse_image_shape(args.image_shape)
    return model_atoms(Model.load(path), args.atoms, shape, channels_first, args.per_class)


def model_info(path: str | Path) -> dict[str, Any]:
    """The facts of a trained ``.npz`` model file as a JSON-ready dict."""
    from lastedge.runtime import Model

    path = Path(path)
    model = Model.load(path)
    return {
        "path": str(path), "format": "npz", "size_bytes": path.stat().st_size,
        "classes": model.classes.tolist(), "n_features": model.n_features,
        "n_atoms": model.n_atoms, "n_outputs": model.n_outputs,
        "preprocess": model.preprocess.kind, "alpha": model.alpha,
        "macs_per_sample": model.macs_per_sample, "meta": model.meta,
    }


def model_lines(info: dict[str, Any]) -> list[str]:
    """Human-readable lines for a ``model_info`` result."""
    meta = info["meta"]
    fields = [
        ("file", f"{info['path']} (lastedge model, {info['size_bytes'] / 1024:.1f} KiB)"),
        ("classes", _classes_shown(info["classes"])),
        ("features", f"{info['n_features']}, preprocess {info['preprocess']}"),
        ("atoms", f"{info['n_atoms']} (alpha {info['alpha']:g}), outputs {info['n_outputs']}"),
        ("MACs/sample", f"{info['macs_per_sample']:,}"),
    ]
    if "trainer" in meta:
        fields.append(("trainer", f"{meta['trainer']}, fit {meta.get('fit_seconds', '?')} s"))
    params = _model_params(meta.get("params"))
    if params:
        fields.append(("params", " ".join(f"{k}={v}" for k, v in sorted(params.items()))))
    for key in ("data", "metrics", "interrupted"):  # recorded by ``lastedge train`` (Ctrl-C: interrupted)
        if isinstance(meta.get(key), dict):
            fields.append((key, " ".join(f"{k}={v}" for k, v in meta[key].items())))
    choice = selection_text(meta.get("selection"))  # recorded by ``lastedge train --mu A,B,...``
    if choice is not None:  # a budget's choice (``lastedge train --budget-...``) has lines of its own
        fields += (budget_fields(meta["selection"]) if "budget" in meta["selection"]
                   else [("hold-out choice", choice)])
        stopped = grid_stop_text(meta["selection"])
        if stopped is not None:
            fields.append(("hold-out grid", stopped))
    fields.append(("lastedge", str(meta.get("lastedge_version", "unknown"))))
    if "atoms_figure" in info:
        fields.append(("atoms figure", info["atoms_figure"]))
    for size in info.get("microcontroller", []):  # --target: predicted, before any build
        fields.append((f"C {size['precision']}{' DSP' if size['dsp'] else ''} {size['target']}",
                       f"flash {size['flash']:,} B (code {size['flash_code']:,} + constants "
                       f"{size['flash_constants']:,}), RAM {size['ram']:,} B of stack"))
    return field_lines(fields)


def _model_params(params: Any) -> dict[str, Any]:
    """The recorded trainer params that describe the model trained (``RUN_CONTROL_PARAMS`` and
    None-valued ones left out); {} when ``params`` is no such record (an older or hand-edited file)."""
    if not isinstance(params, dict):
        return {}
    return {name: value for name, value in params.items()
            if name not in RUN_CONTROL_PARAMS and value is not None}


def selection_text(selection: Any) -> str | None:
    """A hold-out choice recorded by ``lastedge train`` given grids, as one line, e.g.
    ``mu=1 (on 10% of the training rows; mu=0: 97.10%, mu=1: 98.20%)``; None when ``selection``
    is not such a record (an older or hand-edited file)."""
    if not isinstance(selection, dict) or not isinstance(selection.get("chosen"), dict):
        return None
    candidates = selection.get("candidates")
    scores = [f"{_assignments(row)}: {_percent(row.get('holdout_accuracy'))}"
              for row in (candidates if isinstance(candidates, list) else []) if isinstance(row, dict)]
    detail = f"on {_percent(selection.get('holdout_fraction'), digits=0)} of the training rows"
    detail += f"; {', '.join(scores)}" if scores else ""
    return f"{_assignments(selection['chosen'])} ({detail})"


def grid_stop_text(selection: dict[str, Any], key: str = "skipped") -> str | None:
    """The candidates a Ctrl-C (``key`` "skipped") or a spent time budget ("not_fitted") left
    unfitted in a hold-out grid, as one line, e.g. ``Ctrl-C: stopped after 1 of 3 candidates; not
    fitted: mu=1, mu=10``; None when the grid ran whole."""
    skipped = selection.get(key)
    if not isinstance(skipped, list) or not skipped:
        return None
    fitted = len(selection.get("candidates") or [])
    names = ", ".join(_assignments(params) for params in skipped if isinstance(params, dict))
    stopped = "Ctrl-C: stopped" if key == "skipped" else "time budget spent"
    return f"{stopped} after {fitted} of {fitted + len(skipped)} candidates; not fitted: {names}"


def _assignments(params: dict[str, Any]) -> str:
    """``name=value`` pairs, numbers written shortest, None (a setting left to the estimator, e.g.
    ``mu_factor``) as "default"; the accuracy of a candidate left out."""
    return " ".join(f"{name}={value:g}" if _is_number(value) else f"{name}={'default' if value is None else value}"
                    for name, value in params.items() if name != "holdout_accuracy")


def _percent(value: Any, digits: int = 2) -> str:
    """A fraction as a percentage; anything else (a hand-edited file) as it is."""
    return f"{value:.{digits}%}" if _is_number(value) else str(value)


def _is_number(value: Any) -> bool:
    """True for an int or float read from metadata JSON (not a bool, which JSON keeps apart)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _classes_shown(classes: list) -> str:
    shown = ", ".join(map(str, classes[:MAX_CLASSES_SHOWN]))
    return f"{len(classes)}: {shown}" + (", ..." if len(classes) > MAX_CLASSES_SHOWN else "")


def field_lines(fields: Iterable[tuple[str, Any]]) -> list[str]:
    """``name  value`` lines with the values aligned (shared by ``inspect`` and ``train``)."""
    fields = list(fields)
    width = max((len(name) for name, _ in fields), default=0)
    return [f"{name.ljust(width)}  {value}" for name, value in fields]
