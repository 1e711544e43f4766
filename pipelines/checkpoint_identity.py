"""DVC stage `checkpoint_identity`: laion_clap vs converted HF on the same clips.

Writes identity.json (the conversion self-test: expected same checkpoint), identity_control.json
(a differently initialised model: expected different checkpoints) and identity_checkpoints.json
(the user's laion_checkpoint vs hf_checkpoint, a finding; "not run" without them) under
`checkpoint_identity.out_dir`. Fails (`clapcap: error: checkpoint identity failed ...`, exit 1)
when the converted model does not match, the control is not told apart, or, with
`gate_identity: true`, the user's checkpoints are not the same.
"""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.crosscheck import check_identity_reports, run_checkpoint_identity
from clapcap.entry import run_script


def main() -> int:
    params = load_section(IdentityParams, "checkpoint_identity")
    reports = run_checkpoint_identity(params, compute=load_compute())
    check_identity_reports(reports, params)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
