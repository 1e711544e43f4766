"""DVC stage `real_caption_dump`: the real corpus's tower features as the captioning study's
embedding dump, in the tower CLAP's joint space with YAMNet's own embedding beside it
(params.yaml `real_caption_refs`, docs/captioning.md)."""

import sys

from clapcap.config import load_section
from clapcap.entry import run_script
from clapcap.experiments.real.captioning import RealCaptionRefsParams, write_dump


def main() -> int:
    params = load_section(RealCaptionRefsParams, "real_caption_refs")
    for path in write_dump(params.features, params.model_dir, params.dump_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
