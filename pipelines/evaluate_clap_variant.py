"""DVC stage `evaluate_clap_variant@<variant>`: test-split retrieval of one trained variant of the
synthetic CLAP, with bootstrap CIs, and its paired difference from the synthetic CLAP (params.yaml
`clap_variants`).

  python pipelines/evaluate_clap_variant.py scratch
"""

import argparse
import sys

from clapcap.clap.config import TrainClapParams
from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.clap.variants import ClapVariantStudy, evaluate_variant


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", help="a key of clap_variants.variants")


def main(args: argparse.Namespace) -> int:
    evaluate_variant(load_section(ClapVariantStudy, "clap_variants"), load_section(TrainClapParams, "train_clap"),
                     args.variant, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
