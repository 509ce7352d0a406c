"""``get_feature_names_out`` of the estimators whose ``transform`` gives soft-threshold (or sparse)
codes: new features named after the class, for pipelines and ``ColumnTransformer``."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from lastedge.train import LASTClassifier, SGDSoftThresholdClassifier, SoftThresholdEncoderSVM, SparseCodingSVM

TRANSFORMERS = [
    LASTClassifier(n_atoms=3, max_dca_iter=2, inner_iter=10, verbose=0, random_state=0),
    SGDSoftThresholdClassifier(n_atoms=3, max_iter=20, step_sizes=(0.1,), verbose=0, random_state=0),
    SoftThresholdEncoderSVM(6, alpha=0.1, random_state=0),
    SparseCodingSVM(3, random_state=0),
]


@pytest.fixture(scope="module")
def three_classes() -> tuple[np.ndarray, np.ndarray]:
    return make_classification(90, 6, n_informative=4, n_classes=3, random_state=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # 2 DCA iterations
@pytest.mark.parametrize("estimator", TRANSFORMERS, ids=lambda e: type(e).__name__)
def test_feature_names_out_name_every_transform_column_after_the_class(estimator, three_classes):
    X, y = three_classes
    with pytest.raises(NotFittedError):
        estimator.get_feature_names_out()
    fitted = estimator.fit(X, y)
    names = fitted.get_feature_names_out()
    prefix = type(estimator).__name__.lower()
    assert names.dtype == object and len(names) == fitted.transform(X).shape[1]
    assert names.tolist() == [f"{prefix}{i}" for i in range(len(names))]
    assert fitted.get_feature_names_out([f"x{i}" for i in range(6)]).tolist() == names.tolist()
    with pytest.raises(ValueError, match="input_features"):
        fitted.get_feature_names_out(["a", "b"])  # validated against the 6 inputs seen in fit


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("estimator", TRANSFORMERS[:2], ids=lambda e: type(e).__name__)
def test_the_features_chain_through_column_transformers_and_pipelines(estimator, three_classes):
    X, y = three_classes
    columns = ColumnTransformer([("enc", estimator, [0, 1, 2, 3]), ("keep", "passthrough", [4, 5])])
    out = columns.fit_transform(X, y)
    names = columns.get_feature_names_out().tolist()
    prefix = type(estimator).__name__.lower()
    assert len(names) == out.shape[1] == 3 * 3 + 2  # three one-vs-all heads of 3 atoms, 2 kept
    assert names[0] == f"enc__{prefix}0" and names[-2:] == ["keep__x4", "keep__x5"]
    pipeline = make_pipeline(StandardScaler(), estimator).fit(X, y)
    assert len(pipeline.get_feature_names_out()) == pipeline.transform(X).shape[1]
    assert estimator.set_output(transform="default") is estimator  # set_output needs the names
