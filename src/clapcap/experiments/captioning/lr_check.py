"""A fair learning rate per ablation row: does the row's own search choose the baseline's LRs?

The architecture rows train with the learning rates the baseline's search chose
(:func:`~clapcap.experiments.captioning.plan.run_configs`), which confounds a row's effect
with an LR mismatch when the row would prefer another LR. This step runs, for one
architecture row, the same search as the baseline's (``captioning.lr_search``: grids, epochs,
seed; :func:`~clapcap.experiments.captioning.lr_search.search_learning_rates`) and records,
in ``<out_dir>/lr_check/<lm>_<variant>/check.json``:

- ``chosen`` and ``baseline``: the row's and the baseline's stage-1 projection LR and stage-2
  (projection, LM) LRs; ``same_stage1`` / ``same_stage2``: whether each search chose the same;
- ``stage1_regret``: the row's stage-1 validation loss at the baseline's stage-1 LR minus its
  best over the grid (0 when it chose the same LR), and ``stage1_regret_rel`` that over the
  best loss: how much the row loses, on the search's own objective, by using the shared LR;
- ``stage2_regret`` (and ``_rel``): the same at the baseline's stage-2 grid point, only when the
  row's stage-1 choice equals the baseline's (else ``null``: the row's stage-2 trials started
  from another stage-1 checkpoint than a shared-LR run would).

With ``captioning.arch_lr: own`` (params.yaml's default) the row then trains at the LRs this
search chose (:func:`~clapcap.experiments.captioning.plan.lr_source`); with ``shared`` it
keeps the baseline's, and this record says what that costs. Either way it says nothing about
the test metric: the search's objective is the validation loss.

An encoder row (the real corpus's YAMNet rows, each specialist on its family) gets the same
search on its own embeddings and dataset when it is listed in ``encoder_lr_rows``
(:func:`run_row_lr_check`, stage ``real_caption_lr_check@<row>``), recorded the same way in
``<out_dir>/lr_check/<row>/check.json``: an encoder with another input size or scale may
prefer another projection LR than the one searched on the tower CLAP's embeddings.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

from clapcap.compute import Compute, or_default
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.lr_search import chosen_learning_rates, search_learning_rates
from clapcap.experiments.captioning.plan import (
    arch_specs,
    encoder_specs,
    lr_row,
    run_params_for,
    subset_specs,
)
from clapcap.utils.io import write_json

logger = logging.getLogger(__name__)

_TOL = 1e-12


def _loss_at(trials: list[dict[str, Any]], **point: float) -> float | None:
    for t in trials:
        if all(abs(t[k] - v) < _TOL for k, v in point.items()):
            return float(t["val_loss"])
    return None


def regret(trials: list[dict[str, Any]], **point: float) -> tuple[float | None, float | None]:
    """``(loss at point - best loss, that / best loss)`` over a search's trials; ``(None, None)``
    when the point is not in the grid."""
    at = _loss_at(trials, **point)
    if at is None:
        return None, None
    best = min(float(t["val_loss"]) for t in trials)
    return at - best, (at - best) / best if best else None


def check_row(search: dict[str, Any], baseline: dict[str, float], row: str) -> dict[str, Any]:
    """The record of one row's search against the baseline's chosen LRs."""
    chosen = {k: float(search[k]) for k in ("stage1_lr_projection", "stage2_lr_projection", "stage2_lr_lm")}
    same1 = abs(chosen["stage1_lr_projection"] - baseline["stage1_lr_projection"]) < _TOL
    same2 = all(abs(chosen[k] - baseline[k]) < _TOL for k in ("stage2_lr_projection", "stage2_lr_lm"))
    r1, r1_rel = regret(search["stage1_trials"], lr_projection=baseline["stage1_lr_projection"])
    r2, r2_rel = (regret(search["stage2_trials"], lr_projection=baseline["stage2_lr_projection"],
                         lr_lm=baseline["stage2_lr_lm"]) if same1 else (None, None))
    return {"row": row, "chosen": chosen, "baseline": dict(baseline), "same_stage1": same1, "same_stage2": same2,
            "stage1_regret": r1, "stage1_regret_rel": r1_rel, "stage2_regret": r2, "stage2_regret_rel": r2_rel,
            "stage1_trials": search["stage1_trials"], "stage2_trials": search["stage2_trials"]}


def _baseline(params: CaptioningParams, lm: str) -> dict[str, float]:
    baseline = chosen_learning_rates(Path(params.out_dir) / "lr_search" / lm)
    if baseline is None:
        raise ValueError(f"lr check: the baseline's search for {lm} has not finished "
                         f"({Path(params.out_dir) / 'lr_search' / lm}/best.json); run its lr_search stage first")
    return baseline


def _write_check(out: Path, search: dict[str, Any], baseline: dict[str, float], key: str) -> dict[str, Any]:
    record = check_row(search, baseline, key)
    write_json(out / "check.json", record)
    logger.info("lr check %s: stage 1 %s (baseline %s, regret %s), stage 2 %s", key,
                record["chosen"]["stage1_lr_projection"], baseline["stage1_lr_projection"],
                record["stage1_regret_rel"], "same" if record["same_stage2"] else "differs")
    return record


def run_row_lr_check(params: CaptioningParams, row: str, *, compute: Compute | None = None) -> dict[str, Any]:
    """Search the LRs of encoder row ``row`` of ``encoder_lr_rows`` (``encoder_<enc>`` or
    ``subset_<subset>_<enc>``: :func:`~clapcap.experiments.captioning.plan.lr_row`) on its own
    embeddings and dataset, with the baseline's grid, epochs and seed, and compare them with
    ``encoder_lm``'s search; write ``<out_dir>/lr_check/<row>/check.json``. The row's runs
    then train at the LRs it chose (:func:`~clapcap.experiments.captioning.plan.lr_source`).

    Raises:
        ValueError: when ``row`` is not in ``encoder_lr_rows``, or the LM's search has not finished.
    """
    compute = or_default(compute)
    if row not in params.encoder_lr_rows:
        raise ValueError(f"lr check: {row!r} is not in encoder_lr_rows {params.encoder_lr_rows}")
    spec = next(s for s in [*encoder_specs(params), *subset_specs(params)] if lr_row(s) == row)
    lm, data = spec.lm, run_params_for(params, spec)
    baseline = _baseline(params, lm)
    out = Path(params.out_dir) / "lr_check" / row
    search = search_learning_rates(params.models[lm], dataclasses.replace(params.train[lm], embedding_key=spec.embedding_key),
                                   params.lr_search, dump=spec.dump, dataset_dir=data.dataset_dir,
                                   out_dir=out / "search", progress=params.progress,
                                   lm_cache_dir=Path(params.out_dir) / "lm_warmup",
                                   study_path=Path(params.out_dir) / "optuna" / f"lr_check_{row}.db", compute=compute)
    return _write_check(out, search, baseline, row)


def run_lr_check(params: CaptioningParams, lm: str, variant: str, *,
                 compute: Compute | None = None) -> dict[str, Any]:
    """Search the LRs of architecture row ``<lm>_<variant>`` (resumable, reused when finished)
    and compare them with the baseline's; write ``check.json``.

    Raises:
        ValueError: when the row is not an architecture row of the study, or the baseline's
            search has not finished (run ``caption_lr_search@<lm>`` first).
    """
    compute = or_default(compute)
    specs = {s.name.removesuffix(f"_seed{s.seed}"): s for s in arch_specs(params, lm)}
    key = f"{lm}_{variant}"
    if key not in specs:
        raise ValueError(f"lr check: {key} is not an architecture row of the study ({sorted(specs)})")
    baseline = _baseline(params, lm)
    out = Path(params.out_dir) / "lr_check" / key
    model_cfg = dataclasses.replace(params.models[lm], **specs[key].model_overrides)
    train_cfg = dataclasses.replace(params.train[lm], embedding_key=params.embedding_key)
    search = search_learning_rates(model_cfg, train_cfg, params.lr_search, dump=params.dump,
                                   dataset_dir=params.dataset_dir, out_dir=out / "search", progress=params.progress,
                                   lm_cache_dir=Path(params.out_dir) / "lm_warmup",
                                   study_path=Path(params.out_dir) / "optuna" / f"lr_check_{key}.db", compute=compute)
    return _write_check(out, search, baseline, key)
