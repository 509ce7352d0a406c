"""Per-atom rescaling of the exported graph, so that every atom's feature has the same scale.

Atom j contributes ``w_j max(0, d_j^T x - alpha)``, which for any ``c_j > 0`` equals
``(c_j w_j) max(0, (d_j / c_j)^T x - alpha / c_j)``. int8 files quantize all features with one
scale, and LAST can leave atoms whose columns are orders of magnitude apart (it drives some
thresholds ``v_j`` towards ``eps``, and ``d_j = u_j / v_j``): the small atoms' features would get a
handful of int8 levels or none. int8 graphs therefore use ``c_j = ||d_j||``: unit columns and
per-atom thresholds ``alpha / ||d_j||``. The scores are the same function; only rounding differs,
so fp32 files keep the model's own constants (their parity bound is tighter than int8's).
"""

from __future__ import annotations

import numpy as np

from lastedge.runtime import Model
from lastedge.runtime.model import FLOAT32_MAX


def graph_parameters(model: Model, rescale: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(D [n, N], threshold [N], W [N, outputs])`` of the exported graph, float64; with
    ``rescale=False`` the model's own (``threshold = alpha`` for every atom)."""
    D = model.dictionary.astype(np.float64)
    if not rescale:
        return D, np.full(model.n_atoms, float(model.alpha)), model.weights.astype(np.float64)
    norms = np.linalg.norm(D, axis=0)
    scale = np.where(norms > 0, norms, 1.0)
    # a column near float32's smallest values puts alpha / ||d_j|| beyond float32 (an infinite
    # constant in the file, and overflow warnings): float32's largest is as far out of reach
    threshold = np.clip(np.full(model.n_atoms, float(model.alpha)) / scale, -FLOAT32_MAX, FLOAT32_MAX)
    return D / scale, threshold, model.weights.astype(np.float64) * scale[:, None]
