"""DVC stage `validate_data`: great-expectations suites on the manifest; fails on a violation.

A violation raises DataValidationError: `clapcap: error: data validation failed, see ...`, exit 1.
"""

import sys

from clapcap.config import load_section
from clapcap.data.listing import DEFAULT_MEMO
from clapcap.data.prepare import DataParams
from clapcap.entry import run_entry
from clapcap.quality.validate import validate_data


def main() -> int:
    validate_data(load_section(DataParams, "data"), "reports/data", memo_path=DEFAULT_MEMO)
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
