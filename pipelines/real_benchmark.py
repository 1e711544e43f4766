"""DVC stage `real_benchmark`: the corpus-trained CLAPs on real recordings (params.yaml
`real_benchmark`, with the models and settings of `robust_benchmark` and `robust_seeds`):
retrieval against chance, the views, zero-shot labels, RobustCLAP's findings over seeds."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.recordings import RealBenchParams, run_real_retrieval
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.robust.config import RobustTrainParams


def main() -> int:
    run_real_retrieval(load_section(RealBenchParams, "real_benchmark"),
                       load_section(RobustBenchParams, "robust_benchmark"),
                       load_section(RobustSeedParams, "robust_seeds"),
                       load_section(RobustTrainParams, "robust_train"),
                       load_section(RobustTrainParams, "robust_control"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
