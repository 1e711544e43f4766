"""Fixtures of the pairwise tests: a tiny pairs file with real WAV audio."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import soundfile as sf


@pytest.fixture
def study(tmp_path) -> dict[str, Path]:
    """Two systems' predictions, a reference split with audio, and a pairs file (3 items x 3 pairs)."""
    from clapcap.pairwise.pairs import build_pairs_file

    audio_dir = tmp_path / "audio"
    audio_dir.mkdir()
    rows = []
    rng = np.random.default_rng(0)
    for i in range(3):
        clip = f"clip{i}"
        sf.write(audio_dir / f"{clip}.wav", 0.1 * rng.standard_normal(8000).astype("float32"), 16000)
        rows.append({"clip_id": clip, "caption": f"a dog barks {i}", "audio_path": f"audio/{clip}.wav"})
        rows.append({"clip_id": clip, "caption": f"second reference {i}", "audio_path": f"audio/{clip}.wav"})
    split = tmp_path / "split.csv"
    pd.DataFrame(rows).to_csv(split, index=False)
    gpt2 = tmp_path / "gpt2.json"
    t5 = tmp_path / "t5.json"
    gpt2.write_text(json.dumps({f"clip{i}": f"a dog is barking, take {i}" for i in range(3)}))
    t5.write_text(json.dumps({f"clip{i}": f"music plays, take {i}" for i in range(4)}))
    pairs = tmp_path / "pairs.csv"
    build_pairs_file({"gpt2": gpt2, "t5": t5}, split, pairs)
    return {"pairs": pairs, "split": split, "gpt2": gpt2, "t5": t5, "root": tmp_path}
