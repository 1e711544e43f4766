"""DVC stage `data_listing` (always run): the content listing of a real dataset's files.

Writes data/listing.json (see clapcap.data.listing); prepare_data depends on it, so an edited
caption or a replaced, added or removed audio file reruns prepare_data and what follows.
"""

import sys

from clapcap.config import load_section
from clapcap.data.config import DataParams
from clapcap.data.listing import DEFAULT_MEMO, write_listing
from clapcap.entry import run_script

LISTING = "data/listing.json"


def main() -> int:
    write_listing(load_section(DataParams, "data"), LISTING, memo_path=DEFAULT_MEMO)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
