"""The real corpus's source readers (clapcap.data.corpus), each on a tiny package built here in
the real layout (the installed paths, a DEP-5 copyright with several paragraphs, real audio
written with soundfile): exact captions, labels, groups and licences; the game-event filter;
soundfont renders from a tiny sf2; and group splits with no group or audio in two splits."""

from __future__ import annotations

import gzip
import hashlib
import zipfile
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from tests.support.tiny_sf2 import tiny_sf2

from clapcap.data.corpus import (
    ClipRecord,
    asterisk_clips,
    audio_bytes,
    hedgewars_clips,
    hydrogen_clips,
    render_program,
    split_by_group,
    tuxpaint_clips,
    ufoai_clips,
)
from clapcap.data.corpus.asterisk import read_transcripts
from clapcap.data.corpus.words import effect_caption, is_event, path_words
from clapcap.errors import InputError

SR = 8000


def _audio(path: Path, freq: float = 440.0, fmt: str | None = None) -> Path:
    """A short real sine file (OGG Vorbis for ``.ogg``, else by suffix); each ``freq`` gives
    other bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(0.2 * SR)) / SR
    data = (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    if path.suffix == ".ogg":
        sf.write(path, data, SR, format="OGG", subtype="VORBIS")
    else:
        sf.write(path, data, SR, format=fmt or path.suffix[1:].upper())
    return path


def _doc(root: Path, package: str, copyright_text: str, version: str = "1.0-1") -> None:
    doc = root / "usr/share/doc" / package
    doc.mkdir(parents=True, exist_ok=True)
    (doc / "copyright").write_text(copyright_text)
    with gzip.open(doc / "changelog.Debian.gz", "wt") as handle:
        handle.write(f"{package} ({version}) unstable; urgency=medium\n\n  * Test.\n")


DEP5 = "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"


def _rows(records: list[ClipRecord]) -> list[tuple]:
    return sorted((r.path, r.member, r.captions, r.labels, r.family, r.group, r.licence, r.copyright,
                   r.transcript, r.language) for r in records)


def _hashes_match(root: Path, records: list[ClipRecord]) -> bool:
    return all(hashlib.sha256(audio_bytes(root, r)).hexdigest() == r.sha256 for r in records)


def test_tuxpaint_effects_and_spoken_descriptions(tmp_path):
    stamps = tmp_path / "usr/share/tuxpaint/stamps"
    (stamps / "animals/birds").mkdir(parents=True)
    (stamps / "animals/birds/owl.txt").write_text("An owl.\nfr.utf8=Un hibou.\nes.utf8=Un búho.\n")
    for i, name in enumerate(["owl.ogg", "owl_desc.ogg", "owl_desc_fr.ogg", "owl_desc_es.ogg", "owl_desc_da.ogg"]):
        _audio(stamps / "animals/birds" / name, 300 + 50 * i)
    (stamps / "household").mkdir()
    (stamps / "household/gift.txt").write_text("A gift (wrapped).\n")
    _audio(stamps / "household/gift.ogg", 600)
    (stamps / "household/toilet.txt").write_text("Remember to flush the toilet!\n")
    _audio(stamps / "household/toilet.ogg", 650)
    (stamps / "symbols/math").mkdir(parents=True)
    (stamps / "symbols/math/7.txt").write_text("Seven.\n")
    _audio(stamps / "symbols/math/7.ogg", 700)
    _audio(stamps / "animals/birds/crow_desc.ogg", 750)  # no crow.txt: left out
    _doc(tmp_path, "tuxpaint-stamps-default", DEP5 + "Files: *\nCopyright: 2002-2022 Bill Kendrick\nLicense: GPL-2\n\n"
         "Files: stamps/household/*\nCopyright: 2020 Jane Doe\nLicense: CC0-1.0\n", "2022.06.04-1")

    records = tuxpaint_clips(tmp_path)

    base = "usr/share/tuxpaint/stamps/"
    gpl, cc0 = ("GPL-2", "2002-2022 Bill Kendrick"), ("CC0-1.0", "2020 Jane Doe")
    assert _rows(records) == sorted([
        (base + "animals/birds/owl.ogg", None, ("an owl hooting", "the sound of an owl"), ("owl",), "effects",
         "tuxpaint-stamps-default/effects", *gpl, None, None),
        (base + "animals/birds/owl_desc.ogg", None, ('someone saying "An owl." in English', 'English speech: "An owl."'),
         ("speech", "English"), "speech", "tuxpaint-stamps-default/speech/en", *gpl, "An owl.", "en"),
        (base + "animals/birds/owl_desc_fr.ogg", None,
         ('someone saying "Un hibou." in French', 'French speech: "Un hibou."'), ("speech", "French"), "speech",
         "tuxpaint-stamps-default/speech/fr", *gpl, "Un hibou.", "fr"),
        (base + "animals/birds/owl_desc_es.ogg", None,
         ('someone saying "Un búho." in Spanish', 'Spanish speech: "Un búho."'), ("speech", "Spanish"), "speech",
         "tuxpaint-stamps-default/speech/es", *gpl, "Un búho.", "es"),
        (base + "household/gift.ogg", None, ("the sound of a gift",), ("gift",), "effects",
         "tuxpaint-stamps-default/effects", *cc0, None, None),
    ])
    assert {r.version for r in records} == {"2022.06.04-1"} and _hashes_match(tmp_path, records)


def _drumkit_xml(instruments: str, namespace: bool) -> str:
    ns = ' xmlns="http://www.hydrogen-music.org/drumkit"' if namespace else ""
    return f"<drumkit_info{ns}><name>k</name><instrumentList>{instruments}</instrumentList></drumkit_info>"


def test_hydrogen_drum_hits_named_in_each_kit(tmp_path):
    kits = tmp_path / "usr/share/hydrogen/data/drumkits"
    afrique = kits / "circAfrique v4"
    _audio(afrique / "Djembe1 Slap.wav", 200)
    _audio(afrique / "Zap.wav", 210)
    afrique.joinpath("drumkit.xml").write_text(_drumkit_xml(
        "<instrument><name>Djembe1 Slap</name><layer><filename>Djembe1 Slap.wav</filename><min>0</min><max>1</max>"
        "</layer></instrument><instrument><name>Zap 1</name><layer><filename>Zap.wav</filename></layer></instrument>",
        namespace=False))
    kit_b = kits / "Kit B"
    for i, name in enumerate(["kick_soft.flac", "kick_hard.flac", "hh.flac"]):
        _audio(kit_b / name, 300 + 40 * i)
    kit_b.joinpath("drumkit.xml").write_text(_drumkit_xml(
        '<instrument><name>Kick (Tama Superstar 22")</name>'
        "<layer><filename>kick_soft.flac</filename><min>0</min><max>0.3</max></layer>"
        "<layer><filename>kick_hard.flac</filename><min>0.7</min><max>1</max></layer></instrument>"
        "<instrument><name>a#3 - hi-hat open</name><filename>hh.flac</filename></instrument>"
        "<instrument><name>17</name><filename>hh.flac</filename></instrument>", namespace=True))
    _doc(tmp_path, "hydrogen-drumkits", DEP5 + "Files: drumkits/circAfrique.h2drumkit\nCopyright: Jim Harney\n"
         "License: CC-BY-SA-3.0\n\nFiles: drumkits/Kit?B.h2drumkit\nCopyright: Glen MacArthur\nLicense: GPL-2\n")

    records = hydrogen_clips(tmp_path)

    base = "usr/share/hydrogen/data/drumkits/"
    glen = ("GPL-2", "Glen MacArthur")
    assert _rows(records) == sorted([
        (base + "circAfrique v4/Djembe1 Slap.wav", None, ("a djembe slap", "the sound of a djembe slap"), ("djembe",),
         "drums", "hydrogen-drumkits/circAfrique v4", "CC-BY-SA-3.0", "Jim Harney", None, None),
        (base + "Kit B/kick_soft.flac", None, ("a soft kick drum hit", "the sound of a kick drum"), ("kick drum",),
         "drums", "hydrogen-drumkits/Kit B", *glen, None, None),
        (base + "Kit B/kick_hard.flac", None, ("a hard kick drum hit", "the sound of a kick drum"), ("kick drum",),
         "drums", "hydrogen-drumkits/Kit B", *glen, None, None),
        (base + "Kit B/hh.flac", None, ("an open hi-hat hit", "the sound of an open hi-hat"), ("hi-hat",),
         "drums", "hydrogen-drumkits/Kit B", *glen, None, None),
    ])
    assert _hashes_match(tmp_path, records)


def test_ufoai_effects_from_the_pk3_with_their_paragraph(tmp_path):
    src = tmp_path / "src"
    members = {"sound/ambience/arcticwind.ogg": 300, "sound/ui/click1.ogg": 310, "sound/doors/door1-open.ogg": 320,
               "sound/geoscape/mail.ogg": 330, "sound/weapons/reload-pistol.ogg": 340}
    pk3 = tmp_path / "usr/share/games/ufoai/base/0snd.pk3"
    pk3.parent.mkdir(parents=True)
    with zipfile.ZipFile(pk3, "w") as archive:
        for name, freq in members.items():
            archive.write(_audio(src / name, freq), name)
    _doc(tmp_path, "ufoai-sound", DEP5 + "Files: *\nCopyright: 2002-2014, The UFO:AI Team\nLicense: GPL-2+\n\n"
         "Files:\n base/sound/doors/door1-open.ogg\nCopyright:\n Gren\nLicense: CC-BY-3.0\n", "2.5-2")

    records = ufoai_clips(tmp_path)

    path, team = "usr/share/games/ufoai/base/0snd.pk3", ("GPL-2+", "2002-2014, The UFO:AI Team")
    assert _rows(records) == sorted([
        (path, "sound/ambience/arcticwind.ogg", ("arctic wind blowing",), ("wind",), "effects", "ufoai-sound",
         *team, None, None),
        (path, "sound/doors/door1-open.ogg", ("a door opening",), ("doors", "open"), "effects", "ufoai-sound",
         "CC-BY-3.0", "Gren", None, None),
        (path, "sound/weapons/reload-pistol.ogg", ("a pistol being reloaded",), ("pistol", "reload"), "effects",
         "ufoai-sound", *team, None, None),
    ])
    assert _hashes_match(tmp_path, records)


def test_hedgewars_effects_leave_out_events_and_voices(tmp_path):
    sounds = tmp_path / "usr/share/games/hedgewars/Data/Sounds"
    for i, name in enumerate(["bee.ogg", "CollectCrate.ogg", "Droplet1.ogg", "melonimpact.ogg",
                              "voices/Default/Hello.ogg"]):
        _audio(sounds / name, 300 + 30 * i)
    _doc(tmp_path, "hedgewars-data", DEP5 + "Files: *\nCopyright: 2004-2018 Andrey Korotaev\nLicense: GPL-2\n\n"
         "Files: share/hedgewars/Data/Sounds/*\nCopyright: 2004 Andrey Korotaev\nLicense: GFDL-1.3\n\n"
         "Files: share/hedgewars/Data/Sounds/Droplet*.ogg\nCopyright: saugox\nLicense: CC-BY-SA-3.0\n")

    records = hedgewars_clips(tmp_path)

    base, gfdl = "usr/share/games/hedgewars/Data/Sounds/", ("GFDL-1.3", "2004 Andrey Korotaev")
    assert _rows(records) == sorted([
        (base + "bee.ogg", None, ("a bee buzzing",), ("bee",), "effects", "hedgewars-data", *gfdl, None, None),
        (base + "Droplet1.ogg", None, ("water droplets dripping",), ("droplet",), "effects", "hedgewars-data",
         "CC-BY-SA-3.0", "saugox", None, None),
        (base + "melonimpact.ogg", None, ("the sound of melon impact",), ("melon", "impact"), "effects",
         "hedgewars-data", *gfdl, None, None),
    ])


@pytest.mark.parametrize("name", ["ui/click1.ogg", "interface/select.ogg", "geoscape/newmission.ogg",
                                  "misc/popup.ogg", "ui/item-drag.ogg", "CollectCrate.ogg", "countdown3.ogg",
                                  "extratime.ogg", "throwpowerup.ogg", "voices/Default/Yessir.ogg", "1C.ogg",
                                  "menu/open.ogg", "misc/roundstart.ogg"])
def test_the_filter_drops_game_events(name):
    assert is_event(path_words(name))


@pytest.mark.parametrize("name,caption", [
    ("fauna/animal/sheep_10.ogg", "a sheep bleating"),
    ("ambient/weather/windstorm_11.ogg", "wind blowing"),
    ("minetick.ogg", "the sound of mine tick"),
    ("footsteps/gravel3.ogg", "footsteps on gravel"),
    ("misc/breakglass04.ogg", "glass breaking"),
    ("civilians/civfemscream01a.ogg", "a woman screaming"),
    ("ugv/diesel-idle.ogg", "a diesel engine idling"),
])
def test_game_effect_caption_rule(name, caption):
    words = path_words(name)
    assert not is_event(words)
    assert effect_caption(words)[0] == (caption,)


def test_asterisk_prompts_with_the_transcript_package(tmp_path):
    voice = tmp_path / "wav/usr/share/asterisk/sounds/en_US_f_Allison"
    for i, name in enumerate(["auth-thankyou.wav", "beep.wav", "digits/1.wav", "letters/at.wav", "silence/1.wav",
                              "no-transcript.wav"]):
        _audio(voice / name, 300 + 20 * i)
    _doc(tmp_path / "wav", "asterisk-core-sounds-en-wav", DEP5 + "Files: *\nCopyright: 2003-2010, Allison Smith\n"
         "License: CC-BY-SA-3.0\n\nFiles: fr-*\nCopyright: 2006-2008, June Wallack\nLicense: CC-BY-SA-3.0\n\n"
         "Files: digits/*\nCopyright: 2010, Digit Holder\nLicense: CC0-1.0\n", "1.6.1-1")
    doc = tmp_path / "text/usr/share/doc/asterisk-core-sounds-en"
    doc.mkdir(parents=True)
    with gzip.open(doc / "core-sounds-en.txt.gz", "wt") as handle:
        handle.write("; Core Asterisk Sounds in English\n\nauth-thankyou: Thank you.\nbeep: [this is a simple "
                     "beep tone]\ndigits/1: one\nletters/at: at [@]\nsilence/1: (1 second of silence)\n")

    records = asterisk_clips(tmp_path / "wav", tmp_path / "text")

    base, group = "usr/share/asterisk/sounds/en_US_f_Allison/", "asterisk-core-sounds-en-wav/en_US_f_Allison"
    allison = ("CC-BY-SA-3.0", "2003-2010, Allison Smith")
    assert _rows(records) == sorted([
        (base + "auth-thankyou.wav", None, ('a woman saying "Thank you." in English', 'English speech: "Thank you."'),
         ("speech", "English"), "speech", group, *allison, "Thank you.", "en"),
        (base + "digits/1.wav", None, ('a woman saying "one" in English', 'English speech: "one"'),
         ("speech", "English"), "speech", group, "CC0-1.0", "2010, Digit Holder", "one", "en"),
        (base + "letters/at.wav", None, ('a woman saying "at" in English', 'English speech: "at"'),
         ("speech", "English"), "speech", group, *allison, "at", "en"),
    ])
    assert _hashes_match(tmp_path / "wav", records)


def test_asterisk_transcript_file_names_a_malformed_line(tmp_path):
    path = tmp_path / "core-sounds-en.txt"
    path.write_text("; c\nbeep: [beep]\nthis line has no name\n")
    with pytest.raises(InputError, match=r"core-sounds-en.txt:3: expected 'NAME: TEXT'"):
        read_transcripts(path)


def test_soundfont_renders_from_a_tiny_sf2(tmp_path):
    sf2 = tmp_path / "usr/share/sounds/sf2/Tiny.sf2"
    sf2.parent.mkdir(parents=True)
    sf2.write_bytes(tiny_sf2(program=73))
    _doc(tmp_path, "tiny-soundfont", DEP5 + "Files: Tiny.sf2\nCopyright: 2024 Sample Maker\nLicense: MIT\n\n"
         "Files: debian/*\nCopyright: 2024 Packager\nLicense: GPL-3+\n", "0.1-1")

    clips = render_program(tmp_path, "tiny-soundfont", "usr/share/sounds/sf2/Tiny.sf2", 73, notes=[45, 84],
                           velocities=[40, 110], seconds=0.25, tail_s=0.1, sample_rate=16000)

    assert [c.record.captions for c in clips] == [
        ("a soft low note on a flute", "a flute playing A2"), ("a loud low note on a flute", "a flute playing A2"),
        ("a soft high note on a flute", "a flute playing C6"), ("a loud high note on a flute", "a flute playing C6")]
    assert {(r.group, r.licence, r.copyright, r.family, r.labels, r.is_render, r.version) for r in
            (c.record for c in clips)} == {("tiny-soundfont/Tiny.sf2", "MIT", "2024 Sample Maker", "instruments",
                                            ("flute",), True, "0.1-1")}
    for clip in clips:
        assert hashlib.sha256(clip.wav).hexdigest() == clip.record.sha256
        audio, rate = sf.read(__import__("io").BytesIO(clip.wav))
        assert rate == 16000 and len(audio) == int(0.35 * 16000) and np.abs(audio).max() > 0.01
    with pytest.raises(InputError, match="no preset for bank 0 program 0"):
        render_program(tmp_path, "tiny-soundfont", "usr/share/sounds/sf2/Tiny.sf2", 0, notes=[60], velocities=[80])


def _record(group: str, digest: str) -> ClipRecord:
    return ClipRecord(package="p", version="", path=f"{group}/{digest}", member=None, captions=("c",), labels=("l",),
                      family="effects", group=group, licence="MIT", copyright="x", sha256=digest)


def test_split_by_group_keeps_groups_and_audio_in_one_split():
    rng = np.random.default_rng(0)
    records = [_record(f"g{g}", f"h{g}_{i}") for g in range(30) for i in range(int(rng.integers(1, 20)))]
    records.append(_record("g7", "shared"))
    records.append(_record("g21", "shared"))  # same audio in two groups: they must go together

    splits = split_by_group(records, {"train": 0.7, "val": 0.1, "test": 0.2}, seed=42)

    assert splits == split_by_group(records, {"train": 0.7, "val": 0.1, "test": 0.2}, seed=42)
    assert set(splits) == {r.group for r in records} and set(splits.values()) == {"train", "val", "test"}
    by_hash: dict[str, set[str]] = {}
    for r in records:
        by_hash.setdefault(r.sha256, set()).add(splits[r.group])
    assert all(len(s) == 1 for s in by_hash.values())
    assert splits["g7"] == splits["g21"]
    share = {s: sum(splits[r.group] == s for r in records) / len(records) for s in ("train", "val", "test")}
    assert abs(share["train"] - 0.7) < 0.1 and abs(share["test"] - 0.2) < 0.1
    with pytest.raises(ValueError, match="sum to 1"):
        split_by_group(records, {"train": 0.5}, seed=1)
