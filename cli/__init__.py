"""lastedge.cli: the ``lastedge`` command, the top layer over train, export and runtime.

Nothing in ``lastedge.train``, ``lastedge.export`` or ``lastedge.runtime`` imports this package.
"""

from .app import main

__all__ = ["main"]
