"""What a LAST model of a given size costs on a device: MACs per prediction, flash, and latency
predicted from ``lastedge bench`` figures of the target. Used by :class:`~.budget.LASTBudgetSearch`
to keep only the models that fit a device's budget.

Light on purpose (numpy and ``lastedge.runtime`` only): the costs of a size are known before any fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lastedge.runtime.model import count_macs

FLASH_FORMATS = ("int8", "fp32")
BUDGET_NAMES = {"macs": "MACs", "flash_bytes": "flash bytes", "latency_us": "latency (us)"}


def model_shape(n_classes: int, n_atoms: int, multiclass: str) -> tuple[int, int]:
    """``(atoms in all, outputs)`` of a LASTClassifier with ``n_atoms`` for ``n_classes``: one-vs-all
    keeps ``n_atoms`` per class (one head when binary), a shared dictionary ``n_atoms`` in all."""
    outputs = 1 if n_classes == 2 else n_classes
    heads = n_classes if multiclass == "ovr" and n_classes > 2 else 1
    return n_atoms * heads, outputs


def describe_atoms(row: Mapping[str, Any]) -> str:
    """``"3 atoms per head"`` (one-vs-all) or ``"30 atoms"`` (shared, or binary's one head)."""
    n = row["n_atoms"]
    return f"{n} atom{'s' if n > 1 else ''}{' per head' if row['multiclass'] == 'ovr' else ''}"


def flash_bytes(n_features: int, atoms: int, outputs: int, flash_format: str = "int8") -> int:
    """Bytes of a model's weights in ``flash_format``: fp32, 4 per weight; int8, 1 per weight and
    a 4-byte bias per atom (the constants of the C export, without its padding, labels and code;
    an .onnx or .tflite file adds a few KiB of graph)."""
    if flash_format not in FLASH_FORMATS:
        raise ValueError(f"flash_format must be one of {FLASH_FORMATS}, got {flash_format!r}")
    weights = n_features * atoms + atoms * outputs
    return 4 * weights if flash_format == "fp32" else weights + 4 * atoms


@dataclass(frozen=True)
class LatencyModel:
    """Latency of one single-row prediction on a target, ``intercept_us + us_per_mac * MACs``.

    Parameters
    ----------
    intercept_us : float
        Fixed cost of a call (interpreter, preprocessing), microseconds, >= 0.
    us_per_mac : float
        Microseconds per multiply-accumulate, > 0.
    source : str
        What it was fitted on (see :meth:`from_bench`).
    """

    intercept_us: float
    us_per_mac: float
    source: str = ""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.intercept_us) and self.intercept_us >= 0):
            raise ValueError(f"intercept_us must be a finite number >= 0, got {self.intercept_us!r}")
        if not (math.isfinite(self.us_per_mac) and self.us_per_mac > 0):
            raise ValueError(f"us_per_mac must be a finite number > 0, got {self.us_per_mac!r}")

    def predict(self, macs: float) -> float:
        """Predicted microseconds of one prediction of ``macs`` multiply-accumulates."""
        return self.intercept_us + self.us_per_mac * macs

    @classmethod
    def from_bench(cls, rows: Sequence[Mapping[str, Any]], precision: str | None = None,
                   statistic: str = "p50_us") -> LatencyModel:
        """A least-squares line through the batch-1 ``statistic`` of ``lastedge bench --json``
        rows (schema ``lastedge-bench/1``) against their ``macs_per_sample``, over the rows of
        ``precision`` (None: all). The rows must be of one backend and precision and of at least
        two sizes; a negative intercept is refitted as 0 (latency proportional to MACs)."""
        points, kinds, machines = [], set(), set()
        for row in _bench_rows(rows):
            batch1 = [b for b in row.get("batches") or [] if isinstance(b, Mapping) and b.get("batch_size") == 1]
            if (precision is not None and row.get("precision") != precision) or not batch1 \
                    or row.get("macs_per_sample") is None:
                continue
            latency = batch1[0].get(statistic)
            if not isinstance(latency, (int, float)) or isinstance(latency, bool):
                raise ValueError(f"bench figures of {row.get('file')} have no batch-1 {statistic}")
            points.append((float(row["macs_per_sample"]), float(latency)))
            kinds.add(f"{row.get('backend')} {row.get('precision')}")
            machines.add(str((row.get("machine") or {}).get("cpu", "")))
        if len(kinds) > 1:
            raise ValueError(f"bench figures of several backends or precisions ({', '.join(sorted(kinds))}): "
                             "fit a latency model on one's")
        macs, us = np.array(points, dtype=np.float64).reshape(-1, 2).T
        if len(set(macs)) < 2:
            which = "" if precision is None else f"{precision} "
            raise ValueError(f"a latency model needs batch-1 bench figures of {which}models of at least two "
                             f"sizes (macs_per_sample), got {len(set(macs))}")
        slope, intercept = np.polyfit(macs, us, 1)
        if intercept < 0:
            slope, intercept = float(macs @ us / (macs @ macs)), 0.0
        if not slope > 0:
            raise ValueError(f"latency does not grow with MACs in these bench figures ({slope:.3g} us per MAC): "
                             "time larger models, or for longer")
        return cls(float(intercept), float(slope),
                   f"{len(points)} files, {kinds.pop()}, {', '.join(sorted(machines)) or 'unknown cpu'}")


