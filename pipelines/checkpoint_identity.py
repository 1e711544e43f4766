"""DVC stage `checkpoint_identity`: laion_clap vs converted HF on the same clips.

Writes identity.json (expected: same checkpoint) and identity_control.json (a differently
initialised model: expected different checkpoints) under `checkpoint_identity.out_dir`.
Exits 1 when the converted model does not match, or the control is not told apart.
"""

import sys

from clapcap.config import load_section
from clapcap.encoders.config import IdentityParams
from clapcap.encoders.crosscheck import run_checkpoint_identity
from clapcap.entry import run_entry


def main() -> int:
    reports = run_checkpoint_identity(load_section(IdentityParams, "checkpoint_identity"))
    ok = reports["identity"]["cross_pipeline_comparable"] and not reports["control"]["cross_pipeline_comparable"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run_entry(main))
