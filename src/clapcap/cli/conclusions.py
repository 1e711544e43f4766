"""``clapcap conclusions``: compare the stated findings of two builds."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from clapcap.cli._common import add_command, add_group


def _diff(args: argparse.Namespace) -> int:
    from clapcap.evaluation.conclusions import diff_conclusions, format_diff, load_conclusions

    old, new = load_conclusions(args.old), load_conclusions(args.new)
    diff = diff_conclusions(old, new)
    sys.stdout.write(format_diff(diff, old, new) + "\n")
    if args.strict:
        return 0 if diff.ok and not diff.changed else 1
    return 0 if diff.ok else 1


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Register the ``conclusions`` group and its commands."""
    group = add_group(subparsers, name, help_text)
    p = add_command(group, "diff", _diff,
                    "list each finding whose verdict changed between two builds; exit 1 when one "
                    "flipped between holds and reversed, or disappeared")
    p.add_argument("old", help="conclusions.json of the reference build (e.g. the committed one)")
    p.add_argument("new", help="conclusions.json of the rebuild")
    p.add_argument("--strict", action="store_true",
                   help="also exit 1 when a verdict moved to or from 'within noise'")
