"""Game sound effects with descriptive paths: Debian ``ufoai-sound`` and ``hedgewars-data``.

Captions and the event filter follow :mod:`clapcap.data.corpus.words` (docs/corpus.md). Each
package is one split group: a game's effects are variants of a few recordings and share a
sound designer.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.data.corpus.words import effect_caption, is_event, path_words

logger = logging.getLogger(__name__)

UFOAI = "ufoai-sound"
UFOAI_PK3 = "usr/share/games/ufoai/base/0snd.pk3"
HEDGEWARS = "hedgewars-data"
HEDGEWARS_SOUNDS = "usr/share/games/hedgewars/Data/Sounds"


def _record(package: str, version: str, path: str, member: str | None, words: list[str],
            licence: tuple[str, str], digest: str) -> ClipRecord:
    captions, labels = effect_caption(words)
    return ClipRecord(package=package, version=version, path=path, member=member, captions=captions,
                      labels=labels, family="effects", group=package, licence=licence[0],
                      copyright=licence[1], sha256=digest)


def ufoai_clips(root: Path) -> list[ClipRecord]:
    """The effects in ``0snd.pk3`` (a zip) under ``sound/``, game events left out.

    The DEP-5 path of member ``sound/x.ogg`` is ``base/sound/x.ogg`` (the source tree).
    """
    root = Path(root)
    licences, version = Licences(root, UFOAI), package_version(root, UFOAI)
    out, dropped = [], 0
    with zipfile.ZipFile(root / UFOAI_PK3) as pk3:
        for member in sorted(n for n in pk3.namelist() if n.startswith("sound/") and n.endswith(".ogg")):
            words = path_words(member.removeprefix("sound/"))
            if is_event(words):
                dropped += 1
                continue
            out.append(_record(UFOAI, version, UFOAI_PK3, member, words, licences.of(f"base/{member}"),
                               sha256(pk3.read(member))))
    logger.info("%s: %d effects, %d game events left out", UFOAI, len(out), dropped)
    return out


def hedgewars_clips(root: Path) -> list[ClipRecord]:
    """The effects directly in ``Data/Sounds`` (the voice lines in ``Sounds/voices/`` are
    taunts: left out), game events left out.

    The DEP-5 path of ``usr/share/games/hedgewars/Data/Sounds/x.ogg`` is
    ``share/hedgewars/Data/Sounds/x.ogg``.
    """
    root = Path(root)
    licences, version = Licences(root, HEDGEWARS), package_version(root, HEDGEWARS)
    out, dropped = [], 0
    for path in sorted((root / HEDGEWARS_SOUNDS).glob("*.ogg")):
        words = path_words(path.name)
        if is_event(words):
            dropped += 1
            continue
        rel = path.relative_to(root).as_posix()
        source = "share/hedgewars/Data/Sounds/" + path.name
        out.append(_record(HEDGEWARS, version, rel, None, words, licences.of(source), sha256(path.read_bytes())))
    logger.info("%s: %d effects, %d game events left out", HEDGEWARS, len(out), dropped)
    return out
