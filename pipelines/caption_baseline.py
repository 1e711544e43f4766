"""DVC stage `caption_baseline`: score the most-common-training-caption baseline (val, test)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import evaluate_baseline


def main() -> int:
    evaluate_baseline(load_section(CaptioningParams, "captioning"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
