"""DVC stage `robust_kinds`: which change hurts retrieval, sound-event words, attribute words or
sentence structure (params.yaml `robust_kinds`, with the models of `robust_benchmark` and the
seeds of `robust_seeds`); views, per-kind drops and findings over seeds."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.kinds import KindStudyParams
from clapcap.robust.config import RobustTrainParams
from clapcap.tracked.robust_kinds import run_kinds


def main() -> int:
    run_kinds(load_section(RobustBenchParams, "robust_benchmark"),
                   load_section(RobustSeedParams, "robust_seeds"),
                   load_section(RobustTrainParams, "robust_train"),
                   load_section(RobustTrainParams, "robust_control"),
                   load_section(KindStudyParams, "robust_kinds"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
