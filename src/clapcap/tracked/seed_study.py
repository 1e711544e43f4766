"""A seed study at the tracked edge (:func:`log_seed_study`): ``results/robust/kinds/kinds.json``,
``results/robust/views/views.json``, ``results/robust/view_source/view_source.json`` (``{"metric":
"t2a/r@10", "split", "models": {model: {benchmark: {"mean", "per_seed": {seed: value}, "drop"?}}}}``)
as, per model, a parent run ``<area>/<model>/<analysis>`` holding the mean and std over seeds (and
the drop from the original captions where the study computes one) of every benchmark, with a child
run per seed holding that seed's values. Benchmarks are the key's view (``test/events/t2a/r10``;
the original captions have none), so selecting the parents of one analysis in the UI compares the
models column by column. It imports no study: each family's wrappers
(:mod:`clapcap.tracked.robust_kinds`, :mod:`clapcap.tracked.robust_views`,
:mod:`clapcap.tracked.robust_view_source`) call it, so a stage's fingerprint holds its own study only.
"""

from __future__ import annotations

import logging
import statistics
from pathlib import Path

from clapcap import tracking
from clapcap.tracking.vocab import metric_name
from clapcap.utils.io import read_json

logger = logging.getLogger(__name__)


def _model_label(model: str) -> str:
    return metric_name(model).replace("_", "-")


def log_seed_study(path: str | Path, *, stage: str, experiment: str, analysis: str, area: str = "robust",
                   enabled: bool = True, dataset_dir: str | Path | None = None) -> list[str]:
    """Log the seed study in ``path`` (module docstring); returns the parent run ids (none when
    ``enabled`` is false)."""
    if not enabled:
        return []
    data = read_json(path)
    direction, metric = data["metric"].split("/", 1)
    parents = []
    for model, benches in data["models"].items():
        label = _model_label(model)
        params = {"analysis": analysis, "model": model, "metric": data["metric"], "split": data["split"],
                  "file": str(path)}
        parent = tracking.group_run(experiment, tracking.run_name(area, label, analysis), stage=stage,
                                    params=params, dataset_dir=dataset_dir)
        seeds = sorted({s for b in benches.values() for s in b.get("per_seed", {})}, key=int)
        for seed in seeds:
            with tracking.tracked(stage, experiment=experiment, name=tracking.run_name(area, label, analysis, int(seed)),
                                  params={**params, "seed": int(seed)}, parent=parent, dataset_dir=dataset_dir):
                for bench, row in benches.items():
                    if seed in row.get("per_seed", {}):
                        tracking.log_metrics({metric: row["per_seed"][seed]}, scope=data["split"], view=bench,
                                             direction=direction)
        with tracking.resumed(parent, experiment=experiment):
            for bench, row in benches.items():
                values = [float(v) for v in row.get("per_seed", {}).values()]
                stats = {"mean": row["mean"], "std": statistics.stdev(values) if len(values) > 1 else None,
                         "drop": row.get("drop")}
                for stat, value in stats.items():
                    if value is not None:
                        tracking.log_metrics({metric: value}, scope=data["split"], view=bench, direction=direction,
                                             stat=stat)
        parents.append(parent)
    logger.info("%s: logged %d models to MLflow experiment %s", analysis, len(parents), experiment)
    return parents
