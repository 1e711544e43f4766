"""DVC stage `train_clap`: train the tiny default CLAP (params.yaml `train_clap`)."""

import sys

from clapcap.config import load_section
from clapcap.encoders.config import TrainClapParams
from clapcap.entry import run_entry
from clapcap.training.clap import run_train_clap


def main() -> int:
    run_train_clap(load_section(TrainClapParams, "train_clap"))
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
