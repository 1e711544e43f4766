"""DVC stage `train_clap_variant@<variant>`: train one variant of the synthetic CLAP (params.yaml
`clap_variants.variants`: overrides of `train_clap`).

  python pipelines/train_clap_variant.py scratch
"""

import argparse
import sys

from clapcap.clap.config import TrainClapParams
from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.clap.variants import ClapVariantStudy
from clapcap.tracked.clap import run_synth_clap


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("variant", help="a key of clap_variants.variants")


def main(args: argparse.Namespace) -> int:
    study = load_section(ClapVariantStudy, "clap_variants")
    params = study.params_for(load_section(TrainClapParams, "train_clap"), args.variant)
    run_synth_clap(params, variant=args.variant, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
