"""DVC stage `resolve_checkpoints` (always run): each built encoder's checkpoint, by content.

Writes models/checkpoint_records/<encoder>.json (hub commit, or SHA-256 of the weights; docs/encoders.md,
"Your checkpoint"), which the encoder's `embed` item depends on.
"""

import sys

from clapcap.config import load_section
from clapcap.encoders.checkpoints import write_checkpoint_records
from clapcap.encoders.config import EmbedParams
from clapcap.entry import run_script

OUT_DIR = "models/checkpoint_records"


def main() -> int:
    params = load_section(EmbedParams, "embed")
    write_checkpoint_records(params.encoders, list(params.build or params.encoders), OUT_DIR)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
