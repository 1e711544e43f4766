"""DVC stage `caption_sbert`: sbert_sim_minilm (aac-metrics' SBERT-sim with all-MiniLM-L6-v2) for
every test-caption file the captioning study saved (params.yaml `caption_sbert`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.scores import CaptionScoreParams, score_study


def main() -> int:
    score_study(load_section(CaptionScoreParams, "caption_sbert"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
