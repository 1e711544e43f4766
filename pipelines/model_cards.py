"""DVC stage `model_cards`: a Hugging Face model card (README.md) in each saved CLAP model folder,
with the build's benchmark results (params.yaml `model_cards`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.reporting.model_card import ModelCardParams, write_cards


def main() -> int:
    write_cards(load_section(ModelCardParams, "model_cards"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
