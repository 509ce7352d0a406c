"""What every exported file records about its model (the ``lastedge`` metadata JSON), and the
checks every exporter runs first (the model, the output path).

The JSON is the contract with ``lastedge.runtime`` (see ``docs/export.md``): ONNX files hold it in
``metadata_props`` under the key ``lastedge``; TFLite files in a metadata entry named ``lastedge``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from lastedge.runtime import __version__
from lastedge.runtime import Model
from lastedge.runtime.files import parse_header

METADATA_KEY = "lastedge"
FILE_FORMAT = "lastedge-export"
FILE_FORMAT_VERSION = 1


def check_model(model: Any) -> Model:
    """Return a validated ``Model``: a ``Model`` is re-checked, a fitted estimator is converted.

    Raises ``TypeError`` for anything else and ``ValueError`` for an inconsistent model (e.g. a
    dictionary or weights changed after construction) or an unfitted estimator.
    """
    if isinstance(model, Model):  # validated again on its current fields, preprocessing too
        return dataclasses.replace(model, preprocess=dataclasses.replace(model.preprocess))
    to_model = getattr(model, "to_model", None)
    if callable(to_model):
        try:
            converted = to_model()
        except AttributeError as err:  # scikit-learn's NotFittedError is also a ValueError
            raise ValueError(f"the estimator is not fitted: {err}") from None
        return check_model(converted)
    raise TypeError(
        f"expected a lastedge.runtime.Model or a fitted estimator with to_model(), "
        f"got {type(model).__name__}"
    )


def preprocess_spec(model: Model) -> dict[str, Any]:
    """The preprocessing as JSON: ``{"kind": ...}`` plus ``mean``/``scale`` lists for standardize."""
    spec: dict[str, Any] = {"kind": model.preprocess.kind}
    if model.preprocess.mean is not None:
        spec["mean"] = model.preprocess.mean.tolist()
        spec["scale"] = model.preprocess.scale.tolist()
    return spec


def build_metadata(
    model: Model,
    *,
    precision: str,
    preprocess_in_graph: bool,
    quantization: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The metadata dictionary written into an exported file."""
    return {
        "format": FILE_FORMAT,
        "format_version": FILE_FORMAT_VERSION,
        "lastedge_version": __version__,
        "classes": model.classes.tolist(),
        "n_features": model.n_features,
        "n_atoms": model.n_atoms,
        "n_outputs": model.n_outputs,
        "alpha": model.alpha,
        "preprocess": preprocess_spec(model),
        "preprocess_in_graph": preprocess_in_graph,
        "precision": precision,
        "quantization": quantization,
        "image_shape": None if model.image_shape is None else list(model.image_shape),
    }


def dumps(metadata: dict[str, Any]) -> str:
    """Serialise metadata to the compact JSON string stored in files."""
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"))


def loads(text: str | bytes, source: str) -> dict[str, Any]:
    """Parse the stored JSON, refusing anything that is not lastedge export metadata."""
    try:  # ValueError: bad JSON, bytes that are no UTF-8, an integer of over 4300 digits
        metadata = json.loads(text)
    except (ValueError, RecursionError) as err:  # Recursion: nested too deep
        raise ValueError(f"{source}: the {METADATA_KEY!r} metadata is not valid JSON ({err})") from None
    if not isinstance(metadata, dict) or metadata.get("format") != FILE_FORMAT:
        raise ValueError(f"{source}: the {METADATA_KEY!r} metadata is not lastedge export metadata")
    parse_header(text, source)  # the fields the runtime reads, checked as it checks them
    return metadata
