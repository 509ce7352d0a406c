"""``python -m lastedge.cli ARGS``: the ``lastedge`` command."""

import sys

from .app import main

sys.exit(main())
