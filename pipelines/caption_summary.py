"""DVC stage `caption_summary`: Markdown + LaTeX summary tables vs baseline and noise floor."""

import logging
import sys

from clapcap.config import load_section
from clapcap.reporting.captioning_tables import write_summary
from clapcap.training.captioning_experiments import CaptioningParams


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    write_summary(load_section(CaptioningParams, "captioning").out_dir, "reports/captioning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
