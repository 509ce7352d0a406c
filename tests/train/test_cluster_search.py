"""choose_params on a real Dask cluster (joblib's dask backend): the same choice as the serial search.

Two worker processes with one thread each on localhost; no worker code of ours runs there.
"""

from __future__ import annotations

import warnings

import joblib
import pytest
from sklearn.datasets import make_classification

from lastedge.train import LASTClassifier
from lastedge.train.selection import choose_params, holdout_split

distributed = pytest.importorskip("distributed")


@pytest.mark.slow
def test_a_grid_of_8_on_a_local_dask_cluster_chooses_as_the_serial_search():
    X, y = make_classification(200, 8, n_informative=4, n_classes=3, class_sep=1.5, random_state=0)
    estimator = LASTClassifier(n_atoms=2, inner_iter=10, verbose=0, random_state=0)
    grid = {"mu": [0.0, 0.1, 1.0, 10.0], "max_dca_iter": [1, 3]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning: so few DCA iterations cannot converge
        serial = choose_params(estimator, grid, X, y, holdout_split(0.25, 0))
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            with joblib.parallel_config(backend="dask"), distributed.get_task_stream(client) as tasks:
                on_cluster = choose_params(estimator, grid, X, y, holdout_split(0.25, 0))
    assert len(serial[1]) == 8
    assert len({task["worker"] for task in tasks.data}) == 2  # the fits ran on both worker processes
    assert on_cluster == serial
