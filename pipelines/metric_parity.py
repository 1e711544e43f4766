"""DVC stage `metric_parity`: the harness against the independent implementation.

Fails (`clapcap: error: metric parity failed ...`, exit 1) when any metric of any dump differs by more than `retrieval.parity_tolerance`, so
`dvc repro` (and CI) fail on a parity failure.
"""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.errors import ClapcapError
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.parity import run_parity


def main() -> int:
    params = load_section(RetrievalEvalParams, "retrieval")
    report = run_parity(params.dumps, params.parity_out, tolerance=params.parity_tolerance)
    if not report["passed"]:
        raise ClapcapError(f"metric parity failed: worst |delta| {report['worst_abs_delta']:.3g} > tolerance "
                         f"{params.parity_tolerance:g}; see {params.parity_out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
