"""The converted Whisper (encoder + decoder) transcribes real speech: the end-to-end check of the
CTranslate2 conversion (the fixture's source and licence: tests/fixtures/speech/README.md)."""

from __future__ import annotations

from pathlib import Path

from clapcap.data.audio import load_audio
from clapcap.encoders.whisper import transcribe

SPEECH = Path(__file__).resolve().parents[1] / "fixtures" / "speech" / "quick_brown_fox.flac"


def test_transcribes_the_quick_brown_fox(whisper_loaded):
    wave, sr = load_audio(SPEECH, 16000)
    assert sr == 16000 and 2.5 < wave.size / sr < 3.5
    assert transcribe(*whisper_loaded, wave) == "The quick brown fox jumps over the lazy dog."


def test_silence_is_not_transcribed_as_the_sentence(whisper_loaded):
    import numpy as np

    assert "quick brown fox" not in transcribe(*whisper_loaded, np.zeros(16000 * 3, np.float32), max_new_tokens=20)
