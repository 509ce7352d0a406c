"""CLI commands of the runtime part (``lastedge bench``)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-commands to the ``lastedge`` parser."""
