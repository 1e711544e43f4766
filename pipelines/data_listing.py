"""DVC stage `data_listing` (always run): the content listing of a real dataset's files.

Writes data/listing.json (see clapcap.data.listing); prepare_data depends on it, so an edited
caption or a replaced, added or removed audio file reruns prepare_data and what follows.
"""

import logging
import sys

from clapcap.config import load_section
from clapcap.data.listing import DEFAULT_MEMO, write_listing
from clapcap.data.prepare import DataParams

LISTING = "data/listing.json"


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    write_listing(load_section(DataParams, "data"), LISTING, memo_path=DEFAULT_MEMO)
    return 0


if __name__ == "__main__":
    sys.exit(main())
