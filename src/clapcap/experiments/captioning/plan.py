"""The captioning study's runs, planned once from the ``captioning`` section.

- :class:`RunSpec`: one training configuration at one seed, and the spec builders of the LM
  (with noise-floor seeds), architecture, encoder and music rows (:func:`all_specs`);
- :func:`run_configs`: the run's :class:`~clapcap.captioning.config.CaptionerConfig` and
  :class:`~clapcap.captioning.config.TrainConfig`, built once (the LM's baseline, the spec's
  overrides, the searched learning rates);
- :class:`RunPlan` (:func:`plan_run`): everything one run needs, so that what runs it (the
  trainer, the evaluation, the tracker) reads the plan, not the whole study section.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clapcap.captioning.config import CaptionerConfig, DecodingConfig, TrainConfig
from clapcap.experiments.captioning.config import CaptioningParams, EncoderSpec
from clapcap.experiments.captioning.lr_search import chosen_learning_rates


@dataclass
class RunSpec:
    """One training + evaluation configuration."""

    name: str
    kind: str  # lm | arch | encoder | music | subset
    lm: str
    seed: int
    model_overrides: dict[str, Any] = field(default_factory=dict)
    stages: list[int] = field(default_factory=lambda: [1, 2])
    dump: str = ""
    embedding_key: str = "audio_embeds"
    subset: str = ""  # a subset run's key of ``specialists``

    def record(self) -> dict[str, Any]:
        """The spec as a run's record and params hold it (``subset`` only for a subset run)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if k != "subset" or v}


def baseline_run_name(lm: str, seed: int) -> str:
    return f"{lm}_seed{seed}"


def lm_specs(params: CaptioningParams, lm: str) -> list[RunSpec]:
    """The baseline config of ``lm`` at each of its seeds (``seeds_for``; the first is the
    baseline), with the stages of ``train.<lm>.stages``."""
    params.check_lm(lm)
    return [RunSpec(baseline_run_name(lm, s), "lm", lm, s, stages=list(params.train[lm].stages), dump=params.dump,
                    embedding_key=params.embedding_key) for s in params.seeds_for(lm)]


def arch_specs(params: CaptioningParams, lm: str) -> list[RunSpec]:
    """One run per architecture value of ``arch_variants`` (others at the baseline), at the
    first noise seed; none for an LM that is not in ``arch_lms``."""
    params.check_lm(lm)
    if lm not in (params.arch_lms or []):
        return []
    seed, variants = params.noise_seeds[0], params.arch.variants()
    wanted = params.arch_variants if params.arch_variants is not None else list(variants)
    return [RunSpec(f"{lm}_{name}_seed{seed}", "arch", lm, seed, dict(variants[name]), dump=params.dump,
                    embedding_key=params.embedding_key) for name in wanted]


def encoder_specs(params: CaptioningParams) -> list[RunSpec]:
    """Stage-1 runs of ``encoder_lm`` for the default dump and every extra encoder, per
    ``encoder_seeds`` seed (none without seeds); with ``encoder_stage2``, also stages 1 and 2.
    A row that is an LM-axis run's configuration exactly (:func:`encoder_twin`) is left out:
    its results are that run's."""
    params.check_lm(params.encoder_lm)
    encoders = {"default": EncoderSpec(params.dump, params.embedding_key), **params.encoders}
    return [RunSpec(encoder_run_name(name, params.encoder_lm, seed, stages), "encoder", params.encoder_lm, seed,
                    stages=stages, dump=enc.dump, embedding_key=enc.embedding_key) for name, enc in encoders.items()
            for seed in params.encoder_seeds for stages in ([[1], [1, 2]] if params.encoder_stage2 else [[1]])
            if encoder_twin(params, name, seed, stages) is None]


def encoder_twin(params: CaptioningParams, encoder: str, seed: int, stages: list[int]) -> str | None:
    """The LM-axis run whose configuration the encoder row is, or None.

    The ``default`` encoder's row through the encoder LM's own stages (``train.<lm>.stages``), at
    one of that LM's baseline seeds, trains the LM's baseline config on the same dump and key,
    at the same learning rates and seed: it is the run ``<lm>_seed<k>``, so it is not trained
    twice. (On the real corpus, GPT-2's stage-1+2 encoder row was its LM row again: every
    score, history and best epoch equal, measured 2026-12-06.)
    """
    lm = params.encoder_lm
    if encoder != "default" or lm not in params.lms or seed not in params.seeds_for(lm):
        return None
    return baseline_run_name(lm, seed) if list(params.train[lm].stages) == list(stages) else None


