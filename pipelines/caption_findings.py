"""DVC stages `caption_findings` and `real_caption_findings`: every stated captioning comparison
tested over training seeds and test clips (params.yaml `<section>.findings`; for the synthetic
study, per subset: `caption_subsets`), written to `<section>.findings.conclusions` and
`<section>.findings.findings_md`.

  --section captioning              the synthetic corpus's study (results/captioning/)
  --section real_captioning_study   the real corpus's study (results/real_captioning/)
"""

import argparse
import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams, CaptionSubsetParams
from clapcap.tracked.caption_findings import run_findings_tracked


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--section", default="captioning", choices=["captioning", "real_captioning_study"],
                        help="the params.yaml section of the study")


def main(args: argparse.Namespace) -> int:
    subsets = load_section(CaptionSubsetParams, "caption_subsets").subsets if args.section == "captioning" else {}
    run_findings_tracked(load_section(CaptioningParams, args.section), subsets, args.section)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
