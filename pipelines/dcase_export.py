"""DVC stage `dcase_export`: the champion captioner's test captions as a DCASE task-6 submission
CSV, and its scores in DCASE's column order (params.yaml `dcase_export`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.dcase import DcaseParams, export_dcase


def main() -> int:
    export_dcase(load_section(DcaseParams, "dcase_export"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
