"""lastedge.train: LAST and its baselines as scikit-learn estimators (torch, CPU or GPU)."""

from .baselines import SoftThresholdEncoderSVM
from .centroids import KMeansCentroidClassifier
from .last import LASTClassifier
from .sgd import SGDSoftThresholdClassifier
from .sparse_coding import SparseCodingSVM

__all__ = ["KMeansCentroidClassifier", "LASTClassifier", "SGDSoftThresholdClassifier", "SoftThresholdEncoderSVM",
           "SparseCodingSVM"]
