"""DVC stage `real_caption_refs`: the reference captioners of the real-corpus captioning study
(nearest training caption, YAMNet's labels written by rule), scored with the study's runs on the
test split, and the caption-overlap check (params.yaml `real_caption_refs`, docs/captioning.md)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.captioning import RealCaptionRefsParams, run_real_caption_refs


def main() -> int:
    run_real_caption_refs(load_section(RealCaptionRefsParams, "real_caption_refs"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