def encoder_result_name(params: CaptioningParams, encoder: str, seed: int, stages: list[int]) -> str:
    """The run whose results answer an encoder row: its own, or its LM-axis twin's."""
    return encoder_twin(params, encoder, seed, stages) or encoder_run_name(encoder, params.encoder_lm, seed, stages)


def encoder_run_name(encoder: str, lm: str, seed: int, stages: list[int] | None = None) -> str:
    """``encoder_<encoder>_<lm>_s1_seed<k>`` (``s12``: through stages 1 and 2)."""
    return f"encoder_{encoder}_{lm}_s{''.join(str(s) for s in (stages or [1]))}_seed{seed}"


def music_run_name(encoder: str, lm: str, seed: int) -> str:
    return f"music_{encoder}_{lm}_s1_seed{seed}"


def music_specs(params: CaptioningParams) -> list[RunSpec]:
    """Stage-1-only runs of ``encoder_lm`` on the music subset, one per music encoder and seed
    (none when ``music.dataset_dir`` is empty)."""
    if not params.music.dataset_dir:
        return []
    return [RunSpec(music_run_name(name, params.encoder_lm, seed), "music", params.encoder_lm, seed,
                    stages=[1], dump=enc.dump, embedding_key=enc.embedding_key)
            for name, enc in params.music.encoders.items() for seed in params.music.seeds]


def subset_run_name(subset: str, encoder: str, lm: str, seed: int) -> str:
    return f"subset_{subset}_{encoder}_{lm}_s1_seed{seed}"


def subset_specs(params: CaptioningParams, subset: str | None = None) -> list[RunSpec]:
    """Stage-1-only runs of ``encoder_lm`` on each subset of ``specialists`` (or on ``subset``
    only), one per encoder of that subset and seed."""
    studies = params.specialists if subset is None else {subset: params.specialists[subset]}
    return [RunSpec(subset_run_name(sub, name, params.encoder_lm, seed), "subset", params.encoder_lm, seed,
                    stages=[1], dump=enc.dump, embedding_key=enc.embedding_key, subset=sub)
            for sub, study in studies.items() for name, enc in study.encoders.items() for seed in study.seeds]


def run_params_for(params: CaptioningParams, spec: RunSpec) -> CaptioningParams:
    """The study params a run sees: a music or subset run reads its subset's manifest."""
    if spec.kind == "music":
        return dataclasses.replace(params, dataset_dir=params.music.dataset_dir)
    if spec.kind == "subset":
        return dataclasses.replace(params, dataset_dir=params.specialists[spec.subset].dataset_dir)
    return params


def all_specs(params: CaptioningParams) -> list[RunSpec]:
    """Every training run of the study, in the order the flow submits them."""
    specs = [s for lm in params.lms for s in lm_specs(params, lm)]
    specs += [s for lm in params.lms for s in arch_specs(params, lm)]
    return specs + encoder_specs(params) + music_specs(params) + subset_specs(params)


def lr_row(spec: RunSpec) -> str:
    """An encoder or subset row's name for its own LR search: ``encoder_<encoder>`` or
    ``subset_<subset>_<encoder>`` (the run's name without ``_<lm>_s<stages>_seed<k>``); its
    configuration name for any other run."""
    if spec.kind in ("encoder", "subset"):
        return spec.name[:spec.name.rindex(f"_{spec.lm}_s")]
    return spec.name.removesuffix(f"_seed{spec.seed}")


def lr_source(params: CaptioningParams, spec: RunSpec) -> Path | None:
    """The LR search whose chosen learning rates ``spec`` trains with, or None (no search: the
    ``train.<lm>`` LRs): a row's own search (``<out_dir>/lr_check/<row>/search``) for an
    architecture row when ``arch_lr`` is ``own`` (the ``caption_lr_check`` stage, row
    ``<lm>_<variant>``) and for an encoder or subset row in ``encoder_lr_rows`` (its
    :func:`lr_row` name), else its LM's baseline search."""
    if not (params.use_lr_search and spec.lm in (params.lr_search_lms or [])):
        return None
    if _own_search(params, spec):
        return Path(params.out_dir) / "lr_check" / lr_row(spec) / "search"
    return Path(params.out_dir) / "lr_search" / spec.lm


def _own_search(params: CaptioningParams, spec: RunSpec) -> bool:
    if spec.kind == "arch":
        return params.arch_lr == "own"
    return spec.kind in ("encoder", "subset") and lr_row(spec) in params.encoder_lr_rows


