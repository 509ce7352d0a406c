"""Shifted copies of training images: more training rows at no cost on the device.

A dictionary of a few hundred atoms fits MNIST's training images almost perfectly and then misses
digits that sit a pixel off. Training also on copies of every image moved by a pixel teaches atoms
that tolerate such shifts; the model, and what the device computes per sample, keep their size
(see the benchmarks page).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from lastedge.runtime.model import check_image_shape


def shift_offsets(max_shift: int) -> list[tuple[int, int]]:
    """(rows down, columns right) of every copy: 1..``max_shift`` pixels up, down, left, right."""
    return [offset for k in range(1, max_shift + 1)
            for offset in ((-k, 0), (k, 0), (0, -k), (0, k))]


def shifted_copies(X: np.ndarray, y: np.ndarray, image_shape: Sequence[int], max_shift: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``X`` and ``y`` followed by one copy of every row per offset of :func:`shift_offsets`.

    Each row is an image of ``image_shape``; a moved image repeats its edge pixels into the strip
    it uncovers (on a black background, as MNIST's, that strip stays black).
    """
    if max_shift < 0:
        raise ValueError(f"the shift must be >= 0 pixels, got {max_shift}")
    shape = check_image_shape(image_shape, X.shape[1])
    if max_shift >= min(shape[:2]):
        raise ValueError(f"a shift of {max_shift} pixels would move {shape[0]}x{shape[1]} images "
                         f"out of their frame")
    if max_shift == 0:
        return X, y
    images = X.reshape(len(X), *shape)
    pad = [(0, 0), (max_shift, max_shift), (max_shift, max_shift)] + [(0, 0)] * (len(shape) - 2)
    padded = np.pad(images, pad, mode="edge")
    height, width = shape[:2]
    copies = [X]
    for down, right in shift_offsets(max_shift):
        top, left = max_shift - down, max_shift - right
        copies.append(padded[:, top:top + height, left:left + width].reshape(X.shape))
    return np.concatenate(copies), np.tile(y, len(copies))
