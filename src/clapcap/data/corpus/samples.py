"""Sample libraries with descriptive file names: Debian ``sonic-pi-samples`` (CC0 samples from
freesound, a DEP-5 paragraph each) and the ``samples/`` folder of ``lmms-common``.

Rule (docs/corpus.md, "Sample libraries"), on the words of the file's path below the samples
folder (:func:`clapcap.data.corpus.words.path_words`; LMMS's folders ``drums``, ``instruments``
... are words too):

1. A name with the word ``loop`` is kept only when :data:`LOOPS` names what loops
   (``loop_tabla`` -> ``a tabla loop``; ``loop_amen`` is left out); family ``drums``.
2. A name the drum rule of :mod:`clapcap.data.corpus.hydrogen` knows (``drum_tom_mid_soft``,
   ``bd_haus``, ``hihat_opened01``) is a drum hit, captioned as there (``soft`` / ``hard`` when
   the name says so).
3. Otherwise the game-effect rule (:func:`clapcap.data.corpus.words.effect_caption`), kept only
   when the lexicon knows the head noun and it is not a bare material (:data:`MATERIALS`)
   (``ambi_choir`` -> ``a choir singing``, ``vinyl_scratch`` -> ``a vinyl record scratching``);
   family ``instruments`` for an instrument head (:data:`INSTRUMENT_NOUNS`; its action words are
   dropped but ``accord`` and ``pizzicato``), else ``effects``.

Everything else (``glitch_perc1``, ``elec_blip``, single-cycle waveforms) is left out. Group: the
package. Folders of LMMS that are not recordings of one sound (``shapes``, ``waveforms``,
``beats``, ``bassloops``; ``drumsynth`` holds synth presets, not audio) are not read.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from clapcap.data.corpus.hydrogen import _captions, drum_phrase, name_words
from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.data.corpus.words import ACTIONS, effect_caption, head_noun, is_event, path_words

logger = logging.getLogger(__name__)

SONIC_PI = "sonic-pi-samples"
SONIC_PI_DIR = "usr/share/sonic-pi/samples"
LMMS = "lmms-common"
LMMS_DIR = "usr/share/lmms/samples"
LMMS_SKIP = ("shapes", "waveforms", "beats", "bassloops", "drumsynth")
AUDIO = (".flac", ".ogg", ".wav")
# A loop's other word -> its caption (only loops whose name says what plays).
LOOPS = {"tabla": "a tabla loop", "perc": "a percussion loop", "breakbeat": "a breakbeat loop"}
# Heads that alone say nothing about the sound (``elec_wood``, ``electric_ping``): left out.
MATERIALS = frozenset({"wood", "metal", "glass", "electric"})
INSTRUMENT_NOUNS = frozenset({
    "piano", "organ", "violin", "cello", "trumpet", "flute", "harpsichord", "guitar", "guit", "strings", "string",
    "brass", "bass", "choir", "guit harmonics", "church organ", "steel guitar", "bass slap",
})


def sample_caption(rel: str) -> tuple[tuple[str, ...], tuple[str, ...], str] | None:
    """``(captions, labels, family)`` of the sample at ``rel`` (below the samples folder) by the
    module rule, or None when it is left out."""
    stem = re.sub(r"\.[A-Za-z0-9]+$", "", rel.rsplit("/", 1)[-1])
    raw = name_words(stem)
    if "loop" in raw:
        loop = next((LOOPS[w] for w in raw if w in LOOPS), None)
        return None if loop is None else ((loop,), (loop.split(" ", 1)[1],), "drums")
    hit = [w for w in raw if w not in ("elec", "soft", "hard")]
    drum = None if "roll" in hit else drum_phrase([w for w in hit if w != "drum"]) or drum_phrase(hit)
    if drum is not None:
        lo, hi = (0.0, 0.3) if "soft" in raw else (0.7, 1.0) if "hard" in raw else (0.0, 1.0)
        return _captions(drum[0], drum[2], lo, hi, 2), (drum[1],), "drums"
    words = path_words(rel)
    head = head_noun(words)
    if is_event(words) or head is None or head in MATERIALS:
        return None
    if head in INSTRUMENT_NOUNS:  # an instrument plays: "bass_hit" does not hit something
        words = [w for w in words if w not in ACTIONS or w in ("accord", "pizzicato")]
    captions, labels = effect_caption(words)
    return captions, labels, "instruments" if head in INSTRUMENT_NOUNS else "effects"


def _library(root: Path, package: str, folder: str, source_prefix: str, skip: tuple[str, ...]) -> list[ClipRecord]:
    root = Path(root)
    licences, version = Licences(root, package), package_version(root, package)
    base = root / folder
    out, dropped = [], 0
    for path in sorted(p for p in base.rglob("*") if p.suffix.lower() in AUDIO):
        rel = path.relative_to(base).as_posix()
        rule = None if rel.split("/", 1)[0] in skip else sample_caption(rel)
        if rule is None:
            dropped += 1
            continue
        captions, labels, family = rule
        lic = licences.of(source_prefix + rel)
        out.append(ClipRecord(package=package, version=version, path=path.relative_to(root).as_posix(), member=None,
                              captions=captions, labels=labels, family=family, group=package, licence=lic[0],
                              copyright=lic[1], sha256=sha256(path.read_bytes())))
    logger.info("%s: %d samples, %d left out", package, len(out), dropped)
    return out


def sonic_pi_clips(root: Path) -> list[ClipRecord]:
    """Sonic Pi's samples (module rule); the DEP-5 path is ``etc/samples/<file>``."""
    return _library(root, SONIC_PI, SONIC_PI_DIR, "etc/samples/", ())


def lmms_clips(root: Path) -> list[ClipRecord]:
    """LMMS's samples (module rule); the DEP-5 path is ``data/samples/<path>``."""
    return _library(root, LMMS, LMMS_DIR, "data/samples/", LMMS_SKIP)
