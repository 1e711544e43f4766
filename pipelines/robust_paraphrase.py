"""DVC stages `robust_paraphrase`, `robust_paraphrase_llm` and `real_paraphrase`: paraphrase
views of every caption (params.yaml `robust_paraphrase`: the corpus's own views;
`robust_paraphrase_llm`: views from a real LLM that the stage serves itself, on a subset of
captions; `real_paraphrase`: WordNet's lexical view 2 and held-out view of the real corpus).

  python pipelines/robust_paraphrase.py [--section robust_paraphrase_llm | real_paraphrase | real_paraphrase_llm]
"""

import argparse
import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.paraphrase.dataset import ParaphraseParams
from clapcap.tracked.paraphrase import run_paraphrase


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", default="robust_paraphrase", choices=["robust_paraphrase", "robust_paraphrase_llm", "real_paraphrase",
                                                                 "real_paraphrase_llm"],
                        help="the params.yaml section to run")


def main(args: argparse.Namespace) -> int:
    run_paraphrase(load_section(ParaphraseParams, args.section), stage=args.section)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
