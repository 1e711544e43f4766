"""DVC stage `caption_findings`: every stated captioning comparison tested over training seeds
and test clips (params.yaml `captioning.findings`; per subset: `caption_subsets`), written to results/captioning/conclusions.json
and results/captioning/findings.md."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams, CaptionSubsetParams
from clapcap.tracked.caption_findings import run_findings_tracked


def main() -> int:
    run_findings_tracked(load_section(CaptioningParams, "captioning"),
                 load_section(CaptionSubsetParams, "caption_subsets").subsets)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
