"""DVC stage `robust_train`: multi-view contrastive fine-tuning of a CLAP (params.yaml `robust_train`)."""

import logging
import sys

from clapcap.config import load_section
from clapcap.robust.config import RobustTrainParams
from clapcap.robust.train import run_robust_train


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run_robust_train(load_section(RobustTrainParams, "robust_train"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
