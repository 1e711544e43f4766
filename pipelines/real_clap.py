"""DVC stage `real_clap`: the tower CLAP's heads trained per seed on the real corpus and measured
on its cross-source test against YAMNet's own class names, untrained heads and chance
(params.yaml `real_clap`, docs/real_clap.md)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.clap import RealClapParams
from clapcap.tracked.real_clap import run_tracked_real_clap


def main() -> int:
    run_tracked_real_clap(load_section(RealClapParams, "real_clap"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
