"""DVC stage `metric_parity`: the harness against the independent implementation.

Exits 1 when any metric of any dump differs by more than `retrieval.parity_tolerance`, so
`dvc repro` (and CI) fail on a parity failure.
"""

import sys

from clapcap.config import load_section
from clapcap.entry import run_entry
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.parity import run_parity


def main() -> int:
    params = load_section(RetrievalEvalParams, "retrieval")
    report = run_parity(params.dumps, params.parity_out, tolerance=params.parity_tolerance)
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(run_entry(main))
