"""The ``clapcap`` command line: one sub-command group per area, thin handlers.

Each group lives in ``clapcap.cli.<group>`` and exposes ``register(subparsers)``; a
handler parses its arguments, calls one library function and returns an exit code.
Group modules import heavy libraries inside their handlers so ``clapcap --help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from clapcap.entry import run_entry, verbose_from_env

__all__ = ["build_parser", "main", "run_entry"]

# (group name, module, help). A group whose module is absent is simply not offered.
GROUPS: list[tuple[str, str, str]] = [
    ("data", "clapcap.cli.data", "prepare and validate datasets and the synthetic corpus"),
    ("assets", "clapcap.cli.assets", "offline assets: Java tools, HF caches, downloads"),
    ("retrieval", "clapcap.cli.retrieval", "embedding dumps, retrieval metrics, parity, identity"),
    ("captioning", "clapcap.cli.captioning", "ClipCap training, generation and scoring"),
    ("robust", "clapcap.cli.robust", "RobustCLAP paraphrases, fine-tuning and benchmark"),
    ("reference", "clapcap.cli.reference", "reference captioners, scoring and leakage"),
    ("pairwise", "clapcap.cli.pairwise", "pairwise A/B judging study and agreement"),
    ("report", "clapcap.cli.report", "tables, figures and the leaderboard"),
    ("conclusions", "clapcap.cli.conclusions", "stated findings as data: compare two builds"),
]


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser with every available group."""
    parser = argparse.ArgumentParser(prog="clapcap", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging, library logs, and tracebacks of errors")
    sub = parser.add_subparsers(dest="group", metavar="GROUP")
    for name, module_name, help_text in GROUPS:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name == module_name:
                continue
            raise
        module.register(sub, name, help_text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``clapcap`` command. Returns the process exit code.

    Errors the user can act on print ``clapcap: error: <message>`` (exit 2 for wrong
    input, 1 for a failed run, see :mod:`clapcap.errors`); ``-v`` adds their traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0 if args.group is None else 2
    return run_entry(lambda: handler(args), verbose=args.verbose or verbose_from_env())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
