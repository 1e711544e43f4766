"""``params.yaml`` sections of the RobustCLAP stages (parsed with :func:`clapcap.config.load_section`).

- ``robust_paraphrase``: :class:`~clapcap.paraphrase.dataset.ParaphraseParams`
  (corpus views offline, or the two-step LLM backend);
- ``robust_text_store``: :class:`RobustTextStoreParams` (the base's frozen text layers, once);
- ``robust_train``: :class:`RobustTrainParams` (multi-view contrastive fine-tuning);
- the studies' sections (``robust_benchmark``, ``robust_seeds``) are
  :mod:`clapcap.experiments.robust.config`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clapcap.clap.optim import OptimConfig
from clapcap.robust.loss import MultiViewLossConfig

__all__ = ["MultiViewLossConfig", "RobustTextStoreParams", "RobustTrainParams"]


@dataclass
class RobustTrainParams:
    """Section ``robust_train``: fine-tune a CLAP with paraphrase views of the train split.

    Attributes:
        paraphrase_dir: output of ``robust_paraphrase`` (manifest with view columns).
        base_model: an HF ``ClapModel`` folder (the synthetic CLAP is ``models/synth_clap/model``).
        optim: the optimiser block (:class:`~clapcap.clap.optim.OptimConfig`: epochs, batch
            size, learning rate, weight decay, warm-up, seed).
        data_fraction: fraction of the train clips used (seeded subset), as the paper
            fine-tunes on a fraction of the pretraining data.
        extend_vocab: word-level tokenizers only (the tiny synthetic CLAP): add words of the
            *train* captions and views that the tokenizer lacks, so view-2 words are not
            ``<unk>`` (a subword tokenizer needs nothing; ignored there).
        freeze_audio: train only the text tower, projections and logit scales.
        text_trainable_layers: how much of the base's text tower trains: -1 all of it (the
            tiny word-level CLAP), 0 none (frozen, its output computed once per text), k the top
            k layers and the pooler (the frozen layers below computed once per text:
            :mod:`clapcap.clap.frozen_text`).
        text_lr: the learning rate of the trainable text layers; None = ``optim.lr``.
        collapse_alpha: fail (``TrainingCollapsed``) unless validation text-to-audio MRR on the
            captions beats chance in a one-sided permutation test at this level
            (:mod:`clapcap.clap.collapse`); 0 turns the check off.
        feature_cache: folder of the audio-feature caches (empty: ``out_dir/cache``); the seed
            study's fine-tunes share one (a cache is keyed by its content's signature).
        text_store: folder of a precomputed frozen-text store (the ``robust_text_store``
            stage's output), read only: the frozen text layers' output of every train and
            validation text, computed once for all fine-tunes of the base model. Empty: the
            store lives in the feature-cache folder and is filled as training meets texts.
        eval_every: validate every this many epochs (and always after the last one). The
            validation pass does not change training: the weights are the same for any value.
    """

    paraphrase_dir: str = "data/robust/paraphrased"
    base_model: str = "models/synth_clap/model"
    base_revision: str = ""  # hub ids only: branch, tag or commit (empty = main)
    out_dir: str = "models/robust_clap"
    loss: MultiViewLossConfig = field(default_factory=MultiViewLossConfig)
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(epochs=4, lr=5e-4, warmup_steps=10))
    data_fraction: float = 1.0
    extend_vocab: bool = True
    freeze_audio: bool = False
    text_trainable_layers: int = -1
    text_lr: float | None = None
    eval_split: str = "val"
    collapse_alpha: float = 0.01
    track: bool = True
    experiment: str = "clapcap-robust"
    feature_cache: str = ""
    text_store: str = ""
    eval_every: int = 1

    def __post_init__(self) -> None:
        if self.eval_every < 1:
            raise ValueError(f"robust_train.eval_every: expected an epoch count >= 1, found {self.eval_every}")
        if self.text_trainable_layers < -1:
            raise ValueError(f"robust_train.text_trainable_layers: expected -1 (all), 0 (frozen) or a layer "
                             f"count, found {self.text_trainable_layers}")
        if self.text_lr is not None and self.text_lr <= 0:
            raise ValueError(f"robust_train.text_lr: expected a value > 0 or null (= lr), found {self.text_lr}")


@dataclass
class RobustTextStoreParams:
    """Section ``robust_text_store``: the frozen text layers' output of the base CLAP for
    every caption and view of ``splits``, computed once (:func:`clapcap.clap.frozen_text.fill_store`)
    and read by RobustCLAP's fine-tunes, its control's and the seed study's (``text_store``).

    Attributes:
        text_trainable_layers: the fine-tunes' setting(s); one store file per value.
    """

    paraphrase_dir: str = "data/robust/paraphrased"
    base_model: str = "models/synth_clap/model"
    base_revision: str = ""  # hub ids only: branch, tag or commit (empty = main)
    out_dir: str = "data/robust/text_store"
    splits: list[str] = field(default_factory=lambda: ["train", "val"])
    text_trainable_layers: list[int] = field(default_factory=lambda: [0])

    def __post_init__(self) -> None:
        if not self.splits:
            raise ValueError("robust_text_store.splits: expected at least one split")
        bad = [k for k in self.text_trainable_layers if k < 0]
        if not self.text_trainable_layers or bad:
            raise ValueError(f"robust_text_store.text_trainable_layers: expected layer counts >= 0 (a frozen "
                             f"bottom to store), found {self.text_trainable_layers}")
