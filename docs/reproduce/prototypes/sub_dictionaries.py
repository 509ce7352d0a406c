"""Prototype behind one table of docs/results.md: a shared dictionary made of independent halves.

At MNIST's 4000 atoms the shared model (atoms against their class, one-vs-all's hinges added)
gains almost nothing over 1600 atoms while one-vs-all keeps improving (docs/results.md). This
fits the shared models ``benchmarks/shared_vs_ovr.py`` would fit with the same arguments (its own
``build``), but each as ``--members K`` independent fits of ``T / K`` atoms (member k seeded with
``seed + 1000 k``, member 0 with the benchmark's own seed), then joins them into ONE runtime
model: the dictionaries side by side, each member's output weights divided by K, so the class
scores are the members' mean. The joined model has T atoms and one weight per atom, the same
MatMul-Sub-Relu-MatMul as a single fit of T atoms: the same MACs, latency and file format. One
JSON line per member and one per joined model is appended to ``--out``:

    python docs/reproduce/prototypes/sub_dictionaries.py --out halves.jsonl --members 2 \\
        --datasets mnist --total-atoms 4000 --methods shared --atoms-against 0.5 \\
        --ovr-hinge-weight 1 --mu 0 --shift-augment 1 --batch-size 1000 --inner-iter 300 \\
        --max-dca-iter 12 --n-jobs 1 --seed 16

(``--methods ovr`` joins one-vs-all fits the same way, head blocks side by side.) It measured the
table (``docs/reproduce/sub_dictionaries_mnist_4000_seeds16_23.jsonl``); the estimator's
``sub_dictionaries`` option trains the parts together instead, as heads of one tensor problem.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import shared_vs_ovr  # noqa: E402

from lastedge.runtime import Model  # noqa: E402

MEMBER_SEED_STRIDE = 1000


def joined(models: list[Model]) -> Model:
    """One model whose class scores are the mean of the members' (same classes and preprocessing)."""
    first = models[0]
    return Model(dictionary=np.hstack([m.dictionary for m in models]),
                 weights=np.vstack([m.weights for m in models]) / len(models),
                 classes=first.classes, alpha=first.alpha, preprocess=first.preprocess, meta=first.meta)


def test_error_pct(model: Model, X_test: np.ndarray, y_test: np.ndarray) -> float:
    return round(100 * float(np.mean(model.predict(X_test) != y_test)), 3)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--out" or argv[2] != "--members":
        raise SystemExit("usage: sub_dictionaries.py --out PATH --members K [shared_vs_ovr.py arguments]")
    out, members = Path(argv[1]), int(argv[3])
    args = shared_vs_ovr.parse_args(argv[4:])

    def append(line: dict) -> None:
        with out.open("a") as f:
            f.write(json.dumps(line) + "\n")

    for task, (X, y, X_test, y_test), total, multiclass, clf in shared_vs_ovr.unfitted_models(args):
        if clf.n_atoms % members:
            raise SystemExit(f"{clf.n_atoms} atoms per head do not split into {members} members")
        record = {"task": task, "method": multiclass, "total_atoms": total, "members": members,
                  "mu": args.mu, "seed": clf.random_state}
        models = []
        for k in range(members):
            member = clone(clf).set_params(n_atoms=clf.n_atoms // members,
                                           random_state=clf.random_state + MEMBER_SEED_STRIDE * k)
            start = time.time()
            member.fit(X, y)
            models.append(member.to_model())
            append({**record, "member": k, "member_seed": member.random_state,
                    "member_atoms": models[-1].n_atoms, "n_iter": member.n_iter_,
                    "test_error_pct": test_error_pct(models[-1], X_test, y_test),
                    "fit_s": round(time.time() - start, 1)})
        model = joined(models)
        append({**record, "joined": True, "n_atoms": model.n_atoms,
                "test_error_pct": test_error_pct(model, X_test, y_test)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
