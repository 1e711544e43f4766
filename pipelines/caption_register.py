"""DVC stage `caption_register`: register the best validation config as MLflow `captioner@champion`."""

import logging
import sys

from clapcap.config import load_section
from clapcap.training.captioning_experiments import CaptioningParams
from clapcap.training.captioning_registry import register_champion


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    register_champion(load_section(CaptioningParams, "captioning"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
