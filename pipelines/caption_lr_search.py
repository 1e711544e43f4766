"""DVC stages `caption_lr_search@<lm>` and `real_caption_lr_search@<lm>`: Optuna LR search
(stage-1 sweep, stage-2 grid) for one LM of the synthetic study (`--section captioning`) or of
the real corpus's (`--section real_captioning_study`)."""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import run_lr_search
from clapcap.tracked.captioning import study_tracker


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lm", required=True)
    parser.add_argument("--section", default="captioning", choices=["captioning", "real_captioning_study"],
                        help="the params.yaml section of the study")


def main(args: argparse.Namespace) -> int:
    params = load_section(CaptioningParams, args.section)
    run_lr_search(params, args.lm, compute=load_compute(), tracker=study_tracker(params))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
