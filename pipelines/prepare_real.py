"""DVC stage `prepare_real`: the real-recordings benchmark's dataset (params.yaml `real_data`),
read from installed packages and the files `make assets` downloads, captioned by rule."""

import sys

from clapcap.config import load_section
from clapcap.data.real_bench import RealDataParams, prepare_real
from clapcap.entry import run_script


def main() -> int:
    prepare_real(load_section(RealDataParams, "real_data"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
