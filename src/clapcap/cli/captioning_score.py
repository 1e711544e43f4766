"""``clapcap captioning score``: score a predictions JSON against a references JSON.

The captioning group (``clapcap.cli.captioning``) calls :func:`register_commands` to add
this command to its own sub-command action.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from clapcap.cli._common import add_command

logger = logging.getLogger(__name__)


def add_trim_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--trim-sentences`` and ``--trim-words N`` (shared with ``reference score``)."""
    parser.add_argument("--trim-sentences", action="store_true",
                        help="cut predictions and references after their last complete sentence")
    parser.add_argument("--trim-words", type=int, default=None, metavar="N",
                        help="keep the first N words of each prediction")
    parser.add_argument("--metrics", nargs="+", default=None, metavar="NAME",
                        help="aac-metrics names (default: all of bleu_1 bleu_4 meteor rouge_l "
                             "cider_d spice spider sbert_sim fer fense)")


def _score(args: argparse.Namespace) -> int:
    from clapcap.evaluation.captioning_metrics import score_files

    result = score_files(args.predictions, args.references, args.out, metrics=args.metrics,
                         trim_sentences=args.trim_sentences, trim_words=args.trim_words)
    logger.info("primary %s = %s; unavailable: %s", result["primary"],
                result["corpus"].get(result["primary"]), sorted(result["unavailable"]))
    return 0


def register_commands(group: Any) -> None:
    """Add ``score`` to the captioning group's sub-command action ``group``."""
    parser = add_command(group, "score", _score,
                         "score PRED.json ({clip_id: caption}) against REFS.json ({clip_id: [refs]})")
    parser.add_argument("--predictions", required=True, metavar="PRED.json", help="{clip_id: caption}")
    parser.add_argument("--references", required=True, metavar="REFS.json", help="{clip_id: [references]}")
    parser.add_argument("--out", required=True, metavar="SCORES.json", help="corpus and per-clip scores to write")
    add_trim_arguments(parser)
