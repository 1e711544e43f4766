"""DVC stage `prepare_real_corpus`: the real corpus (params.yaml `real_corpus`, docs/corpus.md),
assembled from the Debian packages `make corpus-assets` unpacks."""

import sys

from clapcap.config import load_section
from clapcap.data.corpus.assemble import CorpusParams, build_corpus
from clapcap.entry import run_script


def main() -> int:
    build_corpus(load_section(CorpusParams, "real_corpus"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
