"""DVC stage `code_fingerprints` (always run): what code each stage can run, one file per stage.

Writes build/code/<stage>.json (see clapcap.code_deps): the stage script and every clapcap
module it can import, each hashed by its syntax tree without docstrings. Every other stage
depends on its own file, so it reruns when its code changes, and not on a comment or a
docstring edit.
"""

import sys

from clapcap.code_deps import write_fingerprints
from clapcap.entry import run_script


def main() -> int:
    written = write_fingerprints(".")
    names = ", ".join(p.stem for p in written)
    print(f"code fingerprints: {len(written)} changed" + (f" ({names})" if written else ""))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))
