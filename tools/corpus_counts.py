"""Run every real-corpus source reader (clapcap.data.corpus) on real unpacked packages and
print the clip counts per source and family.

Usage::

    python tools/corpus_counts.py UNPACKED   # UNPACKED/<package>/ = `dpkg-deb -x <package>.deb`

Expects ``tuxpaint-stamps-default``, ``hydrogen-drumkits``, ``hydrogen-drumkits-effects``,
``ufoai-sound``, ``hedgewars-data``, ``0ad-data`` (only ``public.zip`` and its doc folder need be
extracted), ``openarena-data``, ``megaglest-data``, ``sonic-pi-samples``, ``lmms-common``,
``asterisk-core-sounds-en-wav``, ``asterisk-core-sounds-en`` and, for example renders,
``fluid-soundfont-gm``, ``timgm6mb-soundfont``, ``musescore-general-soundfont`` and
``avldrums.lv2-soundfont``; a missing package is reported and skipped. Last, the number of
package (non-render) clips the corpus can hold with speech capped at 30 %.
"""

from __future__ import annotations

import argparse
import collections
import logging
import time
from pathlib import Path

from clapcap.data.corpus import musescore_programs, render_kit, render_program
from clapcap.data.corpus.assemble import READERS as PACKAGE_READERS

SPEECH_CAP = 0.30


def _musescore(d: Path) -> list:
    root = d / "musescore-general-soundfont"
    sf3 = "usr/share/sounds/sf3/MuseScore_General_Full.sf3"
    return [c.record for p in musescore_programs(root)
            for c in render_program(root, "musescore-general-soundfont", sf3, p, notes=[48, 72], velocities=[80])]


def _avldrums(d: Path) -> list:
    root = d / "avldrums.lv2-soundfont"
    return [c.record for kit in ("Red_Zeppelin_4_LV2.sf2", "Black_Pearl_4_LV2.sf2")
            for c in render_kit(root, "avldrums.lv2-soundfont", f"usr/share/sounds/sf2/{kit}", velocities=[30, 70, 110])]

READERS = {
    **PACKAGE_READERS,
    "fluid-soundfont-gm": lambda d: [c.record for c in render_program(
        d / "fluid-soundfont-gm", "fluid-soundfont-gm", "usr/share/sounds/sf2/FluidR3_GM.sf2", 73,
        notes=[48, 60, 72, 84], velocities=[40, 80, 110])],
    "timgm6mb-soundfont": lambda d: [c.record for c in render_program(
        d / "timgm6mb-soundfont", "timgm6mb-soundfont", "usr/share/sounds/sf2/TimGM6mb.sf2", 0,
        notes=[36, 60, 84], velocities=[40, 110])],
    "musescore-general-soundfont": _musescore,
    "avldrums.lv2-soundfont": _avldrums,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("unpacked", type=Path)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    total: collections.Counter[str] = collections.Counter()
    packaged: collections.Counter[str] = collections.Counter()
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
        packaged.update(r.family for r in records if not r.is_render)
    print(f"total: {sum(total.values())} clips {dict(total)}")
    other = sum(n for f, n in packaged.items() if f != "speech")
    speech = min(packaged["speech"], int(other * SPEECH_CAP / (1 - SPEECH_CAP)))
    print(f"package clips: {other} non-speech; with speech capped at {SPEECH_CAP:.0%}: {other + speech} "
          f"({speech} speech); renders needed for 8,000: {max(0, 8000 - other - speech)}")


if __name__ == "__main__":
    main()
