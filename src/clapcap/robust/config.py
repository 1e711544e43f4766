"""``params.yaml`` sections of the RobustCLAP stages (parsed with :func:`clapcap.config.load_section`).

- ``robust_paraphrase``: :class:`~clapcap.paraphrase.dataset.ParaphraseParams`
  (corpus views offline, or the two-step LLM backend);
- ``robust_text_store``: :class:`RobustTextStoreParams` (the base's frozen text layers, once);
- ``robust_train``: :class:`RobustTrainParams` (multi-view contrastive fine-tuning);
- ``robust_benchmark``: :class:`RobustBenchParams` (retrieval on original / view 1 /
  view 2 captions, zero-shot classification, paired test, registration);
- ``robust_seeds``: :class:`RobustSeedParams` (the findings over fine-tune seeds).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clapcap.paraphrase.dataset import ParaphraseParams
from clapcap.paraphrase.llm import LLMParams
from clapcap.robust.loss import MultiViewLossConfig

__all__ = ["LLMParams", "MultiViewLossConfig", "ParaphraseParams", "RobustBenchParams", "RobustSeedParams",
           "RobustTextStoreParams", "RobustTrainParams"]


# Keys of the zero-shot benchmark (docs/robust.md); they name their definition.
ZS = "zero_shot"
ZS_CUTOFF = 10
# AP@10 normalised by min(|labels|, 10): not the retrieval map@10 (docs/retrieval_metrics.md)
ZS_MAP = f"map_norm_min@{ZS_CUTOFF}"


@dataclass
class RobustTrainParams:
    """Section ``robust_train``: fine-tune a CLAP with paraphrase views of the train split.

    Attributes:
        paraphrase_dir: output of ``robust_paraphrase`` (manifest with view columns).
        base_model: an HF ``ClapModel`` folder (the synthetic CLAP is ``models/synth_clap/model``).
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
        text_lr: the learning rate of the trainable text layers; None = ``lr``.
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
    epochs: int = 4
    batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup_steps: int = 10
    seed: int = 0
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
class RobustBenchParams:
    """Section ``robust_benchmark``: compare CLAP models on original and paraphrased queries.

    Attributes:
        models: display name -> HF ``ClapModel`` folder; ``base`` names the reference and
            ``candidate`` the fine-tuned model tested (and registered) against it.
        benchmarks: display name -> manifest column (``captions`` = original).
        label_prompt: zero-shot prompt; ``{label}`` is replaced by each class name.
        register_metric / register_benchmark: without ``register_on``, the model is
            registered when it beats the base on this metric of this benchmark (p < ``alpha``,
            paired bootstrap of this one fine-tune) and is not significantly worse on the
            original captions.
        register_on: the seed study's conclusions file (``robust_seeds``). When set, the
            decision is the findings' verdicts over fine-tune seeds instead:
            ``register_finding`` must hold and no ``register_guards`` finding may be reversed.
    """

    paraphrase_dir: str = "data/robust/paraphrased"
    split: str = "test"
    models: dict[str, str] = field(default_factory=lambda: {"CLAP": "models/synth_clap/model",
                                                            "RobustCLAP": "models/robust_clap/model"})
    # Hub ids among ``models`` -> the revision to load (branch, tag or commit; absent = main).
    revisions: dict[str, str] = field(default_factory=dict)
    base: str = "CLAP"
    candidate: str = "RobustCLAP"
    benchmarks: dict[str, str] = field(default_factory=lambda: {"original": "captions",
                                                                "view1": "paraphrases_v1",
                                                                "view2": "paraphrases_v2"})
    ks: list[int] = field(default_factory=lambda: [1, 5, 10])
    n_resamples: int = 1000
    confidence: float = 0.95
    alpha: float = 0.05
    seed: int = 0
    batch_size: int = 64
    label_column: str = "labels"
    label_prompt: str = "the sound of a {label}"
    out_dir: str = "results/robust"
    register_metric: str = "t2a/r@10"
    register_benchmark: str = "view2"
    register_on: str = ""
    register_finding: str = "robust.view2.t2a_r10.vs_base"
    register_guards: list[str] = field(default_factory=lambda: ["robust.original.t2a_r10.vs_base",
                                                                "robust.original.a2t_r10.vs_base"])
    registered_model: str = "clapcap-robust-clap"
    alias: str = "champion"
    track: bool = True
    experiment: str = "clapcap-robust"


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


@dataclass
class RobustSeedParams:
    """Section ``robust_seeds``: RobustCLAP and its control over several fine-tune seeds.

    Attributes:
        seeds: fine-tune seeds of both the candidate and the control. The seed of
            ``robust_train``/``robust_control`` reuses those stages' models; every other seed
            is trained here under ``out_dir/<candidate|control>/seed<k>``.
        control: the ``robust_benchmark.models`` name of the captions-only control.
        margin: the loss (absolute, e.g. 0.02 = 2 points of R@10) a "no loss" finding allows.
        results_dir: per-seed dumps; ``conclusions`` and ``findings_md`` are the findings.
    """

    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    out_dir: str = "models/robust_seeds"
    results_dir: str = "results/robust/seeds"
    conclusions: str = "results/robust/conclusions.json"
    findings_md: str = "results/robust/findings.md"
    control: str = "CLAP-captions-FT"
    margin: float = 0.02
    n_resamples: int = 1000
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if len(self.seeds) < 2 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"robust_seeds.seeds: expected 2 or more distinct seeds, found {self.seeds}")
        if not 0 <= self.margin < 1:
            raise ValueError(f"robust_seeds.margin: expected a value in [0, 1), found {self.margin}")
