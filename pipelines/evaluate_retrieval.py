"""DVC stage `evaluate_retrieval`: metrics (with bootstrap intervals) of every dump in `retrieval`.

Writes ``<out_dir>/<dump stem>.json`` per dump and logs each to MLflow when
``retrieval.track`` is true.
"""

import sys

from clapcap.config import load_section
from clapcap.entry import run_entry
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.evaluate import run_evaluate_all


def main() -> int:
    run_evaluate_all(load_section(RetrievalEvalParams, "retrieval"))
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
