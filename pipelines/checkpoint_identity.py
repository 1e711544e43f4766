"""DVC stage `checkpoint_identity`: laion_clap vs converted HF on the same clips.

Writes identity.json (expected: same checkpoint) and identity_control.json (a differently
initialised model: expected different checkpoints) under `checkpoint_identity.out_dir`.
Fails (`clapcap: error: checkpoint identity failed ...`, exit 1) when the converted model does not match, or the control is not told apart.
"""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.crosscheck import run_checkpoint_identity
from clapcap.entry import run_script
from clapcap.errors import ClapcapError


def main() -> int:
    params = load_section(IdentityParams, "checkpoint_identity")
    reports = run_checkpoint_identity(params, compute=load_compute())
    if not reports["identity"]["cross_pipeline_comparable"]:
        raise ClapcapError(f"checkpoint identity failed: the converted HF model does not embed like laion_clap; "
                         f"see {params.out_dir}/identity.json")
    if reports["control"]["cross_pipeline_comparable"]:
        raise ClapcapError(f"checkpoint identity failed: a differently initialised model was not told apart; "
                         f"see {params.out_dir}/identity_control.json")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
