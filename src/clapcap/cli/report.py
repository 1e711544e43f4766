"""``clapcap report``: build the report; convert the leaderboard snapshot."""

from __future__ import annotations

import argparse
from typing import Any

from clapcap.cli._common import add_command, add_group

_SECTION_FLAGS = ("lm_ablation", "arch_ablation", "decoding_ablation", "encoder_ablation",
                  "reference_comparison", "lr_search", "retrieval")


def _build(args: argparse.Namespace) -> int:
    if args.track:
        from clapcap.tracked.report import build_report
    else:
        from clapcap.reporting.report import build_report

    inputs = {key: getattr(args, key) for key in _SECTION_FLAGS if getattr(args, key)}
    build_report(inputs, args.out, leaderboard_path=args.leaderboard)
    return 0


def _leaderboard(args: argparse.Namespace) -> int:
    from clapcap.reporting.leaderboard import CONVERTED_NAME, convert_leaderboard, data_path

    convert_leaderboard(args.source, args.out or data_path(CONVERTED_NAME))
    return 0


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Register the ``report`` group and its commands."""
    group = add_group(subparsers, name, help_text)
    p = add_command(group, "build", _build, "Markdown/LaTeX tables and PNG figures from result JSONs")
    for key in _SECTION_FLAGS:
        p.add_argument(f"--{key.replace('_', '-')}", dest=key, nargs="+", default=None,
                       metavar="JSON", help=f"input JSON file(s) of the {key} section")
    p.add_argument("--leaderboard", default=None, help="converted leaderboard CSV (default: packaged)")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument("--track", action="store_true", help="log figures and tables to MLflow")

    p = add_command(group, "leaderboard", _leaderboard,
                    "convert a leaderboard snapshot CSV to the explicit-column data file")
    p.add_argument("--source", required=True, help="snapshot CSV (model,settings,date,r@1,col2..col4)")
    p.add_argument("--out", default=None, help="output CSV (default: the packaged data file)")
