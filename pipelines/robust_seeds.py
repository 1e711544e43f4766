"""DVC stage `robust_seeds`: RobustCLAP and its control over fine-tune seeds; each stated
finding tested over seeds and test queries (params.yaml `robust_seeds`), written to
results/robust/conclusions.json and results/robust/findings.md."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.seeds import run_seed_study
from clapcap.robust.config import RobustTrainParams
from clapcap.tracked.robust import run_robust_train


def main() -> int:
    run_seed_study(load_section(RobustTrainParams, "robust_train"),
                   load_section(RobustTrainParams, "robust_control"),
                   load_section(RobustBenchParams, "robust_benchmark"),
                   load_section(RobustSeedParams, "robust_seeds"), compute=load_compute(),
                   trainer=run_robust_train)  # each seed's fine-tune an MLflow run when robust_train.track
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
