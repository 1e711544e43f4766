"""DVC stages `embed_pretrained@<encoder>`, `real_embed_pretrained@<encoder>`: one real pretrained
audio encoder's dumps of every split of a dataset (params.yaml `embed_pretrained`,
`real_embed_pretrained`).

  python pipelines/embed_pretrained.py aisfx
  python pipelines/embed_pretrained.py --section real_embed_pretrained whisper_tiny_en
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.encoders.config import EmbedPretrainedParams
from clapcap.encoders.embed import embed_pretrained_splits
from clapcap.entry import run_script


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("encoder", help="a key of the section's encoders")
    parser.add_argument("--section", default="embed_pretrained", choices=["embed_pretrained", "real_embed_pretrained"],
                        help="the params.yaml section (real_embed_pretrained: the real corpus's specialist subsets)")


def main(args: argparse.Namespace) -> int:
    embed_pretrained_splits(load_section(EmbedPretrainedParams, args.section), args.encoder,
                            compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
