"""DVC stage `embed` (matrix over encoders x datasets): write embedding dumps.

Usage: python pipelines/embed.py ENCODER DATASET   (names from params.yaml `embed`)
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.encoders.config import EmbedParams
from clapcap.encoders.embed import embed_all
from clapcap.entry import run_entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("encoder")
    parser.add_argument("dataset")
    args = parser.parse_args(argv)
    embed_all(load_section(EmbedParams, "embed"), args.encoder, args.dataset, compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
