"""CLI commands of the training part (``lastedge train``, ``lastedge predict``)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-commands to the ``lastedge`` parser."""
