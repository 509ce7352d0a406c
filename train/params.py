"""Parameter constraints: each estimator declares its parameters once, in a class-level table.

``_parameter_constraints`` maps every parameter to the kinds of value it takes (an
:class:`Interval`, :class:`Options`, None or one of the kinds below), as scikit-learn's estimators
declare theirs; :func:`check_params` checks the table at the start of ``fit``. A value that fits
none of its parameter's kinds raises a ``ValueError`` naming the parameter, what it must be and the
value received.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class Interval:
    """A finite real (an integer where ``integer``; never a bool) in ``[low, high]``, ends
    excluded where ``open_low`` / ``open_high``; None leaves that side unbounded."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    open_low: bool = False
    open_high: bool = False

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, Integral if self.integer else Real) or _is_bool(value):
            return False
        if not (isinstance(value, Integral) or np.isfinite(value)):
            return False
        above = self.low is None or (value > self.low if self.open_low else value >= self.low)
        below = self.high is None or (value < self.high if self.open_high else value <= self.high)
        return bool(above and below)

    def __str__(self) -> str:
        """E.g. "an integer >= 1", "a finite number > 0", "a finite number in (0, 1]"."""
        noun = "an integer" if self.integer else "a finite number"
        if self.low is not None and self.high is not None:
            return (f"{noun} in {'(' if self.open_low else '['}{self.low:g}, "
                    f"{self.high:g}{')' if self.open_high else ']'}")
        if self.low is not None:
            return f"{noun} {'>' if self.open_low else '>='} {self.low:g}"
        return noun


def integers(low: int) -> Interval:
    """The integers from ``low`` on."""
    return Interval(low, integer=True)


@dataclass(frozen=True)
class Options:
    """One of a few names."""

    values: tuple[str, ...]

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values

    def __str__(self) -> str:
        return repr(self.values[0]) if len(self.values) == 1 else f"one of {self.values}"


class _Boolean:
    def accepts(self, value: Any) -> bool:
        return _is_bool(value)

    def __str__(self) -> str:
        return "a bool"


class _StepSizes:
    """A non-empty sequence of steps > 0 that float32 can hold: a step <= 0 never moves, so a fit
    would keep its start point and "converge" untrained."""

    def accepts(self, value: Any) -> bool:
        if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | np.ndarray):
            return False
        step = Interval(0, FLOAT32_MAX, open_low=True)
        return len(value) > 0 and all(step.accepts(python_scalar(s)) for s in value)

    def __str__(self) -> str:
        return f"a non-empty sequence of numbers in (0, {FLOAT32_MAX:.3g}] (float32, in which training runs)"


class _Threads:
    """Threads counted as scikit-learn counts ``n_jobs`` (-1: all cores, -2: all but one, ...), and
    not absurdly many: torch's OpenMP pool allocates per thread up front (10**9 aborts the process)."""

    def accepts(self, value: Any) -> bool:
        return Interval(-max_threads(), max_threads(), integer=True).accepts(value) and value != 0

    def __str__(self) -> str:
        return f"a non-zero integer (-1: all cores) of at most {max_threads()} threads (64 per core, at least 256)"


class _RandomState:
    def accepts(self, value: Any) -> bool:
        return Interval(0, 2**32 - 1, integer=True).accepts(value) or isinstance(value, np.random.RandomState)

    def __str__(self) -> str:
        return f"an integer in [0, {2**32 - 1}], a numpy RandomState"


class _ImageShape:
    """(H, W) or (H, W, 3) (channels last); ``fit`` checks that it holds the rows' features."""

    def accepts(self, value: Any) -> bool:
        if not isinstance(value, Sequence | np.ndarray) or isinstance(value, str) or len(value) not in (2, 3):
            return False
        sizes = [python_scalar(n) for n in value]
        return all(integers(1).accepts(n) for n in sizes) and (len(sizes) == 2 or sizes[2] == 3)

    def __str__(self) -> str:
        return "(H, W) or (H, W, 3) of integers >= 1"


class _Device:
    """A torch device's name or object; ``fit`` then checks that this machine can train on it."""

    def accepts(self, value: Any) -> bool:
        import torch

        return isinstance(value, (str, torch.device))

    def __str__(self) -> str:
        return "a device name such as 'cpu', 'cuda' or 'auto'"


BOOLEAN, STEP_SIZES, THREADS = _Boolean(), _StepSizes(), _Threads()
RANDOM_STATE, IMAGE_SHAPE, DEVICE = _RandomState(), _ImageShape(), _Device()
# torch takes these as float32 numbers: beyond, it overflows
POSITIVE_FLOAT32 = Interval(0, FLOAT32_MAX, open_low=True)
# The parameters every estimator of lastedge.train takes.
COMMON_CONSTRAINTS: dict[str, list] = {
    "n_atoms": [integers(1)],
    "preprocess": [Options(KINDS + ("auto",))],
    "random_state": [RANDOM_STATE, None],
}


def check_params(estimator: Any) -> None:
    """Check every parameter of ``estimator`` against its class's ``_parameter_constraints``."""
    table: Mapping[str, list] = type(estimator)._parameter_constraints
    for name, value in estimator.get_params(deep=False).items():
        check_value(name, value, table[name])


def check_value(name: str, value: Any, constraints: list) -> None:
    """A ValueError unless ``value`` fits one of ``constraints`` (None stands for the value None)."""
    if any(value is None if c is None else c.accepts(value) for c in constraints):
        return
    wanted = ["None" if c is None else str(c) for c in constraints]
    listed = wanted[0] if len(wanted) == 1 else f"{', '.join(wanted[:-1])} or {wanted[-1]}"
    raise ValueError(f"{name} must be {listed}, got {value!r}{_did_you_mean(value, constraints)}")


def _did_you_mean(value: Any, constraints: list) -> str:
    """" (did you mean 'shared'?)" for a misspelt option."""
    names = [option for c in constraints if isinstance(c, Options) for option in c.values]
    close = difflib.get_close_matches(value, names, n=1) if isinstance(value, str) else []
    return f" (did you mean {close[0]!r}?)" if close else ""
