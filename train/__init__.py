"""lastedge.train: LAST and its baselines as scikit-learn estimators (torch, CPU or GPU)."""

from .last import LASTClassifier
from .sgd import SGDSoftThresholdClassifier

__all__ = ["LASTClassifier", "SGDSoftThresholdClassifier"]
