"""DVC stage `robust_benchmark`: CLAP vs RobustCLAP on original and paraphrased queries
(params.yaml `robust_benchmark`); registers RobustCLAP when it beats the base."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.robust.config import RobustBenchParams
from clapcap.tracked.robust import run_robust_benchmark


def main() -> int:
    run_robust_benchmark(load_section(RobustBenchParams, "robust_benchmark"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
