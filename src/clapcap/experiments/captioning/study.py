"""Captioning experiments driven by the ``captioning`` section of ``params.yaml``.

One library function per step; DVC stages, the CLI and the Prefect flow only call them:

- :func:`execute_run` trains (skip-if-done) and evaluates one :class:`RunSpec` (val for
  selection, test for reporting) and writes ``results/<name>.json``: the study section is
  read once into the run's :class:`~clapcap.experiments.captioning.plan.RunPlan`, and the
  training, the evaluation and the tracker read the plan;
- :func:`lm_specs`, :func:`arch_specs`, :func:`encoder_specs` list the runs of the LM
  (with noise-floor seeds), architecture and encoder ablations (:mod:`.plan`);
- :func:`evaluate_decoding` is the eval-only decoding ablation on the baseline checkpoint;
- :func:`noise_floor` aggregates the seeds of one LM (mean and std of every metric);
- :func:`evaluate_baseline` scores the most-common-training-caption baseline.

Output folder (``out_dir``): ``runs/<name>/`` (training, and the test captions in
``test_predictions.json``), ``results/<name>.json``, ``decoding/<lm>/seed<k>/<config>.json``, ``noise_floor/<lm>.json``,
``baseline_trivial.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import Any

import torch

from clapcap.captioning.config import DecodingConfig
from clapcap.captioning.data import load_caption_split
from clapcap.captioning.decoders import resolve_lm
from clapcap.captioning.evaluate import (
    evaluate_split,
    evaluate_trivial_baseline,
    seed_stats,
)
from clapcap.captioning.model import load_captioner
from clapcap.captioning.train import EpochHook, train_captioner
from clapcap.compute import Compute, or_default
from clapcap.data.prepare import load_dataset
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.lr_search import search_learning_rates
from clapcap.experiments.captioning.plan import (
    RunPlan,
    RunSpec,
    all_specs,
    arch_specs,
    baseline_run_name,
    configuration,
    encoder_run_name,
    encoder_specs,
    lm_specs,
    lr_source,
    music_run_name,
    music_specs,
    plan_run,
    run_configs,
    run_params_for,
    seeds_of,
    subset_specs,
)
from clapcap.utils.io import read_json, sha256_file, write_json
from clapcap.utils.skip import skip_if_inputs_skipped

# The plan's names, for the many callers that know them from here (the stages, the flows, the tests).
__all__ = ["NO_TRACKING", "RunPlan", "RunSpec", "StudyTracker", "all_specs", "arch_specs", "baseline_run_name",
           "configuration", "decoding_config", "decoding_jobs", "decoding_seed_path", "decoding_seeds",
           "encoder_run_name", "encoder_specs", "evaluate_baseline", "evaluate_decoding", "execute_run", "lm_specs",
           "lr_source", "music_run_name", "music_specs", "noise_floor", "plan_run", "prune_decoding_records",
           "run_ablation", "run_configs", "run_lr_search", "run_params_for", "seeds_of", "test_predictions_path"]

logger = logging.getLogger(__name__)


def test_predictions_path(out_dir: str | Path, run_name: str) -> Path:
    """Where :func:`execute_run` keeps a run's test captions (inside its DVC-tracked run folder)."""
    return Path(out_dir) / "runs" / run_name / "test_predictions.json"


