"""Soundfont renders: real sampled instruments of a General MIDI soundfont (sf2/sf3), played
note by note with PyPI ``tinysoundfont`` (install ``pip install --no-deps tinysoundfont==0.3.7``;
its pyaudio dependency does not build and is not needed to render).

Rule (docs/corpus.md): a render of GM program ``p`` (0-based), MIDI note ``n`` and velocity
``v`` has, with ``I`` the instrument of :data:`GM_INSTRUMENTS` (``a flute``):

- ``a [F ]R note on I``: ``R`` is ``low`` (n < 48), ``mid-range`` (48-71) or ``high`` (>= 72);
  ``F`` is ``soft`` (v <= 50), ``loud`` (v >= 100), else absent;
- ``I playing N``: ``N`` the note's name (``C5`` is MIDI 72).

Labels: the instrument (without its article). Group: the soundfont. Every render is marked
``is_render``. Only the pitched programs of :data:`GM_INSTRUMENTS` render (0-51, 56-79,
104-111); voices, synth pads and effects do not fit the rule.
"""

from __future__ import annotations

import csv
import gzip
import io
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.errors import InputError, MissingDependencyError

logger = logging.getLogger(__name__)

_NAMES = (
    "an acoustic grand piano", "a bright acoustic piano", "an electric grand piano", "a honky-tonk piano",
    "an electric piano", "an electric piano", "a harpsichord", "a clavinet", "a celesta", "a glockenspiel",
    "a music box", "a vibraphone", "a marimba", "a xylophone", "tubular bells", "a dulcimer",
    "a drawbar organ", "a percussive organ", "a rock organ", "a church organ", "a reed organ",
    "an accordion", "a harmonica", "a tango accordion", "a nylon-string acoustic guitar",
    "a steel-string acoustic guitar", "a jazz electric guitar", "a clean electric guitar",
    "a muted electric guitar", "an overdriven guitar", "a distortion guitar", "guitar harmonics",
    "an acoustic bass", "a fingered electric bass", "a picked electric bass", "a fretless bass",
    "a slap bass", "a slap bass", "a synth bass", "a synth bass", "a violin", "a viola", "a cello",
    "a contrabass", "tremolo strings", "pizzicato strings", "an orchestral harp", "timpani",
    "a string ensemble", "a string ensemble", "synth strings", "synth strings",
    None, None, None, None,  # 52-55: choir aahs, voice oohs, synth voice, orchestra hit
    "a trumpet", "a trombone", "a tuba", "a muted trumpet", "a French horn", "a brass section",
    "synth brass", "synth brass", "a soprano saxophone", "an alto saxophone", "a tenor saxophone",
    "a baritone saxophone", "an oboe", "an English horn", "a bassoon", "a clarinet", "a piccolo",
    "a flute", "a recorder", "a pan flute", "a blown bottle", "a shakuhachi", "a whistle", "an ocarina",
)
_ETHNIC = ("a sitar", "a banjo", "a shamisen", "a koto", "a kalimba", "a bagpipe", "a fiddle", "a shanai")
# GM program (0-based) -> the instrument's phrase, for the programs the rule renders.
GM_INSTRUMENTS: dict[int, str] = {p: name for p, name in enumerate(_NAMES) if name is not None}
GM_INSTRUMENTS.update({104 + i: name for i, name in enumerate(_ETHNIC)})
MUSESCORE_SOURCES = "usr/share/doc/musescore-general-soundfont/MuseScore_General_HQ_Sample_Sources.csv.gz"
NOTE_NAMES = ("C", "C#", "D", "D#", "E", "F", "F#", "G", "G#", "A", "A#", "B")


@dataclass(frozen=True)
class RenderedClip:
    """A render's record and its audio as 16-bit PCM WAV bytes (what ``sha256`` hashes)."""

    record: ClipRecord
    wav: bytes


def note_name(note: int) -> str:
    """``C4`` for MIDI 60."""
    return f"{NOTE_NAMES[note % 12]}{note // 12 - 1}"


