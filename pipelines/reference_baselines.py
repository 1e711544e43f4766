"""DVC stage `reference_baselines`: offline reference predictions (retrieval captioner, planted leak)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.reference.baselines import BaselineParams, write_baselines


def main() -> int:
    p = load_section(BaselineParams, "reference_baselines")
    write_baselines(p.train_dump, p.test_dump, p.split_json, p.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
