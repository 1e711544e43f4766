"""DVC stage `caption_lr_check@<lm>-<variant>`: the baseline's LR search rerun for one
architecture row, and whether it chooses the baseline's learning rates (params.yaml
`captioning.lr_search`, `captioning.arch`)."""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.tracked.caption_lr_check import run_lr_check_tracked


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lm", required=True)
    parser.add_argument("--name", required=True, help="the architecture row, e.g. prefix_length4")


def main(args: argparse.Namespace) -> int:
    run_lr_check_tracked(load_section(CaptioningParams, "captioning"), args.lm, args.name, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
