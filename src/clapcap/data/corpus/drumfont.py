"""Drum renders: the real drum kits of Debian ``avldrums.lv2-soundfont`` (two sf2 kits by Glen
MacArthur), played note by note with tinysoundfont as :mod:`clapcap.data.corpus.soundfont`.

Rule (docs/corpus.md, "Drum renders"): the kit's notes and drums are read from the sf2's own
sample names, ``NN-Name-k`` (``36-Ludwig26Kick-1``: MIDI note 36; names are cut at 20
characters, so a cut last word is completed by :data:`CUT_WORDS`). The name's words go through
the drum rule of :mod:`clapcap.data.corpus.hydrogen` (``a kick drum``, ``a closed hi-hat``); a
note it does not know (``Paiste2002-22``) is not rendered. Captions as for a Hydrogen hit, with
the velocity ``v`` as the layer (``soft`` for v <= 42, ``hard`` for v >= 85); a (note, velocity)
the kit has no layer for (silence) is left out. Family ``drums``;
marked as renders. Group: the kit, and :data:`SAME_KIT` where another package holds the same
kit's recordings (``Black_Pearl`` is Hydrogen's ``The Black Pearl 1.0``, same author).
"""

from __future__ import annotations

import logging
import re
import struct
from pathlib import Path

from clapcap.data.corpus.hydrogen import _captions, drum_phrase, name_words
from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.data.corpus.soundfont import RenderedClip, _synth_class, play_note
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

# Words cut at the sf2's 20-character name limit -> the word.
CUT_WORDS = {"clos": "closed", "cl": "closed", "peda": "pedal", "ped": "pedal", "be": "bell", "bel": "bell"}
# A kit whose recordings another package also holds -> that package's split group.
SAME_KIT = {"Black_Pearl_4_LV2.sf2": "hydrogen-drumkits/The Black Pearl 1.0"}


def _chunks(data: bytes, start: int, end: int):
    while start + 8 <= end:
        size = struct.unpack("<I", data[start + 4:start + 8])[0]
        yield data[start:start + 4], start + 8, size
        start += 8 + size + (size & 1)


def sample_names(path: Path) -> list[str]:
    """The sample names of the sf2 at ``path`` (its ``pdta/shdr`` records, 46 bytes each).

    Raises:
        InputError: when the file is not a RIFF sfbk or has no sample headers.
    """
    data = Path(path).read_bytes()
    if data[:4] != b"RIFF" or data[8:12] != b"sfbk":
        raise InputError(f"{path}: not an sf2 file (no RIFF sfbk header)")
    for cid, start, size in _chunks(data, 12, len(data)):
        if cid == b"LIST" and data[start:start + 4] == b"pdta":
            for sub, s2, n2 in _chunks(data, start + 4, start + size):
                if sub == b"shdr":
                    return [data[s2 + i:s2 + i + 20].split(b"\0")[0].decode("latin-1") for i in range(0, n2, 46)]
    raise InputError(f"{path}: no sample headers (pdta/shdr)")


def kit_notes(path: Path) -> dict[int, tuple[str, str, bool]]:
    """``{note: (phrase, label, struck)}`` for the notes the sample names of the kit at ``path``
    name with a drum the rule knows (first sample of each note)."""
    notes: dict[int, tuple[str, str, bool]] = {}
    seen: set[int] = set()
    for name in sample_names(path):
        match = re.match(r"^(\d+)-(.+?)(?:-\d*)?$", name)
        if match is None or int(match.group(1)) in seen:
            continue
        note = int(match.group(1))
        seen.add(note)
        words = [CUT_WORDS.get(w, w) for w in name_words(match.group(2))]
        drum = drum_phrase(words)
        if drum is not None and 0 <= note <= 127:
            notes[note] = drum
    return notes


def render_kit(root: Path, package: str, soundfont: str, *, velocities: list[int], seconds: float = 1.0,
               tail_s: float = 0.5, sample_rate: int = 16000, bank: int = 0, program: int = 0) -> list[RenderedClip]:
    """Render every drum note of the kit at ``soundfont`` (inside the unpacked ``package`` at
    ``root``) at each velocity (notes outer), by the module rule.

    Raises:
        InputError: when the preset is missing or a note renders silence.
        MissingDependencyError: without tinysoundfont.
    """
    root = Path(root)
    path = root / soundfont
    synth = _synth_class()(samplerate=sample_rate)
    sfid = synth.sfload(str(path))
    if synth.sfpreset_name(sfid, bank, program) is None:
        raise InputError(f"{path}: no preset for bank {bank} program {program}")
    synth.program_select(0, sfid, bank, program)
    lic = Licences(root, package).of(f"sf2/{path.name}")
    version = package_version(root, package)
    group = SAME_KIT.get(path.name, f"{package}/{path.name}")
    out, silent = [], 0
    for note, (phrase, label, struck) in sorted(kit_notes(path).items()):
        for velocity in velocities:
            try:
                wav = play_note(synth, path, note, velocity, seconds=seconds, tail_s=tail_s, sample_rate=sample_rate)
            except InputError:  # the kit has no layer for this velocity (Black Pearl's maraca)
                silent += 1
                continue
            record = ClipRecord(package=package, version=version, path=Path(soundfont).as_posix(), member=None,
                                captions=_captions(phrase, struck, velocity / 127, velocity / 127, 2),
                                labels=(label,), family="drums", group=group, licence=lic[0], copyright=lic[1],
                                sha256=sha256(wav), is_render=True,
                                render=f"bank {bank} program {program} note {note} velocity {velocity} "
                                       f"seconds {seconds} tail {tail_s} rate {sample_rate}")
            out.append(RenderedClip(record, wav))
    logger.info("%s: %d renders, %d silent (note, velocity) left out", path.name, len(out), silent)
    return out
