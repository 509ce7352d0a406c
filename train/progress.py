"""A progress bar over training iterations that can be silenced (``verbose=0``)."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import torch


@contextlib.contextmanager
def progress_bar(total: int, label: str, verbose: int) -> Iterator[Callable[[int, torch.Tensor], None]]:
    """Yield ``report(iteration, objectives)``; shows a tqdm bar on stderr when ``verbose > 0``."""
    if not verbose:
        yield lambda iteration, objectives: None
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=label, unit="it", leave=False) as bar:
        def report(iteration: int, objectives: torch.Tensor) -> None:
            bar.n = iteration + 1
            bar.set_postfix(objective=f"{float(objectives.sum()):.4g}", refresh=False)
            bar.refresh()

        yield report
