"""``Model``: the one in-memory form of a trained soft-threshold classifier, and its ``.npz`` file.

``score(x) = max(0, preprocess(x) @ dictionary - alpha) @ weights``. Binary models have one output
(score > 0 means ``classes[1]``); one-vs-all models have one output per class. The file is a
``.npz`` archive of plain arrays, written atomically and read with ``allow_pickle=False``; every
shape and dtype is checked on load.
"""

from __future__ import annotations

import json
import math
import operator
import os
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection

import numpy as np

from .bounded import check_declared_sizes, open_regular
from .preprocess import Preprocess
from .writing import cannot_write, check_has_stem, check_output_path, write_atomically  # noqa: F401 (imported from here)

FORMAT = "lastedge-model"
FORMAT_VERSION = 1
_REQUIRED = ("format", "format_version", "dictionary", "weights", "alpha", "classes", "preprocess", "meta")
_OPTIONAL = ("preprocess_mean", "preprocess_scale")
BLOCK_ROWS = 1024
_BLOCK_VALUES = 1 << 22  # 16 MiB of float32 per intermediate [rows, width]


def _library_version() -> str:
    from . import __version__

    return __version__


def check_input(X: Any, n_features: int) -> np.ndarray:
    """Validate a batch of raw inputs: 2-D, real numbers, finite, ``n_features`` wide.

    A batch of images [n_samples, H, W(, 3)] whose images hold ``n_features`` values each is
    flattened row by row (channels last, as ``runtime.data`` reads images for training). NaN and
    infinite values are refused (not silently propagated): a soft-threshold score of a NaN input
    is meaningless, and on a device it usually means a broken sensor read.
    """
    try:
        X = np.asarray(X)
    except ValueError:  # nested lists of different lengths
        raise ValueError(f"X must be 2-D [n_samples, {n_features}]: its rows differ in length") from None
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X must hold real numbers, got dtype {X.dtype}")
    if X.ndim > 2 and math.prod(X.shape[1:]) == n_features:
        X = X.reshape(len(X), n_features)
    if X.ndim != 2:
        raise ValueError(
            f"X must be 2-D [n_samples, {n_features}], got {X.ndim}-D shape {X.shape}; "
            "wrap a single sample as X[None, :]"
        )
    if X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, the model expects {n_features}")
    if X.dtype.kind == "f" and not _finite_in_float32(X):
        raise ValueError("X contains NaN or infinite values, or values beyond float32's range "
                         "(+-3.4e38), in which every backend computes")
    return X


def _finite_in_float32(X: np.ndarray) -> bool:
    """Whether every value is finite once cast to float32, the precision every backend runs in:
    two reductions, no copy of a large batch (NaN fails both comparisons)."""
    return X.size == 0 or (-FLOAT32_MAX <= float(X.min()) and float(X.max()) <= FLOAT32_MAX)


FLOAT32_MAX = float(np.finfo(np.float32).max)  # the largest finite value every backend computes in


def check_scores(scores: np.ndarray) -> np.ndarray:
    """``scores`` unless one is NaN or infinite: inputs within float32's range can still overflow
    it on the way (3e38 into a model without normalisation), and NaN scores would be predicted
    as the first class without a word. One float64 sum (which cannot overflow) checks them all."""
    if not np.isfinite(scores.sum(dtype=np.float64)):
        raise ValueError("X's values are too large: the scores overflowed float32 (NaN or infinite)")
    return scores


def check_classes(classes: np.ndarray) -> None:
    """A model's labels, from its arrays or an exported file's metadata: 1-D numbers or strings,
    finite, at least 2, none repeated."""
    if classes.ndim != 1 or classes.dtype.kind not in "biufU":
        raise ValueError(f"classes must be a 1-D array of numbers or strings, got {classes.dtype}")
    if classes.dtype.kind == "f" and not np.all(np.isfinite(classes)):
        raise ValueError(f"classes must be finite numbers or strings, got {classes.tolist()}")
    if len(classes) < 2:
        raise ValueError(f"classes must hold at least 2 labels, got {classes.tolist()}")
    if len(np.unique(classes)) != len(classes):
        raise ValueError(f"classes repeat a label: {classes.tolist()}")


