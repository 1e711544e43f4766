"""Helpers shared by the CLI groups."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def add_group(subparsers: Any, name: str, help_text: str) -> Any:
    """Add a command group and return its sub-command action."""
    parser = subparsers.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(handler=lambda _args, p=parser: (p.print_help(), 2)[1])
    return parser.add_subparsers(dest="command", metavar="COMMAND")


def add_command(
    group: Any, name: str, handler: Callable[[argparse.Namespace], int], help_text: str
) -> argparse.ArgumentParser:
    """Add a command with its handler; returns the parser to add arguments to."""
    parser = group.add_parser(name, help=help_text, description=help_text)
    parser.set_defaults(handler=handler)
    return parser
