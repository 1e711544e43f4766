"""DVC stage `pairwise_study`: the pairwise A/B study end to end, LLM judges served by the
stage's own engine, human votes from the rating page (params.yaml `pairwise`).

  python pipelines/pairwise_study.py
"""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.pairwise.study import PairwiseStudyParams, run_pairwise_study


def main() -> int:
    run_pairwise_study(load_section(PairwiseStudyParams, "pairwise"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
