"""DVC stage `robust_views`: RobustCLAP fine-tuned with one view per caption (each view in turn)
against two, over the fine-tune seeds of `robust_seeds` (params.yaml `robust_views`)."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.views import ViewCountParams
from clapcap.robust.config import RobustTrainParams
from clapcap.tracked.robust_views import run_views


def main() -> int:
    run_views(load_section(RobustTrainParams, "robust_train"),
                         load_section(RobustBenchParams, "robust_benchmark"),
                         load_section(RobustSeedParams, "robust_seeds"),
                         load_section(ViewCountParams, "robust_views"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
