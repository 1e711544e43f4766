"""DVC stage `reference_score`: generate/import and score every configured reference captioner."""

import sys

from clapcap.entry import run_entry
from clapcap.reference.generate import run_all_references
from clapcap.reference.params import load_reference_params


def main() -> int:
    run_all_references(load_reference_params())
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
