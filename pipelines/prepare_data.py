"""DVC stage `prepare_data`: build the manifest (and synthetic audio) from params.yaml `data`."""

import logging
import sys

from clapcap.config import load_section
from clapcap.data.listing import DEFAULT_MEMO
from clapcap.data.prepare import DataParams, prepare_data


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    prepare_data(load_section(DataParams, "data"), memo_path=DEFAULT_MEMO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
