"""Debian ``asterisk-core-sounds-LL-wav`` prompts with the transcripts of
``asterisk-core-sounds-LL`` (``usr/share/doc/asterisk-core-sounds-LL/core-sounds-LL.txt.gz``).

The transcript file has one ``NAME: TEXT`` line per prompt (``NAME`` is the path below the
voice folder without ``.wav``, e.g. ``digits/1``), ``;`` comment lines and blank lines. The
voice folder ``usr/share/asterisk/sounds/<ll>_<CC>_<f|m>_<Name>`` names the language and
the speaker's sex.

Rule (docs/corpus.md): a prompt whose text is wholly in brackets or parentheses
(``[this is a simple beep tone]``, ``(1 second of silence)``) is not speech: left out. A
trailing bracketed note is removed (``at [@]`` -> ``at``). Captions by
:func:`clapcap.data.corpus.speech.speech_captions` with the speaker ``a woman`` / ``a man``.
Group: the package and voice folder (one speaker). The DEP-5 path of a prompt is its path
below the voice folder (``digits/1.wav``), as in the upstream tarball.
"""

from __future__ import annotations

import gzip
import logging
import re
from pathlib import Path

from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.data.corpus.speech import language_name, speech_captions
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

SOUNDS = "usr/share/asterisk/sounds"
VOICE = re.compile(r"^(?P<lang>[a-z]{2})_(?P<country>[A-Z]{2})_(?P<sex>[fm])_(?P<name>\w+)$")
SPEAKER = {"f": "a woman", "m": "a man"}


def read_transcripts(path: Path) -> dict[str, str]:
    """``{name: text}`` of an Asterisk transcript file (``.txt`` or ``.txt.gz``).

    Raises:
        InputError: naming the line that is neither ``NAME: TEXT``, a comment nor blank.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        lines = handle.read().splitlines()
    out = {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith(";"):
            continue
        name, sep, text = line.partition(":")
        if not sep or not name.strip() or " " in name.strip():
            raise InputError(f"{path}:{number}: expected 'NAME: TEXT', found {line[:60]!r}")
        out[name.strip()] = " ".join(text.split())
    return out


def clean_transcript(text: str) -> str | None:
    """The spoken text of a transcript by the module's rule, or None when it is not speech."""
    if re.fullmatch(r"\[.*\]|\(.*\)", text):
        return None
    spoken = " ".join(re.sub(r"\s*\[[^\]]*\]$", "", text).split())
    return spoken or None


def asterisk_clips(wav_root: Path, text_root: Path, *, package: str = "asterisk-core-sounds-en-wav",
                   text_package: str = "asterisk-core-sounds-en") -> list[ClipRecord]:
    """The prompts of the unpacked ``package`` at ``wav_root`` that have a spoken transcript
    in the unpacked ``text_package`` at ``text_root``."""
    wav_root, text_root = Path(wav_root), Path(text_root)
    lang_code = text_package.rsplit("-", 1)[-1]
    doc = text_root / "usr/share/doc" / text_package
    candidates = [doc / f"core-sounds-{lang_code}.txt.gz", doc / f"core-sounds-{lang_code}.txt"]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        raise FileNotFoundError(f"{candidates[0]}: the transcript file of {text_package} is missing")
    transcripts = read_transcripts(found)
    licences, version = Licences(wav_root, package), package_version(wav_root, package)
    out: list[ClipRecord] = []
    skipped = {"no transcript": 0, "not speech": 0}
    for voice in sorted(p for p in (wav_root / SOUNDS).iterdir() if p.is_dir()):
        match = VOICE.match(voice.name)
        if match is None:
            raise InputError(f"{voice}: expected a voice folder LL_CC_f|m_Name")
        name = language_name(match.group("lang"), str(voice))
        for path in sorted(voice.rglob("*.wav")):
            key = path.relative_to(voice).with_suffix("").as_posix()
            if key not in transcripts:
                skipped["no transcript"] += 1
                continue
            spoken = clean_transcript(transcripts[key])
            if spoken is None:
                skipped["not speech"] += 1
                continue
            lic = licences.of(path.relative_to(voice).as_posix())
            out.append(ClipRecord(package=package, version=version, path=path.relative_to(wav_root).as_posix(),
                                  member=None, captions=speech_captions(spoken, name, SPEAKER[match.group("sex")]),
                                  labels=("speech", name), family="speech", group=f"{package}/{voice.name}",
                                  licence=lic[0], copyright=lic[1], sha256=sha256(path.read_bytes()),
                                  transcript=spoken, language=match.group("lang")))
    logger.info("%s: %d prompts; left out %s", package, len(out), skipped)
    return out
