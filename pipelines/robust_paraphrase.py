"""DVC stage `robust_paraphrase`: paraphrase views of every caption (params.yaml `robust_paraphrase`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.paraphrase.dataset import ParaphraseParams
from clapcap.tracked.paraphrase import run_paraphrase


def main() -> int:
    run_paraphrase(load_section(ParaphraseParams, "robust_paraphrase"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
