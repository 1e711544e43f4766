"""DVC stage `embed_pretrained@<encoder>`: one real pretrained audio encoder's dumps of every
split of a dataset (params.yaml `embed_pretrained`).

  python pipelines/embed_pretrained.py aisfx
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.encoders.config import EmbedPretrainedParams
from clapcap.encoders.embed import embed_pretrained_splits
from clapcap.entry import run_script


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("encoder", help="a key of embed_pretrained.encoders")


def main(args: argparse.Namespace) -> int:
    embed_pretrained_splits(load_section(EmbedPretrainedParams, "embed_pretrained"), args.encoder,
                            compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
