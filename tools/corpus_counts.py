"""Run every real-corpus source reader (clapcap.data.corpus) on real unpacked packages and
print the clip counts per source and family.

Usage::

    python tools/corpus_counts.py UNPACKED   # UNPACKED/<package>/ = `dpkg-deb -x <package>.deb`

Expects ``tuxpaint-stamps-default``, ``hydrogen-drumkits``, ``ufoai-sound``, ``hedgewars-data``,
``asterisk-core-sounds-en-wav``, ``asterisk-core-sounds-en`` and, for two example renders,
``fluid-soundfont-gm`` and ``timgm6mb-soundfont``; a missing package is reported and skipped.
"""

from __future__ import annotations

import argparse
import collections
import logging
import time
from pathlib import Path

from clapcap.data.corpus import (
    asterisk_clips,
    hedgewars_clips,
    hydrogen_clips,
    render_program,
    tuxpaint_clips,
    ufoai_clips,
)

READERS = {
    "tuxpaint-stamps-default": lambda d: tuxpaint_clips(d / "tuxpaint-stamps-default"),
    "hydrogen-drumkits": lambda d: hydrogen_clips(d / "hydrogen-drumkits"),
    "ufoai-sound": lambda d: ufoai_clips(d / "ufoai-sound"),
    "hedgewars-data": lambda d: hedgewars_clips(d / "hedgewars-data"),
    "asterisk-core-sounds-en-wav": lambda d: asterisk_clips(d / "asterisk-core-sounds-en-wav",
                                                            d / "asterisk-core-sounds-en"),
    "fluid-soundfont-gm": lambda d: [c.record for c in render_program(
        d / "fluid-soundfont-gm", "fluid-soundfont-gm", "usr/share/sounds/sf2/FluidR3_GM.sf2", 73,
        notes=[48, 60, 72, 84], velocities=[40, 80, 110])],
    "timgm6mb-soundfont": lambda d: [c.record for c in render_program(
        d / "timgm6mb-soundfont", "timgm6mb-soundfont", "usr/share/sounds/sf2/TimGM6mb.sf2", 0,
        notes=[36, 60, 84], velocities=[40, 110])],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("unpacked", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    total: collections.Counter[str] = collections.Counter()
    for name, read in READERS.items():
        if not (args.unpacked / name).is_dir():
            print(f"{name}: not unpacked, skipped")
            continue
        start = time.perf_counter()
        records = read(args.unpacked)
        families = collections.Counter(r.family for r in records)
        groups = len({r.group for r in records})
        licences = collections.Counter(r.licence for r in records)
        print(f"{name}: {len(records)} clips {dict(families)} in {groups} groups, licences {dict(licences)}, "
              f"renders {sum(r.is_render for r in records)}, {time.perf_counter() - start:.1f} s")
        total.update(families)
    print(f"total: {sum(total.values())} clips {dict(total)}")


if __name__ == "__main__":
    main()
