"""Debian ``hydrogen-drumkits`` (and ``hydrogen-drumkits-effects``): the drum hits (and guitar
strums) each kit's ``drumkit.xml`` names.

A kit is a folder ``usr/share/hydrogen/data/drumkits/<kit>/`` with ``drumkit.xml``: each
``<instrument>`` has a ``<name>`` and either ``<layer>`` elements (``<filename>``, velocity
range ``<min>``-``<max>``) or, in old kits, one ``<filename>``. Every sample file is a clip.

Rule (docs/corpus.md): the instrument name is lower-cased, a parenthesis (the maker and
size: ``Kick (Tama Superstar 22")``) and a leading note (``c3 - ``) are dropped, and the
rest split into words (at spaces, punctuation, case and digit changes; ``bassdrum``,
``hihat``, ``tomhi`` as two words). :func:`drum_phrase` maps the words to a drum phrase
(``a kick drum``, ``an open hi-hat``...); a name it does not know (``Zap``, ``FX``,
``Sample: x.flac``, a number) is left out. Captions: ``P hit`` with ``P`` the phrase (``soft``
/ ``hard`` after its article when the layer's velocity range lies below 1/3 / above 2/3 and
the instrument has several layers), and ``the sound of P``. Labels: the drum. Group: the
kit. The DEP-5 path is ``drumkits/<archive>.h2drumkit`` (the kit folder, but
:data:`KIT_ARCHIVES`).

Strums (:data:`STRUM_KITS`, the kit ``belofilms.com - AC-Guitar-Strums``): an instrument named by
a chord (``A#min7b5  \\ B7``: root, ``#``/``b``, ``major``/``minor``/``min``/``m``, optional
``7b5``; the rest, slide mark and key position, is not used) gives ``I strumming a C chord`` and
``a strummed C chord`` with ``I`` the kit's instrument and ``C`` the chord spelled out (``an A
sharp minor seven flat five chord``); family ``instruments``. Other instruments there are left out.
"""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from clapcap.data.corpus.records import ClipRecord, Licences, package_version, sha256
from clapcap.errors import InputError

logger = logging.getLogger(__name__)

PACKAGE = "hydrogen-drumkits"
KITS = "usr/share/hydrogen/data/drumkits"
# Kit folders whose archive (the DEP-5 Files: name) has another name.
KIT_ARCHIVES = {"circAfrique v4": "circAfrique"}
SPLITS = {"bassdrum": ["bass", "drum"], "hihat": ["hi", "hat"], "tomhi": ["tom", "hi"],
          "semiopen": ["semi", "open"], "sidestick": ["side", "stick"], "waterglasshi": ["waterglass", "hi"], "waterglasslo": ["waterglass", "lo"]}
# Single-word instruments: word -> (phrase, label, struck: the caption says "hit").
SIMPLE = {
    "cowbell": ("a cowbell", "cowbell", True), "tambourine": ("a tambourine", "tambourine", True),
    "maraca": ("a maraca", "maraca", False), "clave": ("a clave", "clave", True),
    "woodblock": ("a woodblock", "woodblock", True), "bongo": ("a bongo", "bongo", True),
    "conga": ("a conga", "conga", True), "cajon": ("a cajon", "cajon", True),
    "agogo": ("an agogo bell", "agogo", True), "whistle": ("a whistle", "whistle", False),
    "waterglass": ("a water glass", "glass", True), "snaps": ("finger snaps", "finger snap", False),
    "clap": ("a hand clap", "clap", False), "china": ("a china cymbal", "cymbal", True),
    "splash": ("a splash cymbal", "cymbal", True), "cymbal": ("a cymbal", "cymbal", True),
    "drum": ("a drum", "drum", True), "tabla": ("a tabla", "tabla", True), "shaker": ("a shaker", "shaker", False),
}
DUNUN = {"sangban", "dununba", "kenkeni"}
# Kit folder -> the instrument its name says it holds (``AC-Guitar-Strums``).
STRUM_KITS = {"belofilms_GuitarStrums": "an acoustic guitar"}
CHORD = re.compile(r"^\**([A-G])([#b]?)(major|minor|min|m)(7b5)?$")


