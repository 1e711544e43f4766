"""DVC stage `caption_noise_floor@<lm>`: mean/std of every test metric over the LM's seeds."""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import noise_floor
from clapcap.tracked.captioning import study_tracker


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lm", required=True)


def main(args: argparse.Namespace) -> int:
    params = load_section(CaptioningParams, "captioning")
    noise_floor(params, args.lm, compute=load_compute(), tracker=study_tracker(params))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
