"""DVC stage `robust_paraphrase`: paraphrase views of every caption (params.yaml `robust_paraphrase`)."""

import logging
import sys

from clapcap.config import load_section
from clapcap.paraphrase.dataset import ParaphraseParams, run_paraphrase


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run_paraphrase(load_section(ParaphraseParams, "robust_paraphrase"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