class StudyTracker:
    """What the study reports while it runs, to whoever listens: this base reports nothing.

    The study calls these hooks and never imports MLflow; :class:`clapcap.tracked.captioning.MLflowTracker`
    implements them with one run per configuration and seed, nested under its seed group, and
    the entry points (stage scripts, the CLI, the flows) pass it when ``captioning.track`` is on.
    """

    def run(self, plan: RunPlan, run_params: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        """Around one configuration at one seed (training and evaluation); ``run_params`` are
        what the run's configuration is (specs, configs, decoding)."""
        return contextlib.nullcontext()

    def epoch_hook(self) -> EpochHook | None:
        """Called with (stage, epoch, losses) after each training epoch; None: nothing to call."""
        return None

    def scores(self, record: dict[str, Any]) -> None:
        """The record's val and test scores and its test ``predictions``, inside :meth:`run`."""

    def seed_stats(self, plan: RunPlan, metrics: dict[str, Any]) -> None:
        """Mean and std over the seeds of ``plan``'s configuration (:func:`seed_stats`), once every seed finished."""

    def lr_search(self, params: CaptioningParams, lm: str) -> contextlib.AbstractContextManager[Any]:
        """Around an LR search that runs (a finished one is not reported)."""
        return contextlib.nullcontext()

    def lr_trials(self, params: CaptioningParams, lm: str, best: dict[str, Any]) -> None:
        """The search's chosen LRs and trials, inside :meth:`lr_search`."""


NO_TRACKING = StudyTracker()


def _report_seed_stats(tracker: StudyTracker, plan: RunPlan, results: list[Path]) -> None:
    """Seed statistics of ``plan``'s configuration once every seed's result file exists (each
    seed's stage checks after writing its own, so the last to finish reports them; two
    finishing together report the same values)."""
    if len(plan.seeds) < 2 or not all(p.is_file() for p in results):
        return
    tracker.seed_stats(plan, seed_stats([read_json(p) for p in results]))


def _evaluate(plan: RunPlan, checkpoint: str, compute: Compute) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """Val (the selection metrics) and test scores of ``checkpoint`` with ``plan.decoding``, and its test captions."""
    if plan.torch_threads > 0:
        torch.set_num_threads(plan.torch_threads)
    manifest = load_dataset(plan.dataset_dir).manifest
    model = load_captioner(checkpoint, device=compute.device)  # generation in fp32 (docs/compute.md)
    dump, key = plan.spec.dump, plan.spec.embedding_key
    val = evaluate_split(model, load_caption_split(dump, manifest, "val", embedding_key=key), plan.decoding,
                         metrics=plan.selection_metrics)
    test = evaluate_split(model, load_caption_split(dump, manifest, "test", embedding_key=key), plan.decoding,
                          metrics=plan.metrics)
    return val["scores"], {**test["scores"], "n_empty": test["n_empty"]}, test["predictions"]


def execute_run(params: CaptioningParams, spec: RunSpec, *, compute: Compute | None = None,
                tracker: StudyTracker = NO_TRACKING) -> dict[str, Any]:
    """Train ``spec`` (resumable) and evaluate it on ``compute.device``; skipped when its result
    file exists. ``tracker`` hears about it (:class:`StudyTracker`).

    Returns:
        The record written to ``results/<name>.json``: spec, train summary, ``val``
        and ``test`` scores (``corpus``, ``unavailable``, ``primary``), checkpoint.
    """
    compute = or_default(compute)
    path = Path(params.out_dir) / "results" / f"{spec.name}.json"
    if path.is_file():
        return read_json(path)
    plan = plan_run(params, spec)  # the study section read once; below, only the plan
    record = _train_and_score(plan, compute, tracker)
    write_json(path, record)
    if spec.kind in ("encoder", "music", "subset"):  # an LM's baseline seeds: noise_floor logs them
        stem = spec.name.removesuffix(f"_seed{spec.seed}")
        _report_seed_stats(tracker, plan, [plan.out_dir / "results" / f"{stem}_seed{s}.json" for s in plan.seeds])
    return record


def _train_and_score(plan: RunPlan, compute: Compute, tracker: StudyTracker) -> dict[str, Any]:
    """Train ``plan`` (resumable) and score it; its test captions go beside the run's training.

    Returns:
        The run's record (:func:`execute_run`).
    """
    spec, model_cfg, train_cfg, out = plan.spec, plan.model, plan.train, plan.out_dir
    assert model_cfg is not None and train_cfg is not None, "a run is planned with its configs"
    lm = resolve_lm(model_cfg)  # once, before the run opens: a hub id's commit, a folder's weights SHA-256
    run_params = {"spec": spec.record(), "model": dataclasses.asdict(model_cfg),
                  "train": train_cfg.record(), "decoding": dataclasses.asdict(plan.decoding),
                  **({"pretrained_lm": lm.record()} if lm is not None else {})}
    with tracker.run(plan, run_params):
        trained = train_captioner(model_cfg, train_cfg, dump=spec.dump, dataset_dir=plan.dataset_dir,
                                  out_dir=out / "runs" / spec.name, progress=plan.progress,
                                  on_epoch_end=tracker.epoch_hook(),
                                  lm_cache_dir=out / "lm_warmup", compute=compute, lm=lm)
        val, test, preds = _evaluate(plan, trained["checkpoint"], compute)
        record = {"spec": spec.record(), "model": trained["model"], "train": trained["train"],
                  **({"pretrained_lm": trained["pretrained_lm"]} if "pretrained_lm" in trained else {}),
                  "history": {k: v["history"] for k, v in trained["stages"].items()},
                  "best_epoch": {k: v["best_epoch"] for k, v in trained["stages"].items()},
                  "checkpoint": trained["checkpoint"], "decoding": dataclasses.asdict(plan.decoding),
                  "val": val, "test": test}
        tracker.scores({**record, "stages": trained["stages"], "predictions": preds})
    write_json(test_predictions_path(out, spec.name), preds)
    return record


def decoding_config(params: CaptioningParams, name: str) -> DecodingConfig:
    """The named decoding-ablation config (baseline decoding plus its overrides).

    Raises:
        ValueError: on an unknown name (the overrides themselves are checked at load).
    """
    if name not in params.decoding_ablation:
        raise ValueError(f"unknown decoding config {name!r}; have {sorted(params.decoding_ablation)}")
    return dataclasses.replace(params.decoding, **params.decoding_ablation[name])  # checked at load


def decoding_seed_path(params: CaptioningParams, lm: str, name: str, seed: int) -> Path:
    """The record of decoding config ``name`` on the checkpoint of ``lm``'s noise seed ``seed``:
    ``decoding/<lm>/seed<seed>/<name>.json`` (its test captions beside it, ``.predictions.json``).
    The first noise seed holds the whole decoding ablation; the other seeds hold the configs
    of ``findings.decoding``, so that the decoding findings are compared seed by seed."""
    return Path(params.out_dir) / "decoding" / lm / f"seed{seed}" / f"{name}.json"


def evaluate_decoding(params: CaptioningParams, lm: str, name: str, seed: int | None = None, *,
                      compute: Compute | None = None, tracker: StudyTracker = NO_TRACKING) -> dict[str, Any]:
    """Eval-only decoding config ``name`` on ``lm``'s baseline checkpoint of noise seed ``seed``
    (the first noise seed by default; trained if needed).

    Returns:
        The record written to :func:`decoding_seed_path` (captions beside it, ``.predictions.json``).

    Raises:
        ValueError: on an unknown config, or a seed that is not a noise seed.
    """
    compute = or_default(compute)
    seed = params.noise_seeds[0] if seed is None else seed
    if seed not in params.noise_seeds:
        raise ValueError(f"decoding {name}: seed {seed} is not one of noise_seeds {params.noise_seeds}")
    path = decoding_seed_path(params, lm, name, seed)
    decoding = decoding_config(params, name)
    base = execute_run(params, next(s for s in lm_specs(params, lm) if s.seed == seed), compute=compute,
                       tracker=tracker)
    weights = sha256_file(Path(base["checkpoint"]) / "weights.pt")
    # The stage keeps its records across reruns (persist), so that a decoding config added to
    # params.yaml runs alone: a record is reused only for the same config on the same weights.
    if path.is_file():
        record = read_json(path)
        if record.get("decoding") == dataclasses.asdict(decoding) and record.get("weights_sha256") == weights:
            return record
    spec = RunSpec(f"{lm}_decoding_{name}_seed{seed}", "decoding", lm, seed, dump=params.dump)
    # The configuration is the trained checkpoint plus this decoding: its run carries both the
    # checkpoint's training params and the decoding params (one run per configuration).
    run_params = {"spec": spec.record(), "model": base["model"], "train": base["train"],
                  **({"pretrained_lm": base["pretrained_lm"]} if "pretrained_lm" in base else {}),
                  "decoding": dataclasses.asdict(decoding), "checkpoint_run": base["spec"]["name"]}
    plan = dataclasses.replace(plan_run(params, spec, configs=False), decoding=decoding,
                               configuration=f"decoding_{name}", seeds=decoding_seeds(params, lm, name))
    with tracker.run(plan, run_params):
        val, test, preds = _evaluate(plan, base["checkpoint"], compute)
        record = {"lm": lm, "name": name, "seed": seed, "decoding": dataclasses.asdict(decoding),
                  "checkpoint": base["checkpoint"], "weights_sha256": weights, "val": val, "test": test}
        tracker.scores({**record, "predictions": preds})
    write_json(path.with_suffix(".predictions.json"), preds)
    write_json(path, record)
    _report_seed_stats(tracker, plan, [decoding_seed_path(params, lm, name, s) for s in plan.seeds])
    return record


def prune_decoding_records(params: CaptioningParams, jobs: list[tuple[str, str, int]]) -> list[Path]:
    """Delete the records (and captions) of decoding configs that ``jobs`` no longer runs, in
    the seed folders that ``jobs`` covers: the report reads every record it finds there."""
    wanted: dict[Path, set[str]] = {}
    for lm, name, seed in jobs:
        wanted.setdefault(decoding_seed_path(params, lm, name, seed).parent, set()).add(name)
    removed = []
    for folder, names in wanted.items():
        for f in sorted(folder.glob("*.json")):
            if f.name.removesuffix(".json").removesuffix(".predictions") not in names:
                f.unlink()
                removed.append(f)
    return removed


def decoding_seeds(params: CaptioningParams, lm: str, name: str) -> list[int]:
    """The noise seeds whose checkpoints decoding config ``name`` of ``lm`` runs on (:func:`decoding_jobs`)."""
    if lm == params.findings.decoding_lm and name in params.findings.decoding:
        return list(params.noise_seeds)
    return [params.noise_seeds[0]]


def noise_floor(params: CaptioningParams, lm: str, *, compute: Compute | None = None,
                tracker: StudyTracker = NO_TRACKING) -> dict[str, Any]:
    """Mean and sample std over the seeds (``seeds_for``) of every test metric of ``lm``'s baseline.

    Returns:
        ``{"lm", "seeds", "metrics": {metric: {"mean", "std", "values"}}}`` (also written
        to ``noise_floor/<lm>.json``).
    """
    compute = or_default(compute)
    records = [execute_run(params, spec, compute=compute, tracker=tracker) for spec in lm_specs(params, lm)]
    metrics = seed_stats(records)
    result = {"lm": lm, "seeds": params.seeds_for(lm), "stages": list(params.train[lm].stages),
              "pretrained": bool(params.models[lm].lm_source()), "metrics": metrics,
              "primary": records[0]["test"].get("primary")}
    write_json(Path(params.out_dir) / "noise_floor" / f"{lm}.json", result)
    # The noise floor on the seed group: test/<metric>_mean, test/<metric>_std.
    if len(params.seeds_for(lm)) > 1:
        tracker.seed_stats(plan_run(params, lm_specs(params, lm)[0], configs=False), metrics)
    return result


def evaluate_baseline(params: CaptioningParams) -> dict[str, Any]:
    """Score the most-common-training-caption baseline on val and test (``baseline_trivial.json``)."""

    path = Path(params.out_dir) / "baseline_trivial.json"
    if path.is_file():
        return read_json(path)
    manifest = load_dataset(params.dataset_dir).manifest
    splits = {s: load_caption_split(params.dump, manifest, s, embedding_key=params.embedding_key)
              for s in ("train", "val", "test")}
    val = evaluate_trivial_baseline(splits["train"], splits["val"], metrics=params.selection_metrics)
    test = evaluate_trivial_baseline(splits["train"], splits["test"], metrics=params.metrics)
    record = {"caption": next(iter(test["predictions"].values())), "val": val["scores"], "test": test["scores"]}
    write_json(path, record)
    return record


def run_lr_search(params: CaptioningParams, lm: str, *, compute: Compute | None = None,
                  tracker: StudyTracker = NO_TRACKING) -> dict[str, Any]:
    """LR search for ``lm`` in ``out_dir/lr_search/<lm>`` (resumable, reused when finished);
    every trial trains on ``compute.device``. A search that runs is reported to ``tracker``
    (its chosen LRs and trials); a finished search is not."""

    params.check_lm(lm)
    if lm not in (params.lr_search_lms or []):
        raise ValueError(f"lr search: {lm} is not one of captioning.lr_search_lms {params.lr_search_lms}")
    out = Path(params.out_dir) / "lr_search" / lm
    if not (out / "best.json").is_file():
        with tracker.lr_search(params, lm):
            best = _search(params, lm, out, compute)
            tracker.lr_trials(params, lm, best)
        return best
    return _search(params, lm, out, compute)


def _search(params: CaptioningParams, lm: str, out: Path, compute: Compute | None) -> dict[str, Any]:
    return search_learning_rates(params.models[lm], dataclasses.replace(params.train[lm], embedding_key=params.embedding_key),
                                 params.lr_search, dump=params.dump, dataset_dir=params.dataset_dir,
                                 out_dir=out, progress=params.progress,
                                 lm_cache_dir=Path(params.out_dir) / "lm_warmup",
                                 study_path=Path(params.out_dir) / "optuna" / f"{lm}.db", compute=or_default(compute))


def decoding_jobs(params: CaptioningParams, lms: list[str], name: str | None,
                   seed: int | None) -> list[tuple[str, str, int]]:
    """(lm, config, seed) to evaluate: every config on the first noise seed's checkpoint, and
    the configs of ``findings.decoding`` on the other seeds' checkpoints of ``findings.decoding_lm``."""
    if seed is not None and seed not in params.noise_seeds:
        raise ValueError(f"decoding: seed {seed} is not one of noise_seeds {params.noise_seeds}")
    seeds = [seed] if seed is not None else list(params.noise_seeds)
    wanted = [name] if name else list(params.decoding_configs or params.decoding_ablation)
    jobs = []
    for s in seeds:
        for m in lms:
            if s == params.noise_seeds[0]:
                jobs += [(m, n, s) for n in wanted]
            elif m == params.findings.decoding_lm:
                jobs += [(m, n, s) for n in wanted if n in params.findings.decoding]
    return jobs


def run_ablation(params: CaptioningParams, kind: str, *, lm: str | list[str] | None = None, name: str | None = None,
                 seed: int | None = None, compute: Compute | None = None,
                 tracker: StudyTracker = NO_TRACKING) -> list[dict[str, Any]]:
    """Run the configurations of one ablation, optionally narrowed to one.

    ``kind``: ``lm`` (``seed`` narrows), ``arch`` (``name`` like ``prefix_length4``),
    ``encoder`` (``name`` = encoder, ``default`` for ``dump``; ``seed`` narrows), ``music``
    (``name`` = a ``music.encoders`` key; ``seed`` narrows), ``subset`` (``name`` = a key of
    ``specialists``: every encoder of that subset; ``seed`` narrows),
    ``decoding`` (``name`` = decoding config; ``seed`` = the checkpoint's noise seed, see
    :func:`decoding_jobs`). ``lm`` (one, or a list) defaults to every LM (``encoder_lm`` for encoders).

    Returns:
        The records of the runs.

    Raises:
        ValueError: on an unknown kind, or a name/seed that selects nothing.
    """
    compute = or_default(compute)
    lms = [lm] if isinstance(lm, str) else list(lm or params.lms)
    if kind == "decoding":
        jobs = decoding_jobs(params, lms, name, seed)
        if name is None:  # a whole seed's configs: what is no longer asked for goes
            prune_decoding_records(params, jobs)
        return [evaluate_decoding(params, m, n, s, compute=compute, tracker=tracker) for m, n, s in jobs]
    if kind == "lm":
        specs = [s for m in lms for s in lm_specs(params, m) if seed is None or s.seed == seed]
    elif kind == "arch":
        specs = [s for m in lms for s in arch_specs(params, m)
                 if name is None or s.name == f"{m}_{name}_seed{s.seed}"]
    elif kind == "encoder":
        specs = [s for s in encoder_specs(params) if (name is None or s.name.startswith(f"encoder_{name}_"))
                 and (seed is None or s.seed == seed)]
    elif kind == "music":
        specs = [s for s in music_specs(params) if (name is None or s.name == music_run_name(name, s.lm, s.seed))
                 and (seed is None or s.seed == seed)]
    elif kind == "subset":
        if name is not None and name not in params.specialists:
            raise ValueError(f"ablation subset: no subset {name!r}; specialists has {sorted(params.specialists)}")
        specs = [s for s in subset_specs(params, name) if seed is None or s.seed == seed]
    else:
        raise ValueError(f"unknown ablation kind {kind!r}; expected lm, arch, encoder, music, subset or decoding")
    if not specs:
        raise ValueError(f"ablation {kind}: nothing matches lm={lm} name={name} seed={seed}")
    out = Path(params.out_dir)
    if kind == "music" and skip_if_inputs_skipped(
            [params.music.dataset_dir], [p for s in specs for p in (out / "runs" / s.name, out / "results" / f"{s.name}.json")],
            stage=f"caption_encoder_music@{seed}"):
        return []
    return [execute_run(params, s, compute=compute, tracker=tracker) for s in specs]
