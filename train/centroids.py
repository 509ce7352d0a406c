"""``KMeansCentroidClassifier``: the paper's "nearest neighbour on supervised k-means centroids".

Each class is summarised by k-means centroids of its preprocessed training rows (atoms split over
the classes as in ``SoftThresholdEncoderSVM``: kappa = 0.5 for two classes), and a row gets the
class of its nearest centroid. It costs about what LAST's encoder costs at test time (one product
with N atoms) but learns nothing beyond the clustering: the paper's cheapest dictionary baseline.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, check_random_state

from lastedge.runtime import Preprocess

from .base import validate_fit_data, validate_predict_data
from .baselines import class_atoms
from .params import COMMON_CONSTRAINTS, check_params
from .preprocess_choice import resolve


class KMeansCentroidClassifier(ClassifierMixin, BaseEstimator):
    """Nearest (euclidean) of ``n_atoms`` per-class k-means centroids.

    Parameters
    ----------
    n_atoms : int, default=100
        Total centroids N, split over the classes as ``SoftThresholdEncoderSVM`` splits its atoms
        (``N // C`` each, the first ``N % C`` classes one more).
    preprocess : {"auto", "none", "l2", "center-l2", "standardize"}, default="auto"
        Applied to inputs before clustering and before measuring distances.
    random_state : int, RandomState or None
        Seeds k-means.

    Attributes
    ----------
    classes_, n_features_in_, preprocess_ : the labels, input width and fitted preprocessing.
    centroids_ : [n_atoms, n_features] the centroids, in preprocessed space (not normalised).
    centroid_classes_ : [n_atoms] the class index of each centroid.
    """

    _parameter_constraints: dict[str, list] = dict(COMMON_CONSTRAINTS)

    def __init__(self, n_atoms: int = 100, *, preprocess: str = "auto", random_state=None):
        self.n_atoms = n_atoms
        self.preprocess = preprocess
        self.random_state = random_state

    def fit(self, X, y) -> KMeansCentroidClassifier:
        """Cluster each class's preprocessed rows into its share of the centroids."""
        check_params(self)
        X, y_index = validate_fit_data(self, X, y)
        rng = check_random_state(self.random_state)
        self.preprocess_ = Preprocess.fit(resolve(self.preprocess, X, y_index), X)
        Z = self.preprocess_.apply(X).astype(np.float64)
        self.centroids_, self.centroid_classes_ = class_atoms(Z, y_index, self.classes_, self.n_atoms,
                                                              "kmeans", rng)
        return self

    def predict(self, X) -> np.ndarray:
        """The class of each row's nearest centroid (ties: the first centroid)."""
        check_is_fitted(self, "centroids_")
        X = validate_predict_data(self, X)
        Z = self.preprocess_.apply(X).astype(np.float64)
        # argmin ||z - c||^2 = argmax 2 z.c - ||c||^2 (||z||^2 is the same for every centroid)
        closeness = 2.0 * Z @ self.centroids_.T - np.einsum("ij,ij->i", self.centroids_, self.centroids_)
        return self.classes_[self.centroid_classes_[closeness.argmax(axis=1)]]
