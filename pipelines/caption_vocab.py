"""DVC stages `caption_vocab`, `real_caption_vocab`: vocabulary, length and distinct captions of
every test-caption file the captioning study saved, and of the reference captioners', beside the
references' own (params.yaml `caption_vocab`, `real_caption_vocab`).

  python pipelines/caption_vocab.py [--section real_caption_vocab]
"""

import argparse
import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.vocab import CaptionVocabParams
from clapcap.tracked.caption_vocab import run_vocab


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", default="caption_vocab", choices=["caption_vocab", "real_caption_vocab"],
                        help="the params.yaml section (real_caption_vocab: the real corpus's study)")


def main(args: argparse.Namespace) -> int:
    run_vocab(load_section(CaptionVocabParams, args.section))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
