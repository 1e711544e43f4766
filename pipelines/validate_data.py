"""DVC stage `validate_data`: great-expectations suites on the manifest; fails on a violation.

A violation raises DataValidationError: `clapcap: error: data validation failed, see ...`, exit 1.
"""

import argparse
import sys

from clapcap.config import load_section
from clapcap.data.config import DataParams
from clapcap.data.listing import DEFAULT_MEMO
from clapcap.entry import run_script
from clapcap.quality.validate import validate_data


def arguments(parser: argparse.ArgumentParser) -> None:
    # The output folder, named once: by the stage's ``cmd`` in dvc.yaml (``--out reports/data``).
    parser.add_argument("--out", required=True, help="output folder (dvc.yaml declares its files as outs)")
    parser.add_argument("--data-docs", default=None,
                        help="great-expectations file project with the stored suites, checkpoints and Data Docs")


def main(args: argparse.Namespace) -> int:
    validate_data(load_section(DataParams, "data"), args.out, memo_path=DEFAULT_MEMO, data_docs=args.data_docs)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
