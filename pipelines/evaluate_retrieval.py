"""DVC stage `evaluate_retrieval`: metrics (with bootstrap intervals) of every dump in `retrieval`.

Writes ``<out_dir>/<dump stem>.json`` per dump and logs each to MLflow when
``retrieval.track`` is true.
"""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.tracked.retrieval import run_evaluate_all


def main() -> int:
    # On CUDA the metrics go through torch on the device (same numbers); on CPU through numpy.
    compute = load_compute()
    run_evaluate_all(load_section(RetrievalEvalParams, "retrieval"), device=compute.device if compute.is_cuda else None)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
