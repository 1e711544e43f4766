"""DVC stage `validate_real_corpus`: the great-expectations manifest suite on the real corpus
(params.yaml `real_corpus`); fails on a violation."""

import argparse
import sys

from clapcap.config import load_section
from clapcap.data.corpus.assemble import CorpusParams
from clapcap.entry import run_script
from clapcap.quality.validate import validate_prepared


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (dvc.yaml declares its files as outs)")


def main(args: argparse.Namespace) -> int:
    params = load_section(CorpusParams, "real_corpus")
    validate_prepared(params.out_dir, args.out, min_duration_s=params.min_duration_s,
                      max_duration_s=params.max_duration_s)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
