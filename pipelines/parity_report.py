"""DVC stage `parity_report`: the reference's parity report (one metric-parity cell per dump of
`retrieval.dumps`, and the `checkpoint_identity` finding of identity_checkpoints.json).

Fails (`clapcap: error: parity report ...`, exit 1) when a cell breaks metric parity, or, with
`checkpoint_identity.gate_identity: true`, when the user's checkpoints are not the same.
"""

import sys
from pathlib import Path

from clapcap.config import load_section
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.crosscheck import CHECKPOINTS_REPORT
from clapcap.entry import run_script
from clapcap.errors import ClapcapError
from clapcap.retrieval.config import RetrievalEvalParams
from clapcap.retrieval.parity import run_parity_report


def main() -> int:
    params = load_section(RetrievalEvalParams, "retrieval")
    identity = load_section(IdentityParams, "checkpoint_identity")
    report = run_parity_report(params.dumps, params.parity_report_out,
                               identity_path=Path(identity.out_dir) / CHECKPOINTS_REPORT,
                               tolerance=params.parity_tolerance, gate_identity=identity.gate_identity)
    if report["failures"]:
        raise ClapcapError(f"parity report: {len(report['failures'])} failure(s), first: {report['failures'][0]}; "
                           f"see {params.parity_report_out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
