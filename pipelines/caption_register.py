"""DVC stage `caption_register`: register the best validation config as MLflow `clapcap-captioner@champion`."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.tracked.captioning_register import register_champion


def main() -> int:
    register_champion(load_section(CaptioningParams, "captioning"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
