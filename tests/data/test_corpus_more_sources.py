"""More real-corpus source readers (issue 41), each on a tiny package built here in the real
layout (installed paths, a DEP-5 copyright with several paragraphs, real audio written with
soundfile): 0 A.D. and OpenArena zips, MegaGlest animals, Hydrogen guitar strums, the Sonic Pi
and LMMS sample libraries, avldrums kit renders and MuseScore's own-sample programs."""

from __future__ import annotations

import csv
import gzip
import io
import zipfile
from pathlib import Path

import pytest
from tests.data.test_corpus_sources import DEP5, _audio, _doc, _hashes_match, _rows
from tests.support.tiny_sf2 import tiny_sf2

from clapcap.data.corpus import (
    Licences,
    hydrogen_clips,
    lmms_clips,
    megaglest_clips,
    musescore_programs,
    openarena_clips,
    render_kit,
    sonic_pi_clips,
    zero_ad_clips,
)
from clapcap.data.corpus.words import effect_caption, is_event, path_words


def _zip(path: Path, members: dict[str, float], src: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, freq in members.items():
            archive.write(_audio(src / name, freq), name)


def test_zero_ad_effects_are_read_in_public_zip(tmp_path):
    archive = "usr/share/games/0ad/mods/public/public.zip"
    _zip(tmp_path / archive, {"audio/actor/fauna/animal/sheep_10.ogg": 300, "audio/interface/alarm/alarm_1.ogg": 310,
                              "audio/actor/fauna/animal/horse_select1.ogg": 320,
                              "audio/attack/impact/arrow_wood_01.ogg": 330,
                              "audio/resource/mining/mine_stone_22.ogg": 340, "art/x.ogg": 350}, tmp_path / "src")
    _doc(tmp_path, "0ad-data", DEP5 + "Files: *\nCopyright: 2010 Wildfire Games\nLicense: CC-BY-SA-3.0\n\n"
         "Files: binaries/data/mods/public/audio/attack/*\nCopyright: 2012 Someone\nLicense: CC0-1.0\n", "0.0.26-1")

    records = zero_ad_clips(tmp_path)

    wfg = ("CC-BY-SA-3.0", "2010 Wildfire Games")
    assert _rows(records) == sorted([
        (archive, "audio/actor/fauna/animal/sheep_10.ogg", ("a sheep bleating",), ("sheep",), "effects", "0ad-data",
         *wfg, None, None),
        (archive, "audio/attack/impact/arrow_wood_01.ogg", ("an arrow hitting wood",), ("arrow", "wood"), "effects",
         "0ad-data", "CC0-1.0", "2012 Someone", None, None),
        (archive, "audio/resource/mining/mine_stone_22.ogg", ("stone being mined",), ("mine stone",), "effects",
         "0ad-data", *wfg, None, None),
    ])
    assert {r.version for r in records} == {"0.0.26-1"} and _hashes_match(tmp_path, records)


def test_openarena_keeps_known_nouns_and_drops_events(tmp_path):
    base, mission = "usr/share/games/openarena/baseoa/pak0.pk3", "usr/share/games/openarena/missionpack/mp-pak0.pk3"
    _zip(tmp_path / base, {"sound/weapons/shotgun/sshotf1b.wav": 300, "sound/weapons/machinegun/ric1.wav": 310,
                           "sound/misc/menu1.wav": 320, "sound/weapons/bfg/bfg_fire.wav": 330,
                           "sound/player/footsteps/boot1.wav": 340, "sound/world/clack.wav": 350}, tmp_path / "a")
    _zip(tmp_path / mission, {"sound/items/cl_guard.wav": 360, "sound/voices/rott/fight.ogg": 370}, tmp_path / "b")
    _doc(tmp_path, "openarena-data", DEP5 + "Files: *\nCopyright: 2005-2012 OpenArena Team\nLicense: GPL-2+\n\n"
         "Files: pak0/sound/player/*\nCopyright: 2008 Step Maker\nLicense: CC0-1.0\n", "0.8.5split-14")

    records = openarena_clips(tmp_path)

    team = ("GPL-2+", "2005-2012 OpenArena Team")
    assert _rows(records) == sorted([
        (base, "sound/weapons/shotgun/sshotf1b.wav", ("a shotgun firing",), ("shotgun",), "effects", "openarena-data",
         *team, None, None),
        (base, "sound/weapons/machinegun/ric1.wav", ("a bullet ricocheting",), ("machinegun ric",), "effects",
         "openarena-data", *team, None, None),
        (base, "sound/player/footsteps/boot1.wav", ("footsteps",), ("footsteps",), "effects", "openarena-data",
         "CC0-1.0", "2008 Step Maker", None, None),
    ])


def test_megaglest_reads_animals_once(tmp_path):
    data = tmp_path / "usr/share/games/megaglest"
    wolf = _audio(data / "tilesets/forest/sounds/wolf.wav", 300)
    (data / "tilesets/meadow/sounds").mkdir(parents=True)
    (data / "tilesets/meadow/sounds/wolf.wav").write_bytes(wolf.read_bytes())  # the same file in two tilesets
    _audio(data / "tilesets/forest/sounds/rain.ogg", 310)
    units = data / "techs/megapack/factions"
    _audio(units / "persian/units/sheep/sounds/sheep1.wav", 320)
    _audio(units / "tech/units/cow/sounds/cow_select1.wav", 330)
    _audio(data / "techs/megapack/commondata/sounds/horseman_die1.wav", 340)
    _audio(data / "techs/megapack/commondata/sounds/pig_die1.wav", 350)
    _doc(tmp_path, "megaglest-data", DEP5 + "Files: *\nCopyright: 2008-2017 The MegaGlest Team\n"
         "License: CC-BY-SA-3.0\n\nFiles: techs/*\nCopyright: 2010 Unit Maker\nLicense: GPL-2+\n", "3.13.0-3")

    records = megaglest_clips(tmp_path)

    base = "usr/share/games/megaglest/"
    unit = ("GPL-2+", "2010 Unit Maker")
    assert _rows(records) == sorted([
        (base + "techs/megapack/commondata/sounds/pig_die1.wav", None, ("a pig dying",), ("pig", "die"), "effects",
         "megaglest-data", *unit, None, None),
        (base + "techs/megapack/factions/persian/units/sheep/sounds/sheep1.wav", None, ("a sheep bleating",),
         ("sheep",), "effects", "megaglest-data", *unit, None, None),
        (base + "tilesets/forest/sounds/wolf.wav", None, ("a wolf howling",), ("wolf",), "effects", "megaglest-data",
         "CC-BY-SA-3.0", "2008-2017 The MegaGlest Team", None, None),
    ])


def test_hydrogen_guitar_strums_named_by_chord(tmp_path):
    kit = tmp_path / "usr/share/hydrogen/data/drumkits/belofilms_GuitarStrums"
    for i, name in enumerate(["Asharp minro7b5_UP_00.flac", "Cmajor_00.flac", "Cmajor_01.flac"]):
        _audio(kit / name, 300 + 30 * i)
    kit.joinpath("drumkit.xml").write_text(
        '<drumkit_info xmlns="http://www.hydrogen-music.org/drumkit"><name>belofilms.com - AC-Guitar-Strums (flac)'
        "</name><instrumentList><instrument><name>\\\\\\\\ B Key \\\\\\\\ </name></instrument>"
        "<instrument><name>A#min7b5  / B7</name><layer><filename>Asharp minro7b5_UP_00.flac</filename>"
        "<min>0</min><max>1</max></layer></instrument><instrument><name>**Cmajor C1-F5-G4</name>"
        "<layer><filename>Cmajor_00.flac</filename><min>0</min><max>0.2</max></layer>"
        "<layer><filename>Cmajor_01.flac</filename><min>0</min><max>1</max></layer></instrument>"
        "</instrumentList></drumkit_info>")
    _doc(tmp_path, "hydrogen-drumkits-effects", DEP5 + "Files: drumkits/ElectricEmpireKit.h2drumkit\nCopyright: A\n"
         "License: GPL-2+\n\nFiles: drumkits/belofilms_GuitarStrums.h2drumkit\nCopyright: Gabriel Verdugo Soto\n"
         "License: CC-BY-3.0\n")

    records = hydrogen_clips(tmp_path, "hydrogen-drumkits-effects")

    base, group = str(kit.relative_to(tmp_path)) + "/", "hydrogen-drumkits-effects/belofilms_GuitarStrums"
    lic = ("CC-BY-3.0", "Gabriel Verdugo Soto")
    c_major = ("an acoustic guitar strumming a C major chord", "a strummed C major chord")
    assert _rows(records) == sorted([
        (base + "Asharp minro7b5_UP_00.flac", None, ("an acoustic guitar strumming an A sharp minor seven flat five "
         "chord", "a strummed A sharp minor seven flat five chord"), ("acoustic guitar", "chord"), "instruments",
         group, *lic, None, None),
        (base + "Cmajor_00.flac", None, c_major, ("acoustic guitar", "chord"), "instruments", group, *lic, None, None),
        (base + "Cmajor_01.flac", None, c_major, ("acoustic guitar", "chord"), "instruments", group, *lic, None, None),
    ])


def test_sonic_pi_and_lmms_sample_libraries(tmp_path):
    spi = tmp_path / "spi/usr/share/sonic-pi/samples"
    names = ["drum_tom_mid_soft.flac", "tabla_na.flac", "loop_tabla.flac", "loop_amen.flac", "ambi_choir.flac",
             "vinyl_scratch.flac", "elec_blip.flac", "elec_wood.flac"]
    for i, name in enumerate(names):
        _audio(spi / name, 300 + 20 * i)
    _doc(tmp_path / "spi", "sonic-pi-samples", DEP5 + "Files: *\nCopyright: 2016 Samuel Aaron\nLicense: MIT\n\n"
         "Files: etc/samples/ambi_choir.flac\nCopyright: 2013 Exsomniel\nLicense: CC0\n")
    lmms = tmp_path / "lmms/usr/share/lmms/samples"
    for i, name in enumerate(["drums/hihat_opened01.ogg", "instruments/violin_pizzicato01.ogg", "shapes/moog.wav",
                              "misc/applause01.ogg"]):
        _audio(lmms / name, 500 + 20 * i)
    _doc(tmp_path / "lmms", "lmms-common", DEP5 + "Files: *\nCopyright: 2004-2014 LMMS Developers\nLicense: GPL-2+\n\n"
         "Files: plugins/opl2/*\nCopyright: X\nLicense: LGPL-2.1+\n")

    spi_records, lmms_records = sonic_pi_clips(tmp_path / "spi"), lmms_clips(tmp_path / "lmms")

    s, mit, group = "usr/share/sonic-pi/samples/", ("MIT", "2016 Samuel Aaron"), "sonic-pi-samples"
    assert _rows(spi_records) == sorted([
        (s + "drum_tom_mid_soft.flac", None, ("a soft mid tom drum hit", "the sound of a mid tom drum"), ("tom drum",),
         "drums", group, *mit, None, None),
        (s + "tabla_na.flac", None, ("a tabla hit", "the sound of a tabla"), ("tabla",), "drums", group, *mit, None,
         None),
        (s + "loop_tabla.flac", None, ("a tabla loop",), ("tabla loop",), "drums", group, *mit, None, None),
        (s + "ambi_choir.flac", None, ("a choir singing",), ("choir",), "instruments", group, "CC0", "2013 Exsomniel",
         None, None),
        (s + "vinyl_scratch.flac", None, ("a vinyl record scratching",), ("vinyl", "scratch"), "effects", group, *mit,
         None, None),
    ])
    x, gpl = "usr/share/lmms/samples/", ("GPL-2+", "2004-2014 LMMS Developers")
    assert _rows(lmms_records) == sorted([
        (x + "drums/hihat_opened01.ogg", None, ("an open hi-hat hit", "the sound of an open hi-hat"), ("hi-hat",),
         "drums", "lmms-common", *gpl, None, None),
        (x + "instruments/violin_pizzicato01.ogg", None, ("a violin playing pizzicato",), ("violin", "pizzicato"),
         "instruments", "lmms-common", *gpl, None, None),
        (x + "misc/applause01.ogg", None, ("applause",), ("applause",), "effects", "lmms-common", *gpl, None, None),
    ])
    assert _hashes_match(tmp_path / "spi", spi_records) and _hashes_match(tmp_path / "lmms", lmms_records)


def test_drum_kit_renders_from_the_sample_names(tmp_path):
    for kit in ("Tiny_Kit.sf2", "Black_Pearl_4_LV2.sf2"):
        sf2 = tmp_path / "usr/share/sounds/sf2" / kit
        sf2.parent.mkdir(parents=True, exist_ok=True)
        sf2.write_bytes(tiny_sf2(program=0, sample="36-Pearl22Kick-1"))
    _doc(tmp_path, "avldrums.lv2-soundfont", DEP5 + "Files: *\nCopyright: 2013-2021 Robin Gareus\nLicense: GPL-2+\n\n"
         "Files: sf2/*\nCopyright: 2015 Glen MacArthur\nLicense: CC-BY-SA-3.0\n", "0.5.2-2")

    clips = render_kit(tmp_path, "avldrums.lv2-soundfont", "usr/share/sounds/sf2/Tiny_Kit.sf2", velocities=[30, 110],
                       seconds=0.2, tail_s=0.1)
    pearl = render_kit(tmp_path, "avldrums.lv2-soundfont", "usr/share/sounds/sf2/Black_Pearl_4_LV2.sf2",
                       velocities=[80], seconds=0.2, tail_s=0.1)

    assert [c.record.captions for c in clips] == [("a soft kick drum hit", "the sound of a kick drum"),
                                                  ("a hard kick drum hit", "the sound of a kick drum")]
    assert {(r.group, r.licence, r.copyright, r.family, r.labels, r.is_render, r.version) for r in
            (c.record for c in clips)} == {("avldrums.lv2-soundfont/Tiny_Kit.sf2", "CC-BY-SA-3.0", "2015 Glen MacArthur",
                                            "drums", ("kick drum",), True, "0.5.2-2")}
    assert clips[0].record.render.startswith("bank 0 program 0 note 36 velocity 30")
    # the kit whose recordings hydrogen-drumkits also holds shares that kit's split group
    assert [c.record.group for c in pearl] == ["hydrogen-drumkits/The Black Pearl 1.0"]


def test_musescore_programs_with_their_own_samples(tmp_path):
    doc = tmp_path / "usr/share/doc/musescore-general-soundfont"
    doc.mkdir(parents=True)
    rows = [["Bank #", "Expr. Bank #", "Preset #", "Preset Name", "Details", "Sample Credit"],
            ["0", "", "0", "Grand Piano", "Splendid Grand", "Samples: AKAI"],
            ["0", "", "1", "Bright Grand Piano", "same info as 000:000 Grand Piano", ""],
            ["0", "", "25", "Steel String Guitar", "", "mix of samples by S. Christian Collins / Frank Wen"],
            ["0", "", "73", "Flute", "", ""], ["0", "", "52", "Choir Aahs", "", "Samples: someone"],
            ["20", "", "48", "Violins Fast", "", "VSCO"]]
    text = io.StringIO()
    csv.writer(text).writerows(rows)
    with gzip.open(doc / "MuseScore_General_HQ_Sample_Sources.csv.gz", "wt") as handle:
        handle.write("sep=,\n" + text.getvalue())
    (doc / "copyright").write_text("MuseScore_General_HQ SoundFont (MIT, parts PD or CC0):\nAdaptation for "
                                   "MuseScore_General Copyright 2018 S. Christian Collins\nPermission is hereby "
                                   "granted, free of charge, to any person\n")

    # FluidR3's own flute (73), a Frank Wen mix (25), a voice (52) and bank 20 are left out
    assert musescore_programs(tmp_path) == [0, 1]
    assert Licences(tmp_path, "musescore-general-soundfont").of("MuseScore_General_Full.sf3")[0] == "MIT"


@pytest.mark.parametrize("name,caption", [
    ("impact/shield_metal_01.ogg", "a metal shield being hit"),
    ("weapon/arrowfly_01.ogg", "an arrow flying"),
    ("human/death/male_death_12.ogg", "a man dying"),
    ("fauna/animal/cattle_01.ogg", "cattle mooing"),
])
def test_lexicon_for_the_new_games(name, caption):
    words = path_words(name)
    assert not is_event(words) and effect_caption(words)[0] == (caption,)


@pytest.mark.parametrize("name", ["fauna/animal/elephant_trained.ogg", "units/pig/sounds/pig_ack3.wav",
                                  "gathering/gather_fruitexpire_1.ogg", "misc/ar1_pkup.wav"])
def test_the_filter_drops_the_new_game_events(name):
    assert is_event(path_words(name))
