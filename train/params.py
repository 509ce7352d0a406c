"""Parameter checks the estimators share, run in ``fit`` (scikit-learn's contract).

Each raises a ``ValueError`` naming the parameter, what it must be and the value received.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import Any

import numpy as np

from lastedge.runtime.loading import max_threads  # one bound for torch's and the backends' threads
from lastedge.runtime.model import FLOAT32_MAX  # training computes in float32 too
from lastedge.runtime.preprocess import KINDS


def python_scalar(value: Any) -> Any:
    """A numpy scalar as the Python number of its kind (``np.int64(4)`` -> ``4``, ``np.float32``
    -> float), so parameters taken from numpy grids are set and recorded as plain numbers; any
    other value as it is."""
    return value.item() if isinstance(value, np.generic) else value


def check_number(estimator: Any, name: str, *, integer: bool = False, low: float | None = None,
                 high: float | None = None, open_low: bool = False, open_high: bool = False,
                 also: tuple[str | None, ...] = ()) -> None:
    """Parameter ``name`` must be a finite real (an integer where ``integer``; never a bool) within
    ``[low, high]`` (ends excluded where ``open_low`` / ``open_high``), or one of the values ``also``
    (e.g. None, "full")."""
    value = getattr(estimator, name)
    if isinstance(value, (str, type(None))) and value in also:
        return
    if not _is_number_in(value, integer, low, high, open_low, open_high):
        wanted = [_describe(integer, low, high, open_low, open_high), *map(repr, also)]
        listed = wanted[0] if len(wanted) == 1 else f"{', '.join(wanted[:-1])} or {wanted[-1]}"
        raise ValueError(f"{name} must be {listed}, got {value!r}")


def _is_number_in(value: Any, integer: bool, low: float | None, high: float | None,
                  open_low: bool, open_high: bool) -> bool:
    if not isinstance(value, Integral if integer else Real) or isinstance(value, (bool, np.bool_)):
        return False
    if not (isinstance(value, Integral) or np.isfinite(value)):
        return False
    above = low is None or (value > low if open_low else value >= low)
    below = high is None or (value < high if open_high else value <= high)
    return bool(above and below)


def _describe(integer: bool, low: float | None, high: float | None, open_low: bool,
              open_high: bool) -> str:
    """E.g. "an integer >= 1", "a finite number > 0", "a finite number in (0, 1]"."""
    noun = "an integer" if integer else "a finite number"
    if low is not None and high is not None:
        return f"{noun} in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
    if low is not None:
        return f"{noun} {'>' if open_low else '>='} {low:g}"
    return noun


def check_n_atoms_and_preprocess(estimator: Any) -> None:
    """The checks every estimator shares: ``n_atoms`` an integer >= 1 and a known ``preprocess``."""
    check_number(estimator, "n_atoms", integer=True, low=1)
    if estimator.preprocess not in KINDS:
        raise ValueError(f"preprocess must be one of {KINDS}, got {estimator.preprocess!r}")


def check_step_sizes(estimator: Any) -> None:
    """``step_sizes`` must be None or a non-empty sequence of numbers > 0 that float32 can hold.

    A step <= 0 never moves, so every solve keeps its warm start and the fit "converges" untrained.
    """
    steps = estimator.step_sizes
    if steps is None:
        return
    try:
        values = tuple(steps)
    except TypeError:  # a bare number
        values = ()
    if not values or not all(_is_number_in(step, False, 0, FLOAT32_MAX, True, False) for step in values):
        raise ValueError(f"step_sizes must be None or a non-empty sequence of numbers in "
                         f"(0, {FLOAT32_MAX:.3g}] (float32, in which training runs), got {steps!r}")


def check_n_jobs(estimator: Any) -> None:
    """``n_jobs`` must be None or a non-zero integer, counted as scikit-learn does (-1: all cores),
    and not absurdly many threads: torch's OpenMP pool allocates per thread up front, so 10**9
    aborts the process ("Out of memory allocating 216 GB")."""
    n_jobs = estimator.n_jobs
    if n_jobs is not None and (not _is_number_in(n_jobs, True, None, None, False, False) or n_jobs == 0):
        raise ValueError(f"n_jobs must be a non-zero integer (-1: all cores) or None, got {n_jobs!r}")
    if n_jobs is not None and n_jobs > max_threads():
        raise ValueError(f"n_jobs must be at most {max_threads()} threads (64 per core, at least 256), "
                         f"got {n_jobs!r}")
