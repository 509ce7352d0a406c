"""One rank of a distributed LASTClassifier fit, started by tests/train/test_distributed.py with
torchrun (this file is no test module and is never imported):

    python -m torch.distributed.run --standalone --nproc-per-node 2 distributed_fit.py DATA OUT PARAMS [FAIL]

DATA: an .npz holding X and y; each rank fits on its ``shard_rows`` block of them. OUT: a folder
where every rank writes ``rank<r>.npz`` (its dictionary_, coef_ and the objective of each DCA
iteration, per head) and rank 0 alone the model, ``model.npz``. PARAMS: the estimator's parameters
as JSON, or "refusals": write what a distributed fit refuses instead (``refusals<r>.json``). FAIL: ``rank:iteration``, a rank whose fit raises after that DCA iteration.
"""

import datetime
import json
import sys
from pathlib import Path

import numpy as np
import torch.distributed as dist

from lastedge.train import LASTClassifier
from lastedge.train.distributed import rank, shard_rows


def failing_monitor(fail: str):
    """A monitor that raises on rank ``r`` after DCA iteration ``k`` (``fail`` = "r:k"), else None."""
    failing_rank, iteration = (int(part) for part in fail.split(":"))
    if failing_rank != rank():
        return None

    def monitor(k, _estimator):
        if k >= iteration:
            raise RuntimeError(f"rank {rank()} failed on purpose after DCA iteration {k}")
    return monitor


def refusals(X, y) -> list[str]:
    """The errors of what a distributed fit refuses."""
    from lastedge.train import SGDSoftThresholdClassifier
    from lastedge.train.selection import choose_params

    attempts = [lambda: SGDSoftThresholdClassifier(n_atoms=2).fit(X, y),
                lambda: LASTClassifier(n_atoms=2, warm_start=True).fit(X, y),
                lambda: choose_params(LASTClassifier(n_atoms=2), {"mu": [0.0, 1.0]}, X, y, cv=2)]
    messages = []
    for attempt in attempts:
        try:
            attempt()
        except ValueError as error:
            messages.append(str(error))
    return messages


def main(data: str, out: str, params: str, fail: str = "") -> None:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    with np.load(data) as arrays:
        rows = shard_rows(len(arrays["y"]))
        X, y = arrays["X"][rows], arrays["y"][rows]
    if params == "refusals":
        (Path(out) / f"refusals{rank()}.json").write_text(json.dumps(refusals(X, y)))
        return
    estimator = LASTClassifier(**json.loads(params))
    estimator.fit(X, y, monitor=failing_monitor(fail) if fail else None)
    history = estimator.history_ if isinstance(estimator.history_[0], list) else [estimator.history_]
    objectives = np.array([[record["objective"] for record in head] for head in history])
    np.savez(Path(out) / f"rank{rank()}.npz", dictionary=estimator.dictionary_, coef=estimator.coef_,
             objectives=objectives)
    if rank() == 0:
        estimator.to_model().save(Path(out) / "model.npz")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
