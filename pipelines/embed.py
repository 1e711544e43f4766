"""DVC stage `embed` (matrix over encoders x datasets): write embedding dumps.

Usage: python pipelines/embed.py ENCODER DATASET   (names from params.yaml `embed`)
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.encoders.config import EmbedParams
from clapcap.encoders.embed import embed_all
from clapcap.entry import run_script


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("encoder", help="a key of embed.encoders")
    parser.add_argument("dataset", help="a key of embed.datasets")


def main(args: argparse.Namespace) -> int:
    embed_all(load_section(EmbedParams, "embed"), args.encoder, args.dataset, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
