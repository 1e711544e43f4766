"""DVC stage `caption_vocab`: vocabulary and length of every test-caption file the captioning
study saved, and of the reference captioners', beside the references' own (params.yaml
`caption_vocab`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.vocab import CaptionVocabParams
from clapcap.tracked.caption_vocab import run_vocab


def main() -> int:
    run_vocab(load_section(CaptionVocabParams, "caption_vocab"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
