"""DVC stage `evaluate_clap_minilm@<variant>`: test-split retrieval of one trained MiniLM-text-tower
CLAP variant, with bootstrap CIs, and its paired difference from the default CLAP (params.yaml
`clap_minilm`).

  python pipelines/evaluate_clap_minilm.py full
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_entry
from clapcap.pretrained.minilm_train import MiniLMClapStudy, evaluate_variant


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variant", help="a key of clap_minilm.variants")
    args = parser.parse_args()
    evaluate_variant(load_section(MiniLMClapStudy, "clap_minilm"), args.variant, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