def run_configs(params: CaptioningParams, spec: RunSpec) -> tuple[CaptionerConfig, TrainConfig]:
    """The architecture and training config of one run, each built once from the LM's baseline:
    the spec's architecture overrides; its seed, stages and embedding key; and, when enabled
    and finished, the searched learning rates (:func:`lr_source`).

    Raises:
        ValueError: when a row should train at its own searched LR (``arch_lr: own``, or an
            ``encoder_lr_rows`` row) and that search has not finished.
    """
    train = params.train[spec.lm]
    stage1, stage2 = train.stage1, train.stage2
    source = lr_source(params, spec)
    chosen = chosen_learning_rates(source) if source is not None else None
    if chosen is None and source is not None and _own_search(params, spec):
        row = source.parent.name
        stage = (f"caption_lr_check@{spec.lm}-{row.removeprefix(spec.lm + '_')}" if spec.kind == "arch"
                 else f"real_caption_lr_check@{row}")
        why = "captioning.arch_lr is 'own'" if spec.kind == "arch" else f"{row} is in encoder_lr_rows"
        raise ValueError(f"{spec.name}: {why}, and the row's own LR search has not finished "
                         f"({source}/best.json); run {stage}")
    if chosen:
        stage1 = dataclasses.replace(stage1, lr_projection=chosen["stage1_lr_projection"])
        stage2 = dataclasses.replace(stage2, lr_projection=chosen["stage2_lr_projection"], lr_lm=chosen["stage2_lr_lm"])
    train = dataclasses.replace(train, seed=spec.seed, stages=spec.stages, embedding_key=spec.embedding_key,
                                stage1=stage1, stage2=stage2)
    return dataclasses.replace(params.models[spec.lm], **spec.model_overrides), train


def configuration(spec: RunSpec) -> str:
    """The configuration part of a run's name: ``baseline``, ``n_layers2``, ``encoder_default_gpt2_s1``."""
    config = spec.name.removesuffix(f"_seed{spec.seed}")
    return "baseline" if config == spec.lm else config.removeprefix(f"{spec.lm}_")


def seeds_of(params: CaptioningParams, spec: RunSpec) -> list[int]:
    """The seed group of ``spec``'s configuration: the seeds whose runs differ only in their seed."""
    if spec.kind == "subset":
        return list(params.specialists[spec.subset].seeds)
    return list(params.encoder_seeds if spec.kind == "encoder" else params.music.seeds if spec.kind == "music" else
                params.seeds_for(spec.lm) if spec.kind == "lm" else [spec.seed])


@dataclass(frozen=True)
class RunPlan:
    """One run of the study, planned once (:func:`plan_run`).

    Attributes:
        spec: the run's configuration and seed.
        model, train: its configs (:func:`run_configs`).
        decoding: how its captions are generated for scoring.
        dataset_dir: the manifest's folder (the music subset's for a music run).
        dump: the embedding dump it trains on.
        out_dir: the study's output folder.
        configuration: its configuration's name (:func:`configuration`).
        seeds: its configuration's seed group (:func:`seeds_of`).
        selection_metrics, metrics: scored on val (to select) and on test (to report; None:
            every metric).
        torch_threads: intra-op threads for evaluation (0 = torch's default).
        progress: show progress bars.
    """

    spec: RunSpec
    model: CaptionerConfig | None
    train: TrainConfig | None
    decoding: DecodingConfig
    dataset_dir: str
    dump: str
    out_dir: Path
    configuration: str
    seeds: list[int]
    selection_metrics: list[str]
    metrics: list[str] | None  # None: every metric
    torch_threads: int = 0
    progress: bool = True


def plan_run(params: CaptioningParams, spec: RunSpec, *, configs: bool = True) -> RunPlan:
    """The plan of ``spec``; ``configs=False`` leaves out the model and train configs (an
    evaluation of a trained checkpoint, or a seed group's statistics, needs neither).

    Raises:
        ValueError: for an LM not in the study, or an architecture row whose own LR search
            has not finished (:func:`run_configs`).
    """
    params.check_lm(spec.lm)
    params = run_params_for(params, spec)
    model, train = run_configs(params, spec) if configs else (None, None)
    return RunPlan(spec=spec, model=model, train=train, decoding=params.decoding, dataset_dir=params.dataset_dir,
                   dump=spec.dump or params.dump, out_dir=Path(params.out_dir), configuration=configuration(spec),
                   seeds=seeds_of(params, spec), selection_metrics=params.selection_metrics, metrics=params.metrics,
                   torch_threads=params.torch_threads, progress=params.progress)
