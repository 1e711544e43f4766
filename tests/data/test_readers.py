"""Every dataset reader on fixture files in the real formats."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clapcap.data.audio import AudioError
from clapcap.data.manifest import ManifestError, read_manifest, write_manifest
from clapcap.data.readers import read_audiocaps, read_clotho, read_folder, read_musiccaps

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"


def _wav(path: Path, seconds: float = 1.0, sr: int = 16000) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    sf.write(str(path), (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32), sr,
             format="FLAC" if path.suffix == ".flac" else "WAV")


def test_clotho_reader(tmp_path):
    for name in ("rain_on_roof.wav", "birds_morning.wav", "door, creak.wav"):
        _wav(tmp_path / "audio" / name, 1.5, 44100)
    df, report = read_clotho(tmp_path, FIXTURES / "clotho_captions.csv", split="test")
    assert list(df["clip_id"]) == ["rain_on_roof", "birds_morning", "door, creak"]
    assert all(len(c) == 5 for c in df["captions"])
    assert df["sample_rate"].tolist() == [44100] * 3
    assert df["duration_s"].iloc[0] == pytest.approx(1.5)
    assert set(df["split"]) == {"test"} and not report.skipped
    out = write_manifest(df, tmp_path / "manifest.csv")
    back = read_manifest(out)
    assert back["captions"].iloc[2][0] == "A door creaks open slowly."


def test_clotho_missing_file_raises_or_is_listed(tmp_path):
    _wav(tmp_path / "audio" / "rain_on_roof.wav")
    with pytest.raises(AudioError, match="birds_morning.wav: file not found"):
        read_clotho(tmp_path, FIXTURES / "clotho_captions.csv")
    df, report = read_clotho(tmp_path, FIXTURES / "clotho_captions.csv", on_error="skip")
    assert list(df["clip_id"]) == ["rain_on_roof"]
    assert [Path(s["path"]).name for s in report.skipped] == ["birds_morning.wav", "door, creak.wav"]
    assert all(s["reason"] == "file not found" for s in report.skipped)


def test_audiocaps_groups_captions_per_clip(tmp_path):
    for ytid in ("r1nicOVtvkQ", "UDGBjjwyaqE"):
        _wav(tmp_path / "audio" / f"{ytid}.wav")
    _wav(tmp_path / "audio" / "3CnRRs2p9dA.flac")
    df, _ = read_audiocaps(tmp_path, FIXTURES / "audiocaps_train.csv")
    assert len(df) == 3
    row = df.set_index("clip_id").loc["UDGBjjwyaqE"]
    assert row["captions"] == ["Multiple clanging and clanking sounds", "Metal objects clank against each other"]
    assert row["meta"]["audiocap_ids"] == [58146, 58147]
    assert df.set_index("clip_id").loc["3CnRRs2p9dA", "audio_path"] == "audio/3CnRRs2p9dA.flac"


def test_musiccaps_flags_and_aspects(tmp_path):
    for ytid in ("-0Gj8-vB1q4", "-0SdAVK79lg"):
        _wav(tmp_path / "audio" / f"{ytid}.wav", 10.0, 16000)
    df, _ = read_musiccaps(tmp_path, FIXTURES / "musiccaps.csv")
    assert df["is_audioset_eval"].tolist() == [True, False]
    assert df["meta"].iloc[0]["aspect_list"][1] == "sustained strings melody"
    assert df["meta"].iloc[1]["is_balanced_subset"] is True
    written = read_manifest(write_manifest(df, tmp_path / "m.csv"))
    assert written["is_audioset_eval"].tolist() == [True, False]


def test_musiccaps_missing_column_is_named(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("ytid,caption\nabc,hello\n")
    with pytest.raises(ManifestError, match=r"missing column\(s\) \['start_s'"):
        read_musiccaps(tmp_path, bad)


def test_folder_reader_with_metadata(tmp_path):
    _wav(tmp_path / "clips" / "beep.wav")
    _wav(tmp_path / "clips" / "hum.flac", 2.0, 22050)
    shutil.copy(FIXTURES / "folder_metadata.csv", tmp_path / "metadata.csv")
    df, _ = read_folder(tmp_path, tmp_path / "metadata.csv", source="mine")
    assert df["captions"].tolist() == [["A short beep.", "A quick electronic tone."], ["A low hum."]]
    assert df["split"].tolist() == ["train", "test"]
    assert df["labels"].iloc[1] == ["hum", "drone"]
    assert df["sample_rate"].tolist() == [16000, 22050]


def test_folder_reader_refuses_path_escape(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    _wav(tmp_path / "outside.wav")
    (root / "meta.csv").write_text("file_name,caption\n../outside.wav,escaped\n")
    with pytest.raises(ManifestError, match="outside the dataset root"):
        read_folder(root, root / "meta.csv")


@pytest.mark.parametrize("bad,reason", [(np.nan, "NaN sample"), (np.inf, "infinite sample")])
def test_non_finite_audio_raises_or_is_listed(tmp_path, make_clotho, bad, reason):
    """Old code read only the header: such a file passed prepare and validate, then broke embed."""
    root = make_clotho(tmp_path / "ds")
    wave = np.zeros(16000, dtype=np.float32)
    wave[8000] = bad
    sf.write(str(root / "audio" / "clip1.wav"), wave, 16000, subtype="FLOAT")
    with pytest.raises(AudioError, match=rf"clip1.wav: {reason}\(s\), first at frame 8000 \(0.500 s\)"):
        read_clotho(root, root / "captions.csv")
    df, report = read_clotho(root, root / "captions.csv", on_error="skip")
    assert list(df["clip_id"]) == ["clip0", "clip2"]
    assert [Path(s["path"]).name for s in report.skipped] == ["clip1.wav"]


def test_only_float_files_are_decoded_for_the_sample_check(tmp_path, make_clotho, write_wav, monkeypatch):
    from clapcap.data import audio

    root = make_clotho(tmp_path / "ds")  # PCM_16: cannot hold NaN, so never decoded
    write_wav(root / "audio" / "clip2.wav", subtype="FLOAT")
    decoded = []
    monkeypatch.setattr(audio, "_check_finite", lambda path, sr: decoded.append(path.name))
    df, _ = read_clotho(root, root / "captions.csv")
    assert len(df) == 3 and decoded == ["clip2.wav"]


@pytest.mark.parametrize("blank", ["", "   "])
def test_clotho_blank_caption_is_refused_naming_row_and_column(tmp_path, make_clotho, blank):
    """Old code kept clip1 with four captions, silently (AudioCaps refused the same case)."""
    root = make_clotho(tmp_path / "ds")
    csv = root / "captions.csv"
    csv.write_text(csv.read_text().replace("tone number 1 variant 2", blank))
    for on_error in ("raise", "skip"):  # a malformed row, not a bad audio file: always refused
        with pytest.raises(ManifestError, match=r"captions.csv: row 3 \(clip1.wav\): empty caption in "
                                                r"column\(s\) caption_3; a Clotho row has five captions"):
            read_clotho(root, csv, on_error=on_error)


def test_folder_one_subfolder_per_class_gives_clip_ids_by_relative_path(tmp_path):
    """Old code: ``x/rec.wav`` and ``y/rec.wav`` were both clip 'rec' ("already on row 2")."""
    for rel in ("x/rec.wav", "y/rec.wav", "top.wav"):
        _wav(tmp_path / rel)
    (tmp_path / "meta.csv").write_text("file_name,caption\nx/rec.wav,a bark\ny/rec.wav,a meow\ntop.wav,a hum\n")
    df, _ = read_folder(tmp_path, tmp_path / "meta.csv")
    assert df["clip_id"].tolist() == ["x/rec", "y/rec", "top"]  # a top-level file keeps its stem
    assert df["audio_path"].tolist() == ["x/rec.wav", "y/rec.wav", "top.wav"]


AUDIOCAPS_HEADER = "audiocap_id,youtube_id,start_time,caption\n"


def test_audiocaps_one_video_with_two_segments_is_refused_naming_both_rows(tmp_path):
    """Old code merged the two segments into one clip (the second start_time was lost)."""
    _wav(tmp_path / "audio" / "vid.wav")
    (tmp_path / "ac.csv").write_text(AUDIOCAPS_HEADER + "1,vid,10,a dog\n2,vid,10,a dog barks\n3,vid,40,a car\n")
    with pytest.raises(ManifestError, match=r"ac.csv: row 4 \(vid\): start_time 40 differs from 10 on row 2 "
                                            r"\(the same youtube_id\)"):
        read_audiocaps(tmp_path, tmp_path / "ac.csv")
    (tmp_path / "ok.csv").write_text(AUDIOCAPS_HEADER + "1,vid,10,a dog\n2,vid,10.0,a dog barks\n")
    df, _ = read_audiocaps(tmp_path, tmp_path / "ok.csv")  # one segment written two ways
    assert df["captions"].tolist() == [["a dog", "a dog barks"]]


def test_audiocaps_duplicate_audiocap_id_is_refused_naming_both_rows(tmp_path):
    """Old code accepted it (one caption id for two captions)."""
    for ytid in ("a", "b"):
        _wav(tmp_path / "audio" / f"{ytid}.wav")
    (tmp_path / "ac.csv").write_text(AUDIOCAPS_HEADER + "7,a,0,a dog\n8,b,0,a car\n007,b,0,a car passes\n")
    with pytest.raises(ManifestError, match=r"ac.csv: row 4 \(b\): audiocap_id 7 is already on row 2; "
                                            r"each caption has its own id"):
        read_audiocaps(tmp_path, tmp_path / "ac.csv")


def test_readers_doc_names_no_option_that_does_not_exist():
    import inspect

    from clapcap.data import readers

    assert "name_pattern" not in inspect.getsource(readers)
