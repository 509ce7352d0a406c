"""Keep an interpreter's native chatter off the user's terminal.

TFLite interpreters (LiteRT and legacy ``tflite_runtime``) print "INFO: Created TensorFlow Lite
XNNPACK delegate for CPU." from C++ straight to file descriptor 2 whenever a model is loaded, and
offer no Python switch to silence it. ``without_native_lines`` captures descriptor 2 while a
native call runs and passes every other line through afterwards, so warnings and errors still show.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Iterator

TFLITE_INFO_LINES = (b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.",)

_STDERR_FD = 2
_redirect_lock = threading.Lock()  # descriptor 2 is process-wide: one capture at a time


@contextlib.contextmanager
def without_native_lines(prefixes: tuple[bytes, ...] = TFLITE_INFO_LINES) -> Iterator[None]:
    """Drop the lines starting with one of ``prefixes`` that native code writes to descriptor 2
    inside the block; every other line is written back to descriptor 2 when the block ends."""
    with _redirect_lock:
        try:
            saved = os.dup(_STDERR_FD)
        except OSError:  # no descriptor 2 (a detached process): nothing would be seen anyway
            saved = None
        if saved is None:
            yield
            return
        with tempfile.TemporaryFile() as capture:
            _flush_python_stderr()
            os.dup2(capture.fileno(), _STDERR_FD)
            try:
                yield
            finally:
                _flush_python_stderr()
                os.dup2(saved, _STDERR_FD)
                os.close(saved)
                capture.seek(0)
                kept = [line for line in capture.read().splitlines(keepends=True)
                        if not line.startswith(prefixes)]
                if kept:
                    os.write(_STDERR_FD, b"".join(kept))


def _flush_python_stderr() -> None:
    """Python's own buffered writes to ``sys.stderr`` must land on the side they were made on."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()