def _bench_rows(rows: Any) -> list[Mapping[str, Any]]:
    """``rows`` checked to be ``lastedge bench --json`` output: a list of its objects."""
    if not isinstance(rows, Sequence) or isinstance(rows, (str, bytes)) or not all(
            isinstance(row, Mapping) and str(row.get("schema", "")).startswith("lastedge-bench/") for row in rows):
        raise ValueError("bench figures must be the list that `lastedge bench --json` prints "
                         "(objects of schema lastedge-bench/1)")
    return list(rows)


@dataclass(frozen=True)
class DeviceBudget:
    """Limits a model must keep to (None: no limit): ``macs`` per prediction, ``flash_bytes`` in
    ``flash_format``, ``latency_us`` as ``latency_model`` predicts it."""

    macs: float | None = None
    flash_bytes: float | None = None
    latency_us: float | None = None
    flash_format: str = "int8"
    latency_model: LatencyModel | None = None

    def __post_init__(self) -> None:
        for name in BUDGET_NAMES:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
                                          and math.isfinite(value) and value > 0):
                raise ValueError(f"a budget of {BUDGET_NAMES[name]} must be a positive number, got {value!r}")
        if self.macs is None and self.flash_bytes is None and self.latency_us is None:
            raise ValueError("give at least one budget: macs, flash_bytes or latency_us")
        if self.flash_format not in FLASH_FORMATS:
            raise ValueError(f"flash_format must be one of {FLASH_FORMATS}, got {self.flash_format!r}")
        if self.latency_us is not None and self.latency_model is None:
            raise ValueError("a latency budget needs a latency_model (LatencyModel.from_bench of the target's "
                             "bench figures)")
        if self.latency_model is not None and not isinstance(self.latency_model, LatencyModel):
            raise TypeError(f"latency_model must be a LatencyModel, got {type(self.latency_model).__name__}")

    def cost(self, n_features: int, n_classes: int, n_atoms: int, multiclass: str) -> dict[str, Any]:
        """``{"macs", "flash_bytes", "latency_us"}`` of that model (latency None without a model)."""
        atoms, outputs = model_shape(n_classes, n_atoms, multiclass)
        macs = count_macs(n_features, atoms, outputs)
        latency = None if self.latency_model is None else self.latency_model.predict(macs)
        return {"macs": macs, "flash_bytes": flash_bytes(n_features, atoms, outputs, self.flash_format),
                "latency_us": latency}

    def excess(self, cost: Mapping[str, Any]) -> dict[str, float]:
        """``{budget name: cost / limit}`` for each limit ``cost`` goes over (empty: it fits)."""
        return {name: round(cost[name] / limit, 4) for name in BUDGET_NAMES
                if (limit := getattr(self, name)) is not None and cost[name] > limit}
