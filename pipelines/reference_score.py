"""DVC stage `reference_score`: generate/import and score every configured reference captioner."""

import sys

from clapcap.compute import load_compute
from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.reference.config import ReferenceParams
from clapcap.reference.generate import run_all_references


def main() -> int:
    run_all_references(load_section(ReferenceParams, "reference"), compute=load_compute())
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
