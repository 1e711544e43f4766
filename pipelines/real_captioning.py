"""DVC stage `real_captioning`: the champion captioner, the retrieval captioner and the
most-common-caption baseline on real recordings (params.yaml `real_captioning`)."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.recordings import RealCaptionParams, run_real_captioning


def main() -> int:
    run_real_captioning(load_section(RealCaptionParams, "real_captioning"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
