"""The ``clapcap`` command line: one sub-command group per area, thin handlers.

Each group lives in ``clapcap.cli.<group>`` and exposes ``register(subparsers)``; a
handler parses its arguments, calls one library function and returns an exit code.
Group modules import the library (torch, transformers, mlflow behind it) inside their
handlers, so ``clapcap --help`` stays fast; that is the one place imports are deferred.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType

from clapcap.cli import (
    assets,
    captioning,
    conclusions,
    data,
    pairwise,
    pipeline,
    reference,
    registry,
    report,
    retrieval,
    robust,
)
from clapcap.entry import run_entry, verbose_from_env

__all__ = ["build_parser", "main", "run_entry"]

# (group name, module, help), in the order ``clapcap --help`` lists them.
GROUPS: list[tuple[str, ModuleType, str]] = [
    ("data", data, "prepare and validate datasets and the synthetic corpus"),
    ("assets", assets, "offline assets: Java tools, HF caches, downloads"),
    ("retrieval", retrieval, "embedding dumps, retrieval metrics, parity, identity"),
    ("captioning", captioning, "ClipCap training, generation and scoring"),
    ("robust", robust, "RobustCLAP paraphrases, fine-tuning and benchmark"),
    ("reference", reference, "reference captioners, scoring and leakage"),
    ("pairwise", pairwise, "pairwise A/B judging study and agreement"),
    ("report", report, "tables, figures and the leaderboard"),
    ("registry", registry, "registered models: paired comparison of versions, promotion"),
    ("conclusions", conclusions, "stated findings as data: compare two builds"),
    ("pipeline", pipeline, "the DVC pipeline: `dvc repro` with independent stages side by side"),
]


def _version() -> str:
    """The installed distribution's version (pyproject.toml's)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clapcap")
    except PackageNotFoundError:  # run from a source tree that pip did not install
        return "unknown (not installed: pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    """Build the full argument parser with every available group."""
    parser = argparse.ArgumentParser(prog="clapcap", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="debug logging, library logs, and tracebacks of errors")
    parser.add_argument("--version", action="version", version=f"clapcap {_version()}")
    sub = parser.add_subparsers(dest="group", metavar="GROUP")
    for name, module, help_text in GROUPS:
        module.register(sub, name, help_text)
    _show_defaults(parser)
    return parser


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help line; descriptions (and their examples) as written.

    Left out where it says nothing: a flag's False, an unset None, a help that already
    names its default. An empty string shows as ``""`` rather than as nothing. Every option
    has a help text (a test walks every verb), since argparse shows none, and so no default,
    for an option without one.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default is None or action.default is False or action.default == argparse.SUPPRESS \
                or "default" in text:
            return text
        if action.default == "":
            return f'{text} (default: "")'
        return super()._get_help_string(action)


def _show_defaults(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` and every sub-command's parser :class:`_HelpFormatter`, set here once
    rather than in each of the verbs' ``add_parser`` calls."""
    parser.formatter_class = _HelpFormatter
    for action in parser._actions:  # argparse keeps sub-parsers only on this private list
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _show_defaults(child)


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
