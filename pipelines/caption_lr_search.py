"""DVC stage `caption_lr_search@<lm>`: Optuna LR search (stage-1 sweep, stage-2 grid) for one LM."""

import argparse
import sys

from clapcap.captioning.config import CaptioningParams
from clapcap.captioning.study import run_lr_search
from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lm", required=True)
    args = parser.parse_args()
    run_lr_search(load_section(CaptioningParams, "captioning"), args.lm, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
