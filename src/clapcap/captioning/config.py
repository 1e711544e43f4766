"""Typed settings of the captioning area: ``params.yaml`` section ``captioning``.

:class:`CaptioningParams` holds the study (LMs, ablation grids, encoders, decoding
configurations); :class:`TrainConfig` one training run; :class:`LRSearchConfig` the LR
search; :class:`CaptionerConfig` the architecture of one captioner; :class:`DecodingConfig` one
decoding configuration. Every class checks its values when built, so a bad value fails at
``load_section``. This module imports no torch: a config loads, and is checked, without it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from clapcap.config import from_dict


@dataclass
class CaptionerConfig:
    """Architecture of one captioner.

    ``in_dim`` is 0 in ``params.yaml``: it is filled from the embedding dump. The LM is a small
    decoder trained here, or a pretrained one: ``pretrained`` names it by a Hugging Face hub id
    (``gpt2``, ``t5-base``, ``HuggingFaceTB/SmolLM2-135M``) at ``pretrained_revision`` (a branch,
    tag or commit; empty: ``main``), or by a local ``save_pretrained`` folder. A run resolves it
    once (:func:`clapcap.captioning.decoders.resolve_lm`: the hub cache, offline with
    ``HF_HUB_OFFLINE=1``) and its saved captioner names the snapshot's commit as its revision.
    ``pretrained_dir`` is the older field: a local folder only (a hub id there is refused,
    naming ``pretrained``); it still loads, so existing ``params.yaml`` files and saved
    captioners keep working. ``tokenizer`` ``auto`` means ``pretrained`` (the LM's own) with a
    pretrained LM, else ``bpe``. ``hidden``/``layers``/``heads`` size the small decoder and are
    ignored with a pretrained LM. ``causal`` is a pretrained decoder-only LM (``gpt2`` or
    SmolLM2); ``gpt2`` and ``t5`` take a pretrained LM too (a ``t5`` one is
    ``T5ForConditionalGeneration``, the prefix its encoder's input). ``lm_dtype`` is the LM's
    weight dtype (the projection stays float32; its output is cast to the LM's dtype).

    ``lora_rank`` > 0 wraps a pretrained LM in a PEFT LoRA adapter of that rank on
    ``lora_targets`` (scaled by ``lora_alpha / lora_rank``): stage 2 then trains the adapter
    and the projection, and the LM's own weights stay frozen. The adapter starts as the
    identity (PEFT initialises ``lora_B`` to zero), so stage 1 is the plain frozen-LM recipe.
    """

    decoder: Literal["gpt2", "t5", "causal"] = "gpt2"
    pretrained: str = ""
    pretrained_revision: str = ""
    pretrained_dir: str = ""
    lm_dtype: Literal["float32", "bfloat16"] = "float32"
    hidden: int = 96
    layers: int = 2
    heads: int = 4
    prefix_length: int = 8
    projection_depth: int = 2
    projection_hidden: int = 0
    dropout: float = 0.1
    tokenizer: Literal["auto", "bpe", "unigram", "gpt2-bpe", "pretrained"] = "auto"
    vocab_size: int = 512
    max_caption_tokens: int = 40
    n_positions: int = 128
    in_dim: int = 0
    lora_rank: int = 0
    lora_alpha: float = 16.0
    lora_targets: list[str] = dataclasses.field(default_factory=lambda: ["q_proj", "v_proj"])

    def __post_init__(self) -> None:
        if self.pretrained and self.pretrained_dir:
            raise ValueError(f"set one of pretrained and pretrained_dir (its older name, a local folder), "
                             f"found both: {self.pretrained!r}, {self.pretrained_dir!r}")
        if self.pretrained_revision and not self.pretrained:
            raise ValueError(f"pretrained_revision {self.pretrained_revision!r} is for a hub id in pretrained"
                             + (", and pretrained_dir is a local folder" if self.pretrained_dir else ""))
        if self.lora_rank < 0 or self.lora_alpha <= 0:
            raise ValueError(f"lora_rank must be >= 0 and lora_alpha > 0, found {self.lora_rank}, {self.lora_alpha}")
        if self.lora_rank and not self.lm_source():
            raise ValueError("lora_rank: a LoRA adapter is for a pretrained LM (set pretrained); "
                             "a decoder trained from scratch fine-tunes all of its weights")
        if self.lora_rank and not self.lora_targets:
            raise ValueError("lora_targets: name at least one module of the LM (for example q_proj)")

    def lm_source(self) -> str:
        """The pretrained LM as written (``pretrained``, else ``pretrained_dir``); empty for a small decoder."""
        return self.pretrained or self.pretrained_dir

    def tokenizer_kind(self) -> str:
        """The concrete tokenizer kind ``auto`` resolves to."""
        if self.tokenizer != "auto":
            return self.tokenizer
        # Small decoders of both kinds use the trained byte-level BPE: on the synthetic corpus
        # the tokenizers Unigram trainer yields ~230 near-character pieces (2.2x longer sequences).
        return "pretrained" if self.lm_source() else "bpe"


@dataclass
class DecodingConfig:
    """One decoding configuration.

    ``strategy``: ``greedy``, ``beam`` (``num_beams``, ``length_penalty``) or ``sample``
    (nucleus sampling with ``top_p`` and ``temperature``, seeded by ``seed``).
    ``repetition_penalty`` 1.0 and ``no_repeat_ngram_size`` 0 disable those options.
    """

    strategy: Literal["greedy", "beam", "sample"] = "greedy"
    num_beams: int = 4
    length_penalty: float = 1.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    top_p: float = 0.9
    temperature: float = 1.0
    max_new_tokens: int = 40
    trim_sentences: bool = False
    trim_words: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raises ValueError naming the first out-of-range option (also when built)."""
        checks = [
            (self.strategy in ("greedy", "beam", "sample"), f"strategy {self.strategy!r}"),
            (self.num_beams >= 1, f"num_beams {self.num_beams} < 1"),
            (self.repetition_penalty > 0, f"repetition_penalty {self.repetition_penalty} <= 0"),
            (self.no_repeat_ngram_size >= 0, f"no_repeat_ngram_size {self.no_repeat_ngram_size} < 0"),
            (0.0 < self.top_p <= 1.0, f"top_p {self.top_p} outside (0, 1]"),
            (self.temperature > 0, f"temperature {self.temperature} <= 0"),
            (self.max_new_tokens >= 1, f"max_new_tokens {self.max_new_tokens} < 1"),
            (self.trim_words is None or self.trim_words >= 1, f"trim_words {self.trim_words} < 1"),
        ]
        for ok, what in checks:
            if not ok:
                raise ValueError(f"invalid decoding config: {what}")

    def generate_kwargs(self) -> dict[str, Any]:
        """The ``generate`` keyword arguments for this configuration."""
        kw: dict[str, Any] = {"max_new_tokens": self.max_new_tokens,
                              "repetition_penalty": self.repetition_penalty,
                              "no_repeat_ngram_size": self.no_repeat_ngram_size}
        if self.strategy == "greedy":
            kw.update(do_sample=False, num_beams=1)
        elif self.strategy == "beam":
            kw.update(do_sample=False, num_beams=self.num_beams, length_penalty=self.length_penalty,
                      early_stopping=True)
        else:
            kw.update(do_sample=True, num_beams=1, top_p=self.top_p, temperature=self.temperature,
                      top_k=0)
        return kw


@dataclass
class StageConfig:
    """Optimisation of one stage. ``lr_lm`` is used by stage 2 only."""

    epochs: int = 4
    lr_projection: float = 2e-3
    lr_lm: float = 3e-4
    weight_decay: float = 0.01


@dataclass
class TrainConfig:
    """A training run. ``lm_pretrain_epochs`` applies to small (non-pretrained) decoders only."""

    seed: int = 0
    batch_size: int = 64
    stages: list[int] = field(default_factory=lambda: [1, 2])
    stage1: StageConfig = field(default_factory=lambda: StageConfig(epochs=4, lr_projection=2e-3))
    stage2: StageConfig = field(default_factory=lambda: StageConfig(epochs=3, lr_projection=1e-3,
                                                                     lr_lm=3e-4))
    lm_pretrain_epochs: int = 3
    lm_pretrain_lr: float = 3e-3
    # None: each training seed warms its LM up with its own seed. An int: one warm-up, with
    # this seed, shared by every training seed, as one pretrained LM is shared (the seeds then
    # vary the captioning stages, not the caption LM).
    lm_pretrain_seed: int | None = None
    # 0: every caption of every clip in each epoch; k: k captions per clip, the next k in the
    # next epoch (a 135 M-parameter LM costs ~0.1 s per caption on a CPU core).
    captions_per_clip: int = 0
    # 0: every training clip. n: the same n clips for every run with this n, whatever its seed
    # (CaptionSplit.subset), so rows trained on a subset compare on the same clips.
    train_clips: int = 0
    grad_clip: float = 1.0
    embedding_key: str = "audio_embeds"
    device: str = "cpu"  # set from the `compute` section by train_captioner; not a params.yaml key
    torch_threads: int = 1  # tiny models: 1 intra-op thread is fastest, and safe on shared cores

    def __post_init__(self) -> None:
        self.validate()

    def record(self) -> dict[str, Any]:
        """The config as results record it: ``train_clips`` only when set, so runs on every
        clip keep the bytes they had before the option existed."""
        out = dataclasses.asdict(self)
        if not self.train_clips:
            del out["train_clips"]
        return out

    def validate(self) -> None:
        """Raises ValueError naming the first bad option (also at load, from ``__post_init__``)."""
        if not self.stages or any(s not in (1, 2) for s in self.stages) or sorted(set(self.stages)) != self.stages:
            raise ValueError(f"train.stages: expected [1], [2] or [1, 2], found {self.stages}")
        if self.batch_size < 1:
            raise ValueError(f"train.batch_size must be >= 1, found {self.batch_size}")
        if self.captions_per_clip < 0:
            raise ValueError(f"train.captions_per_clip must be >= 0 (0: all), found {self.captions_per_clip}")
        if self.train_clips < 0:
            raise ValueError(f"train.train_clips must be >= 0 (0: all), found {self.train_clips}")
        for name in ("stage1", "stage2"):
            st: StageConfig = getattr(self, name)
            if st.epochs < 1 or st.lr_projection <= 0 or st.lr_lm < 0:
                raise ValueError(f"train.{name}: need epochs >= 1 and positive learning rates, found {st}")


@dataclass
class LRSearchConfig:
    """Grids and the short training budget of each trial."""

    stage1_lrs: list[float] = field(default_factory=lambda: [3e-4, 1e-3, 3e-3, 1e-2])
    stage2_projection_lrs: list[float] = field(default_factory=lambda: [3e-4, 1e-3])
    stage2_lm_lrs: list[float] = field(default_factory=lambda: [1e-4, 1e-3])
    stage1_epochs: int = 2
    stage2_epochs: int = 1
    seed: int = 0


@dataclass
class ArchGrid:
    """Architecture ablation values (each varied alone from the LM's baseline config)."""

    prefix_length: list[int] = field(default_factory=lambda: [4, 16])
    dropout: list[float] = field(default_factory=lambda: [0.3, 0.5])
    projection_depth: list[int] = field(default_factory=lambda: [1, 3])

    def variants(self) -> dict[str, dict[str, Any]]:
        """Name (``<key><value>``, as in run names) -> the one override of that value."""
        return {f"{key}{value}": {key: value} for key, values in dataclasses.asdict(self).items()
                for value in values}

    def variant_names(self) -> list[str]:
        return list(self.variants())


@dataclass
class EncoderSpec:
    """An embedding dump of one encoder (file, or folder of ``<split>.npz``)."""

    dump: str
    embedding_key: str = "audio_embeds"


@dataclass
class MusicEncoderStudy:
    """Stage-1 ``encoder_lm`` runs on the corpus's music clips: the general CLAP against real
    pretrained encoders (docs/captioning.md, "Encoder ablation on music").

    ``dataset_dir``: a dataset of the music clips only (:func:`clapcap.data.subset.subset_dataset`);
    empty = no music study. ``encoders``: name -> dump (of all clips or of the music clips:
    rows are picked by clip id). ``baseline``: the encoder every other row is compared with.
    """

    dataset_dir: str = ""
    encoders: dict[str, EncoderSpec] = field(default_factory=dict)
    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    baseline: str = "synth_clap"

    def __post_init__(self) -> None:
        if not self.dataset_dir:
            return
        if self.baseline not in self.encoders:
            raise ValueError(f"music.baseline {self.baseline!r} is not one of music.encoders {sorted(self.encoders)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"music.seeds: expected at least one seed and no repeats, found {self.seeds}")


@dataclass
class FindingsConfig:
    """The captioning findings over training seeds (docs/conclusions.md).

    ``decoding``: the decoding configurations (names in ``decoding_ablation``) whose gain
    over ``baseline_decoding`` is a finding; they are also evaluated on the checkpoints of
    every noise seed of ``decoding_lm``. ``references``: name -> predictions file of a
    non-leaky reference captioner scored on the same test split.
    """

    metric: str = "cider_d"
    decoding_lm: str = "gpt2"
    baseline_decoding: str = "greedy"
    decoding: list[str] = field(default_factory=list)
    n_resamples: int = 1000
    confidence: float = 0.95
    rng_seed: int = 0
    references: dict[str, str] = field(default_factory=dict)
    conclusions: str = "results/captioning/conclusions.json"
    findings_md: str = "results/captioning/findings.md"

    def __post_init__(self) -> None:
        if self.n_resamples < 100:
            raise ValueError(f"findings.n_resamples: expected >= 100, found {self.n_resamples}")
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"findings.confidence: expected a value in (0.5, 1), found {self.confidence}")


@dataclass
class CaptionSubsetParams:
    """``params.yaml`` section ``caption_subsets``: name -> the manifest ``source`` values of a
    subset of the test clips (music, general audio) on which each pipeline-vs-reference finding
    is tested again, scored within the subset. Its own section, so that adding a subset reruns
    only ``caption_findings``."""

    subsets: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class CaptioningParams:
    """``params.yaml`` section ``captioning``."""

    dataset_dir: str = "data/corpus"
    dump: str = "data/embeddings/synth_clap/corpus"
    embedding_key: str = "audio_embeds"
    out_dir: str = "results/captioning"
    lms: list[str] = field(default_factory=lambda: ["gpt2", "t5"])
    models: dict[str, CaptionerConfig] = field(default_factory=lambda: {
        "gpt2": CaptionerConfig(decoder="gpt2"), "t5": CaptionerConfig(decoder="t5")})
    train: dict[str, TrainConfig] = field(default_factory=lambda: {"gpt2": TrainConfig(), "t5": TrainConfig()})
    use_lr_search: bool = True
    lr_search: LRSearchConfig = field(default_factory=LRSearchConfig)
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    # name -> overrides of ``decoding``: the decoding ablation's grid (params.yaml holds the study's
    # 21 configurations; a new one there runs alone, see ``study.evaluate_decoding``).
    decoding_ablation: dict[str, dict[str, Any]] = field(default_factory=lambda: {"greedy": {}})
    # The decoding configs run on the first noise seed's checkpoint (None: all of decoding_ablation).
    decoding_configs: list[str] | None = None
    noise_seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    # Per-LM training seeds that replace noise_seeds for that LM's baseline runs (a pretrained
    # LM costs ~20x a small one on a CPU: the reduced study runs it on fewer seeds).
    lm_seeds: dict[str, list[int]] = field(default_factory=dict)
    # The LMs whose learning rates are searched (None: every LM); the others train with their
    # train.<lm> learning rates.
    lr_search_lms: list[str] | None = None
    arch: ArchGrid = field(default_factory=ArchGrid)
    # Which searched LRs an architecture row trains with: ``own`` (its own search, the
    # caption_lr_check stage: a row's effect is not confounded with an LR the row would not
    # choose) or ``shared`` (the baseline's search; the default of a config built in code).
    arch_lr: str = "shared"
    # The LMs whose architecture ablation runs (None: every LM of ``lms``).
    arch_lms: list[str] | None = None
    # The architecture values that run, by name (``<key><value>``, e.g. ``prefix_length4``;
    # None: every value of ``arch``). dvc.yaml's caption_arch matrix iterates this list.
    arch_variants: list[str] | None = None
    encoder_lm: str = "gpt2"
    encoders: dict[str, EncoderSpec] = field(default_factory=dict)
    # Seeds of the all-clips encoder ablation; empty: it does not run (the reduced study).
    encoder_seeds: list[int] = field(default_factory=lambda: [0])
    # Also run each encoder row through stages 1 and 2 (runs ``encoder_<name>_<lm>_s12_seed<k>``).
    encoder_stage2: bool = False
    music: MusicEncoderStudy = field(default_factory=MusicEncoderStudy)
    findings: FindingsConfig = field(default_factory=FindingsConfig)
    metrics: list[str] | None = None
    selection_metrics: list[str] = field(default_factory=lambda: ["fense", "cider_d"])
    registered_model: str = "clapcap-captioner"
    alias: str = "champion"
    track: bool = True
    progress: bool = True
    torch_threads: int = 1  # for generation; training uses train.<lm>.torch_threads

    def __post_init__(self) -> None:
        for lm in [*self.lms, self.encoder_lm]:
            self.check_lm(lm)
        if not self.noise_seeds:
            raise ValueError(f"noise_seeds: expected at least one seed, found {self.noise_seeds}")
        for key in ("noise_seeds", "encoder_seeds"):  # no encoder seeds: no all-clips encoder ablation
            seeds = getattr(self, key)
            if len(set(seeds)) != len(seeds):
                raise ValueError(f"{key}: expected no repeated seeds, found {seeds}")
        for lm, seeds in self.lm_seeds.items():
            # An LM left out of lms keeps an empty list: dvc.yaml's foreach over it then makes no stage.
            if lm not in self.lms:
                if seeds:
                    raise ValueError(f"lm_seeds.{lm}: not one of lms {self.lms} (leave it out, or give it [])")
                continue
            if not seeds or len(set(seeds)) != len(seeds):
                raise ValueError(f"lm_seeds.{lm}: expected at least one seed and no repeats, found {seeds}")
        if self.lr_search_lms is None:
            self.lr_search_lms = list(self.lms)
        stray = [lm for lm in self.lr_search_lms if lm not in self.lms]
        if stray:
            raise ValueError(f"lr_search_lms: {stray} not in lms {self.lms}")
        for lm, train in self.train.items():  # one device setting: the `compute` section
            if train.device != "cpu":
                raise ValueError(f"captioning.train.{lm}.device: the device is set by the compute section "
                                 f"(or CLAPCAP_DEVICE), not here; found {train.device!r}")
        if self.arch_lr not in ("own", "shared"):
            raise ValueError(f"arch_lr: expected 'own' or 'shared', found {self.arch_lr!r}")
        if self.arch_lms is None:
            self.arch_lms = list(self.lms)
        stray = [lm for lm in self.arch_lms if lm not in self.lms]
        if stray:
            raise ValueError(f"arch_lms: {stray} not in lms {self.lms}")
        names = self.arch.variant_names()
        stray = [v for v in self.arch_variants or [] if v not in names]
        if stray:
            raise ValueError(f"arch_variants: {stray} not among the arch grid's values {names}")
        for name, overrides in self.decoding_ablation.items():  # typed and checked once, here
            cfg = from_dict(DecodingConfig, {**dataclasses.asdict(self.decoding), **overrides},
                            where=f"decoding_ablation.{name}")
            self.decoding_ablation[name] = {k: getattr(cfg, k) for k in overrides}
        self._check_findings()

    def _check_findings(self) -> None:
        found = self.findings
        if not found.decoding:
            return
        self.check_lm(found.decoding_lm)
        for name in [*found.decoding, found.baseline_decoding]:
            if name not in self.decoding_ablation:
                raise ValueError(f"findings: decoding config {name!r} is not in decoding_ablation")
        for name in self.decoding_configs or []:
            if name not in self.decoding_ablation:
                raise ValueError(f"decoding_configs: {name!r} is not in decoding_ablation "
                                 f"({', '.join(sorted(self.decoding_ablation))})")
        if self.decoding_configs is not None:
            missing = [n for n in [*found.decoding, found.baseline_decoding] if n not in self.decoding_configs]
            if missing:
                raise ValueError(f"decoding_configs: the findings compare {missing}, so they must be run; "
                                 f"found {self.decoding_configs}")
        if found.baseline_decoding in found.decoding:
            raise ValueError("findings.decoding: the baseline decoding cannot be compared with itself")

    def seeds_for(self, lm: str) -> list[int]:
        """The training seeds of ``lm``'s baseline runs: ``lm_seeds[lm]``, else ``noise_seeds``."""
        return list(self.lm_seeds.get(lm, self.noise_seeds))

    def check_lm(self, lm: str) -> None:
        """Raises ValueError when ``lm`` has no model and train config."""
        if lm not in self.models or lm not in self.train:
            raise ValueError(f"captioning: no models.{lm} / train.{lm} config; have {sorted(self.models)}")
