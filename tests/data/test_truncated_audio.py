"""Audio files cut short (an interrupted download): the header promises more than decodes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from clapcap.data.audio import AudioError, audio_info
from clapcap.data.readers import read_clotho

SR = 16000
SECONDS = 8.57
# (file name, libsndfile format, subtype, seconds that decode from the first third of the bytes,
# or None where the container states no length: Ogg)
FORMATS = [
    ("clip.wav", "WAV", "PCM_16", 2.856),
    ("clip.wav", "WAV", "FLOAT", 2.856),
    ("clip.aiff", "AIFF", "PCM_16", 2.856),
    ("clip.flac", "FLAC", "PCM_16", None),
    ("clip.mp3", "MP3", "MPEG_LAYER_III", None),
    ("clip.ogg", "OGG", "VORBIS", None),
]


def _encoded(path: Path, fmt: str, subtype: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(SECONDS * SR)) / SR
    wave = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.random.default_rng(0).standard_normal(t.size)
    sf.write(str(path), wave.astype(np.float32), SR, format=fmt, subtype=subtype)
    return path


def _cut(path: Path, fraction: float = 1 / 3) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * fraction)])
    return path


@pytest.mark.parametrize("name, fmt, subtype, decoded", FORMATS,
                         ids=["wav", "wav-float", "aiff", "flac", "mp3", "ogg"])
def test_truncated_file_is_refused_naming_promise_and_decoded(tmp_path, name, fmt, subtype, decoded):
    """Old code: the WAV, AIFF and Ogg passed as ~2.86 s clips, the FLAC and MP3 as 8.57 s clips
    whose end never decodes."""
    path = _encoded(tmp_path / name, fmt, subtype)
    assert audio_info(path, check_samples=True)[0] == pytest.approx(SECONDS, abs=1e-3)  # whole: accepted
    _cut(path)
    with pytest.raises(AudioError) as info:
        audio_info(path, check_samples=True)
    msg = str(info.value)
    assert msg.startswith(f"{path}: cut short")
    if fmt == "OGG":
        assert "no end-of-stream page" in msg
    else:
        assert "header promises 8.570 s" in msg
    if decoded is not None:
        assert f"only {decoded:.3f} s decode" in msg


def test_wav_cut_inside_a_chunk_after_the_audio_is_refused_naming_bytes(tmp_path):
    """The RIFF size is compared with the file size too, not only the data chunk's."""
    path = _encoded(tmp_path / "clip.wav", "WAV", "PCM_16")
    data = bytearray(path.read_bytes())
    listing = b"LIST" + (100).to_bytes(4, "little") + b"INFO" + b"x" * 96
    data += listing
    data[4:8] = (len(data) - 8).to_bytes(4, "little")
    path.write_bytes(bytes(data[:-50]))
    with pytest.raises(AudioError, match=r"cut short: its RIFF header promises 274392 bytes, the file holds "
                                         r"274342 \(chunk 'LIST' ends past the end\)"):
        audio_info(path, check_samples=True)


def test_streamed_wav_with_unknown_sizes_is_accepted(tmp_path):
    """A WAV written to a pipe leaves its sizes as 0xFFFFFFFF (unknown): not a cut."""
    path = _encoded(tmp_path / "clip.wav", "WAV", "PCM_16")
    data = bytearray(path.read_bytes())
    data[4:8] = data[40:44] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(data))
    assert audio_info(path, check_samples=True)[0] == pytest.approx(SECONDS, abs=1e-3)


def test_truncated_file_is_refused_at_prepare_naming_clip_and_row(tmp_path, make_clotho):
    root = make_clotho(tmp_path / "ds")
    _cut(_encoded(root / "audio" / "clip1.wav", "WAV", "PCM_16"))
    with pytest.raises(AudioError, match=r"audio/clip1.wav: cut short: its header promises 8.570 s but only "
                                         r"2.856 s decode .*\(clip 'clip1', listed in .*captions.csv: row 3\)"):
        read_clotho(root, root / "captions.csv")
    df, report = read_clotho(root, root / "captions.csv", on_error="skip")
    assert list(df["clip_id"]) == ["clip0", "clip2"] and len(report.skipped) == 1


def test_real_mp3s_pass(tmp_path):
    """The CC0 recordings (some with a LAME Info header, some without) are whole."""
    from clapcap.data.real import ovos_animals_root

    for path in sorted(ovos_animals_root().glob("*.mp3")):
        audio_info(path, check_samples=True)
