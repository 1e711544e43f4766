"""DVC stage `music_subset`: the corpus's music clips as a dataset of their own (params.yaml
`music_subset`), for the captioning encoder ablation on music."""

import sys

from clapcap.config import load_section
from clapcap.data.subset import SubsetParams, subset_dataset
from clapcap.entry import run_script


def main() -> int:
    params = load_section(SubsetParams, "music_subset")
    subset_dataset(params.dataset_dir, params.out_dir, source=params.source)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
