"""DVC stage `caption_summary`: Markdown + LaTeX summary tables vs baseline and noise floor."""

import sys

from clapcap.captioning.study import CaptioningParams
from clapcap.config import load_section
from clapcap.entry import run_entry
from clapcap.reporting.captioning_tables import write_summary


def main() -> int:
    write_summary(load_section(CaptioningParams, "captioning").out_dir, "reports/captioning")
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
