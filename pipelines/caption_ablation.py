"""DVC stages `caption_lm`, `caption_arch_*`, `caption_encoder(_music)`, `caption_decoding`, `real_caption_*`: one ablation config.

  --kind lm --lm gpt2 --seed 1              baseline config of an LM at one noise-floor seed
  --kind lm --lm gpt2 t5 --seed 1           the same for several LMs in one process
  --kind arch --lm gpt2 --name dropout0.3   one architecture value (others at the baseline)
  --kind encoder --name default             stage-1 run on one encoder's dump
  --kind music --name aisfx --seed 0        stage-1 run on the music subset (captioning.music)
  --kind subset --name speech --seed 0      stage-1 runs of every encoder of one specialist subset
  --kind decoding --lm gpt2 --name beam5    eval-only decoding config on the baseline checkpoint
  --section real_captioning_study ...       the same on the real corpus (stages real_caption_*)
"""

import argparse
import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import run_ablation
from clapcap.tracked.captioning import study_tracker


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", required=True, choices=["lm", "arch", "encoder", "music", "subset", "decoding"])
    parser.add_argument("--lm", nargs="+", default=None, help="one LM, or several (every LM by default)")
    parser.add_argument("--name", default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--section", default="captioning", choices=["captioning", "real_captioning_study"],
                        help="the params.yaml section of the study (real_captioning_study: on the real corpus)")


def main(args: argparse.Namespace) -> int:
    params = load_section(CaptioningParams, args.section)
    run_ablation(params, args.kind, lm=args.lm, name=args.name, seed=args.seed, tracker=study_tracker(params),
                 compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
