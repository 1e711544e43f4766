"""DVC stages `caption_lr_check@<lm>-<variant>` and `real_caption_lr_check@<row>`: the baseline's
LR search rerun for one architecture row, or for one encoder row on its own embeddings
(`real_captioning_study.encoder_lr_rows`), and whether it chooses the baseline's learning rates
(params.yaml `<section>.lr_search`).

  python pipelines/caption_lr_check.py --lm gpt2 --name prefix_length4
  python pipelines/caption_lr_check.py --section real_captioning_study --row subset_speech_whisper_tiny_en
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.errors import InputError
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.tracked.caption_lr_check import run_lr_check_tracked, run_row_lr_check_tracked


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", default="captioning", choices=["captioning", "real_captioning_study"],
                        help="the params.yaml section of the study")
    parser.add_argument("--lm", help="an architecture row's LM")
    parser.add_argument("--name", help="the architecture row, e.g. prefix_length4")
    parser.add_argument("--row", help="an encoder row of encoder_lr_rows, e.g. encoder_yamnet")


def main(args: argparse.Namespace) -> int:
    if bool(args.row) == bool(args.lm or args.name) or bool(args.lm) != bool(args.name):
        raise InputError("caption_lr_check: give --lm and --name (an architecture row) or --row (an encoder row)")
    params = load_section(CaptioningParams, args.section)
    if args.row:
        run_row_lr_check_tracked(params, args.row, compute=load_compute())
    else:
        run_lr_check_tracked(params, args.lm, args.name, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
