"""Typed settings of the captioning study: ``params.yaml`` sections ``captioning`` and
``real_captioning_study`` (:class:`CaptioningParams`: LMs, ablation grids, encoders, decoding
configurations, findings), the LR search (:class:`LRSearchConfig`) and the caption subsets
(:class:`CaptionSubsetParams`). The run and model configs they hold (:class:`TrainConfig`,
:class:`CaptionerConfig`, :class:`DecodingConfig`) live with the model, in
:mod:`clapcap.captioning.config`. Every class checks its values when built, so a bad value fails
at ``load_section``. This module imports no torch.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from clapcap.captioning.config import CaptionerConfig, DecodingConfig, TrainConfig
from clapcap.config import from_dict


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
            raise ValueError(f"baseline {self.baseline!r} is not one of its encoders {sorted(self.encoders)}")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds: expected at least one seed and no repeats, found {self.seeds}")


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
    # The noise seeds whose checkpoints a decoding stage evaluates (None: every noise seed; the
    # real corpus's study iterates it in dvc.yaml, empty where its decoding ablation does not run).
    decoding_seeds: list[int] | None = None
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
    # Encoder rows that train at the learning rates of their own search, on their own dump (and
    # subset), instead of encoder_lm's: ``encoder_<encoder>`` or ``subset_<subset>_<encoder>``
    # (plan.lr_row; each row's search is dvc.yaml's real_caption_lr_check@<row>). Empty: every
    # encoder row trains at its LM's searched LRs.
    encoder_lr_rows: list[str] = field(default_factory=list)
    music: MusicEncoderStudy = field(default_factory=MusicEncoderStudy)
    # The encoder axis on subsets where an encoder is specialised (the real corpus's speech for
    # Whisper, instruments for CREPE, effects for aisfx): subset name -> its study, shaped as the
    # music one (a subset dataset, its encoders, baseline and seeds). Runs
    # ``subset_<name>_<encoder>_<lm>_s1_seed<k>``; none by default.
    specialists: dict[str, MusicEncoderStudy] = field(default_factory=dict)
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
        stray = [s for s in self.decoding_seeds or [] if s not in self.noise_seeds]
        if stray:
            raise ValueError(f"decoding_seeds: {stray} are not noise_seeds {self.noise_seeds}")
        if self.lr_search_lms is None:
            self.lr_search_lms = list(self.lms)
        stray = [lm for lm in self.lr_search_lms if lm not in self.lms]
        if stray:
            raise ValueError(f"lr_search_lms: {stray} not in lms {self.lms}")
        for lm, train in self.train.items():  # one device setting: the `compute` section
            if train.device != "cpu":
                raise ValueError(f"captioning.train.{lm}.device: the device is set by the compute section "
                                 f"(or CLAPCAP_DEVICE), not here; found {train.device!r}")
        self._check_encoder_lr_rows()
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

    def _check_encoder_lr_rows(self) -> None:
        seeds = {f"encoder_{e}": self.encoder_seeds for e in self.encoders} | {
            f"subset_{sub}_{e}": study.seeds for sub, study in self.specialists.items() for e in study.encoders}
        stray = [r for r in self.encoder_lr_rows if r not in seeds]
        if stray:
            raise ValueError(f"encoder_lr_rows: {stray} are not encoder rows of the study ({sorted(seeds)}; the "
                             f"default encoder trains at its LM's own search)")
        # A row trains only over its seeds: a search for a row that never trains is a mistyped study.
        unseeded = [r for r in self.encoder_lr_rows if not seeds[r]]
        if unseeded:
            raise ValueError(f"encoder_lr_rows: {unseeded} run on no seed (encoder_seeds, or the subset's "
                             f"specialists.<subset>.seeds, is empty), so no run would train at their LRs")
        if self.encoder_lr_rows and self.encoder_lm not in (self.lr_search_lms or []):
            raise ValueError(f"encoder_lr_rows: a row's own search is compared with its LM's, so encoder_lm "
                             f"{self.encoder_lm!r} must be in lr_search_lms {self.lr_search_lms}")

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
