"""DVC stage `real_clap_features`: YAMNet and MiniLM run once over the real corpus (params.yaml
`real_clap`); the heads train on this file."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.clap import RealClapParams, compute_features


def main() -> int:
    compute_features(load_section(RealClapParams, "real_clap"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