def name_words(name: str) -> list[str]:
    """The words of an instrument name (module rule)."""
    text = re.sub(r"\([^)]*\)?", " ", name)
    text = re.sub(r"^\s*[a-g]#?\d\s*-\s*", " ", text, flags=re.IGNORECASE)
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    text = re.sub(r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])", " ", text)
    words = [w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and not w.isdigit()]
    return [part for w in words for part in SPLITS.get(w, [w])]


def _hat(ws: set[str]) -> tuple[str, str, bool]:
    if ws & {"closed", "cl", "chh"}:
        return "a closed hi-hat", "hi-hat", True
    if ws & {"semi"}:
        return "a half-open hi-hat", "hi-hat", True
    if ws & {"open", "op", "opened", "ohh"}:
        return "an open hi-hat", "hi-hat", True
    if ws & {"pedal", "pd"}:
        return "a hi-hat pedal", "hi-hat", False
    return "a hi-hat", "hi-hat", True


def _pitched(kind: str, ws: set[str]) -> str:
    for words, adjective in (({"low", "lo", "floor"}, "low"), ({"mid", "middle"}, "mid"), ({"hi", "high"}, "high")):
        if ws & words:
            return f"a {adjective} {kind}"
    return f"a {kind}"


def drum_phrase(words: list[str]) -> tuple[str, str, bool] | None:
    """``(phrase, label, struck)`` of an instrument's words, or None when the name is unknown."""
    ws = set(words)
    if ws & {"hh", "hat", "chh", "ohh"}:
        return _hat(ws)
    if ws & {"kick", "bd"} or {"bass", "drum"} <= ws:
        return "a kick drum", "kick drum", True
    if ws & {"snare", "sn"}:
        kind = "rimshot" if "rimshot" in ws else "roll" if "roll" in ws else ""
        return (f"a snare drum {kind}".strip(), "snare drum", kind != "roll")
    if ws & {"stick", "rim"}:
        return "a rim click", "rim click", False
    if "tom" in ws:
        return _pitched("tom drum", ws), "tom drum", True
    if ws & {"ride", "crash"}:
        if ws & {"bell", "cup"} and "ride" in ws:
            return "a ride cymbal bell", "cymbal", True
        return ("a crash cymbal" if "crash" in ws else "a ride cymbal"), "cymbal", True
    if "djembe" in ws:
        stroke = next((s for s in ("slap", "tone", "bass") if s in ws), None)
        return (f"a djembe {stroke}" if stroke else "a djembe"), "djembe", stroke != "slap"
    if ws & DUNUN:
        return ("a dunun drum bell" if "bell" in ws else "a dunun drum"), "dunun", True
    for word in words:
        if word in SIMPLE:
            phrase, label, struck = SIMPLE[word]
            return (_pitched(phrase.split(" ", 1)[1], ws) if word in ("bongo", "woodblock", "waterglass")
                    else phrase), label, struck
    return None


def chord_phrase(name: str) -> str | None:
    """``a C major chord`` for an instrument named ``Cmajor  / C1-F5-G4``, or None."""
    match = CHORD.match(name.split()[0]) if name.split() else None
    if match is None:
        return None
    root, accidental, quality, seventh = match.groups()
    sign = {"#": " sharp", "b": " flat", "": ""}[accidental]
    words = f"{root}{sign} {'major' if quality == 'major' else 'minor'}{' seven flat five' if seventh else ''}"
    return f"{'an' if root in 'AEF' else 'a'} {words} chord"


