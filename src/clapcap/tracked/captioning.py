"""The captioning study at the tracked edge.

- :class:`MLflowTracker`: the study's hooks (:class:`clapcap.experiments.captioning.study.StudyTracker`)
  as MLflow runs of ``clapcap-captioning``: one run per configuration and seed, nested under
  its seed group (which gets the configuration's params, ``test/<metric>_mean``/``_std``, and
  ``test/<metric>`` = the mean with ``_ci_low``/``_ci_high``, its t interval over seeds, so one
  column ranks every configuration), per-epoch losses, val and test scores; an LR search as one
  run with a child run per trial.
- :func:`study_tracker`: that tracker when ``captioning.track`` is on, else none.

The champion's registration is :mod:`clapcap.tracked.captioning_register`, apart, so that the
training stages' code fingerprints hold neither it nor the registry.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from typing import Any

import numpy as np

from clapcap import tracking
from clapcap.captioning.train import EpochHook
from clapcap.experiments.captioning.config import CaptioningParams
from clapcap.experiments.captioning.study import NO_TRACKING, RunPlan, StudyTracker

logger = logging.getLogger(__name__)
EXPERIMENT = "clapcap-captioning"


class MLflowTracker(StudyTracker):
    """The study's hooks as MLflow runs (the module doc)."""

    def _group(self, plan: RunPlan, run_params: dict[str, Any] | None = None) -> str | None:
        """The parent run id of the plan's seed group (None for a single seed), created with the
        configuration's own params (:func:`configuration_params`) when the first seed opens it."""
        if len(plan.seeds) < 2:
            return None
        lm, config = plan.spec.lm, plan.configuration
        return tracking.group_run(EXPERIMENT, tracking.run_name("captioning", lm, config),
                                  stage="captioning-seeds", params={"lm": lm, "configuration": config,
                                                                    "seeds": plan.seeds,
                                                                    **configuration_params(run_params or {})},
                                  dataset_dir=plan.dataset_dir)

    def run(self, plan: RunPlan, run_params: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
        spec = plan.spec
        return tracking.tracked("captioning-run", experiment=EXPERIMENT,
                                name=tracking.run_name("captioning", spec.lm, plan.configuration, spec.seed),
                                params=run_params, dataset_dir=plan.dataset_dir, dump=spec.dump,
                                parent=self._group(plan, run_params), tags={"clapcap.config": spec.name},
                                system_metrics=True)

    def epoch_hook(self) -> EpochHook | None:
        def log_epoch(stage: int, epoch: int, losses: dict[str, float]) -> None:
            tracking.log_metrics({f"loss_stage{stage}": losses["train_loss"]}, scope="train", step=epoch)
            tracking.log_metrics({f"loss_stage{stage}": losses["val_loss"]}, scope="val", step=epoch)

        return log_epoch

    def scores(self, record: dict[str, Any]) -> None:
        preds = record.get("predictions") or {}
        if preds:  # an MLflow table: the run's artifacts show the captions behind its CIDEr-D
            tracking.log_table({"clip_id": list(preds), "caption": list(preds.values())}, "test_predictions.json")
        tracking.log_metrics(record["test"]["corpus"], scope="test")
        tracking.log_metrics(record["val"]["corpus"], scope="val")
        for stage, result in record.get("stages", {}).items():
            tracking.log_metrics({f"best_loss_stage{stage}": result["best_val_loss"]}, scope="val")

    def seed_stats(self, plan: RunPlan, metrics: dict[str, Any]) -> None:
        group = self._group(plan)
        if group is None:
            return
        with tracking.resumed(group, experiment=EXPERIMENT):
            for stat in ("mean", "std"):
                tracking.log_metrics({m: v[stat] for m, v in metrics.items()}, scope="test", stat=stat)
            # The configuration's own value under the plain key, so one column of the runs table
            # ranks single-seed and seed-group configurations alike, with its interval over seeds.
            tracking.log_metrics({m: v["mean"] for m, v in metrics.items()}, scope="test")
            for stat, bound in (("ci_low", 0), ("ci_high", 1)):
                tracking.log_metrics({m: seed_interval(v["mean"], v["std"], len(plan.seeds))[bound]
                                      for m, v in metrics.items()}, scope="test", stat=stat)

    def lr_search(self, params: CaptioningParams, lm: str) -> contextlib.AbstractContextManager[Any]:
        return tracking.tracked("captioning-lr-search", experiment=EXPERIMENT,
                                name=tracking.run_name("captioning", lm, "lr_search"),
                                params={"lr_search": dataclasses.asdict(params.lr_search), "lm": lm},
                                dataset_dir=params.dataset_dir, dump=params.dump)

    def lr_trials(self, params: CaptioningParams, lm: str, best: dict[str, Any]) -> None:
        """The chosen LRs (params) and the best trials' ``val/loss_stage1|2`` on the search's run,
        so that searches compare in the runs table, and each trial as a child run."""
        tracking.log_params({k: best[k] for k in ("stage1_lr_projection", "stage2_lr_projection", "stage2_lr_lm")})
        tracking.log_metrics({f"loss_{stage}": min(t["val_loss"] for t in best[f"{stage}_trials"])
                              for stage in ("stage1", "stage2")}, scope="val")
        for stage in ("stage1", "stage2"):
            for i, trial in enumerate(best[f"{stage}_trials"]):
                lrs = {k: v for k, v in trial.items() if k != "val_loss"}
                with tracking.tracked("captioning-lr-trial", experiment=EXPERIMENT, params={**lrs, "stage": stage},
                                      name=tracking.run_name("captioning", lm, f"lr_search/{stage}/trial{i}"),
                                      dataset_dir=params.dataset_dir):
                    tracking.log_metrics({f"loss_{stage}": trial["val_loss"]}, scope="val")


# Per-seed entries of a run's params: what differs between the seeds of one configuration.
_PER_SEED = ("spec/name", "spec/seed", "train/seed", "model/seed", "checkpoint_run")


def configuration_params(run_params: dict[str, Any]) -> dict[str, Any]:
    """A seed run's params without its per-seed entries: the configuration's params, logged on
    its seed group's parent so that comparing two parents in the UI shows what differs
    (``decoding/repetition_penalty`` 1.2 against 1.0), not only their names."""
    flat = tracking.flatten(run_params)
    return {k: v for k, v in flat.items() if k not in _PER_SEED}


def seed_interval(mean: float, std: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The t interval of a mean over ``n`` seeds (``std`` with ``n - 1`` degrees of freedom):
    how far another set of ``n`` training runs could put the configuration's mean."""
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * std / np.sqrt(n)
    return mean - half, mean + half


def study_tracker(params: CaptioningParams) -> StudyTracker:
    """:class:`MLflowTracker` when ``params.track``, else the study's no-op tracker."""
    return MLflowTracker() if params.track else NO_TRACKING
