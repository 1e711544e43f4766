"""DVC stages `real_robust` and `real_robust_llm@llm`: RobustCLAP on the real tower CLAP, its heads
fine-tuned per seed on WordNet's lexical views of the real captions (or, `--section real_robust_llm`,
on the LLM's views of the training captions) against a caption-only control, measured on the
original, view-2 and held-out test captions (params.yaml `real_robust`, docs/robust.md).

  python pipelines/real_robust.py [--section real_robust_llm]
"""

import argparse
import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.robust import RealRobustParams
from clapcap.tracked.real_robust import run_tracked_real_robust


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", default="real_robust", choices=["real_robust", "real_robust_llm"],
                        help="the params.yaml section to run")


def main(args: argparse.Namespace) -> int:
    run_tracked_real_robust(load_section(RealRobustParams, args.section))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