def render_captions(program: int, note: int, velocity: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(captions, labels)`` of a render by the module's rule.

    Raises:
        InputError: for a program outside :data:`GM_INSTRUMENTS` or a note/velocity outside MIDI.
    """
    if program not in GM_INSTRUMENTS:
        raise InputError(f"GM program {program}: not one the caption rule renders ({sorted(GM_INSTRUMENTS)[:3]}...)")
    if not (0 <= note <= 127 and 1 <= velocity <= 127):
        raise InputError(f"note {note} / velocity {velocity}: expected MIDI note 0-127 and velocity 1-127")
    instrument = GM_INSTRUMENTS[program]
    register = "low" if note < 48 else "high" if note >= 72 else "mid-range"
    force = "soft " if velocity <= 50 else "loud " if velocity >= 100 else ""
    return ((f"a {force}{register} note on {instrument}", f"{instrument} playing {note_name(note)}"),
            (instrument.split(" ", 1)[1] if instrument.startswith(("a ", "an ")) else instrument,))


def _synth_class():
    try:
        import tinysoundfont
    except ImportError as err:
        raise MissingDependencyError("soundfont renders need tinysoundfont: pip install --no-deps tinysoundfont==0.3.7",
                                     name="tinysoundfont") from err
    return tinysoundfont.Synth


def _wav(audio: np.ndarray, sample_rate: int) -> bytes:
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, audio, sample_rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def play_note(synth, path: Path, note: int, velocity: int, *, seconds: float, tail_s: float,
              sample_rate: int) -> bytes:
    """One note on channel 0 of ``synth`` (its preset already selected): held ``seconds``, then
    ``tail_s`` of release, mixed to mono and peak-limited to 1; 16-bit WAV bytes.

    Raises:
        InputError: when the note renders silence.
    """
    synth.noteon(0, note, velocity)
    held = np.frombuffer(synth.generate(int(seconds * sample_rate)), dtype=np.float32).copy()
    synth.noteoff(0, note)
    tail = np.frombuffer(synth.generate(int(tail_s * sample_rate)), dtype=np.float32).copy()
    synth.sounds_off()
    audio = np.concatenate([held, tail]).reshape(-1, 2).mean(axis=1)  # (T,) mono
    peak = float(np.abs(audio).max())
    if peak < 1e-4:
        raise InputError(f"{path}: note {note} velocity {velocity} renders silence")
    if peak > 1.0:
        audio = audio / peak
    return _wav(audio, sample_rate)


def musescore_programs(root: Path, sources: str = MUSESCORE_SOURCES) -> list[int]:
    """The bank-0 programs of :data:`GM_INSTRUMENTS` whose samples in MuseScore_General are not
    FluidR3's: MuseScore_General is a fork of FluidR3 Mono, and its
    ``MuseScore_General_HQ_Sample_Sources.csv`` credits the samples that replaced them (a row
    ``same info as 000:048`` shares that row's credit). A credit naming Frank Wen (FluidR3's
    author) counts as FluidR3.

    Raises:
        InputError: when the file lacks the expected columns.
    """
    path = Path(root) / sources
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = list(csv.reader(line for line in handle if not line.startswith("sep=")))
    header = rows[0]
    if not {"Bank #", "Preset #", "Details", "Sample Credit"} <= set(header):
        raise InputError(f"{path}:2: expected the columns Bank #, Preset #, Details, Sample Credit, found {header}")
    col = {name: header.index(name) for name in header}
    credit = {}
    for row in rows[1:]:
        if row[col["Bank #"]] == "0" and row[col["Preset #"]].isdigit():
            same = re.match(r"same info as 000:(\d+)", row[col["Details"]])
            credit[int(row[col["Preset #"]])] = int(same.group(1)) if same else row[col["Sample Credit"]].strip()
    resolved = {p: credit.get(c, "") if isinstance(c, int) else c for p, c in credit.items()}
    return [p for p in sorted(resolved) if p in GM_INSTRUMENTS and resolved[p] and "Frank Wen" not in resolved[p]]


def render_program(root: Path, package: str, soundfont: str, program: int, *, notes: list[int],
                   velocities: list[int], seconds: float = 1.0, tail_s: float = 0.5,
                   sample_rate: int = 16000, bank: int = 0) -> list[RenderedClip]:
    """Render every (note, velocity) of GM ``program`` from the soundfont at ``soundfont``
    (a path inside the unpacked ``package`` at ``root``): the note held ``seconds``, then
    ``tail_s`` of release, mono at ``sample_rate``.

    Returns:
        One :class:`RenderedClip` per note and velocity (notes outer), group = the soundfont.

    Raises:
        InputError: when the soundfont lacks the preset or a render is silent.
        MissingDependencyError: without tinysoundfont.
    """
    root = Path(root)
    path = root / soundfont
    Synth = _synth_class()
    synth = Synth(samplerate=sample_rate)
    sfid = synth.sfload(str(path))
    if synth.sfpreset_name(sfid, bank, program) is None:
        raise InputError(f"{path}: no preset for bank {bank} program {program}")
    synth.program_select(0, sfid, bank, program)
    lic = Licences(root, package).of(Path(soundfont).name)
    version = package_version(root, package)
    out = []
    for note in notes:
        for velocity in velocities:
            captions, labels = render_captions(program, note, velocity)
            wav = play_note(synth, path, note, velocity, seconds=seconds, tail_s=tail_s, sample_rate=sample_rate)
            record = ClipRecord(package=package, version=version, path=Path(soundfont).as_posix(), member=None,
                                captions=captions, labels=labels, family="instruments",
                                group=f"{package}/{Path(soundfont).name}", licence=lic[0], copyright=lic[1],
                                sha256=sha256(wav), is_render=True,
                                render=f"bank {bank} program {program} note {note} velocity {velocity} "
                                       f"seconds {seconds} tail {tail_s} rate {sample_rate}")
            out.append(RenderedClip(record, wav))
    return out
