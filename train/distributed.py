"""Data-parallel LAST fits on ``torch.distributed``: which rows a rank holds, and the few
collective operations a fit needs.

When a process group of more than one rank is initialised (``torchrun``, or
``torch.distributed.init_process_group``), ``LASTClassifier.fit`` takes each rank's rows as its
shard of one training set: the shards in rank order are the rows of the fit (:class:`Shard`).
Minibatch row indices are drawn over all rows from the seed every rank shares, so the global
minibatch is the single-process fit's; each rank computes the gradient of the rows of it that it
holds, and the sums are all-reduced (:func:`sum_over_ranks`). Every number a decision is made
from (objectives, step trials, the stopping rule, hold-out accuracy, class list, preprocessing
statistics, start atoms) is all-reduced or gathered, so every rank computes the same iterates.
Without a process group, or with one rank, :func:`shard_of` is None and a fit never calls the
rest: it is the single-process fit, bit for bit.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist

from lastedge.runtime.data_shards import row_block

Tensor = torch.Tensor
_MESSAGE_BYTES = 1024  # of a failed rank's error message sent to the others


def world_size() -> int:
    """Ranks of the initialised process group; 1 without one."""
    if not (dist.is_available() and dist.is_initialized()):
        return 1
    return dist.get_world_size()


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if world_size() > 1 else 0


def is_distributed() -> bool:
    """Whether a process group of more than one rank is initialised."""
    return world_size() > 1


def shard_rows(n_rows: int, rank_: int | None = None, world: int | None = None) -> slice:
    """The contiguous block of ``n_rows`` rows that rank ``rank_`` of ``world`` (by default this
    process's) reads: blocks in rank order cover the rows, their sizes differ by at most one."""
    return row_block(n_rows, rank() if rank_ is None else rank_, world_size() if world is None else world)


@dataclass(frozen=True)
class Shard:
    """This rank's rows of a distributed fit: rows ``offset .. offset + rows`` of ``total``."""

    offset: int
    rows: int
    total: int

    def local(self, index: Tensor) -> Tensor:
        """The positions, in this rank's rows, of the global row indices ``index`` it holds."""
        held = (index >= self.offset) & (index < self.offset + self.rows)
        return index[held] - self.offset

    def columns(self, array: np.ndarray) -> np.ndarray:
        """This rank's part of an array over all rows (rows along the last axis)."""
        return array[..., self.offset:self.offset + self.rows]


def shard_of(n_rows: int) -> Shard | None:
    """This rank's :class:`Shard` when it holds ``n_rows`` rows (gathered from every rank); None
    without a process group of several ranks."""
    if not is_distributed():
        return None
    counts = all_gather_rows(np.array([n_rows], dtype=np.int64))
    return Shard(int(counts[:rank()].sum()), int(n_rows), int(counts.sum()))


def check_device(device: torch.device) -> None:
    """A ValueError when the process group's backend cannot sum tensors on the fit's ``device``
    (nccl sums GPU tensors only)."""
    if dist.get_backend() == "nccl" and device.type != "cuda":
        raise ValueError(f"a distributed fit over nccl needs device='cuda' (each rank its GPU), got "
                         f"device={str(device)!r}; use the gloo backend for CPU fits")


def _device() -> torch.device:
    """Where this backend's collectives run: the current GPU for nccl, else the CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def sum_over_ranks(*tensors: Tensor) -> tuple[Tensor, ...]:
    """Each tensor summed over the ranks (new tensors; one all-reduce per dtype)."""
    result: list[Tensor | None] = [None] * len(tensors)
    for dtype in dict.fromkeys(t.dtype for t in tensors):
        chosen = [i for i, t in enumerate(tensors) if t.dtype == dtype]
        flat = torch.cat([tensors[i].reshape(-1) for i in chosen])
        dist.all_reduce(flat)
        for i, part in zip(chosen, flat.split([tensors[i].numel() for i in chosen])):
            result[i] = part.view(tensors[i].shape)
    return tuple(result)


def _reduced(values: np.ndarray, op: dist.ReduceOp) -> np.ndarray:
    tensor = torch.from_numpy(np.array(values)).to(_device())
    dist.all_reduce(tensor, op=op)
    return tensor.cpu().numpy()


def mean(values: np.ndarray, shard: Shard | None) -> float:
    """Mean of ``values`` (one per row) over every rank's rows; ``np.mean`` without a shard."""
    if shard is None:
        return float(np.mean(values))
    return float(_reduced(np.array([np.sum(values, dtype=np.float64)]), dist.ReduceOp.SUM)[0] / shard.total)


def summed(values: np.ndarray, shard: Shard | None) -> np.ndarray:
    """``values`` summed element-wise over the ranks (``values`` themselves without a shard)."""
    return np.asarray(values) if shard is None else _reduced(np.asarray(values), dist.ReduceOp.SUM)


def column_moments(X: np.ndarray, shard: Shard) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and standard deviation over every rank's rows (float64, two passes)."""
    X = np.asarray(X, dtype=np.float64)
    mean_ = _reduced(X.sum(axis=0), dist.ReduceOp.SUM) / shard.total
    variance = _reduced(np.square(X - mean_).sum(axis=0), dist.ReduceOp.SUM) / shard.total
    return mean_, np.sqrt(variance)


def any_rank(flag: bool) -> bool:
    """Whether ``flag`` is true on any rank (``flag`` itself without a process group)."""
    if not is_distributed():
        return flag
    return bool(_reduced(np.array([int(flag)]), dist.ReduceOp.MAX)[0])


def check_same(value: int, what: str) -> None:
    """A ValueError on every rank unless ``value`` is the same on all of them."""
    low, high = _reduced(np.array([value]), dist.ReduceOp.MIN)[0], _reduced(np.array([value]), dist.ReduceOp.MAX)[0]
    if low != high:
        raise ValueError(f"the ranks of a distributed fit hold rows of different {what} ({low} to {high})")


def all_gather_rows(array: np.ndarray) -> np.ndarray:
    """Every rank's ``array`` (numbers, rows first, any count per rank) concatenated in rank order."""
    array = np.ascontiguousarray(array)
    counts = [torch.zeros(1, dtype=torch.int64, device=_device()) for _ in range(world_size())]
    dist.all_gather(counts, torch.tensor([len(array)], device=_device()))
    counts = [int(c.item()) for c in counts]
    padded = np.zeros((max(counts), *array.shape[1:]), dtype=array.dtype)
    padded[:len(array)] = array
    parts = [torch.empty(padded.shape, dtype=torch.from_numpy(padded).dtype, device=_device())
             for _ in counts]
    dist.all_gather(parts, torch.from_numpy(padded).to(_device()))
    return np.concatenate([part.cpu().numpy()[:count] for part, count in zip(parts, counts)])


def unique_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(y, return_inverse=True)`` over every rank's labels: the classes of all ranks
    and the index of each of this rank's labels among them. Labels are numbers or text."""
    y = np.asarray(y)
    if y.dtype.kind == "O":
        y = y.astype(str)
    local = np.unique(y)
    if local.dtype.kind == "U":  # text travels as code points, as wide as the widest label
        width = int(_reduced(np.array([local.dtype.itemsize // 4]), dist.ReduceOp.MAX)[0])
        codes = local.astype(f"<U{max(width, 1)}").view(np.int32).reshape(len(local), -1)
        gathered = all_gather_rows(codes).reshape(-1).view(f"<U{max(width, 1)}")
    elif local.dtype.kind in "biu":
        gathered = all_gather_rows(local.astype(np.int64)).astype(local.dtype)
    elif local.dtype.kind == "f":
        gathered = all_gather_rows(local.astype(np.float64)).astype(local.dtype)
    else:
        raise TypeError(f"a distributed fit needs labels that are numbers or text, got dtype {y.dtype}")
    classes = np.unique(gathered)
    return classes, np.searchsorted(classes, y)


class ShardedRows:
    """Every rank's rows as one array that can be indexed by global row numbers (``rows[index]``
    is gathered from the ranks that hold them): what ``problem.initial_atoms`` draws from."""

    def __init__(self, Z: np.ndarray, shard: Shard):
        self.Z, self.shard = Z, shard
        self.shape = (shard.total, Z.shape[1])

    def __len__(self) -> int:
        return self.shard.total

    def __getitem__(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index)
        rows = np.zeros((len(index), self.Z.shape[1]), dtype=self.Z.dtype)
        held = (index >= self.shard.offset) & (index < self.shard.offset + self.shard.rows)
        rows[held] = self.Z[index[held] - self.shard.offset]
        return _reduced(rows, dist.ReduceOp.SUM)  # each row is one rank's, zeros elsewhere: exact


@contextlib.contextmanager
def raised_on_any_rank():
    """Run local work (no collective operations inside) on every rank; when it raised on any, raise
    on every rank, so that none waits for the others in the next collective: the rank's own error,
    or a ValueError naming the first rank that failed and its message."""
    if not is_distributed():
        yield
        return
    error = None
    try:
        yield
    except Exception as raised:  # noqa: BLE001 - re-raised below, after the ranks agree
        error = raised
    first = int(_reduced(np.array([rank() if error is not None else world_size()]), dist.ReduceOp.MIN)[0])
    if first == world_size():
        return
    message = torch.zeros(_MESSAGE_BYTES, dtype=torch.uint8, device=_device())
    if error is not None:
        text = f"{type(error).__name__}: {error}".encode()[:_MESSAGE_BYTES]
        message[:len(text)] = torch.frombuffer(bytearray(text), dtype=torch.uint8)
    dist.broadcast(message, src=first)
    if error is not None:
        raise error
    text = bytes(message.cpu().numpy()).rstrip(b"\0").decode(errors="replace")
    raise ValueError(f"rank {first} of the distributed fit failed: {text}")
