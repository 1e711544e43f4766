"""DVC stage `reference_split`: dump the shared test split (params.yaml `reference`)."""

import sys

from clapcap.entry import run_entry
from clapcap.evaluation.reference import dump_split
from clapcap.reference.params import load_reference_params


def main() -> int:
    params = load_reference_params()
    dump_split(params.dataset_dir, params.split_dir, split=params.split)
    return 0


if __name__ == "__main__":
    sys.exit(run_entry(main))
