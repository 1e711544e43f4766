"""DVC stage `reference_split`: dump the shared test split (params.yaml `reference`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.evaluation.shared_split import dump_split
from clapcap.reference.config import ReferenceParams


def main() -> int:
    params = load_section(ReferenceParams, "reference")
    dump_split(params.dataset_dir, params.split_dir, split=params.split)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
