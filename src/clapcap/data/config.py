"""``params.yaml`` section ``data``: where the corpus comes from and how it is split and checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from clapcap.data.manifest import SPLITS
from clapcap.data.splits import SPLIT_SEED
from clapcap.data.synth import SynthConfig
from clapcap.errors import ConfigError


@dataclass
class ExternalSource:
    """A local copy of a real dataset. ``csv`` maps split name to its metadata CSV
    (relative to ``root``); a single ``all`` entry is split with ``split_fractions``."""

    root: str = ""
    csv: dict[str, str] = field(default_factory=dict)
    audio_dir: str = "audio"


@dataclass
class DataParams:
    """``params.yaml`` section ``data``."""

    source: Literal["synthetic", "clotho", "audiocaps", "musiccaps", "folder"] = "synthetic"
    out_dir: str = "data/corpus"
    synthetic: SynthConfig = field(default_factory=SynthConfig)
    external: ExternalSource = field(default_factory=ExternalSource)
    split_fractions: dict[str, float] = field(default_factory=lambda: {"train": 0.7, "val": 0.1, "test": 0.2})
    split_seed: int = SPLIT_SEED
    # How a single ``all`` CSV is split: by ``split_fractions``, or (MusicCaps) the clips flagged
    # ``is_audioset_eval`` are the test split and the rest are split into train and val in the
    # ratio of ``split_fractions``' train and val (clapcap.data.splits.split_by_flag).
    split_by: Literal["fractions", "is_audioset_eval"] = "fractions"
    on_error: Literal["raise", "skip"] = "raise"
    include_real_audio: bool = False
    min_duration_s: float = 0.5
    max_duration_s: float = 60.0
    allowed_sample_rates: list[int] = field(default_factory=lambda: [16000, 22050, 32000, 44100, 48000])

    def __post_init__(self) -> None:
        # Checked here, not first by assign_splits, so that the message names params.yaml
        # and the line (load_section) and nothing is synthesised or read before it.
        self._check_split_names()
        self._check_split_by()
        fractions = self.split_fractions
        for name, value in fractions.items():
            if not 0 <= value <= 1:  # also NaN
                raise ConfigError(f"data.split_fractions.{name}: expected a fraction in [0, 1], found {value}")
        if not abs(sum(fractions.values()) - 1.0) <= 1e-9:
            raise ConfigError(f"data.split_fractions: expected fractions that sum to 1, found {fractions} "
                              f"(sum {sum(fractions.values()):.12g})")

    def _check_split_by(self) -> None:
        if self.split_by == "fractions":
            return
        if self.source != "musiccaps" or set(self.external.csv) != {"all"}:
            raise ConfigError("data.split_by: is_audioset_eval splits one MusicCaps CSV (source: musiccaps, "
                              f"external.csv: {{all: ...}}), found source {self.source!r} and csv keys "
                              f"{sorted(self.external.csv)}", key="data.split_by")
        if not self.split_fractions.get("train", 0) + self.split_fractions.get("val", 0) > 0:
            raise ConfigError("data.split_fractions: split_by is_audioset_eval needs train or val > 0",
                              key="data.split_fractions")

    def _check_split_names(self) -> None:
        """Refuse a split name that is not train/val/test (``all`` for a single CSV), in
        ``external.csv`` and in ``split_fractions`` even where per-split CSVs leave them unused:
        a typo would otherwise fail later against the output, or pass silently."""
        allowed = ", ".join(SPLITS)
        for name in self.external.csv:
            if name != "all" and name not in SPLITS:
                key = f"data.external.csv.{name}"
                raise ConfigError(f"{key}: unknown split {name!r}; expected {allowed} or a single all", key=key)
        if "all" in self.external.csv and len(self.external.csv) > 1:
            key = f"data.external.csv.{next(n for n in self.external.csv if n != 'all')}"
            raise ConfigError(f"{key}: a single all entry (split by split_fractions) or per-split entries, "
                              f"not both", key=key)
        for name in self.split_fractions:
            if name not in SPLITS:
                key = f"data.split_fractions.{name}"
                raise ConfigError(f"{key}: unknown split {name!r}; expected {allowed}", key=key)
