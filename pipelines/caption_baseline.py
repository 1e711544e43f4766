"""DVC stage `caption_baseline`: score the most-common-training-caption baseline (val, test)."""

import logging
import sys

from clapcap.config import load_section
from clapcap.training.captioning_experiments import CaptioningParams, evaluate_baseline


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    evaluate_baseline(load_section(CaptioningParams, "captioning"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
