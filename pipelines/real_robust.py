"""DVC stage `real_robust`: RobustCLAP on the real tower CLAP, its heads fine-tuned per seed on
WordNet's lexical views of the real captions against a caption-only control, measured on the
original, view-2 and held-out test captions (params.yaml `real_robust`, docs/robust.md)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.robust import RealRobustParams
from clapcap.tracked.real_robust import run_tracked_real_robust


def main() -> int:
    run_tracked_real_robust(load_section(RealRobustParams, "real_robust"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
