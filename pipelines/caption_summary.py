"""DVC stage `caption_summary`: Markdown + LaTeX summary tables vs baseline and noise floor."""

import argparse
import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.reporting.captioning_tables import write_summary


def arguments(parser: argparse.ArgumentParser) -> None:
    # The output folder, named once: by the stage's ``cmd`` in dvc.yaml (``--out reports/captioning``).
    parser.add_argument("--out", required=True, help="output folder (dvc.yaml declares its files as outs)")


def main(args: argparse.Namespace) -> int:
    params = load_section(CaptioningParams, "captioning")
    write_summary(params.out_dir, args.out, decoding_seed=params.noise_seeds[0])
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
