"""``params.yaml`` sections of the encoder stages, parsed with :func:`clapcap.config.load_section`.

- ``embed``: :class:`EmbedParams` (embedding dumps, one per encoder x dataset x split),
- ``embed_pretrained``: :class:`EmbedPretrainedParams` (the real pretrained encoders' dumps),
- ``checkpoint_identity``: :class:`IdentityParams` (laion_clap vs HF conversion check).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from clapcap.encoders.base import EncoderConfig, PretrainedEncoderConfig
from clapcap.retrieval.identity import check_thresholds


@dataclass
class EmbedParams:
    """Section ``embed``: encoders and datasets to dump (``pipelines/embed.py``)."""

    out_dir: str = "data/embeddings"
    datasets: dict[str, str] = field(default_factory=lambda: {"corpus": "data/corpus"})
    splits: list[str] = field(default_factory=lambda: ["test"])
    caption_columns: list[str] = field(default_factory=lambda: ["captions"])
    encoders: dict[str, EncoderConfig] = field(default_factory=dict)
    # The encoders the DVC ``embed`` matrix builds (dvc.yaml reads this list; None = all of
    # ``encoders``): the study switch leaves out dumps that only a full-study stage reads.
    build: list[str] | None = None
    # Per-encoder ``splits``, for a dump that only some splits' readers need (the random
    # CLAP's dumps are read on the test split only).
    encoder_splits: dict[str, list[str]] = field(default_factory=dict)
    # The splits whose caption columns other than ``captions`` (the paraphrase views) are
    # dumped; None = every split. A view dump of a pretrained text tower costs its captions'
    # time again (measured: 42 s per column of the train split with the MiniLM CLAP).
    view_splits: list[str] | None = None

    def __post_init__(self) -> None:
        for key, names in (("build", self.build or []), ("encoder_splits", list(self.encoder_splits))):
            stray = [n for n in names if n not in self.encoders]
            if stray:
                raise ValueError(f"embed.{key}: {stray} not in embed.encoders {sorted(self.encoders)}")

    def columns_of(self, split: str) -> list[str]:
        """The caption columns dumped for ``split``."""
        if self.view_splits is None or split in self.view_splits:
            return list(self.caption_columns)
        return [c for c in self.caption_columns if c == "captions"]

    def splits_of(self, encoder: str) -> list[str]:
        """The splits dumped for ``encoder``."""
        return list(self.encoder_splits.get(encoder, self.splits))


@dataclass
class EmbedPretrainedParams:
    """Sections ``embed_pretrained``, ``real_embed_pretrained``: each pretrained encoder's dumps
    of one dataset's splits, at ``<out_dir>/<encoder>/<dataset>/<split>.npz`` (the layout the
    captioning study reads). ``datasets``: encoder -> the dataset it embeds instead of
    ``dataset_dir``, the folder ``<datasets_dir>/<dataset>``: each specialist on the subset it
    is specialised for."""

    dataset_dir: str = "data/music"
    dataset: str = "music"
    out_dir: str = "data/embeddings"
    splits: list[str] = field(default_factory=lambda: ["train", "val", "test"])
    encoders: dict[str, PretrainedEncoderConfig] = field(default_factory=dict)
    datasets: dict[str, str] = field(default_factory=dict)
    datasets_dir: str = ""

    def __post_init__(self) -> None:
        stray = sorted(set(self.datasets) - set(self.encoders))
        if stray:
            raise ValueError(f"datasets: {stray} are not among the encoders {sorted(self.encoders)}")
        if self.datasets and not self.datasets_dir:
            raise ValueError("datasets: needs datasets_dir, the folder that holds those datasets")

    def dataset_of(self, encoder: str) -> tuple[str, str]:
        """The folder ``encoder`` embeds and its dataset name in the dump paths."""
        if encoder in self.datasets:
            return str(Path(self.datasets_dir) / self.datasets[encoder]), self.datasets[encoder]
        return self.dataset_dir, self.dataset


@dataclass
class IdentityParams:
    """Section ``checkpoint_identity``: embed the same clips with laion_clap and HF, compare.

    The conversion self-test always runs: random laion weights (``seed``) saved as
    ``<out_dir>/laion_random.pt``, converted to ``<out_dir>/hf_converted`` with
    :func:`clapcap.encoders.convert.convert_laion_checkpoint`, must embed the same; a
    differently initialised control must not. ``laion_checkpoint`` (a laion_clap ``.pt``) and
    optionally ``hf_checkpoint`` (a ``save_pretrained`` folder or a hub id; empty = clapcap's
    conversion of ``laion_checkpoint``) add the comparison of the user's checkpoints, a
    finding that fails the stage only with ``gate_identity``. ``hf_revision`` is the hub
    branch, tag or commit of a hub-id ``hf_checkpoint`` (empty = ``main``); the commit it
    resolves to, and the ``.pt``'s SHA-256, are recorded in the finding. The verdict thresholds are
    :func:`clapcap.retrieval.identity.checkpoint_identity`'s.
    """

    dataset_dir: str = "data/corpus"
    split: str = "test"
    max_clips: int = 8
    out_dir: str = "results/checkpoint_identity"
    hf_home: str = ""
    laion_checkpoint: str = ""
    hf_checkpoint: str = ""
    hf_revision: str = ""
    enable_fusion: bool = False
    seed: int = 0
    cos_threshold: float = 0.99
    pearson_threshold: float = 0.999
    max_abs_diff_threshold: float = 1e-3
    gate_identity: bool = False

    def __post_init__(self) -> None:
        check_thresholds(cos_threshold=self.cos_threshold, pearson_threshold=self.pearson_threshold,
                         max_abs_diff_threshold=self.max_abs_diff_threshold)
        if self.hf_checkpoint and not self.laion_checkpoint:
            raise ValueError("checkpoint_identity.hf_checkpoint: compared with laion_checkpoint, which is empty; "
                             "set laion_checkpoint to a laion_clap .pt (e.g. 630k-audioset-fusion-best.pt with "
                             "enable_fusion: true)")
        if self.hf_revision and not self.hf_checkpoint:
            raise ValueError("checkpoint_identity.hf_revision: the revision of hf_checkpoint, which is empty")
        if self.gate_identity and not self.laion_checkpoint:
            raise ValueError("checkpoint_identity.gate_identity: gates the comparison of your checkpoints, "
                             "but laion_checkpoint is empty (the self-test always gates)")
