"""The captioning study's LR check at the tracked edge: :func:`log_lr_check` logs one
architecture (or encoder) row's check (``check.json``) as a run ``captioning/<row>/lr_check``: the chosen
and baseline LRs as params, the stage-1 (and, when comparable, stage-2) regret on the search's
validation loss as ``val/stage1/loss_diff``. One module per step, so the stage's code
fingerprint holds its own study only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clapcap import tracking


def log_lr_check(record: dict[str, Any], *, experiment: str, enabled: bool = True,
                 dataset_dir: str | Path | None = None) -> str | None:
    """Log one row's LR check (module docstring); returns the run id (None when disabled)."""
    if not enabled:
        return None
    params = {"row": record["row"], **{f"chosen_{k}": v for k, v in record["chosen"].items()},
              **{f"baseline_{k}": v for k, v in record["baseline"].items()},
              "same_stage1": record["same_stage1"], "same_stage2": record["same_stage2"]}
    with tracking.tracked("caption_lr_check", experiment=experiment,
                          name=tracking.run_name("captioning", record["row"], "lr_check"), params=params,
                          dataset_dir=dataset_dir) as run:
        for stage in ("stage1", "stage2"):
            if record[f"{stage}_regret"] is not None:
                tracking.log_metrics({"loss": record[f"{stage}_regret"]}, scope="val", view=stage, stat="diff")
        return run.info.run_id


def run_lr_check_tracked(params: Any, lm: str, variant: str, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.experiments.captioning.lr_check.run_lr_check`, then the row's check
    logged (:func:`log_lr_check`) when ``params.track``."""
    from clapcap.experiments.captioning.lr_check import run_lr_check

    record = run_lr_check(params, lm, variant, compute=compute)
    log_lr_check(record, experiment="clapcap-captioning", enabled=params.track, dataset_dir=params.dataset_dir)
    return record


def run_row_lr_check_tracked(params: Any, row: str, *, compute: Any = None) -> dict[str, Any]:
    """:func:`clapcap.experiments.captioning.lr_check.run_row_lr_check` for an encoder row, then
    its check logged (:func:`log_lr_check`) when ``params.track``."""
    from clapcap.experiments.captioning.lr_check import run_row_lr_check

    record = run_row_lr_check(params, row, compute=compute)
    log_lr_check(record, experiment="clapcap-captioning", enabled=params.track, dataset_dir=params.dataset_dir)
    return record
