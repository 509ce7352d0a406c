"""``lastedge demo``: train LAST, SGD and a linear SVM on digits and print one comparison table."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``demo`` to the ``lastedge`` parser."""
