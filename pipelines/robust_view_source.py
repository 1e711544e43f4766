"""DVC stage `robust_view_source`: the base CLAP fine-tuned on the LLM stage's training captions
with the LLM's views, with the lexicon's views of the same captions, and without views, over
the fine-tune seeds of `robust_seeds` (params.yaml `robust_view_source`)."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.robust.config import RobustBenchParams, RobustSeedParams
from clapcap.experiments.robust.view_source import ViewSourceParams
from clapcap.robust.config import RobustTrainParams
from clapcap.tracked.robust_view_source import run_view_source


def main() -> int:
    run_view_source(load_section(RobustTrainParams, "robust_train"),
                    load_section(RobustTrainParams, "robust_control"),
                    load_section(RobustBenchParams, "robust_benchmark"),
                    load_section(RobustSeedParams, "robust_seeds"),
                    load_section(ViewSourceParams, "robust_view_source"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
