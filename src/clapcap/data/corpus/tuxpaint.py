"""Debian ``tuxpaint-stamps-default``: stamp sound effects and spoken stamp descriptions.

A stamp ``NAME`` has ``NAME.txt`` (line 1: the English description; then ``LL.utf8=...``
lines: its translations), maybe ``NAME.ogg`` (the stamp's sound), ``NAME_desc.ogg`` (the
English description, spoken) and ``NAME_desc_LL.ogg`` (the description spoken in language
``LL``).

**Effects** (rule in docs/corpus.md): ``NAME.ogg`` outside ``stamps/symbols/`` (letters,
digits and faces there are spoken words, not sounds) whose description is a noun phrase
``A X.`` / ``An X.``. With ``NP`` that phrase (lower-case article, a parenthesis dropped) and
``N`` its last word: ``NP VERB`` when ``N`` has a verb in the lexicon of
:data:`clapcap.data.corpus.words.NOUNS` (``a frog croaking``), then ``the sound of NP``.
Labels: ``N``. Group: ``tuxpaint-stamps-default/effects``.

**Speech**: every ``NAME_desc.ogg`` (English, the transcript is line 1) and
``NAME_desc_LL.ogg`` (the transcript is the ``LL.utf8=`` line) with captions by
:func:`clapcap.data.corpus.speech.speech_captions`. A clip whose transcript is missing is
left out. Group: ``tuxpaint-stamps-default/speech/LL`` (one speaker set per language).

The DEP-5 path of ``usr/share/tuxpaint/stamps/x`` is ``stamps/x``.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.data.corpus.speech import language_name, speech_captions
from clapcap.data.corpus.words import NOUNS

logger = logging.getLogger(__name__)

PACKAGE = "tuxpaint-stamps-default"
BASE = "usr/share/tuxpaint"
DESC = re.compile(r"^(?P<stem>.+)_desc(?:_(?P<lang>[a-z]{2,3}(?:_[A-Za-z]{2})?))?\.ogg$")
NOUN_PHRASE = re.compile(r"^(A|An) (?P<rest>[^.!?“”\"]+)\.$")


def _description(txt: Path) -> tuple[str, dict[str, str]]:
    """Line 1 of a stamp's ``.txt`` and its ``LL.utf8=`` translations."""
    lines = txt.read_text(encoding="utf-8", errors="replace").splitlines()
    first = lines[0].strip() if lines else ""
    translations = {}
    for line in lines[1:]:
        key, sep, value = line.partition(".utf8=")
        if sep and value.strip():
            translations[key.strip()] = value.strip()
    return first, translations


def effect_captions(description: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """``(captions, labels)`` of a stamp sound by the module's rule, or None when the
    description is not a noun phrase ``A X.``."""
    match = NOUN_PHRASE.match(description)
    if match is None:
        return None
    rest = " ".join(re.sub(r"\([^)]*\)", "", match.group("rest")).split())
    phrase = f"{match.group(1).lower()} {rest}"
    noun = rest.split()[-1].lower()
    verb = NOUNS.get(noun, ("", ""))[1]
    captions = ((f"{phrase} {verb}",) if verb else ()) + (f"the sound of {phrase}",)
    return captions, (noun,)


def tuxpaint_clips(root: Path) -> list[ClipRecord]:
    """The effect and speech clips of the unpacked package at ``root`` (module rules)."""
    root = Path(root)
    licences, version = Licences(root, PACKAGE), package_version(root, PACKAGE)
    stamps = root / BASE / "stamps"
    out: list[ClipRecord] = []
    skipped = {"no description": 0, "not a noun phrase": 0, "symbol": 0}
    for path in sorted(stamps.rglob("*.ogg")):
        rel = path.relative_to(root).as_posix()
        source = path.relative_to(root / BASE).as_posix()
        desc = DESC.match(path.name)
        stem = desc.group("stem") if desc else path.stem
        txt = path.with_name(stem + ".txt")
        if not txt.is_file():
            skipped["no description"] += 1
            continue
        first, translations = _description(txt)
        base = dict(package=PACKAGE, version=version, path=rel, member=None)
        if desc is None:
            if path.relative_to(stamps).parts[0] == "symbols":
                skipped["symbol"] += 1
                continue
            rule = effect_captions(first)
            if rule is None:
                skipped["not a noun phrase"] += 1
                continue
            lic = licences.of(source)
            out.append(ClipRecord(**base, captions=rule[0], labels=rule[1], family="effects",
                                  group=f"{PACKAGE}/effects", licence=lic[0], copyright=lic[1],
                                  sha256=sha256(path.read_bytes())))
            continue
        lang = desc.group("lang") or "en"
        transcript = first if desc.group("lang") is None else translations.get(lang)
        if not transcript:
            skipped["no description"] += 1
            continue
        name = language_name(lang, rel)
        lic = licences.of(source)
        out.append(ClipRecord(**base, captions=speech_captions(transcript, name), labels=("speech", name),
                              family="speech", group=f"{PACKAGE}/speech/{lang}", licence=lic[0],
                              copyright=lic[1], sha256=sha256(path.read_bytes()), transcript=transcript,
                              language=lang))
    logger.info("%s: %d clips; left out %s", PACKAGE, len(out), skipped)
    return out
