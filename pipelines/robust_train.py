"""DVC stages `robust_train` and `robust_control`: multi-view contrastive fine-tuning of a CLAP.

Usage: python pipelines/robust_train.py [--section robust_train]
(`robust_control` is the same fine-tune with the paraphrase losses switched off.)
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.robust.config import RobustTrainParams
from clapcap.tracked.robust import run_robust_train


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", default="robust_train", help="params.yaml section (RobustTrainParams)")


def main(args: argparse.Namespace) -> int:
    run_robust_train(load_section(RobustTrainParams, args.section), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
