"""CLI commands of the export part (``lastedge export``)."""

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this part's sub-commands to the ``lastedge`` parser."""
