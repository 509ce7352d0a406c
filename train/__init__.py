"""lastedge.train: LAST and its baselines as scikit-learn estimators (torch, CPU or GPU)."""

from .baselines import SoftThresholdEncoderSVM
from .centroids import KMeansCentroidClassifier
from .curves import plot_training_curve, training_curve
from .last import LASTClassifier
from .sgd import SGDSoftThresholdClassifier
from .sparse_coding import SparseCodingSVM

__all__ = ["KMeansCentroidClassifier", "LASTClassifier", "SGDSoftThresholdClassifier", "SoftThresholdEncoderSVM",
           "SparseCodingSVM", "plot_training_curve", "training_curve"]
