"""DVC stage `pretrained_lm@<name>`: a pretrained decoder other than SmolLM2 (params.yaml
`pretrained_lms.convert`; Gemma 3 270M in the full study) from its installed GGUF package to a
plain Hugging Face folder (clapcap.captioning.pretrained_lms), the `pretrained_dir` of a study's row.

  python pipelines/pretrained_lm.py --lm gemma3 models/pretrained/gemma3_270m
"""

import argparse
import sys

from clapcap.captioning.pretrained_lms import KNOWN, convert_pretrained
from clapcap.entry import run_script


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--lm", required=True, help=f"which pretrained LM: one of {', '.join(KNOWN)}")
    parser.add_argument("out", help="the folder to write (model, tokenizer, clapcap_source.json)")


def main(args: argparse.Namespace) -> int:
    convert_pretrained(args.lm, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
