"""DVC stage `reference_score`: generate/import and score every configured reference captioner."""

import logging
import sys

from clapcap.reference.generate import run_all_references
from clapcap.reference.params import load_reference_params


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    run_all_references(load_reference_params())
    return 0


if __name__ == "__main__":
    sys.exit(main())