def in_row_blocks(score: Callable[[np.ndarray], np.ndarray], X: np.ndarray, width: int) -> np.ndarray:
    """``score(X)``, called on consecutive blocks of rows whose results are stacked.

    A block holds at most ``BLOCK_ROWS`` rows, and fewer when a [rows, width] float32
    intermediate would pass 16 MiB, so a large batch costs bounded memory on a small device and
    runs no slower (see the benchmarks page); a batch that fits one block is one plain call.
    """
    step = max(1, min(BLOCK_ROWS, _BLOCK_VALUES // max(1, width)))
    if len(X) <= step:
        return score(X)
    return np.concatenate([score(X[start:start + step]) for start in range(0, len(X), step)])


def count_macs(n_features: int, n_atoms: int, n_outputs: int) -> int:
    """Multiply-accumulates of one inference (both MatMuls; preprocessing not counted)."""
    return n_features * n_atoms + n_atoms * n_outputs


def check_image_shape(image_shape: Any, n_features: int) -> tuple[int, ...]:
    """``image_shape`` as (H, W) (grey) or (H, W, 3) (colour, channels last) whose values number
    ``n_features``, or a ``ValueError`` saying what is wrong."""
    try:
        shape = tuple(_whole_size(n) for n in image_shape)
    except TypeError:
        raise ValueError(f"image_shape must be (H, W) or (H, W, 3) of integers, "
                         f"got {image_shape!r}") from None
    if len(shape) not in (2, 3) or (len(shape) == 3 and shape[2] != 3) or min(shape) < 1:
        raise ValueError(f"image_shape must be (H, W) or (H, W, 3), got {image_shape!r}")
    if math.prod(shape) != n_features:
        raise ValueError(f"image_shape {shape} holds {math.prod(shape)} values, but the rows have "
                         f"{n_features} features")
    return shape


def _whole_size(n: Any) -> int:
    """``n`` as an image size: an integer (numpy's too), or a ``TypeError``; ``int()`` would read
    8.7 as 8, True as 1 and each digit of the text "88" as a size."""
    if isinstance(n, bool):  # numpy's bool is no index already
        raise TypeError(f"{n!r} is no size")
    return operator.index(n)


def image_shape_of(value: Any, n_features: int) -> tuple[int, ...] | None:
    """``value`` as an image shape (H, W) or (H, W, 3) holding ``n_features`` values, or None
    when it is not one: a recorded shape is a convenience (drawing atoms, scaling images), so an
    unusable one is ignored rather than refused."""
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in value):
        return None
    try:
        return check_image_shape(value, n_features)
    except ValueError:
        return None


def labels_from_scores(classes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Labels for scores shaped like ``decision_function``'s: [n] binary (> 0 means
    ``classes[1]``), else [n, n_classes] (argmax)."""
    if scores.ndim == 1:
        return classes[(scores > 0).astype(np.intp)]
    return classes[np.argmax(scores, axis=1)]


MAX_MODEL_BYTES = 2 << 30  # a model's arrays in all: ~170x the paper's largest (MNIST one-vs-all, 12.5 MB)
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # the first bytes np.load reads as an .npz archive
MAX_EXPANSION = 32  # of a compressed model file's arrays over their stored bytes (np.savez stores)
MAX_TEXT = 1 << 22  # characters of a model file's JSON fields (meta: parameters, data, metrics)
# A damaged .npz's errors besides ValueError: zip, compression, encryption, truncation, directory.
NPZ_ERRORS = (zipfile.BadZipFile, NotImplementedError, RuntimeError, zlib.error, EOFError, OSError, KeyError)


@dataclass
class Model:
    """A trained soft-threshold classifier.

    Parameters
    ----------
    dictionary : float32 array [n_features, n_atoms]
        All atoms of all heads side by side.
    weights : float32 array [n_atoms, n_outputs]
        Output weights; block structured for one-vs-all. ``n_outputs == 1`` for binary models.
    classes : 1-D array of labels (numbers or strings)
    alpha : float
        The threshold (1.0 for LAST).
    preprocess : Preprocess
        Applied to raw inputs before the first MatMul.
    meta : dict
        JSON-serialisable training facts (parameters, data shape, metrics).
    """

    dictionary: np.ndarray
    weights: np.ndarray
    classes: np.ndarray
    alpha: float = 1.0
    preprocess: Preprocess = field(default_factory=Preprocess)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.dictionary = np.ascontiguousarray(self.dictionary, dtype=np.float32)
        self.weights = np.ascontiguousarray(self.weights, dtype=np.float32)
        self.classes = np.asarray(self.classes)
        self.alpha = float(self.alpha)
        self.meta = dict(self.meta)
        self._validate()

    def _validate(self) -> None:
        D, W, classes = self.dictionary, self.weights, self.classes
        if D.ndim != 2 or W.ndim != 2:
            raise ValueError(f"dictionary and weights must be 2-D, got shapes {D.shape} and {W.shape}")
        if D.shape[0] < 1 or D.shape[1] < 1:
            raise ValueError(f"dictionary must be non-empty, got shape {D.shape}")
        if W.shape[0] != D.shape[1]:
            raise ValueError(f"weights have {W.shape[0]} rows, dictionary has {D.shape[1]} atoms")
        check_classes(classes)
        expected_outputs = 1 if len(classes) == 2 else len(classes)
        if W.shape[1] != expected_outputs:
            raise ValueError(
                f"{len(classes)} classes need {expected_outputs} weight columns, got {W.shape[1]}"
            )
        if not (np.all(np.isfinite(D)) and np.all(np.isfinite(W)) and abs(self.alpha) <= FLOAT32_MAX):
            raise ValueError("dictionary, weights and alpha must be finite (alpha within float32's "
                             "+-3.4e38, the precision the scores are computed in)")
        if not isinstance(self.preprocess, Preprocess):
            raise TypeError("preprocess must be a lastedge.runtime.Preprocess")
        self.preprocess.check_width(D.shape[0])

    @property
    def n_features(self) -> int:
        return self.dictionary.shape[0]

    @property
    def n_atoms(self) -> int:
        return self.dictionary.shape[1]

    @property
    def n_outputs(self) -> int:
        return self.weights.shape[1]

    @property
    def row_width(self) -> int:
        """Width of the widest per-row intermediate, ``max(n_features, n_atoms)``: what
        ``in_row_blocks`` sizes its blocks of rows by."""
        return max(self.n_features, self.n_atoms)

    @property
    def macs_per_sample(self) -> int:
        """Multiply-accumulates of one inference (both MatMuls; preprocessing not counted)."""
        return count_macs(self.n_features, self.n_atoms, self.n_outputs)

    @property
    def image_shape(self) -> tuple[int, ...] | None:
        """(H, W) or (H, W, 3) when the model was trained on images (``lastedge train`` records
        it in ``meta["data"]``), else None."""
        data = self.meta.get("data")
        return image_shape_of(data.get("image_shape") if isinstance(data, dict) else None, self.n_features)

    def features(self, X: Any) -> np.ndarray:
        """The sparse soft-threshold features ``max(0, preprocess(x) @ D - alpha)``, [n, n_atoms]."""
        return self._features(check_input(X, self.n_features))

    def _features(self, X: np.ndarray) -> np.ndarray:
        F = self.preprocess.apply(X) @ self.dictionary
        F -= self.alpha
        np.maximum(F, 0, out=F)
        return F

    def _score_raw(self, X: np.ndarray) -> np.ndarray:
        """Scores [n, n_outputs] of checked raw rows (as ``Predictor._score_raw``)."""
        return self._features(X) @ self.weights

    def decision_function(self, X: Any) -> np.ndarray:
        """Scores: [n] for binary models (> 0 means ``classes[1]``), [n, n_classes] otherwise.

        Large batches are scored in blocks of rows (``in_row_blocks``), so memory stays bounded.
        """
        scores = check_scores(in_row_blocks(self._score_raw, check_input(X, self.n_features), self.row_width))
        return scores[:, 0] if self.n_outputs == 1 else scores

    def predict(self, X: Any) -> np.ndarray:
        """Predicted labels, [n]."""
        return self.labels_from_scores(self.decision_function(X))

    def labels_from_scores(self, scores: np.ndarray) -> np.ndarray:
        """Map scores as returned by ``decision_function`` to labels."""
        return labels_from_scores(self.classes, scores)

    # ------------------------------------------------------------------ file
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The arrays of the ``.npz`` file (no object arrays; JSON fields as strings)."""
        meta = {**self.meta, "lastedge_version": self.meta.get("lastedge_version", _library_version())}
        arrays = {
            "format": np.array(FORMAT),
            "format_version": np.array(FORMAT_VERSION, dtype=np.int64),
            "dictionary": self.dictionary,
            "weights": self.weights,
            "alpha": np.array(self.alpha, dtype=np.float64),
            "classes": self.classes,
            "preprocess": np.array(json.dumps(self.preprocess.describe())),
            "meta": np.array(json.dumps(meta, sort_keys=True)),
        }
        if self.preprocess.mean is not None:
            arrays["preprocess_mean"] = self.preprocess.mean
            arrays["preprocess_scale"] = self.preprocess.scale
        return arrays

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model to ``path`` atomically (temp file in the same folder, then rename)."""
        path = Path(path)
        check_has_stem(path, (".npz",))  # as check_output_path, which train runs before fitting
        if path.suffix.lower() != ".npz":
            raise ValueError(f"model files end in .npz, got {path.name or str(path)!r}")
        write_atomically(path, lambda f: np.savez(f, **self.to_arrays()))
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        """Read a model file, refusing anything truncated, pickled, foreign or inconsistent."""
        path = Path(path)
        try:
            with open_regular(path) as f:  # np.load reads any other file as a bare .npy array or a pickle
                if not f.read(4).startswith(ZIP_MAGIC):
                    raise ValueError("it is not a .npz archive (a zip of .npy arrays)")
                f.seek(0)
                with np.load(f, allow_pickle=False) as archive:
                    declared = check_declared_sizes(archive.zip, MAX_MODEL_BYTES, max_ratio=MAX_EXPANSION)
                    _check_declared_shapes(declared)
                    arrays = {key: archive[key] for key in archive.files}
        except FileNotFoundError:
            raise
        except NPZ_ERRORS as err:
            raise ValueError(f"{path} is not a readable lastedge model file ({err})") from None
        except ValueError as err:
            raise ValueError(f"{path} is not a valid lastedge model file: {err}") from None
        return cls.from_arrays(arrays, source=str(path))

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], source: str = "model") -> "Model":
        """Rebuild a model from the arrays of its file, checking every field."""
        problem = _fields_problem(arrays)
        if problem:
            raise ValueError(f"{source} is not a lastedge model: {problem}")
        if _text(arrays, "format", source) != FORMAT:
            raise ValueError(f"{source} is not a lastedge model (format {arrays['format']!r})")
        version = arrays["format_version"]
        if version.shape != () or version.dtype.kind not in "iu" or not 1 <= int(version) <= FORMAT_VERSION:
            raise ValueError(f"{source} has unsupported format_version {version!r}")
        for key in ("dictionary", "weights"):
            if arrays[key].dtype != np.float32 or arrays[key].ndim != 2:
                raise ValueError(f"{source}: {key} must be a 2-D float32 array, got "
                                 f"{arrays[key].dtype} {arrays[key].shape}")
        alpha = arrays["alpha"]
        if alpha.shape != () or alpha.dtype.kind != "f":
            raise ValueError(f"{source}: alpha must be a float scalar")
        texts = _text(arrays, "preprocess", source), _text(arrays, "meta", source)
        try:  # ValueError: bad JSON, or an integer of over 4300 digits
            spec, meta = (json.loads(text) for text in texts)
        except (ValueError, RecursionError) as err:  # RecursionError: nested too deep
            raise ValueError(f"{source}: a JSON field is corrupt ({err})") from None
        if not isinstance(spec, dict) or not isinstance(meta, dict) or "kind" not in spec:
            raise ValueError(f"{source}: preprocess and meta must be JSON objects")
        try:  # the model's own checks, named after the file (bench loads several)
            preprocess = Preprocess(
                spec["kind"], arrays.get("preprocess_mean"), arrays.get("preprocess_scale")
            )
            return cls(arrays["dictionary"], arrays["weights"], arrays["classes"], float(alpha),
                       preprocess, meta)
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from None


def _fields_problem(names: Collection[str]) -> str | None:
    """What is wrong with a model file's set of array names, or None."""
    missing = [key for key in _REQUIRED if key not in names]
    unknown = sorted(set(names) - set(_REQUIRED) - set(_OPTIONAL))
    return f"missing {', '.join(missing)}" if missing else f"unknown fields {', '.join(unknown)}" if unknown else None


def _check_declared_shapes(declared: dict[str, tuple[tuple[int, ...], np.dtype]]) -> None:
    """Refuse, from the .npy headers alone, arrays a model has not, shapes that disagree with the
    dictionary's and text longer than ``MAX_TEXT``: nothing larger than the dictionary is read."""
    problem = _fields_problem(declared)
    if problem:
        raise ValueError(f"it is not a lastedge model: {problem}")
    shape = {key: value[0] for key, value in declared.items()}
    D, classes = shape["dictionary"], shape["classes"]
    n_outputs = (1 if classes == (2,) else classes[0]) if len(classes) == 1 else -1
    expected = {"weights": (*D[1:], n_outputs), "preprocess_mean": D[:1], "preprocess_scale": D[:1],
                **{key: () for key in ("format", "format_version", "alpha", "preprocess", "meta")}}
    wrong = [f"{key} {shape[key]}" for key, want in expected.items() if shape.get(key, want) != want]
    wrong += [f"{key} of {dtype}" for key, (_, dtype) in declared.items() if dtype.itemsize > 4 * MAX_TEXT]
    if len(D) != 2 or wrong:
        raise ValueError(f"its arrays disagree with dictionary {D} and classes {classes}: {', '.join(wrong)}")


def _text(arrays: dict[str, np.ndarray], key: str, source: str) -> str:
    value = arrays[key]
    if value.shape != () or value.dtype.kind != "U":
        raise ValueError(f"{source}: {key} must be a text scalar")
    return str(value)
