"""DVC stage `train_clap`: train the synthetic CLAP (params.yaml `train_clap`: the MiniLM text tower)."""

import sys

from clapcap.clap.config import TrainClapParams
from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.tracked.clap import run_synth_clap


def main() -> int:
    run_synth_clap(load_section(TrainClapParams, "train_clap"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
