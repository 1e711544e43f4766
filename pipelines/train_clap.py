"""DVC stage `train_clap`: train the tiny default CLAP (params.yaml `train_clap`)."""

import logging
import sys

from clapcap.config import load_section
from clapcap.encoders.config import TrainClapParams
from clapcap.training.clap import run_train_clap


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run_train_clap(load_section(TrainClapParams, "train_clap"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
