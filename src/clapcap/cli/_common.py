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


def compute_of(args: argparse.Namespace) -> Any:
    """The resolved ``compute`` section of ``args.params`` (``params.yaml`` when the command
    has no ``--params``), with ``--device`` (when the command has one and it is set) replacing
    its device; ``CLAPCAP_DEVICE`` / ``CLAPCAP_PRECISION`` win over both.

    Returns:
        A :class:`clapcap.compute.Compute`.

    Raises:
        DeviceUnavailable: when CUDA is asked for and there is none.
    """
    from dataclasses import replace
    from pathlib import Path

    from clapcap.compute import SECTION, ComputeParams, resolve
    from clapcap.config import load_section, read_params

    path = Path(getattr(args, "params", None) or "params.yaml")
    has_section = path.is_file() and SECTION in read_params(path)
    params = load_section(ComputeParams, SECTION, path) if has_section else ComputeParams()
    if getattr(args, "device", None):
        params = replace(params, device=args.device)
    return resolve(params)
