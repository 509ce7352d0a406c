"""lastedge.train: LAST and its baselines as scikit-learn estimators (torch, CPU or GPU).

The estimators are imported on first use (PEP 562), so that importing a light module of this
package (e.g. ``lastedge.train.params``) needs neither torch nor scikit-learn: a device with numpy
and an interpreter runs ``lastedge predict`` and ``lastedge bench`` without the training extra.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> submodule that defines it
_EXPORTS = {
    "KMeansCentroidClassifier": ".centroids",
    "LASTClassifier": ".last",
    "LASTClassifierCV": ".model_search",
    "SGDSoftThresholdClassifier": ".sgd",
    "SoftThresholdEncoderSVM": ".baselines",
    "SparseCodingSVM": ".sparse_coding",
    "plot_training_curve": ".curves",
    "training_curve": ".curves",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # static analysers and IDEs see the names eagerly
    from .baselines import SoftThresholdEncoderSVM as SoftThresholdEncoderSVM
    from .centroids import KMeansCentroidClassifier as KMeansCentroidClassifier
    from .curves import plot_training_curve as plot_training_curve
    from .curves import training_curve as training_curve
    from .last import LASTClassifier as LASTClassifier
    from .model_search import LASTClassifierCV as LASTClassifierCV
    from .sgd import SGDSoftThresholdClassifier as SGDSoftThresholdClassifier
    from .sparse_coding import SparseCodingSVM as SparseCodingSVM
