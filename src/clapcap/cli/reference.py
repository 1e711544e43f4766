"""``clapcap reference``: shared split, generation/import of reference captions, scoring + leakage."""

from __future__ import annotations

import argparse
import logging
from typing import Any

from clapcap.cli._common import add_command, add_group, compute_of

logger = logging.getLogger(__name__)


def _dump_split(args: argparse.Namespace) -> int:
    from clapcap.evaluation.shared_split import dump_split

    dump_split(args.dataset, args.out_dir, split=args.split)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from clapcap.config import load_section
    from clapcap.reference.config import ReferenceParams, find_spec
    from clapcap.reference.generate import generate_reference

    params = load_section(ReferenceParams, "reference", args.params)
    spec = find_spec(params, args.name)
    split_json = args.split_json or f"{params.split_dir}/split.json"
    # An ApiError exits 1; progress so far is kept in the cache, so a rerun resumes.
    generate_reference(spec, split_json, args.out_dir or params.out_dir, compute=compute_of(args))
    return 0


def _import(args: argparse.Namespace) -> int:
    from clapcap.evaluation.shared_split import read_split_json
    from clapcap.reference.generate import import_predictions, predictions_path

    dst = predictions_path(args.out_dir, args.name)
    import_predictions(args.predictions, read_split_json(args.split_json), dst)
    logger.info("imported %s -> %s", args.predictions, dst)
    return 0


def _score(args: argparse.Namespace) -> int:
    from clapcap.evaluation.shared_split import score_reference

    out = score_reference(args.predictions, args.split, args.name, out_path=args.out,
                          held_out_name=args.held_out_name, trim_words=args.trim_words,
                          trim_sentences=args.trim_sentences, metrics=args.metrics)
    row = out["reportable"]
    logger.info("%s: leakage %s; report row %s: %s=%s", args.name, out["leakage"]["verdict"], row["name"],
                out["primary"], row["corpus"].get(out["primary"]))
    return 0


def register(subparsers: Any, name: str, help_text: str) -> None:
    """Add the ``reference`` group: dump-split, generate, import, score."""
    from clapcap.cli.captioning_score import add_trim_arguments

    group = add_group(subparsers, name, help_text)
    p = add_command(group, "dump-split", _dump_split, "write the test split once as split.csv and split.json")
    p.add_argument("--dataset", default="data/corpus", help="prepared dataset folder")
    p.add_argument("--out-dir", default="outputs/reference_split", help="folder of split.csv and split.json")
    p.add_argument("--split", default="test", help="split of the dataset to write")

    p = add_command(group, "generate", _generate,
                    "caption the split with a reference configured in params.yaml (section reference)")
    p.add_argument("--name", required=True, help="a reference.captioners name")
    p.add_argument("--params", default="params.yaml", help="parameter file with a reference section")
    p.add_argument("--split-json", default=None, help="the split to caption (default: reference.split_dir/split.json)")
    p.add_argument("--out-dir", default=None, help="where NAME/predictions.json goes (default: reference.out_dir)")

    p = add_command(group, "import", _import, "check and import a predictions JSON made elsewhere")
    p.add_argument("--predictions", required=True, metavar="PRED.json", help="{clip_id: caption} made elsewhere")
    p.add_argument("--split-json", required=True, metavar="SPLIT.json", help="the split it must cover (dump-split)")
    p.add_argument("--name", required=True, help="name of the imported reference")
    p.add_argument("--out-dir", default="outputs/reference", help="where NAME/predictions.json goes")

    p = add_command(group, "score", _score, "score predictions on the split, with the leakage check")
    p.add_argument("--predictions", required=True, metavar="PRED.json", help="{clip_id: caption}")
    p.add_argument("--split", required=True, metavar="SPLIT.csv", help="the split from dump-split")
    p.add_argument("--name", required=True, help="the model's name in the report")
    p.add_argument("--held-out-name", default=None, metavar="NAME",
                   help="name of the held-out (clean) row, reported for a leaky model")
    p.add_argument("--out", required=True, metavar="OUT.json", help="scores and leakage verdict to write")
    add_trim_arguments(p)
