"""DVC stage `reference_split`: dump the shared test split (params.yaml `reference`)."""

import logging
import sys

from clapcap.evaluation.reference import dump_split
from clapcap.reference.params import load_reference_params


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    params = load_reference_params()
    dump_split(params.dataset_dir, params.split_dir, split=params.split)
    return 0


if __name__ == "__main__":
    sys.exit(main())
