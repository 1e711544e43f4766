"""DVC stage `robust_text_store`: the base CLAP's frozen text layers for every train and
validation caption and view, computed once for all RobustCLAP fine-tunes (params.yaml
`robust_text_store`; read by `robust_train.text_store`)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.robust.config import RobustTextStoreParams
from clapcap.robust.text_store import build_text_store


def main() -> int:
    build_text_store(load_section(RobustTextStoreParams, "robust_text_store"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
