"""DVC stage `export_mteb`: t2a and a2t retrieval results of one embedding dump as MTEB
TaskResult JSON files (`<out-dir>/Clapcap<Dataset>T2ARetrieval.json` and `...A2TRetrieval.json`).

Usage: python pipelines/export_mteb.py DUMP.npz --out-dir results/mteb
Definitions and schema: docs/retrieval_metrics.md, "MTEB export".
"""

import argparse
import sys

from clapcap.entry import run_script
from clapcap.retrieval.mteb_export import MAIN_SCORE, export_dump


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dump", help="embedding dump (.npz)")
    parser.add_argument("--out-dir", required=True, help="output folder (dvc.yaml declares it as an out)")
    parser.add_argument("--main-score", default=MAIN_SCORE,
                        help=f"MTEB key copied into main_score (default {MAIN_SCORE})")


def main(args: argparse.Namespace) -> int:
    export_dump(args.dump, args.out_dir, main_score=args.main_score)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main, arguments))