def _strum(name: str, instrument: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    chord = chord_phrase(name)
    if chord is None:
        return None
    label = instrument.split(" ", 1)[1]
    return (f"{instrument} strumming {chord}", f"a strummed {chord.split(' ', 1)[1]}"), (label, "chord")


def _tag(element: ET.Element) -> str:
    return element.tag.rsplit("}", 1)[-1]


def _child(element: ET.Element, name: str) -> str | None:
    return next((c.text for c in element if _tag(c) == name), None)


def _layers(instrument: ET.Element) -> list[tuple[str, float, float]]:
    """``(filename, min, max)`` of each layer (old kits: one layer, full range)."""
    layers = [(_child(e, "filename") or "", float(_child(e, "min") or 0), float(_child(e, "max") or 1))
              for e in instrument.iter() if _tag(e) == "layer"]
    if not layers and _child(instrument, "filename"):
        layers = [(_child(instrument, "filename") or "", 0.0, 1.0)]
    return [layer for layer in layers if layer[0]]


def _captions(phrase: str, struck: bool, lo: float, hi: float, n_layers: int) -> tuple[str, ...]:
    force = "soft" if n_layers > 1 and hi <= 1 / 3 else "hard" if n_layers > 1 and lo >= 2 / 3 else ""
    article, _, rest = phrase.partition(" ")
    shown = f"{article} {force} {rest}" if force and article in ("a", "an") else phrase
    shown = re.sub(r"^an? (?=\w)", lambda m: "an " if shown.split()[1][0] in "aeiou" else "a ", shown)
    return (f"{shown} hit" if struck else shown, f"the sound of {phrase}")


def kit_clips(root: Path, kit_dir: Path, licences: Licences, version: str,
              package: str = PACKAGE) -> list[ClipRecord]:
    """The clips of one kit folder."""
    xml_path = kit_dir / "drumkit.xml"
    try:
        tree = ET.parse(xml_path)
    except ET.ParseError as err:
        raise InputError(f"{xml_path}: not valid XML ({err})") from err
    archive = KIT_ARCHIVES.get(kit_dir.name, kit_dir.name)
    lic = licences.of(f"drumkits/{archive}.h2drumkit")
    out, seen = [], set()
    strummed = STRUM_KITS.get(kit_dir.name)
    for instrument in (e for e in tree.getroot().iter() if _tag(e) == "instrument"):
        name = _child(instrument, "name") or ""
        layers = _layers(instrument)
        if strummed is not None:
            strum = _strum(name, strummed)
            rule = None if strum is None else (strum, "instruments")
        else:
            drum = drum_phrase(name_words(name))
            rule = None if drum is None else (((drum[0], drum[2]), (drum[1],)), "drums")
        if rule is None:
            continue
        (what, labels), family = rule
        for filename, lo, hi in layers:
            path = kit_dir / filename
            if filename in seen or not path.is_file():
                continue
            seen.add(filename)
            captions = what if family == "instruments" else _captions(*what, lo, hi, len(layers))
            out.append(ClipRecord(package=package, version=version, path=path.relative_to(root).as_posix(),
                                  member=None, captions=captions, labels=labels, family=family,
                                  group=f"{package}/{kit_dir.name}",
                                  licence=lic[0], copyright=lic[1], sha256=sha256(path.read_bytes())))
    return out


def hydrogen_clips(root: Path, package: str = PACKAGE) -> list[ClipRecord]:
    """The drum hits (and strums) of every kit of the unpacked ``package`` at ``root`` (module
    rule): ``hydrogen-drumkits`` or ``hydrogen-drumkits-effects``."""
    root = Path(root)
    licences, version = Licences(root, package), package_version(root, package)
    out: list[ClipRecord] = []
    for kit_dir in sorted(p.parent for p in (root / KITS).glob("*/drumkit.xml")):
        clips = kit_clips(root, kit_dir, licences, version, package)
        logger.info("%s: kit %s: %d clips", package, kit_dir.name, len(clips))
        out += clips
    return out
