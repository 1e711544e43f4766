"""DVC stage `train_clap_minilm@<variant>`: train the CLAP with the pretrained all-MiniLM-L6-v2
text tower in one variant of params.yaml `clap_minilm.variants`.

  python pipelines/train_clap_minilm.py full
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_entry
from clapcap.pretrained.minilm_train import MiniLMClapStudy, run_train_minilm_clap


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", help="a key of clap_minilm.variants")
    args = parser.parse_args()
    study = load_section(MiniLMClapStudy, "clap_minilm")
    run_train_minilm_clap(study.params_for(args.variant), variant=args.variant, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
