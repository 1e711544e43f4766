"""DVC stage `validate_data`: great-expectations suites on the manifest; fails on a violation."""

import logging
import sys

from clapcap.config import load_section
from clapcap.data.listing import DEFAULT_MEMO
from clapcap.data.prepare import DataParams
from clapcap.quality.validate import DataValidationError, validate_data


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        validate_data(load_section(DataParams, "data"), "reports/data", memo_path=DEFAULT_MEMO)
    except DataValidationError as err:
        logging.error("%s", err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
