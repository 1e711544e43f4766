"""DVC stage `prepare_data`: build the manifest (and synthetic audio) from params.yaml `data`."""

import sys

from clapcap.config import load_section
from clapcap.data.config import DataParams
from clapcap.data.listing import DEFAULT_MEMO
from clapcap.data.prepare import prepare_data
from clapcap.entry import run_script


def main() -> int:
    prepare_data(load_section(DataParams, "data"), memo_path=DEFAULT_MEMO)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
