"""DVC stage `evaluate_retrieval`: metrics (with bootstrap intervals) of every dump in `retrieval`.

Writes ``<out_dir>/<dump stem>.json`` per dump and logs each to MLflow when
``retrieval.track`` is true.
"""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_entry
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.evaluate import evaluate_all


def main() -> int:
    params = load_section(RetrievalEvalParams, "retrieval")
    # On CUDA the metrics go through torch on the device (same numbers); on CPU through numpy.
    compute = load_compute()
    results = evaluate_all(params, device=compute.device if compute.is_cuda else None)
    if params.track:
        from clapcap import tracking
        from clapcap.config import to_dict
        from clapcap.retrieval.mlflow_log import log_evaluation

        for dump_path, result in results.items():
            with tracking.stage_run("evaluate_retrieval", experiment="clapcap-retrieval",
                                    params={**to_dict(params), "dump": dump_path}):
                log_evaluation(result)
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
