"""DVC stage `real_subsets`: the real corpus's families (speech, instruments, effects) as datasets
of their own (params.yaml `real_subsets`), for the encoder axis on the clips each encoder is
specialised for."""

import sys

from clapcap.config import load_section
from clapcap.data.subset import ColumnSubsetParams, column_subsets
from clapcap.entry import run_script


def main() -> int:
    column_subsets(load_section(ColumnSubsetParams, "real_subsets"))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
