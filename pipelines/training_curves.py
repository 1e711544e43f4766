"""DVC stage `training_curves`: the training histories, LR searches and findings the other
stages saved, rewritten as uniform CSV tables for `dvc plots` (params.yaml `training_curves`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.reporting.curves import CurvesParams, write_curves


def main() -> int:
    write_curves(load_section(CurvesParams, "training_curves"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
