"""Game sound effects with descriptive paths: Debian ``ufoai-sound``, ``hedgewars-data``,
``0ad-data``, ``openarena-data`` / ``openarena-088-data`` and ``megaglest-data`` (animals only).

Captions and the event filter follow :mod:`clapcap.data.corpus.words` (docs/corpus.md). Each
package is one split group: a game's effects are variants of a few recordings and share a
sound designer. OpenArena's names are Quake abbreviations (``machgf1b``), so there, as for
MegaGlest's animals, a clip is kept only when the lexicon knows its head noun.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.data.corpus.words import ANIMALS, effect_caption, head_noun, is_event, path_words

logger = logging.getLogger(__name__)

UFOAI = "ufoai-sound"
UFOAI_PK3 = "usr/share/games/ufoai/base/0snd.pk3"
HEDGEWARS = "hedgewars-data"
HEDGEWARS_SOUNDS = "usr/share/games/hedgewars/Data/Sounds"
ZERO_AD = "0ad-data"
ZERO_AD_ZIP = "usr/share/games/0ad/mods/public/public.zip"
# 0 A.D. folders below audio/ that are not effects: interface sounds, unit voices, music.
ZERO_AD_SKIP = ("audio/interface/", "audio/voice/", "audio/music/")
OPENARENA = "openarena-data"
OPENARENA_PK3S = ("usr/share/games/openarena/baseoa/pak0.pk3", "usr/share/games/openarena/missionpack/mp-pak0.pk3")
# Fictional weapons whose abbreviated names the lexicon would misread (``bfg_fire``: no fire).
OPENARENA_SKIP = ("sound/voices/", "sound/weapons/bfg/", "sound/weapons/lightning/", "sound/weapons/melee/")
MEGAGLEST = "megaglest-data"
MEGAGLEST_DATA = "usr/share/games/megaglest"


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


def _zip_clips(root: Path, package: str, archive: str, members: list[str], words_of, source_of,
               keep=lambda words: True) -> tuple[list[ClipRecord], int]:
    """Records of the ``members`` of the zip ``archive`` (inside the unpacked ``package``) whose
    words are no event and pass ``keep``; returns them and the number left out. Audio that an
    earlier member of the package already has (same SHA-256) is not read twice."""
    licences, version = Licences(root, package), package_version(root, package)
    out, dropped, seen = [], 0, set()
    with zipfile.ZipFile(root / archive) as zipped:
        for member in members:
            words = words_of(member)
            if is_event(words) or not keep(words):
                dropped += 1
                continue
            digest = sha256(zipped.read(member))
            if digest not in seen:
                seen.add(digest)
                out.append(_record(package, version, archive, member, words, licences.of(source_of(member)), digest))
    return out, dropped


def zero_ad_clips(root: Path) -> list[ClipRecord]:
    """The effects under ``audio/`` of 0 A.D.'s ``public.zip``, read in the zip (the rest of the
    3.3 GB archive is not extracted): interface, voice and music folders and game events left
    out. The words are those below ``audio/<kind>/`` (``actor``, ``attack``, ``ambient``,
    ``resource`` only sort); the DEP-5 path is ``binaries/data/mods/public/<member>``.
    """
    root = Path(root)
    with zipfile.ZipFile(root / ZERO_AD_ZIP) as zipped:
        members = sorted(n for n in zipped.namelist() if n.startswith("audio/") and n.endswith(".ogg")
                         and not n.startswith(ZERO_AD_SKIP))
    out, dropped = _zip_clips(root, ZERO_AD, ZERO_AD_ZIP, members, lambda m: path_words(m.split("/", 2)[2]),
                              lambda m: f"binaries/data/mods/public/{m}")
    logger.info("%s: %d effects, %d left out", ZERO_AD, len(out), dropped)
    return out


def openarena_clips(root: Path) -> list[ClipRecord]:
    """OpenArena's effects under ``sound/`` of ``openarena-data``'s two ``.pk3`` zips
    (``sound/weapons``, ``sound/world``, ``sound/player/footsteps``...): voices,
    :data:`OPENARENA_SKIP` and events left out, and kept only when the lexicon knows the head
    noun. The DEP-5 path is ``<pk3 stem>/<member>``.
    """
    root = Path(root)
    out, dropped = [], 0
    for archive in OPENARENA_PK3S:
        with zipfile.ZipFile(root / archive) as zipped:
            members = sorted(n for n in zipped.namelist() if n.startswith("sound/") and n.endswith((".wav", ".ogg"))
                             and not n.startswith(OPENARENA_SKIP))
        stem = Path(archive).stem
        clips, left = _zip_clips(root, OPENARENA, archive, members, lambda m: path_words(m.removeprefix("sound/")),
                                 lambda m, stem=stem: f"{stem}/{m}", keep=lambda w: head_noun(w) is not None)
        out, dropped = out + clips, dropped + left
    logger.info("%s: %d effects, %d left out", OPENARENA, len(out), dropped)
    return out


def megaglest_clips(root: Path) -> list[ClipRecord]:
    """MegaGlest's animal sounds: files of ``tilesets/*/sounds/``, ``techs/*/commondata/sounds/``
    and ``techs/*/factions/*/units/<unit>/sounds/`` whose words (the unit's name and the file's
    name) have an animal of the lexicon as head noun; events (``select``, ``ack``) left out; a
    file that another one already has (the tilesets share ``wolf.wav``) is read once. The DEP-5
    path is the path below ``usr/share/games/megaglest/``.
    """
    root = Path(root)
    base = root / MEGAGLEST_DATA
    licences, version = Licences(root, MEGAGLEST), package_version(root, MEGAGLEST)
    files = sorted([*base.glob("tilesets/*/sounds/*"), *base.glob("techs/*/commondata/sounds/*"),
                    *base.glob("techs/*/factions/*/units/*/sounds/*")])
    out, dropped, seen = [], 0, set()
    for path in (f for f in files if f.suffix.lower() in (".wav", ".ogg")):
        unit = path.parent.parent.name if path.parent.parent.parent.name == "units" else ""
        words = path_words(f"{unit}/{path.name}")
        if is_event(words) or head_noun(words) not in ANIMALS:
            dropped += 1
            continue
        digest = sha256(path.read_bytes())
        if digest in seen:
            continue
        seen.add(digest)
        out.append(_record(MEGAGLEST, version, path.relative_to(root).as_posix(), None, words,
                           licences.of(path.relative_to(base).as_posix()), digest))
    logger.info("%s: %d animal sounds, %d others left out", MEGAGLEST, len(out), dropped)
    return out
